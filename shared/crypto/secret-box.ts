import { open, seal } from './aead.ts';
import { canonicalContext, type EncryptionContext, type KeyWrapper } from './key-wrapper.ts';

/**
 * Envelope encryption of a few named secrets under one fresh data key.
 * Stored form: the wrapped data key plus one AES-GCM blob per secret (base64). Each blob's
 * associated data is the encryption context and the secret's name, so blobs cannot be swapped
 * between records or fields. Plaintext data keys are zeroed as soon as they are used.
 *
 * `bound` (optional) is more associated data: fields stored in the clear beside the secrets that
 * must not change without the secrets failing to open (an enclave wallet's owner and access-key
 * hash, shared/enclave/wallet-seal.ts). Without it the associated data is as it always was.
 */
export interface SealedSecrets {
  readonly wrapped_key: string;
  readonly secrets: Record<string, string>;
}

function aad(context: EncryptionContext, name: string, bound?: EncryptionContext) {
  const base = `${canonicalContext(context)}|${name}`;
  return bound === undefined ? base : `${base}|${canonicalContext(bound)}`;
}

export async function sealSecrets(
  wrapper: KeyWrapper,
  context: EncryptionContext,
  secrets: Record<string, Uint8Array>,
  bound?: EncryptionContext,
): Promise<SealedSecrets> {
  const dataKey = await wrapper.generateDataKey(context);
  try {
    const sealed: Record<string, string> = {};
    for (const [name, value] of Object.entries(secrets)) {
      sealed[name] = seal(dataKey.plaintext, value, aad(context, name, bound)).toString('base64');
    }
    return { wrapped_key: Buffer.from(dataKey.ciphertext).toString('base64'), secrets: sealed };
  } finally {
    dataKey.plaintext.fill(0);
  }
}

/** Opens the named secrets of a sealed record; one unwrap of the data key for all of them. */
export async function openSecrets<const N extends string>(
  wrapper: KeyWrapper,
  context: EncryptionContext,
  sealed: SealedSecrets,
  names: readonly N[],
  bound?: EncryptionContext,
): Promise<Record<N, Buffer>> {
  const key = await wrapper.decryptDataKey(Buffer.from(sealed.wrapped_key, 'base64'), context);
  try {
    const out = {} as Record<N, Buffer>;
    try {
      for (const name of names) {
        const blob = sealed.secrets[name];
        if (blob === undefined) throw new Error(`sealed record has no secret named ${name}`);
        out[name] = open(key, Buffer.from(blob, 'base64'), aad(context, name, bound));
      }
    } catch (error) {
      for (const opened of Object.values<Buffer>(out)) opened.fill(0);
      throw error;
    }
    return out;
  } finally {
    key.fill(0);
  }
}
