import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Application } from '../../shared/apps/application.ts';
import { DEFAULT_V1_RETIREMENT } from '../../shared/config.ts';
import type { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import type { EnclaveDeps } from '../../shared/enclave/create-wallet.ts';
import { withV1WalletKey, withWalletKey } from '../../shared/enclave/use-wallet.ts';
import { createV1Wallet } from '../../shared/enclave/v1-wallets.ts';
import { getWallet } from '../../shared/enclave/wallet-record.ts';
import { startEnclaveFixture } from './support/enclave-fixture.ts';
import { signTestOpJwt } from './support/op-jwt.ts';
import { SIGN_MESSAGE } from './support/signing-request.ts';

/**
 * Issue 21 §8: a v1 wallet migrates only to the identity it was created for. The spec's v1 create
 * names no user; a create that carries `auth_jwt` records its user (authenticated under the
 * context key). A wallet created without one cannot be migrated: its v1 credentials alone must not
 * choose its owner.
 */
const BEFORE = new Date('2026-07-30T12:00:00Z');
const CONTEXT = 'alice-user-secret';
let table: Table;
let stop: () => Promise<void>;
let keyWrapper: LocalKeyWrapper;
let issuerKey: JWK;
let app: Application;
const deps = (): EnclaveDeps => ({ table, keyWrapper, now: () => BEFORE, v1RetiresAt: new Date(DEFAULT_V1_RETIREMENT) });

const opJwt = (sub: string) => signTestOpJwt(issuerKey, { iss: app.oidc.issuer, aud: 'migration-client', sub, now: BEFORE });

beforeAll(async () => {
  ({ table, stop, keyWrapper, issuerKey, app } = await startEnclaveFixture('v1-migration-binding', {
    appId: 'migration-app',
    issuer: 'https://idp.migration.test',
    audience: 'migration-client',
  }));
});
afterAll(() => stop());

const newV1 = (owner?: string) =>
  createV1Wallet(deps(), {
    app,
    encryptionContext: CONTEXT,
    network: 'ETH',
    walletGroupId: 'legacy',
    ...(owner ? { identity: { iss: app.oidc.issuer, sub: owner } } : {}),
  });

async function migrate(wallet: { wallet_id: string; access_key: string }, sub: string, operation = vi.fn((w: { sub: string }) => w.sub)) {
  return withWalletKey(
    deps(),
    app,
    { op_jwt: await opJwt(sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id, encryption_context: CONTEXT },
    operation,
    SIGN_MESSAGE,
  );
}

async function editWallet(walletId: string, update: string, values?: Record<string, unknown>) {
  const names = Object.fromEntries(
    ['iss', 'sub', 'seal_version', 'v1', 'binding_tag'].filter((name) => update.includes(`#${name}`)).map((name) => [`#${name}`, name]),
  );
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: keys.wallet(walletId),
      UpdateExpression: update,
      ExpressionAttributeNames: names,
      ...(values ? { ExpressionAttributeValues: values } : {}),
    }),
  );
}

describe('v1 → v2 migration is bound to the identity the wallet was created for (issue 21 §8)', () => {
  it('a v1 wallet created with auth_jwt records its user and migrates to that user, re-sealed with the binding', async () => {
    const alice = `alice-${randomUUID()}`;
    const wallet = await newV1(alice);
    expect(await getWallet(table, wallet.wallet_id)).toMatchObject({ version: 1, seal_version: 2, iss: app.oidc.issuer, sub: alice });
    expect(await migrate(wallet, alice)).toBe(alice);
    expect(await getWallet(table, wallet.wallet_id)).toMatchObject({ version: 2, seal_version: 2, iss: app.oidc.issuer, sub: alice });
    // The migrated wallet is bound: another sign by alice works.
    const again = await withWalletKey(
      deps(),
      app,
      { op_jwt: await opJwt(alice), access_key: wallet.access_key, wallet_id: wallet.wallet_id },
      () => 'signed',
      SIGN_MESSAGE,
    );
    expect(again).toBe('signed');
  });

  it("holding alice's v1 credentials is not enough: mallory's op_jwt is 403 WALLET_IDENTITY_MISMATCH, nothing signed, the wallet stays v1", async () => {
    const alice = `alice-${randomUUID()}`;
    const wallet = await newV1(alice);
    const operation = vi.fn(() => 'signed');
    await expect(migrate(wallet, `mallory-${randomUUID()}`, operation)).rejects.toMatchObject({ status: 403, code: 'WALLET_IDENTITY_MISMATCH' });
    expect(operation).not.toHaveBeenCalled();
    expect(await getWallet(table, wallet.wallet_id)).toMatchObject({ version: 1, sub: alice });
  });

  it('a v1 wallet created without auth_jwt names no user: migration is 409 V1_OWNER_UNKNOWN and changes nothing; v1 signing still works', async () => {
    const wallet = await newV1();
    const stored = await getWallet(table, wallet.wallet_id);
    expect(stored).not.toHaveProperty('sub');
    const operation = vi.fn(() => 'signed');
    await expect(migrate(wallet, `anyone-${randomUUID()}`, operation)).rejects.toMatchObject({ status: 409, code: 'V1_OWNER_UNKNOWN' });
    expect(operation).not.toHaveBeenCalled();
    expect(await getWallet(table, wallet.wallet_id)).toEqual(stored);
    const v1 = await withV1WalletKey(
      deps(),
      app,
      { encryption_context: CONTEXT, access_key: wallet.access_key, wallet_id: wallet.wallet_id },
      () => 'v1-signed',
    );
    expect(v1).toBe('v1-signed');
  });

  it('an edited owner on the v1 item (sub → mallory) fails to authenticate: 500 WALLET_INTEGRITY_FAILED, nothing signed, still v1', async () => {
    const wallet = await newV1(`alice-${randomUUID()}`);
    const mallory = `mallory-${randomUUID()}`;
    await editWallet(wallet.wallet_id, 'SET #sub = :sub', { ':sub': mallory });
    const operation = vi.fn(() => 'signed');
    await expect(migrate(wallet, mallory, operation)).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
    expect(operation).not.toHaveBeenCalled();
    expect(await getWallet(table, wallet.wallet_id)).toMatchObject({ version: 1 });
  });

  it('an owner added to a v1 item created without one is refused (no binding tag: 500), and stripping the tag too is refused', async () => {
    const wallet = await newV1();
    const mallory = `mallory-${randomUUID()}`;
    await editWallet(wallet.wallet_id, 'SET #iss = :iss, #sub = :sub, #seal_version = :seal', { ':iss': app.oidc.issuer, ':sub': mallory, ':seal': 2 });
    await expect(migrate(wallet, mallory)).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
    const owned = await newV1(`alice-${randomUUID()}`);
    await editWallet(owned.wallet_id, 'REMOVE #v1.#binding_tag');
    await expect(migrate(owned, mallory)).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
    // Still the v1 item as edited (not migrated), which reads as no wallet record at all.
    await expect(getWallet(table, owned.wallet_id)).rejects.toMatchObject({ code: 'WALLET_INTEGRITY_FAILED' });
  });
});
