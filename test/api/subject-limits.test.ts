import { base64url } from 'jose';
import { keccak256, recoverAddress, stringToBytes } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { chainBalance, faucet, sandboxChains } from './support/chains.ts';
import { accountHeaders, appOne, call, expectErrorShape, expressHeaders, mintToken, uniqueUser } from './support/client.ts';

/**
 * The longest `sub` accepted is 255 bytes (README, Behaviour the spec leaves open): it becomes part
 * of DynamoDB keys, whose partition key holds at most 2,048 bytes. A longer one is a 401 on every
 * service, never a 500 from the table; one of exactly 255 bytes works end to end.
 */
const MAX_SUB_BYTES = 255;
const isSandbox = (await sandboxChains()) !== undefined;

/** A unique ASCII `sub` of exactly `bytes` bytes. */
function subOf(bytes: number, label: string): string {
  const base = uniqueUser(label);
  return base + 'x'.repeat(bytes - base.length);
}

function expectRefused(response: { status: number; body: unknown }, code: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(401);
  const error = expectErrorShape(response.body);
  expect(error.code).toBe(code);
  expect(error.message).toContain('longer than 255 bytes');
}

describe('a JWT sub longer than 255 bytes (2,100 characters)', () => {
  const long = subOf(2100, 'long');

  it('account service: 401 INVALID_TOKEN on every authenticated route', async () => {
    const headers = await accountHeaders(appOne, long);
    expectRefused(await call('account', 'POST', '/account', { headers }), 'INVALID_TOKEN');
    expectRefused(await call('account', 'GET', '/account', { headers }), 'INVALID_TOKEN');
    expectRefused(await call('account', 'POST', '/wallet/sign', { headers, json: { message: 'x' } }), 'INVALID_TOKEN');
    expectRefused(await call('account', 'GET', '/demo/wallet/balance?chain=ETH', { headers }), 'INVALID_TOKEN');
    const withdraw = { to_address: privateKeyToAddress(generatePrivateKey()), amount: '1', chain: 'POL', token: 'USDC' };
    expectRefused(await call('account', 'POST', '/withdraw', { headers, json: withdraw }), 'INVALID_TOKEN');
    expectRefused(
      await call('account', 'POST', '/withdraw', { headers: { ...headers, 'idempotency-key': `k-${crypto.randomUUID()}` }, json: withdraw }),
      'INVALID_TOKEN',
    );
  });

  it('one byte over (256) is refused too, also when the bytes are two-byte characters', async () => {
    for (const sub of [subOf(MAX_SUB_BYTES + 1, 'over'), 'é'.repeat(128)]) {
      expectRefused(await call('account', 'POST', '/account', { headers: await accountHeaders(appOne, sub) }), 'INVALID_TOKEN');
    }
  });

  it('enclave: v2 create (auth_jwt) 401 INVALID_TOKEN, v2 signing (op_jwt) 401 INVALID_OP_JWT', async () => {
    const headers = { 'x-service-secret-key': appOne.secret_key };
    const create = await call('enclave', 'POST', '/v2/api/wallet', {
      headers,
      json: { auth_jwt: await mintToken(appOne, long), network: 'ETH', wallet_group_id: 'default' },
    });
    expectRefused(create, 'INVALID_TOKEN');

    const owner = uniqueUser('owner');
    const wallet = (
      await call('enclave', 'POST', '/v2/api/wallet', {
        headers,
        json: { auth_jwt: await mintToken(appOne, owner), network: 'ETH', wallet_group_id: 'default' },
      })
    ).body;
    for (const path of ['sign_data', 'sign_message']) {
      const sign = await call('enclave', 'POST', `/v2/api/wallet/${path}`, {
        headers,
        json: {
          op_jwt: await mintToken(appOne, long, { ttlSeconds: 120 }),
          access_key: wallet.access_key,
          wallet_id: wallet.wallet_id,
          raw_data_hash: keccak256(stringToBytes('x')),
          message: 'x',
        },
      });
      expectRefused(sign, 'INVALID_OP_JWT');
    }
  });

  it('enclave: a service token naming a 2,100-character app id is 401 INVALID_SERVICE_TOKEN', async () => {
    const part = (value: object) => base64url.encode(JSON.stringify(value));
    const token = `${part({ alg: 'ES256', typ: 'JWT' })}.${part({ sub: 'a'.repeat(2100), iat: 1, exp: 2 })}.${base64url.encode('sig')}`;
    const response = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-token': token },
      json: { auth_jwt: await mintToken(appOne, uniqueUser('svc')), network: 'ETH', wallet_group_id: 'default' },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(401);
    expect(expectErrorShape(response.body).code).toBe('INVALID_SERVICE_TOKEN');
  });

  it('express wallet service: 401 INVALID_TOKEN on wallet and signing', async () => {
    const headers = await expressHeaders(appOne, long, 'ETH');
    expectRefused(await call('express', 'POST', '/v2/wallet', { headers }), 'INVALID_TOKEN');
    expectRefused(await call('express', 'POST', '/v2/wallet/sign/message', { headers, json: { message: 'x' } }), 'INVALID_TOKEN');
  });
});

