import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Application } from '../../shared/apps/application.ts';
import { DEFAULT_V1_RETIREMENT } from '../../shared/config.ts';
import type { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import type { Table } from '../../shared/db/client.ts';
import { getItem } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { createWallet, type EnclaveDeps } from '../../shared/enclave/create-wallet.ts';
import { listPolicyDecisions } from '../../shared/enclave/policy-log.ts';
import { currentPolicy, putPolicy } from '../../shared/enclave/policy-store.ts';
import { withWalletKey } from '../../shared/enclave/use-wallet.ts';
import { PolicyDeniedError } from '../../shared/errors.ts';
import { logger } from '../../shared/logger.ts';
import type { Policy } from '../../shared/policies/policy.ts';
import { startEnclaveFixture } from './support/enclave-fixture.ts';
import { signTestOpJwt } from './support/op-jwt.ts';

/**
 * Issue 22 in the enclave's signing path (withWalletKey): the policy is read from the table and
 * decides after the op_jwt and access-key checks, before the key is unwrapped. And the store:
 * every PUT a kept version, concurrent PUTs distinct versions.
 */
let table: Table;
let stop: () => Promise<void>;
let keyWrapper: LocalKeyWrapper;
let issuerKey: JWK;
let app: Application;
const deps = (): EnclaveDeps => ({ table, keyWrapper, now: () => new Date(), v1RetiresAt: new Date(DEFAULT_V1_RETIREMENT) });
const opJwt = (sub: string) => signTestOpJwt(issuerKey, { iss: app.oidc.issuer, aud: 'policy-api', sub });
const HASH = `0x${'ab'.repeat(32)}`;
const NO_RAW_HASHES: Policy = {
  mode: 'enforce',
  rules: [
    { id: 'messages', action: 'allow', operations: ['sign_message'] },
    { id: 'no-raw', action: 'deny', operations: ['sign_data'] },
  ],
};

beforeAll(async () => {
  ({ table, stop, keyWrapper, issuerKey, app } = await startEnclaveFixture('policy-enforcement', {
    appId: 'policy-app',
    issuer: 'https://idp.policy.test',
    audience: 'policy-api',
  }));
});
afterAll(() => stop());

describe('policy store', () => {
  it('keeps every version; CURRENT is the latest; concurrent PUTs get distinct consecutive versions', async () => {
    const appId = 'store-app';
    expect(await currentPolicy(table, appId)).toBeUndefined();
    expect(await putPolicy(table, appId, NO_RAW_HASHES, new Date())).toEqual({ version: 1 });
    const results = await Promise.all(Array.from({ length: 6 }, () => putPolicy(table, appId, { ...NO_RAW_HASHES, mode: 'shadow' }, new Date())));
    expect(results.map((result) => result.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(await currentPolicy(table, appId)).toEqual({ version: 7, policy: { ...NO_RAW_HASHES, mode: 'shadow' } });
    for (let version = 1; version <= 7; version++) expect((await getItem(table, keys.policyVersion(appId, version)))?.version).toBe(version);
    expect(keys.policyVersion(appId, 7).sk).toBe('V#0000000007');
  });
});

describe('withWalletKey and the policy', () => {
  it('a denial is 403 POLICY_DENIED naming the rule, after the op_jwt is spent and before anything is unwrapped', async () => {
    await putPolicy(table, app.app_id, NO_RAW_HASHES, new Date());
    const sub = 'alice';
    const wallet = await createWallet(deps(), { app, identity: { iss: app.oidc.issuer, sub }, network: 'ETH', walletGroupId: 'g' });
    const auth = async () => ({ op_jwt: await opJwt(sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id });
    const operation = vi.fn(() => 'signed');
    const unwrap = vi.spyOn(keyWrapper, 'decryptDataKey');
    try {
      const denied = withWalletKey(deps(), app, await auth(), operation, { operation: 'sign_data', body: { raw_data_hash: HASH } });
      await expect(denied).rejects.toBeInstanceOf(PolicyDeniedError);
      await expect(denied).rejects.toMatchObject({ status: 403, code: 'POLICY_DENIED', ruleId: 'no-raw', fields: { rule_id: 'no-raw' } });
      // Not allowed by any rule: denied with rule_id null.
      const unlisted = withWalletKey(deps(), app, await auth(), operation, { operation: 'sign_transaction', body: { transaction: 'AAAA' } });
      await expect(unlisted).rejects.toMatchObject({ code: 'POLICY_DENIED', ruleId: null });
      expect(unwrap).not.toHaveBeenCalled();
      expect(operation).not.toHaveBeenCalled();
      // A wrong access key is refused before the policy is asked (its answer says nothing of the policy).
      const wrongKey = withWalletKey(deps(), app, { ...(await auth()), access_key: 'not-the-key' }, operation, { operation: 'sign_data', body: {} });
      await expect(wrongKey).rejects.toMatchObject({ code: 'INVALID_ACCESS_KEY' });
      expect(await withWalletKey(deps(), app, await auth(), operation, { operation: 'sign_message', body: { message: 'hi', encoding: 'utf8' } })).toBe(
        'signed',
      );
    } finally {
      unwrap.mockRestore();
    }
  });

  it('shadow mode signs a would-be denial and logs it at WARN with the rule and operation, not the body', async () => {
    await putPolicy(table, app.app_id, { ...NO_RAW_HASHES, mode: 'shadow' }, new Date());
    const sub = 'bob';
    const wallet = await createWallet(deps(), { app, identity: { iss: app.oidc.issuer, sub }, network: 'ETH', walletGroupId: 'g' });
    const warn = vi.spyOn(logger, 'warn');
    try {
      const signed = await withWalletKey(
        deps(),
        app,
        { op_jwt: await opJwt(sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id },
        () => 'signed',
        {
          operation: 'sign_data',
          body: { raw_data_hash: HASH },
        },
      );
      expect(signed).toBe('signed');
      expect(warn).toHaveBeenCalledWith(
        expect.stringContaining('shadow'),
        expect.objectContaining({ rule_id: 'no-raw', operation: 'sign_data', channel: 'enclave' }),
      );
      expect(JSON.stringify(warn.mock.calls)).not.toContain(HASH);
    } finally {
      warn.mockRestore();
    }
  });

  it('an app without a policy gets the built-in default: everything on the enclave channel', async () => {
    const other: Application = { ...app, app_id: 'no-policy-app' };
    const wallet = await createWallet(deps(), { app: other, identity: { iss: app.oidc.issuer, sub: 'carol' }, network: 'ETH', walletGroupId: 'g' });
    const signed = await withWalletKey(
      deps(),
      other,
      { op_jwt: await opJwt('carol'), access_key: wallet.access_key, wallet_id: wallet.wallet_id },
      () => 'signed',
      {
        operation: 'sign_data',
        body: { raw_data_hash: HASH },
      },
    );
    expect(signed).toBe('signed');
  });

  it('the overlapped round trips keep their order and guarantees: a replay is reported before a missing wallet; no signature leaves without its audit-log entry, and the key is zeroed', async () => {
    const other: Application = { ...app, app_id: 'overlap-app' };
    const sub = 'dave';
    const wallet = await createWallet(deps(), { app: other, identity: { iss: app.oidc.issuer, sub }, network: 'ETH', walletGroupId: 'g' });
    const request = { operation: 'sign_data' as const, body: { raw_data_hash: HASH } };
    // A spent op_jwt naming a wallet that does not exist: the replay is what the caller hears.
    const token = await opJwt(sub);
    await withWalletKey(deps(), other, { op_jwt: token, access_key: wallet.access_key, wallet_id: wallet.wallet_id }, () => 'signed', request);
    const replayed = withWalletKey(deps(), other, { op_jwt: token, access_key: wallet.access_key, wallet_id: 'no-such-wallet' }, () => 'signed', request);
    await expect(replayed).rejects.toMatchObject({ code: 'OP_JWT_REPLAYED' });
    await expect(
      withWalletKey(deps(), other, { op_jwt: await opJwt(sub), access_key: 'x', wallet_id: 'no-such-wallet' }, () => 'x', request),
    ).rejects.toMatchObject({
      code: 'WALLET_NOT_FOUND',
    });

    // The decision log's put fails (while the key is being unwrapped): no signature is returned.
    const send = table.doc.send.bind(table.doc);
    const failLog = vi
      .spyOn(table.doc, 'send')
      .mockImplementation(((command: { input?: { Item?: { pk?: string } } }) =>
        String(command.input?.Item?.pk ?? '').startsWith(keys.policyDecisionsOf(other.app_id))
          ? Promise.reject(new Error('audit log unavailable'))
          : send(command as never)) as never);
    let seen: Buffer | undefined;
    try {
      const operation = vi.fn((_: unknown, secret: Buffer) => {
        seen = secret;
        return 'signed';
      });
      const refused = withWalletKey(
        deps(),
        other,
        { op_jwt: await opJwt(sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id },
        operation,
        request,
      );
      await expect(refused).rejects.toThrow('audit log unavailable');
      expect(operation).not.toHaveBeenCalled();
    } finally {
      failLog.mockRestore();
    }
    // With the log back, the operation gets the key, which is zeroed once it returns.
    const signed = await withWalletKey(
      deps(),
      other,
      { op_jwt: await opJwt(sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id },
      (_, secret) => {
        seen = secret;
        expect(secret.some((byte) => byte !== 0)).toBe(true);
        return 'signed';
      },
      request,
    );
    expect(signed).toBe('signed');
    expect(seen?.every((byte) => byte === 0)).toBe(true);
  });

  it('native coins count through the price source: 0.002 ETH (6 USD) within max_usd_per_tx 10, 0.004 ETH (12 USD) over it; no price refuses', async () => {
    const other: Application = { ...app, app_id: 'native-usd-app' };
    await putPolicy(
      table,
      other.app_id,
      { mode: 'enforce', rules: [{ id: 'small', action: 'allow', operations: ['sign_transaction'], max_usd_per_tx: '10' }] },
      new Date(),
    );
    const sub = 'erin';
    const wallet = await createWallet(deps(), { app: other, identity: { iss: app.oidc.issuer, sub }, network: 'ETH', walletGroupId: 'g' });
    const chains = { ETH: { family: 'evm', chain_id: 1, tokens: {} } };
    const prices = { usdPrice: vi.fn(async () => 3_000_000_000n) };
    const send = (wei: string, source: typeof prices | { usdPrice: () => Promise<bigint> }) => ({
      operation: 'sign_transaction' as const,
      body: { transaction: { chainId: 1, to: '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045', value: wei } },
      chains,
      prices: source,
    });
    const auth = async () => ({ op_jwt: await opJwt(sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id });
    expect(await withWalletKey(deps(), other, await auth(), () => 'signed', send('2000000000000000', prices))).toBe('signed');
    await expect(withWalletKey(deps(), other, await auth(), () => 'signed', send('4000000000000000', prices))).rejects.toMatchObject({
      code: 'POLICY_DENIED',
    });
    // The audit log records the priced value of each: 6 USD allowed, 12 USD denied.
    expect((await listPolicyDecisions(table, other.app_id, 2)).map((entry) => [entry.decision, entry.usd])).toEqual([
      ['deny', '12'],
      ['allow', '6'],
    ]);
    expect(prices.usdPrice).toHaveBeenCalledWith('ETH');
    const stale = { usdPrice: () => Promise.reject(new Error('PRICE_UNAVAILABLE')) };
    await expect(withWalletKey(deps(), other, await auth(), () => 'signed', send('1', stale))).rejects.toMatchObject({
      code: 'POLICY_DENIED',
      message: expect.stringContaining('(the ETH price is unavailable)'),
    });
    // A policy without USD limits never asks for a price.
    await putPolicy(table, other.app_id, { mode: 'enforce', rules: [{ id: 'any', action: 'allow', operations: ['sign_transaction'] }] }, new Date());
    prices.usdPrice.mockClear();
    expect(await withWalletKey(deps(), other, await auth(), () => 'signed', send('4000000000000000', prices))).toBe('signed');
    expect(prices.usdPrice).not.toHaveBeenCalled();
  });
});
