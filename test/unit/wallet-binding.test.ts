import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashSecret } from '../../shared/apps/app-registry.ts';
import type { Application } from '../../shared/apps/application.ts';
import { generateEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import { sealSecrets } from '../../shared/crypto/secret-box.ts';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { createWallet, type EnclaveDeps } from '../../shared/enclave/create-wallet.ts';
import { withWalletKey } from '../../shared/enclave/use-wallet.ts';
import { addressOf, generateSecret } from '../../shared/enclave/wallet-keys.ts';
import { deriveWalletId, getWallet, walletEncryptionContext } from '../../shared/enclave/wallet-record.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';
import { signTestOpJwt } from './support/op-jwt.ts';
import { SIGN_MESSAGE } from './support/signing-request.ts';

/**
 * Issue 21 §3: everything that decides who may use a wallet is authenticated with its sealed key,
 * so a wallet item edited in the table fails to open and nothing is signed.
 */
const NOW = new Date('2026-11-25T12:00:00Z');
let table: Table;
let stop: () => Promise<void>;
let keyWrapper: LocalKeyWrapper;
let keyDir: string;
let issuerKey: JWK;
let appOne: Application;
let appTwo: Application;
const deps = (): EnclaveDeps => ({ table, keyWrapper, now: () => NOW, v1RetiresAt: new Date('2026-08-01T00:00:00Z') });

function application(appId: string, publicJwk: JWK): Application {
  return {
    app_id: appId,
    created_at: '2026-01-01T00:00:00Z',
    oidc: { provider_id: 'idp', issuer: 'https://idp.binding.test', audience: 'binding-client', jwks: { keys: [publicJwk] } },
    secret_key_hash: '00',
    api_key_hash: '00',
    trusted_keys: [],
    default_wallet_group_id: 'default',
  };
}

const opJwt = (sub: string) => signTestOpJwt(issuerKey, { iss: appOne.oidc.issuer, aud: 'binding-client', sub, now: NOW });

beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('wallet-binding-unit'));
  keyDir = await mkdtemp(join(tmpdir(), 'wallet-binding-'));
  keyWrapper = new LocalKeyWrapper(keyDir, 'enclave');
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  issuerKey = privateJwk;
  appOne = application('binding-app-one', publicJwk);
  appTwo = application('binding-app-two', publicJwk);
});
afterAll(async () => {
  await stop();
  await rm(keyDir, { recursive: true, force: true });
});

const REMOVE = Symbol('remove');
async function editWallet(walletId: string, edits: Record<string, unknown>) {
  const set = Object.entries(edits).filter(([, value]) => value !== REMOVE);
  const remove = Object.entries(edits).filter(([, value]) => value === REMOVE);
  const names = Object.fromEntries(Object.keys(edits).map((name, index) => [`#a${index}`, name]));
  const alias = (name: string) => `#a${Object.keys(edits).indexOf(name)}`;
  const parts = [
    set.length ? `SET ${set.map(([name], index) => `${alias(name)} = :v${index}`).join(', ')}` : '',
    remove.length ? `REMOVE ${remove.map(([name]) => alias(name)).join(', ')}` : '',
  ];
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: keys.wallet(walletId),
      UpdateExpression: parts.filter(Boolean).join(' '),
      ExpressionAttributeNames: names,
      ...(set.length ? { ExpressionAttributeValues: Object.fromEntries(set.map(([, value], index) => [`:v${index}`, value])) } : {}),
    }),
  );
}

async function aliceWallet(network = 'ETH') {
  const sub = `alice-${randomUUID()}`;
  const wallet = await createWallet(deps(), { app: appOne, identity: { iss: appOne.oidc.issuer, sub }, network, walletGroupId: 'default' });
  return { sub, ...wallet };
}

const CHOSEN_KEY = 'mallory-chosen-access-key';

/**
 * Each edit, and the best credentials an attacker has for it: an op_jwt for the edited `sub`, the
 * key whose hash was written, the app the item was moved to. Where those pass the checks made on
 * the plain attributes, only the seal can stop the sign: 500 WALLET_INTEGRITY_FAILED.
 */