describe('a JWT sub of exactly 255 bytes', () => {
  it('works on all three services: one wallet, whichever door', async () => {
    const sub = subOf(MAX_SUB_BYTES, 'max');
    const headers = await accountHeaders(appOne, sub);
    const created = await call('account', 'POST', '/account', { headers });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const fetched = await call('account', 'GET', '/account', { headers });
    expect(fetched.status).toBe(200);
    expect(fetched.body.app_user_id).toBe(sub);
    const signed = await call('account', 'POST', '/wallet/sign', { headers, json: { message: 'max sub' } });
    expect(signed.status).toBe(200);
    expect(await recoverAddress({ hash: keccak256(stringToBytes('max sub')), signature: signed.body.signature })).toBe(created.body.public_address.ETH);

    const express = await call('express', 'POST', '/v2/wallet', { headers: await expressHeaders(appOne, sub, 'ETH') });
    expect(express.status).toBe(200);
    expect(express.body.public_address).toBe(created.body.public_address.ETH);
    const enclave = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': appOne.secret_key },
      json: { auth_jwt: await mintToken(appOne, sub), network: 'ETH', wallet_group_id: 'g'.repeat(128) },
    });
    expect(enclave.status).toBe(200);
    const opSigned = await call('enclave', 'POST', '/v2/api/wallet/sign_message', {
      headers: { 'x-service-secret-key': appOne.secret_key },
      json: { op_jwt: await mintToken(appOne, sub, { ttlSeconds: 120 }), access_key: enclave.body.access_key, wallet_id: enclave.body.wallet_id, message: 'x' },
    });
    expect(opSigned.status).toBe(200);
  });

  it.runIf(isSandbox)('withdraws with a 128-character Idempotency-Key, and the retry replays', async () => {
    const sub = subOf(MAX_SUB_BYTES, 'max-w');
    const headers = await accountHeaders(appOne, sub);
    const created = await call('account', 'POST', '/account', { headers });
    expect(created.status).toBe(200);
    const from = created.body.public_address.ETH as string;
    await faucet('POL', from, 'POL', '10');
    await faucet('POL', from, 'USDC', '10');
    const to = privateKeyToAddress(generatePrivateKey());
    const key = { 'idempotency-key': `k-${crypto.randomUUID()}`.padEnd(128, 'k') };
    const body = { to_address: to, amount: '2', chain: 'POL', token: 'USDC' };
    const first = await call('account', 'POST', '/withdraw', { headers: { ...headers, ...key }, json: body });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await call('account', 'POST', '/withdraw', { headers: { ...headers, ...key }, json: body });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await chainBalance('POL', to, 'USDC')).toBe(2_000_000n);
  });
});
