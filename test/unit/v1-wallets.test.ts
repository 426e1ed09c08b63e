import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Application } from '../../shared/apps/application.ts';
import { DEFAULT_V1_RETIREMENT } from '../../shared/config.ts';
import { generateEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import type { Table } from '../../shared/db/client.ts';
import type { EnclaveDeps } from '../../shared/enclave/create-wallet.ts';
import { withWalletKey } from '../../shared/enclave/use-wallet.ts';
import { createV1Wallet, migrateV1Wallet } from '../../shared/enclave/v1-wallets.ts';
import { getWallet, type V1WalletRecord } from '../../shared/enclave/wallet-record.ts';
import { ConflictError, ForbiddenError, GoneError } from '../../shared/errors.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';
import { signTestOpJwt } from './support/op-jwt.ts';
import { SIGN_MESSAGE } from './support/signing-request.ts';

/** v1 rules on both sides of the retirement instant, with an injected clock. */
const RETIRES_AT = new Date(DEFAULT_V1_RETIREMENT);
const BEFORE = new Date('2026-07-31T23:59:59Z');
const AFTER = new Date('2026-08-01T00:00:00Z');

let table: Table;
let stop: () => Promise<void>;
let app: Application;
let issuerKey: JWK;
const deps = (now: Date): EnclaveDeps => ({ table, keyWrapper, now: () => now, v1RetiresAt: RETIRES_AT });
let keyWrapper: LocalKeyWrapper;
let keyDir: string;

const opJwt = (sub: string, now: Date) => signTestOpJwt(issuerKey, { iss: app.oidc.issuer, aud: 'legacy-api', sub, now });

beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('v1-unit'));
  keyDir = await mkdtemp(join(tmpdir(), 'v1-unit-'));
  keyWrapper = new LocalKeyWrapper(keyDir, 'enclave');
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  issuerKey = privateJwk;
  app = {
    app_id: 'legacy-app',
    created_at: '2026-01-01T00:00:00Z',
    oidc: { provider_id: 'idp', issuer: 'https://idp.test', audience: 'legacy-api', jwks: { keys: [publicJwk] } },
    secret_key_hash: '00',
    api_key_hash: '00',
    trusted_keys: [],
    default_wallet_group_id: 'default',
  };
});
afterAll(async () => {
  await stop();
  await rm(keyDir, { recursive: true, force: true });
});

// Created for a user (the optional auth_jwt): only such a wallet can migrate, and only to that user (issue 21 §8).
const newV1 = (now: Date, context = 'secret-context', owner = 'alice') =>
  createV1Wallet(deps(now), { app, encryptionContext: context, network: 'ETH', walletGroupId: 'g', identity: { iss: app.oidc.issuer, sub: owner } });

