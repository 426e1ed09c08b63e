import { randomBytes } from 'node:crypto';
import { DecryptCommand, GenerateDataKeyCommand, InvalidCiphertextException, KMSClient, KMSInvalidStateException } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { DecryptionError } from '../../shared/crypto/aead.ts';
import type { EncryptionContext } from '../../shared/crypto/key-wrapper.ts';
import { KmsKeyWrapper } from '../../shared/crypto/kms-key-wrapper.ts';

/**
 * The KMS adapter only: which commands it sends and what it does with the answers. What sealing
 * and opening guarantee (contexts, swaps, grafts) is tested against the real local wrapper in
 * secret-box.test.ts, not against a re-implementation of KMS.
 */
const KEY_ID = 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const CONTEXT: EncryptionContext = { purpose: 'enclave-wallet', app_id: 'app-1', wallet_id: 'wallet-1' };

const kmsMock = mockClient(KMSClient);

beforeEach(() => {
  kmsMock.reset();
});

describe('KmsKeyWrapper', () => {
  it('asks KMS for an AES-256 data key under its key id and the exact encryption context', async () => {
    const plaintext = randomBytes(32);
    const blob = randomBytes(64);
    kmsMock.on(GenerateDataKeyCommand).resolves({ Plaintext: Uint8Array.from(plaintext), CiphertextBlob: Uint8Array.from(blob) });

    const dataKey = await new KmsKeyWrapper(new KMSClient({}), KEY_ID).generateDataKey(CONTEXT);

    expect(kmsMock).toReceiveCommandExactlyOnceWith(GenerateDataKeyCommand, { KeyId: KEY_ID, KeySpec: 'AES_256', EncryptionContext: { ...CONTEXT } });
    expect(Buffer.from(dataKey.plaintext).equals(plaintext)).toBe(true);
    expect(Buffer.from(dataKey.ciphertext).equals(blob)).toBe(true);
  });

  it('decrypts with KeyId pinned, the CiphertextBlob and the same encryption context', async () => {
    const plaintext = randomBytes(32);
    const blob = randomBytes(64);
    kmsMock.on(DecryptCommand).resolves({ Plaintext: Uint8Array.from(plaintext) });

    const key = await new KmsKeyWrapper(new KMSClient({}), KEY_ID).decryptDataKey(blob, CONTEXT);

    expect(kmsMock).toReceiveCommandExactlyOnceWith(DecryptCommand, { KeyId: KEY_ID, CiphertextBlob: blob, EncryptionContext: { ...CONTEXT } });
    expect(Buffer.from(key).equals(plaintext)).toBe(true);
  });

  it('a blob that does not authenticate (wrong key or context) is a DecryptionError, as with the local wrapper; other refusals pass through', async () => {
    kmsMock.on(DecryptCommand).rejects(new InvalidCiphertextException({ message: 'InvalidCiphertextException', $metadata: { httpStatusCode: 400 } }));
    await expect(new KmsKeyWrapper(new KMSClient({}), KEY_ID).decryptDataKey(randomBytes(64), CONTEXT)).rejects.toBeInstanceOf(DecryptionError);
    kmsMock.on(DecryptCommand).rejects(new KMSInvalidStateException({ message: 'disabled', $metadata: { httpStatusCode: 400 } }));
    await expect(new KmsKeyWrapper(new KMSClient({}), KEY_ID).decryptDataKey(randomBytes(64), CONTEXT)).rejects.toBeInstanceOf(KMSInvalidStateException);
  });

  it('throws when GenerateDataKey returns no key material', async () => {
    kmsMock.on(GenerateDataKeyCommand).resolves({});
    await expect(new KmsKeyWrapper(new KMSClient({}), KEY_ID).generateDataKey(CONTEXT)).rejects.toThrow('KMS GenerateDataKey returned no key');
  });

  it('throws when GenerateDataKey returns a plaintext key but no ciphertext blob', async () => {
    kmsMock.on(GenerateDataKeyCommand).resolves({ Plaintext: randomBytes(32) });
    await expect(new KmsKeyWrapper(new KMSClient({}), KEY_ID).generateDataKey(CONTEXT)).rejects.toThrow('KMS GenerateDataKey returned no key');
  });

  it('throws when Decrypt returns no plaintext', async () => {
    kmsMock.on(DecryptCommand).resolves({});
    await expect(new KmsKeyWrapper(new KMSClient({}), KEY_ID).decryptDataKey(randomBytes(64), CONTEXT)).rejects.toThrow('KMS Decrypt returned no plaintext');
  });
});
