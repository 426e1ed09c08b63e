import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DecryptionError } from '../../shared/crypto/aead.ts';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import { openSecrets, sealSecrets } from '../../shared/crypto/secret-box.ts';

/**
 * sealSecrets / openSecrets through a real key wrapper (the local one, which has KMS's
 * GenerateDataKey/Decrypt semantics: exact encryption context, one master key per name).
 */
const CONTEXT = { purpose: 'enclave-wallet', app_id: 'app-1', wallet_id: 'wallet-1' };
const secrets = () => ({ private_key: Buffer.from('11'.repeat(32), 'hex'), access_key: Buffer.from('access-key-value') });

let dataDir: string;
let wrapper: LocalKeyWrapper;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'secret-box-'));
  wrapper = new LocalKeyWrapper(dataDir, 'enclave');
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('sealSecrets / openSecrets', () => {
  it('round-trips the named secrets', async () => {
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    const opened = await openSecrets(wrapper, CONTEXT, sealed, ['private_key', 'access_key']);
    expect(opened.private_key.equals(secrets().private_key)).toBe(true);
    expect(opened.access_key.toString()).toBe('access-key-value');
  });

  it('does not store secrets in the clear', async () => {
    const stored = JSON.stringify(await sealSecrets(wrapper, CONTEXT, secrets()));
    expect(stored).not.toContain('access-key-value');
    expect(stored).not.toContain(Buffer.from('access-key-value').toString('base64'));
    expect(stored).not.toContain(secrets().private_key.toString('base64'));
    expect(stored).not.toContain(secrets().private_key.toString('hex'));
  });

  it('opens with the context keys in another order (contexts compare as sets)', async () => {
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    const opened = await openSecrets(wrapper, { wallet_id: 'wallet-1', app_id: 'app-1', purpose: 'enclave-wallet' }, sealed, ['access_key']);
    expect(opened.access_key.toString()).toBe('access-key-value');
  });

  it('refuses another encryption context: another wallet, another purpose', async () => {
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    await expect(openSecrets(wrapper, { ...CONTEXT, wallet_id: 'wallet-2' }, sealed, ['private_key'])).rejects.toBeInstanceOf(DecryptionError);
    await expect(openSecrets(wrapper, { ...CONTEXT, purpose: 'account-access-keys' }, sealed, ['private_key'])).rejects.toBeInstanceOf(DecryptionError);
  });

  it('refuses a wrapper with another master key', async () => {
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    await expect(openSecrets(new LocalKeyWrapper(dataDir, 'account'), CONTEXT, sealed, ['private_key'])).rejects.toBeInstanceOf(DecryptionError);
  });

  it('refuses blobs swapped between two secret names', async () => {
    const sealed = await sealSecrets(wrapper, CONTEXT, secrets());
    const swapped = { wrapped_key: sealed.wrapped_key, secrets: { private_key: sealed.secrets.access_key!, access_key: sealed.secrets.private_key! } };
    // The same data key unwraps fine; the per-secret associated data is what refuses the swap.
    await expect(openSecrets(wrapper, CONTEXT, swapped, ['private_key'])).rejects.toBeInstanceOf(DecryptionError);
    await expect(openSecrets(wrapper, CONTEXT, swapped, ['access_key'])).rejects.toBeInstanceOf(DecryptionError);
  });

  it('refuses a blob moved to another record, even with that record’s own wrapped key', async () => {
    const otherContext = { ...CONTEXT, wallet_id: 'wallet-2' };
    const mine = await sealSecrets(wrapper, CONTEXT, secrets());
    const theirs = await sealSecrets(wrapper, otherContext, secrets());
    const grafted = { wrapped_key: theirs.wrapped_key, secrets: { private_key: mine.secrets.private_key! } };
    await expect(openSecrets(wrapper, otherContext, grafted, ['private_key'])).rejects.toBeInstanceOf(DecryptionError);
  });

  it('names a missing secret', async () => {
    const sealed = await sealSecrets(wrapper, CONTEXT, { access_key: Buffer.from('x') });
    await expect(openSecrets(wrapper, CONTEXT, sealed, ['private_key'])).rejects.toThrow('sealed record has no secret named private_key');
  });
});
