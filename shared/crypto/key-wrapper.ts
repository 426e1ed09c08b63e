/**
 * The port behind which wallet and access keys are wrapped: AWS KMS in the cloud
 * (kms-key-wrapper.ts), AES-256-GCM master key files in DATA_DIR locally
 * (local-key-wrapper.ts). Same calls as KMS: GenerateDataKey and Decrypt, both bound to an
 * encryption context that must match exactly on Decrypt.
 */
export type EncryptionContext = Readonly<Record<string, string>>;

export interface DataKey {
  /** 32 bytes; callers zero it after use. */
  readonly plaintext: Uint8Array;
  /** Opaque blob to store beside the data. */
  readonly ciphertext: Uint8Array;
}

export interface KeyWrapper {
  generateDataKey(context: EncryptionContext): Promise<DataKey>;
  decryptDataKey(ciphertext: Uint8Array, context: EncryptionContext): Promise<Uint8Array>;
}

/** Canonical (key-sorted) form of an encryption context, used as AEAD associated data. */
export function canonicalContext(context: EncryptionContext): string {
  return JSON.stringify(
    Object.keys(context)
      .sort()
      .map((key) => [key, context[key]]),
  );
}