describe('v1 wallets', () => {
  it('are created until the retirement instant, and refused from it on', async () => {
    const wallet = await newV1(BEFORE);
    expect(wallet.recovery_key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = (await getWallet(table, wallet.wallet_id)) as V1WalletRecord;
    expect(stored.version).toBe(1);
    expect(stored.v1.kdf).toMatchObject({ name: 'scrypt', N: 32768, r: 8, p: 1 });
    const serialised = JSON.stringify(stored);
    for (const secret of ['secret-context', wallet.access_key, wallet.recovery_key]) expect(serialised).not.toContain(secret);
    await expect(newV1(AFTER)).rejects.toMatchObject({ code: 'V1_RETIRED', status: 410 });
  });

  it('salts each wallet: the same context gives different sealed keys', async () => {
    const [a, b] = await Promise.all([newV1(BEFORE, 'same'), newV1(BEFORE, 'same')]);
    const [ra, rb] = (await Promise.all([getWallet(table, a.wallet_id), getWallet(table, b.wallet_id)])) as V1WalletRecord[];
    expect(ra!.v1.kdf.salt).not.toBe(rb!.v1.kdf.salt);
  });

  it('v2 use requires migration before retirement and is impossible after it', async () => {
    const wallet = await newV1(BEFORE);
    const auth = { op_jwt: await opJwt('alice', BEFORE), access_key: wallet.access_key, wallet_id: wallet.wallet_id };
    await expect(withWalletKey(deps(BEFORE), app, auth, () => 'signed', SIGN_MESSAGE)).rejects.toBeInstanceOf(ConflictError);
    const afterAuth = { ...auth, op_jwt: await opJwt('alice', AFTER), encryption_context: 'secret-context' };
    await expect(withWalletKey(deps(AFTER), app, afterAuth, () => 'signed', SIGN_MESSAGE)).rejects.toBeInstanceOf(GoneError);
    await expect(
      withWalletKey(deps(BEFORE), app, { ...auth, op_jwt: await opJwt('alice', BEFORE), encryption_context: 'wrong' }, () => 'signed', SIGN_MESSAGE),
    ).rejects.toMatchObject({
      code: 'INVALID_ENCRYPTION_CONTEXT',
    });
    expect(
      await withWalletKey(
        deps(BEFORE),
        app,
        { ...auth, op_jwt: await opJwt('alice', BEFORE), encryption_context: 'secret-context' },
        (w) => w.version,
        SIGN_MESSAGE,
      ),
    ).toBe(2);
  });

  it("concurrent migrations write once: every caller gets the winner's record; recovery material is dropped", async () => {
    const wallet = await newV1(BEFORE);
    const v1 = (await getWallet(table, wallet.wallet_id)) as V1WalletRecord;
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        migrateV1Wallet(deps(BEFORE), v1, { iss: app.oidc.issuer, sub: 'alice' }, { encryption_context: 'secret-context', access_key: wallet.access_key }),
      ),
    );
    const stored = await getWallet(table, wallet.wallet_id);
    expect(stored?.version).toBe(2);
    expect(stored).not.toHaveProperty('v1');
    for (const result of results) expect(result.sealed.wrapped_key).toBe((stored as { sealed: { wrapped_key: string } }).sealed.wrapped_key);
    expect(stored).toMatchObject({ iss: app.oidc.issuer, sub: 'alice', public_address: wallet.public_address, migrated_at: BEFORE.toISOString() });
  });

  it('after migration, encryption_context is refused once the first-use window (30 s) has passed', async () => {
    const wallet = await newV1(BEFORE, 'secret-context', 'carol');
    const auth = { op_jwt: await opJwt('carol', BEFORE), access_key: wallet.access_key, wallet_id: wallet.wallet_id, encryption_context: 'secret-context' };
    await withWalletKey(deps(BEFORE), app, auth, () => 'migrated', SIGN_MESSAGE);
    const straggler = new Date(BEFORE.getTime() + 29_000);
    expect(await withWalletKey(deps(straggler), app, { ...auth, op_jwt: await opJwt('carol', straggler) }, () => 'signed', SIGN_MESSAGE)).toBe('signed');
    const later = new Date(BEFORE.getTime() + 31_000);
    await expect(withWalletKey(deps(later), app, { ...auth, op_jwt: await opJwt('carol', later) }, () => 'signed', SIGN_MESSAGE)).rejects.toMatchObject({
      code: 'ENCRYPTION_CONTEXT_NOT_ACCEPTED',
      status: 400,
    });
    expect(
      await withWalletKey(deps(later), app, { ...auth, encryption_context: undefined, op_jwt: await opJwt('carol', later) }, () => 'signed', SIGN_MESSAGE),
    ).toBe('signed');
  });

  it('a migration with a wrong access key is refused and leaves the wallet v1', async () => {
    const wallet = await newV1(BEFORE);
    const v1 = (await getWallet(table, wallet.wallet_id)) as V1WalletRecord;
    await expect(
      migrateV1Wallet(deps(BEFORE), v1, { iss: app.oidc.issuer, sub: 'alice' }, { encryption_context: 'secret-context', access_key: 'wrong' }),
    ).rejects.toBeInstanceOf(ForbiddenError);
    expect((await getWallet(table, wallet.wallet_id))?.version).toBe(1);
  });
});
