import { DecryptCommand, GenerateDataKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import type { DataKey, EncryptionContext, KeyWrapper } from './key-wrapper.ts';

/** AWS KMS adapter: AES-256 data keys under one KMS key, bound to an encryption context. */
export class KmsKeyWrapper implements KeyWrapper {
  readonly #kms: KMSClient;
  readonly #keyId: string;

  constructor(kms: KMSClient, keyId: string) {
    this.#kms = kms;
    this.#keyId = keyId;
  }

  async generateDataKey(context: EncryptionContext): Promise<DataKey> {
    const out = await this.#kms.send(new GenerateDataKeyCommand({ KeyId: this.#keyId, KeySpec: 'AES_256', EncryptionContext: { ...context } }));
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error('KMS GenerateDataKey returned no key');
    return { plaintext: out.Plaintext, ciphertext: out.CiphertextBlob };
  }

  async decryptDataKey(ciphertext: Uint8Array, context: EncryptionContext): Promise<Uint8Array> {
    const out = await this.#kms.send(
      // KeyId pins the key: a blob made under another key is refused rather than decrypted.
      new DecryptCommand({ KeyId: this.#keyId, CiphertextBlob: ciphertext, EncryptionContext: { ...context } }),
    );
    if (!out.Plaintext) throw new Error('KMS Decrypt returned no plaintext');
    return out.Plaintext;
  }
}
