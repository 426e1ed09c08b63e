import { DecryptCommand, type DecryptCommandOutput, GenerateDataKeyCommand, InvalidCiphertextException, type KMSClient } from '@aws-sdk/client-kms';
import { DecryptionError } from './aead.ts';
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

  /** Throws DecryptionError, as the local wrapper does, when the blob does not authenticate under this key and context. */
  async decryptDataKey(ciphertext: Uint8Array, context: EncryptionContext): Promise<Uint8Array> {
    let out: DecryptCommandOutput;
    try {
      // KeyId pins the key: a blob made under another key is refused rather than decrypted.
      out = await this.#kms.send(new DecryptCommand({ KeyId: this.#keyId, CiphertextBlob: ciphertext, EncryptionContext: { ...context } }));
    } catch (error) {
      if (error instanceof InvalidCiphertextException) throw new DecryptionError();
      throw error;
    }
    if (!out.Plaintext) throw new Error('KMS Decrypt returned no plaintext');
    return out.Plaintext;
  }
}
