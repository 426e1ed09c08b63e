import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DecryptionError } from '../../shared/crypto/aead.ts';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import { openSecrets, sealSecrets } from '../../shared/crypto/secret-box.ts';

const CONTEXT = { purpose: 'enclave-wallet', app_id: 'app-1', wallet_id: 'wallet-1' };

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'local-key-wrapper-'));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('LocalKeyWrapper', () => {
  it('unwraps the data key it generated', async () => {
    const wrapper = new LocalKeyWrapper(dataDir, 'enclave');
    const dataKey = await wrapper.generateDataKey(CONTEXT);
    const plaintext = Buffer.from(dataKey.plaintext);

    expect(plaintext).toHaveLength(32);
    expect(Buffer.from(dataKey.ciphertext).includes(plaintext)).toBe(false);
    expect(Buffer.from(await wrapper.decryptDataKey(dataKey.ciphertext, CONTEXT)).equals(plaintext)).toBe(true);
  });

  it('creates the master key as a 32-byte file with mode 0600 at <dir>/keys/<name>.key', async () => {
    await new LocalKeyWrapper(dataDir, 'enclave').generateDataKey(CONTEXT);

    const path = join(dataDir, 'keys', 'enclave.key');
    const info = await stat(path);
    expect(info.isFile()).toBe(true);
    expect(info.mode & 0o777).toBe(0o600);
    expect(await readFile(path)).toHaveLength(32);
    expect((await stat(join(dataDir, 'keys'))).mode & 0o077).toBe(0);
  });

  it('decrypts, in a new instance over the same directory, what an earlier one wrapped (restart)', async () => {
    const before = new LocalKeyWrapper(dataDir, 'enclave');
    const dataKey = await before.generateDataKey(CONTEXT);
    const plaintext = Buffer.from(dataKey.plaintext);
    const sealed = await sealSecrets(before, CONTEXT, { private_key: Buffer.from('wallet secret') });

    const after = new LocalKeyWrapper(dataDir, 'enclave');
    expect(Buffer.from(await after.decryptDataKey(dataKey.ciphertext, CONTEXT)).equals(plaintext)).toBe(true);
    const opened = await openSecrets(after, CONTEXT, sealed, ['private_key']);
    expect(opened.private_key.toString()).toBe('wallet secret');
  });

  it('accepts the same context with its keys in another order', async () => {
    const wrapper = new LocalKeyWrapper(dataDir, 'enclave');
    const dataKey = await wrapper.generateDataKey(CONTEXT);
    const reordered = { wallet_id: 'wallet-1', purpose: 'enclave-wallet', app_id: 'app-1' };
    expect(Buffer.from(await wrapper.decryptDataKey(dataKey.ciphertext, reordered)).equals(Buffer.from(dataKey.plaintext))).toBe(true);
  });

  it('refuses a different encryption context', async () => {
    const wrapper = new LocalKeyWrapper(dataDir, 'enclave');
    const { ciphertext } = await wrapper.generateDataKey(CONTEXT);

    await expect(wrapper.decryptDataKey(ciphertext, { ...CONTEXT, wallet_id: 'wallet-2' })).rejects.toBeInstanceOf(DecryptionError);
    await expect(wrapper.decryptDataKey(ciphertext, { ...CONTEXT, extra: 'x' })).rejects.toBeInstanceOf(DecryptionError);
    await expect(wrapper.decryptDataKey(ciphertext, {})).rejects.toBeInstanceOf(DecryptionError);
  });

  it('refuses a tampered ciphertext', async () => {
    const wrapper = new LocalKeyWrapper(dataDir, 'enclave');
    const { ciphertext } = await wrapper.generateDataKey(CONTEXT);

    for (const index of [0, 5, 20, ciphertext.length - 1]) {
      const tampered = Buffer.from(ciphertext);
      tampered[index]! ^= 0x01;
      await expect(wrapper.decryptDataKey(tampered, CONTEXT)).rejects.toBeInstanceOf(DecryptionError);
    }
    await expect(wrapper.decryptDataKey(Buffer.from(ciphertext).subarray(0, 20), CONTEXT)).rejects.toBeInstanceOf(DecryptionError);
  });

  it('keeps one master key per name: another name cannot unwrap', async () => {
    const enclave = new LocalKeyWrapper(dataDir, 'enclave');
    const account = new LocalKeyWrapper(dataDir, 'account');
    const { ciphertext } = await enclave.generateDataKey(CONTEXT);

    await expect(account.decryptDataKey(ciphertext, CONTEXT)).rejects.toBeInstanceOf(DecryptionError);
    expect((await readFile(join(dataDir, 'keys', 'account.key'))).equals(await readFile(join(dataDir, 'keys', 'enclave.key')))).toBe(false);
  });

  it('refuses a key file that is not 32 bytes', async () => {
    await mkdir(join(dataDir, 'keys'), { recursive: true });
    await writeFile(join(dataDir, 'keys', 'enclave.key'), Buffer.alloc(16));
    await expect(new LocalKeyWrapper(dataDir, 'enclave').generateDataKey(CONTEXT)).rejects.toThrow('is not a 32-byte key');
  });

  it('two instances starting together over an empty directory agree on one master key', async () => {
    const first = new LocalKeyWrapper(dataDir, 'enclave');
    const second = new LocalKeyWrapper(dataDir, 'enclave');
    const [a, b] = await Promise.all([first.generateDataKey(CONTEXT), second.generateDataKey(CONTEXT)]);

    expect(Buffer.from(await second.decryptDataKey(a.ciphertext, CONTEXT)).equals(Buffer.from(a.plaintext))).toBe(true);
    expect(Buffer.from(await first.decryptDataKey(b.ciphertext, CONTEXT)).equals(Buffer.from(b.plaintext))).toBe(true);
  });
});
