import { randomBytes } from 'node:crypto';
import {
  DecryptCommand,
  type DecryptCommandInput,
  GenerateDataKeyCommand,
  InvalidCiphertextException,
  KMSClient,
} from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { DecryptionError } from '../../shared/crypto/aead.ts';
import type { EncryptionContext } from '../../shared/crypto/key-wrapper.ts';
import { KmsKeyWrapper } from '../../shared/crypto/kms-key-wrapper.ts';
import { openSecrets, sealSecrets } from '../../shared/crypto/secret-box.ts';

const KEY_ID = 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const CONTEXT: EncryptionContext = { purpose: 'enclave-wallet', app_id: 'app-1', wallet_id: 'wallet-1' };

const kmsMock = mockClient(KMSClient);

beforeEach(() => {
  kmsMock.reset();
});

/** KMS compares encryption contexts as exact sets of key/value pairs. */
function sameContext(a: Record<string, string> | undefined, b: Record<string, string> | undefined) {
  const entries = (context: Record<string, string> | undefined) => JSON.stringify(Object.entries(context ?? {}).sort());
  return entries(a) === entries(b);
}

/**
 * A stand-in for KMS that remembers each data key it hands out with its context, and gives the
 * key back on Decrypt only under the same key id and context — otherwise it rejects as KMS does.
 * Copies are returned because callers zero the plaintext they receive.
 */
function fakeKms() {
  const issued = new Map<string, { key: Buffer; context: Record<string, string> | undefined; keyId: string | undefined }>();
  kmsMock.on(GenerateDataKeyCommand).callsFake((input: { KeyId?: string; EncryptionContext?: Record<string, string> }) => {
    const key = randomBytes(32);
    const blob = randomBytes(48);
    issued.set(blob.toString('hex'), { key, context: input.EncryptionContext, keyId: input.KeyId });
    return { KeyId: input.KeyId, Plaintext: Uint8Array.from(key), CiphertextBlob: Uint8Array.from(blob) };
  });
  kmsMock.on(DecryptCommand).callsFake((input: DecryptCommandInput) => {
    const entry = issued.get(Buffer.from(input.CiphertextBlob ?? []).toString('hex'));
    if (!entry || entry.keyId !== input.KeyId || !sameContext(entry.context, input.EncryptionContext)) {
      throw new InvalidCiphertextException({ message: 'InvalidCiphertextException', $metadata: { httpStatusCode: 400 } });
    }
    return { KeyId: input.KeyId, Plaintext: Uint8Array.from(entry.key) };
  });
}

describe('KmsKeyWrapper', () => {
  it('asks KMS for an AES-256 data key under its key id and the exact encryption context', async () => {
    const plaintext = randomBytes(32);
    const blob = randomBytes(64);
    kmsMock.on(GenerateDataKeyCommand).resolves({ Plaintext: Uint8Array.from(plaintext), CiphertextBlob: Uint8Array.from(blob) });

    const dataKey = await new KmsKeyWrapper(new KMSClient({}), KEY_ID).generateDataKey(CONTEXT);

    const calls = kmsMock.commandCalls(GenerateDataKeyCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.args[0].input).toEqual({ KeyId: KEY_ID, KeySpec: 'AES_256', EncryptionContext: { ...CONTEXT } });
    expect(Buffer.from(dataKey.plaintext).equals(plaintext)).toBe(true);
    expect(Buffer.from(dataKey.ciphertext).equals(blob)).toBe(true);
  });

  it('decrypts with KeyId, the CiphertextBlob and the same encryption context', async () => {
    const plaintext = randomBytes(32);
    const blob = randomBytes(64);
    kmsMock.on(DecryptCommand).resolves({ Plaintext: Uint8Array.from(plaintext) });

    const key = await new KmsKeyWrapper(new KMSClient({}), KEY_ID).decryptDataKey(blob, CONTEXT);

    const calls = kmsMock.commandCalls(DecryptCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]!.args[0].input;
    expect(input.KeyId).toBe(KEY_ID);
    expect(input.EncryptionContext).toEqual({ ...CONTEXT });
    expect(Buffer.from(input.CiphertextBlob!).equals(blob)).toBe(true);
    expect(Buffer.from(key).equals(plaintext)).toBe(true);
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
    await expect(new KmsKeyWrapper(new KMSClient({}), KEY_ID).decryptDataKey(randomBytes(64), CONTEXT)).rejects.toThrow(
      'KMS Decrypt returned no plaintext',
    );
  });
});

