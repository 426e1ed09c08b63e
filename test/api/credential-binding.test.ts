import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { importJWK, type JWK, SignJWT } from 'jose';
import { keccak256, recoverAddress, stringToBytes } from 'viem';
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import { type ApiResponse, appOne, appTwo, call, expectErrorShape, mintToken, sandbox, uniqueUser } from './support/client.ts';
import type { TestApp } from './support/global-setup.ts';

/**
 * Issue 21, parts 1 and 2: a credential works only where it was meant to. A user JWT must be for
 * this app's client (`aud`), carry `iat` and be at most a day old; an op_jwt signs once, and only
 * for the app it was issued for.
 */
async function createWallet(app: TestApp, sub: string) {
  const response = await call('enclave', 'POST', '/v2/api/wallet', {
    headers: { 'x-service-secret-key': app.secret_key },
    json: { auth_jwt: await mintToken(app, sub), network: 'ETH', wallet_group_id: 'binding' },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body as { wallet_id: string; access_key: string; public_address: `0x${string}` };
}

function signData(app: TestApp, wallet: { wallet_id: string; access_key: string }, opJwt: string, hash: string): Promise<ApiResponse> {
  return call('enclave', 'POST', '/v2/api/wallet/sign_data', {
    headers: { 'x-service-secret-key': app.secret_key },
    json: { op_jwt: opJwt, access_key: wallet.access_key, wallet_id: wallet.wallet_id, raw_data_hash: hash },
  });
}

function expectRefused(response: ApiResponse, code: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(401);
  expect(expectErrorShape(response.body).code).toBe(code);
  expect(response.body).not.toHaveProperty('signature');
}

describe('user JWTs: audience and iat', () => {
  const foreignTokens = async (sub: string) => [
    await mintToken(appOne, sub, { audience: 'some-other-client' }),
    await mintToken(appOne, sub, { audience: null }),
    await mintToken(appOne, sub, { iat: null }),
  ];

  it('a token of the same issuer for another client, without aud or without iat is 401 at every entrance', async () => {
    const sub = uniqueUser('aud');
    for (const token of await foreignTokens(sub)) {
      const account = await call('account', 'POST', '/account', { headers: { authorization: `Bearer ${token}`, 'x-service-secret-key': appOne.secret_key } });
      expect(account.status).toBe(401);
      expect(expectErrorShape(account.body).code).toBe('INVALID_TOKEN');
      const enclave = await call('enclave', 'POST', '/v2/api/wallet', {
        headers: { 'x-service-secret-key': appOne.secret_key },
        json: { auth_jwt: token, network: 'ETH', wallet_group_id: 'binding' },
      });
      expect(enclave.status).toBe(401);
      expect(expectErrorShape(enclave.body).code).toBe('INVALID_TOKEN');
      const express = await call('express', 'POST', '/v2/wallet', {
        headers: { authorization: `Bearer ${token}`, 'x-service-api-key': appOne.api_key, 'x-oidc-provider-id': appOne.provider_id, 'x-service-chain': 'ETH' },
      });
      expect(express.status).toBe(401);
      expect(JSON.stringify(express.body)).not.toContain(token);
    }
    const account = await call('account', 'GET', '/account', {
      headers: { authorization: `Bearer ${await mintToken(appOne, sub)}`, 'x-service-secret-key': appOne.secret_key },
    });
    expect(account.status).toBe(404);
  });
});

describe('op_jwt: single use', () => {
  const sub = uniqueUser('replay');
  let wallet: Awaited<ReturnType<typeof createWallet>>;
  beforeAll(async () => {
    wallet = await createWallet(appOne, sub);
  });

  it('the same op_jwt sent five times signs once; the others are 401 OP_JWT_REPLAYED with no signature', async () => {
    const hash = keccak256(stringToBytes('replayed'));
    const opJwt = await mintToken(appOne, sub, { ttlSeconds: 120 });
    const first = await signData(appOne, wallet, opJwt, hash);
    expect(first.status).toBe(200);
    expect(await recoverAddress({ hash, signature: first.body.signature })).toBe(wallet.public_address);
    for (let attempt = 0; attempt < 4; attempt++) {
      const again = await signData(appOne, wallet, opJwt, hash);
      expectRefused(again, 'OP_JWT_REPLAYED');
      expect(JSON.stringify(again.body)).not.toContain(opJwt);
    }
    // A fresh op_jwt signs again.
    expect((await signData(appOne, wallet, await mintToken(appOne, sub, { ttlSeconds: 120 }), hash)).status).toBe(200);
  });

  it('five concurrent uses of one op_jwt: exactly one signature', async () => {
    const hash = keccak256(stringToBytes('raced'));
    const opJwt = await mintToken(appOne, sub, { ttlSeconds: 120 });
    const responses = await Promise.all(Array.from({ length: 5 }, () => signData(appOne, wallet, opJwt, hash)));
    expect(responses.filter((response) => response.status === 200)).toHaveLength(1);
    for (const response of responses.filter((r) => r.status !== 200)) expectRefused(response, 'OP_JWT_REPLAYED');
  });

  it('an op_jwt without jti is 401 INVALID_OP_JWT and signs nothing', async () => {
    const response = await signData(appOne, wallet, await mintToken(appOne, sub, { ttlSeconds: 120, jti: null }), keccak256(stringToBytes('no jti')));
    expectRefused(response, 'INVALID_OP_JWT');
    expect(expectErrorShape(response.body).message).toContain('"jti"');
  });
});

/**
 * Every app trusts the platform's op_jwt key. Two tenants that share an issuer and audience would
 * accept each other's platform-signed op_jwts, were the token not bound to its app (`app_id`). The
 * local runtime keeps that key in its DATA_DIR, so this runs against local sandboxes only.
 */
describe.skipIf(!sandbox.dataDir)('op_jwt: bound to the app it was issued for', () => {
  let platformKey: JWK;
  beforeAll(async () => {
    // The file may hold the private JWK without kid: describeEs256Jwk adds the thumbprint kid the apps trust.
    platformKey = (await describeEs256Jwk(JSON.parse(await readFile(join(sandbox.dataDir, 'runtime', 'keys', 'op-jwt-signer.jwk.json'), 'utf8')) as JWK))
      .privateJwk;
  });

  async function platformOpJwt(app: TestApp, sub: string, appId: string | undefined) {
    const iat = Math.floor(Date.now() / 1000);
    // `channel: account`, as the account service mints them: a platform op_jwt without it is the express
    // channel, where the built-in policy refuses sign_data (issue 22).
    return new SignJWT({ jti: crypto.randomUUID(), channel: 'account', ...(appId === undefined ? {} : { app_id: appId }) })
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: platformKey.kid! })
      .setIssuer(app.issuer)
      .setAudience(app.audience)
      .setSubject(sub)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 120)
      .sign(await importJWK(platformKey, 'ES256'));
  }

  it("app B refuses a platform op_jwt issued for app A (or naming no app), even with B's issuer and audience", async () => {
    const sub = uniqueUser('cross-app');
    const wallet = await createWallet(appTwo, sub);
    const hash = keccak256(stringToBytes('cross-app'));
    for (const appId of [appOne.app_id, undefined]) {
      const refused = await signData(appTwo, wallet, await platformOpJwt(appTwo, sub, appId), hash);
      expectRefused(refused, 'INVALID_OP_JWT');
    }
    // The same token for app B itself signs: the refusal is the binding, not the key.
    const own = await signData(appTwo, wallet, await platformOpJwt(appTwo, sub, appTwo.app_id), hash);
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(await recoverAddress({ hash, signature: own.body.signature })).toBe(wallet.public_address);
  });
});
