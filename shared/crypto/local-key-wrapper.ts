import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { open, seal } from './aead.ts';
import { createKeyFileOnce } from './key-file.ts';
import { canonicalContext, type DataKey, type EncryptionContext, type KeyWrapper } from './key-wrapper.ts';
import { checkLocalKms } from './local-kms-guard.ts';

/**
 * Local stand-in for KMS: a 256-bit master key in `<dataDir>/keys/<name>.key` (mode 0600,
 * created on first use) wraps random data keys with AES-256-GCM; the encryption context is the
 * associated data, so a blob only decrypts under the context it was made for, as with KMS.
 */
export class LocalKeyWrapper implements KeyWrapper {
  readonly #path: string;
  readonly #name: 'enclave' | 'account';
  #masterKey: Promise<Buffer> | undefined;

  constructor(dataDir: string, name: 'enclave' | 'account') {
    this.#path = join(dataDir, 'keys', `${name}.key`);
    this.#name = name;
  }

  async generateDataKey(context: EncryptionContext): Promise<DataKey> {
    checkLocalKms({ key: this.#name, operation: 'GenerateDataKey', encryptionContext: context });
    const plaintext = randomBytes(32);
    const ciphertext = seal(await this.#master(), plaintext, canonicalContext(context));
    return { plaintext, ciphertext };
  }

  async decryptDataKey(ciphertext: Uint8Array, context: EncryptionContext): Promise<Uint8Array> {
    checkLocalKms({ key: this.#name, operation: 'Decrypt', encryptionContext: context });
    return open(await this.#master(), ciphertext, canonicalContext(context));
  }

  #master(): Promise<Buffer> {
    this.#masterKey ??= loadOrCreateKeyFile(this.#path);
    return this.#masterKey;
  }
}

async function loadOrCreateKeyFile(path: string): Promise<Buffer> {
  try {
    const key = await readFile(path);
    if (key.length !== 32) throw new Error(`${path} is not a 32-byte key`);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  // If two processes race, exactly one creates the file and the other reads the whole of it.
  if (await createKeyFileOnce(path, key)) return key;
  const existing = await readFile(path);
  if (existing.length !== 32) throw new Error(`${path} is not a 32-byte key`);
  return existing;
}