describe('sealSecrets / openSecrets through KmsKeyWrapper', () => {
  const secrets = () => ({ private_key: Buffer.from('11'.repeat(32), 'hex'), access_key: Buffer.from('access-key-value') });

  it('round-trips the named secrets with one GenerateDataKey and one Decrypt', async () => {
    fakeKms();
    const wrapper = new KmsKeyWrapper(new KMSClient({}), KEY_ID);

    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    const opened = await openSecrets(wrapper, CONTEXT, sealed, ['private_key', 'access_key']);

    expect(opened.private_key.equals(secrets().private_key)).toBe(true);
    expect(opened.access_key.toString()).toBe('access-key-value');
    expect(kmsMock.commandCalls(GenerateDataKeyCommand)).toHaveLength(1);
    expect(kmsMock.commandCalls(DecryptCommand)).toHaveLength(1);
    expect(kmsMock.commandCalls(DecryptCommand)[0]!.args[0].input.EncryptionContext).toEqual({ ...CONTEXT });
  });

  it('does not store secrets in the clear', async () => {
    fakeKms();
    const sealed = await sealSecrets(new KmsKeyWrapper(new KMSClient({}), KEY_ID), CONTEXT, secrets());
    const stored = JSON.stringify(sealed);
    expect(stored).not.toContain('access-key-value');
    expect(stored).not.toContain(Buffer.from('access-key-value').toString('base64'));
    expect(stored).not.toContain(secrets().private_key.toString('base64'));
  });

  it('context keys in another order still open (KMS compares contexts as sets)', async () => {
    fakeKms();
    const wrapper = new KmsKeyWrapper(new KMSClient({}), KEY_ID);
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    const reordered = { wallet_id: 'wallet-1', app_id: 'app-1', purpose: 'enclave-wallet' };
    const opened = await openSecrets(wrapper, reordered, sealed, ['access_key']);
    expect(opened.access_key.toString()).toBe('access-key-value');
  });

  it('fails to open under a different encryption context', async () => {
    fakeKms();
    const wrapper = new KmsKeyWrapper(new KMSClient({}), KEY_ID);
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());

    await expect(openSecrets(wrapper, { ...CONTEXT, wallet_id: 'wallet-2' }, sealed, ['private_key'])).rejects.toBeInstanceOf(
      InvalidCiphertextException,
    );
  });

  it('fails to open with a wrapper bound to another KMS key', async () => {
    fakeKms();
    const sealed = await sealSecrets(new KmsKeyWrapper(new KMSClient({}), KEY_ID), CONTEXT, secrets());
    const other = new KmsKeyWrapper(new KMSClient({}), `${KEY_ID}-other`);
    await expect(openSecrets(other, CONTEXT, sealed, ['private_key'])).rejects.toBeInstanceOf(InvalidCiphertextException);
  });

  it('fails to open a blob swapped between two secret names', async () => {
    fakeKms();
    const wrapper = new KmsKeyWrapper(new KMSClient({}), KEY_ID);
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    const swapped = {
      wrapped_key: sealed.wrapped_key,
      secrets: { private_key: sealed.secrets.access_key!, access_key: sealed.secrets.private_key! },
    };

    // The same data key unwraps fine; the per-secret associated data is what refuses the swap.
    await expect(openSecrets(wrapper, CONTEXT, swapped, ['private_key'])).rejects.toBeInstanceOf(DecryptionError);
    await expect(openSecrets(wrapper, CONTEXT, swapped, ['access_key'])).rejects.toBeInstanceOf(DecryptionError);
  });

  it('fails to open a blob moved to another record, even with that record’s own wrapped key', async () => {
    fakeKms();
    const wrapper = new KmsKeyWrapper(new KMSClient({}), KEY_ID);
    const otherContext = { ...CONTEXT, wallet_id: 'wallet-2' };
    const mine = await sealSecrets(wrapper, CONTEXT, secrets());
    const theirs = await sealSecrets(wrapper, otherContext, secrets());
    const grafted = { wrapped_key: theirs.wrapped_key, secrets: { private_key: mine.secrets.private_key! } };

    await expect(openSecrets(wrapper, otherContext, grafted, ['private_key'])).rejects.toBeInstanceOf(DecryptionError);
  });

  it('names a missing secret', async () => {
    fakeKms();
    const wrapper = new KmsKeyWrapper(new KMSClient({}), KEY_ID);
    const sealed = await sealSecrets(wrapper, CONTEXT, { access_key: Buffer.from('x') });
    await expect(openSecrets(wrapper, CONTEXT, sealed, ['private_key'])).rejects.toThrow('sealed record has no secret named private_key');
  });
});
