import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Application } from '../../shared/apps/application.ts';
import { recordOpJwtUse } from '../../shared/auth/op-jwt-replay.ts';
import { DEFAULT_V1_RETIREMENT } from '../../shared/config.ts';
import type { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import type { Table } from '../../shared/db/client.ts';
import { getItem } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { TABLE_TTL_ATTRIBUTE } from '../../shared/db/table-definition.ts';
import { createWallet, type EnclaveDeps } from '../../shared/enclave/create-wallet.ts';
import { withWalletKey } from '../../shared/enclave/use-wallet.ts';
import { UnauthorizedError } from '../../shared/errors.ts';
import { startEnclaveFixture } from './support/enclave-fixture.ts';
import { signTestOpJwt } from './support/op-jwt.ts';
import { SIGN_MESSAGE } from './support/signing-request.ts';

/** An op_jwt is good for one signing call: its jti is recorded (conditional put, TTL = its exp). */
let table: Table;
let stop: () => Promise<void>;
let keyWrapper: LocalKeyWrapper;
let issuerKey: JWK;
let app: Application;
const deps = (): EnclaveDeps => ({ table, keyWrapper, now: () => new Date(), v1RetiresAt: new Date(DEFAULT_V1_RETIREMENT) });

const opJwt = (sub: string, claims: Record<string, unknown> = {}) => signTestOpJwt(issuerKey, { iss: app.oidc.issuer, aud: 'replay-api', sub, extra: claims });

beforeAll(async () => {
  ({ table, stop, keyWrapper, issuerKey, app } = await startEnclaveFixture('op-jwt-replay', {
    appId: 'replay-app',
    issuer: 'https://idp.replay.test',
    audience: 'replay-api',
  }));
});
afterAll(() => stop());

describe('recordOpJwtUse', () => {
  it('records the first use under OPJWT#<app_id>#<jti> with the TTL attribute at exp; a second is 401 OP_JWT_REPLAYED', async () => {
    const exp = Math.floor(Date.now() / 1000) + 120;
    await recordOpJwtUse(table, { appId: 'acme', jti: 'jti-1', exp });
    const key = keys.opJwtUse('acme', 'jti-1');
    expect(key).toEqual({ pk: 'OPJWT#acme#jti-1', sk: 'OPJWT' });
    const item = await getItem(table, key);
    expect(item?.[TABLE_TTL_ATTRIBUTE]).toBe(exp);
    const again = recordOpJwtUse(table, { appId: 'acme', jti: 'jti-1', exp });
    await expect(again).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(again).rejects.toMatchObject({ status: 401, code: 'OP_JWT_REPLAYED' });
    // The same jti in another app is another token.
    await expect(recordOpJwtUse(table, { appId: 'other', jti: 'jti-1', exp })).resolves.toBeUndefined();
  });

  it('of ten concurrent uses, exactly one is recorded', async () => {
    const exp = Math.floor(Date.now() / 1000) + 120;
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => recordOpJwtUse(table, { appId: 'acme', jti: 'race', exp })));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
  });
});

describe('withWalletKey and a replayed op_jwt', () => {
  it('signs once; the second use is refused before the key is unwrapped and the operation runs', async () => {
    const sub = `user-${crypto.randomUUID()}`;
    const wallet = await createWallet(deps(), { app, identity: { iss: app.oidc.issuer, sub }, network: 'ETH', walletGroupId: 'g' });
    const auth = { op_jwt: await opJwt(sub), access_key: wallet.access_key, wallet_id: wallet.wallet_id };
    const operation = vi.fn(() => 'signed');
    expect(await withWalletKey(deps(), app, auth, operation, SIGN_MESSAGE)).toBe('signed');
    const unwrap = vi.spyOn(keyWrapper, 'decryptDataKey');
    const replay = withWalletKey(deps(), app, auth, operation, SIGN_MESSAGE);
    await expect(replay).rejects.toMatchObject({ status: 401, code: 'OP_JWT_REPLAYED' });
    expect(operation).toHaveBeenCalledTimes(1);
    expect(unwrap).not.toHaveBeenCalled();
    unwrap.mockRestore();
    // A fresh op_jwt for the same user signs again.
    expect(await withWalletKey(deps(), app, { ...auth, op_jwt: await opJwt(sub) }, operation, SIGN_MESSAGE)).toBe('signed');
  });

  it('an op_jwt without jti is 401 INVALID_OP_JWT and records nothing', async () => {
    const sub = `user-${crypto.randomUUID()}`;
    const wallet = await createWallet(deps(), { app, identity: { iss: app.oidc.issuer, sub }, network: 'ETH', walletGroupId: 'g' });
    const operation = vi.fn(() => 'signed');
    const auth = { op_jwt: await opJwt(sub, { jti: undefined }), access_key: wallet.access_key, wallet_id: wallet.wallet_id };
    await expect(withWalletKey(deps(), app, auth, operation, SIGN_MESSAGE)).rejects.toMatchObject({ status: 401, code: 'INVALID_OP_JWT' });
    expect(operation).not.toHaveBeenCalled();
  });
});