const TAMPERINGS: Array<{ name: string; edits: Record<string, unknown>; expected: { status: number; code: string } }> = [
  { name: 'sub', edits: { sub: 'mallory' }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
  { name: 'access_key_hash', edits: { access_key_hash: hashSecret(CHOSEN_KEY) }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
  {
    name: 'sub and access_key_hash (the reported attack)',
    edits: { sub: 'mallory', access_key_hash: hashSecret(CHOSEN_KEY) },
    expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' },
  },
  // The op_jwt can only name the app's issuer: refused before the seal is even tried.
  { name: 'iss', edits: { iss: 'https://other-idp.test' }, expected: { status: 403, code: 'WALLET_IDENTITY_MISMATCH' } },
  { name: 'app_id', edits: { app_id: 'binding-app-two' }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
  { name: 'wallet_group_id', edits: { wallet_group_id: 'other-group' }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
  { name: 'family', edits: { family: 'sol' }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
  {
    name: 'public_address',
    edits: { public_address: '0x00000000000000000000000000000000DeaDBeef' },
    expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' },
  },
  { name: 'version (2 → 1)', edits: { version: 1 }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
  { name: 'version (2 → 3)', edits: { version: 3 }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
  { name: 'seal_version removed (downgrade to the old seal)', edits: { seal_version: REMOVE }, expected: { status: 500, code: 'WALLET_INTEGRITY_FAILED' } },
];

describe('wallet binding sealed with the key (issue 21 §3)', () => {
  it('a new wallet records seal_version 2, and its owner signs', async () => {
    const wallet = await aliceWallet();
    expect(await getWallet(table, wallet.wallet_id)).toMatchObject({ version: 2, seal_version: 2 });
    const signed = await withWalletKey(
      deps(),
      appOne,
      { op_jwt: await opJwt(wallet.sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id },
      () => 'signed',
      SIGN_MESSAGE,
    );
    expect(signed).toBe('signed');
  });

  for (const { name, edits, expected } of TAMPERINGS) {
    it(`an edited ${name} fails the sign (${expected.status} ${expected.code}) and signs nothing`, async () => {
      const wallet = await aliceWallet();
      await editWallet(wallet.wallet_id, edits);
      const app = edits.app_id === 'binding-app-two' ? appTwo : appOne;
      const sub = typeof edits.sub === 'string' ? edits.sub : wallet.sub;
      const accessKey = 'access_key_hash' in edits ? CHOSEN_KEY : wallet.access_key;
      const operation = vi.fn(() => 'signed');
      const attempt = withWalletKey(deps(), app, { op_jwt: await opJwt(sub), access_key: accessKey, wallet_id: wallet.wallet_id }, operation, SIGN_MESSAGE);
      await expect(attempt).rejects.toMatchObject(expected);
      expect(operation).not.toHaveBeenCalled();
    });
  }

  it('the integrity error names nothing internal', async () => {
    const wallet = await aliceWallet();
    await editWallet(wallet.wallet_id, { sub: 'mallory' });
    const error = await withWalletKey(
      deps(),
      appOne,
      { op_jwt: await opJwt('mallory'), access_key: wallet.access_key, wallet_id: wallet.wallet_id },
      () => 0,
      SIGN_MESSAGE,
    ).catch((caught: Error) => caught);
    expect(error).toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
    for (const secret of [wallet.access_key, wallet.sub, 'mallory', 'sub', 'Decrypt', 'Ciphertext', 'aad'])
      expect((error as Error).message).not.toContain(secret);
  });

  it('a sealed key moved from another wallet item does not open', async () => {
    const [victim, mine] = await Promise.all([aliceWallet(), aliceWallet()]);
    const victimItem = await getWallet(table, victim.wallet_id);
    await editWallet(mine.wallet_id, { sealed: (victimItem as { sealed: unknown }).sealed });
    const operation = vi.fn(() => 'signed');
    const attempt = withWalletKey(
      deps(),
      appOne,
      { op_jwt: await opJwt(mine.sub), access_key: mine.access_key, wallet_id: mine.wallet_id },
      operation,
      SIGN_MESSAGE,
    );
    await expect(attempt).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
    expect(operation).not.toHaveBeenCalled();
  });

  it('get-or-create does not hand out the access key of an edited item', async () => {
    const wallet = await aliceWallet();
    await editWallet(wallet.wallet_id, { access_key_hash: hashSecret(CHOSEN_KEY) });
    const again = createWallet(deps(), { app: appOne, identity: { iss: appOne.oidc.issuer, sub: wallet.sub }, network: 'ETH', walletGroupId: 'default' });
    await expect(again).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
  });
});

/** A v2 wallet as stored before the binding (seal 1: only purpose, app and wallet authenticated). */
async function putLegacyWallet(sub: string, options: { walletId?: string; migrated?: boolean } = {}) {
  const walletId = options.walletId ?? deriveWalletId(appOne.app_id, { iss: appOne.oidc.issuer, sub }, 'default', 'evm');
  const secret = generateSecret('evm');
  const accessKey = randomBytes(32).toString('base64url');
  const sealed = await sealSecrets(keyWrapper, walletEncryptionContext({ app_id: appOne.app_id, wallet_id: walletId }), {
    private_key: secret,
    access_key: Buffer.from(accessKey, 'utf8'),
  });
  const record = {
    ...keys.wallet(walletId),
    wallet_id: walletId,
    version: 2,
    app_id: appOne.app_id,
    iss: appOne.oidc.issuer,
    sub,
    wallet_group_id: 'default',
    family: 'evm',
    public_address: addressOf('evm', secret),
    sealed,
    access_key_hash: hashSecret(accessKey),
    created_at: '2026-05-01T00:00:00.000Z',
    ...(options.migrated ? { migrated_at: '2026-06-01T00:00:00.000Z' } : {}),
  };
  await table.doc.send(new PutCommand({ TableName: table.name, Item: record }));
  return { walletId, accessKey, address: record.public_address, wrappedKey: sealed.wrapped_key };
}

describe('wallets sealed before the binding (seal 1)', () => {
  it('keep working: the first use checks them and re-seals them with the binding', async () => {
    const sub = `legacy-${randomUUID()}`;
    const legacy = await putLegacyWallet(sub);
    const address = await withWalletKey(
      deps(),
      appOne,
      { op_jwt: await opJwt(sub), access_key: legacy.accessKey, wallet_id: legacy.walletId },
      (w) => w.public_address,
      SIGN_MESSAGE,
    );
    expect(address).toBe(legacy.address);
    const stored = await getWallet(table, legacy.walletId);
    expect(stored).toMatchObject({ version: 2, seal_version: 2, sub, public_address: legacy.address });
    expect((stored as { sealed: { wrapped_key: string } }).sealed.wrapped_key).not.toBe(legacy.wrappedKey);
    // Get-or-create hands back the same access key.
    const again = await createWallet(deps(), { app: appOne, identity: { iss: appOne.oidc.issuer, sub }, network: 'ETH', walletGroupId: 'default' });
    expect(again).toMatchObject({ wallet_id: legacy.walletId, access_key: legacy.accessKey });
    // From then on the binding holds.
    await editWallet(legacy.walletId, { sub: 'mallory' });
    await expect(
      withWalletKey(deps(), appOne, { op_jwt: await opJwt('mallory'), access_key: legacy.accessKey, wallet_id: legacy.walletId }, () => 'signed', SIGN_MESSAGE),
    ).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
  });

  for (const [name, edits, useChosenKey] of [
    ['sub and access_key_hash', { sub: 'mallory', access_key_hash: hashSecret(CHOSEN_KEY) }, true],
    ['sub (the wallet id derives from it)', { sub: 'mallory' }, false],
    ['access_key_hash (the sealed access key disagrees)', { access_key_hash: hashSecret(CHOSEN_KEY) }, true],
    ['public_address', { public_address: '0x00000000000000000000000000000000DeaDBeef' }, false],
    ['wallet_group_id', { wallet_group_id: 'other-group' }, false],
  ] as const) {
    it(`an edited ${name} is refused on the first use and is not re-sealed`, async () => {
      const sub = `legacy-${randomUUID()}`;
      const legacy = await putLegacyWallet(sub);
      await editWallet(legacy.walletId, edits);
      const operation = vi.fn(() => 'signed');
      const callerSub = 'sub' in edits ? edits.sub : sub;
      const attempt = withWalletKey(
        deps(),
        appOne,
        { op_jwt: await opJwt(callerSub), access_key: useChosenKey ? CHOSEN_KEY : legacy.accessKey, wallet_id: legacy.walletId },
        operation,
        SIGN_MESSAGE,
      );
      await expect(attempt).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
      expect(operation).not.toHaveBeenCalled();
      expect(await getWallet(table, legacy.walletId)).not.toHaveProperty('seal_version');
    });
  }

  it('a migrated (v1) wallet sealed before the binding: an edited access_key_hash is refused', async () => {
    const sub = `legacy-migrated-${randomUUID()}`;
    const legacy = await putLegacyWallet(sub, { walletId: randomUUID(), migrated: true });
    await editWallet(legacy.walletId, { access_key_hash: hashSecret(CHOSEN_KEY) });
    const operation = vi.fn(() => 'signed');
    await expect(
      withWalletKey(deps(), appOne, { op_jwt: await opJwt(sub), access_key: CHOSEN_KEY, wallet_id: legacy.walletId }, operation, SIGN_MESSAGE),
    ).rejects.toMatchObject({ status: 500, code: 'WALLET_INTEGRITY_FAILED' });
    expect(operation).not.toHaveBeenCalled();
  });
});
