import { ed25519 } from '@noble/curves/ed25519.js';
import bs58 from 'bs58';
import { getAddress, hexToBytes, keccak256, parseTransaction, recoverTransactionAddress, stringToBytes, verifyMessage } from 'viem';
import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, appTwo, call, expectErrorShape, expressHeaders, mintToken, sandbox, uniqueUser } from './support/client.ts';

/** Express wallet service (spec, Express wallet service and Versioning). */
async function expressWallet(headers: Record<string, string>) {
  return call('express', 'POST', '/v2/wallet', { headers });
}

describe('POST /v2/wallet', () => {
  it('gets or creates one wallet per user; every EVM chain code shares its address', async () => {
    const sub = uniqueUser('express');
    const evm = await Promise.all(['ETH', 'ARB', 'POL', 'INK'].map(async (chain) => expressWallet(await expressHeaders(appOne, sub, chain))));
    for (const [i, chain] of ['ETH', 'ARB', 'POL', 'INK'].entries()) {
      expect(evm[i]!.status).toBe(200);
      expect(evm[i]!.body).toEqual({ success: true, public_address: evm[0]!.body.public_address, chain, wallet_id: evm[0]!.body.wallet_id });
    }
    expect(getAddress(evm[0]!.body.public_address)).toBe(evm[0]!.body.public_address);
    const sol = await expressWallet(await expressHeaders(appOne, sub, 'SOL'));
    expect(sol.status).toBe(200);
    expect(bs58.decode(sol.body.public_address)).toHaveLength(32);
    expect(sol.body.wallet_id).not.toBe(evm[0]!.body.wallet_id);
    expect(evm[0]!.headers.get('deprecation')).toBeNull();
  });

  it('is the same wallet the account service and the enclave default group give the user', async () => {
    const sub = uniqueUser('coherence');
    const express = {
      ETH: (await expressWallet(await expressHeaders(appOne, sub, 'ARB'))).body,
      SOL: (await expressWallet(await expressHeaders(appOne, sub, 'SOL'))).body,
    };
    const account = await call('account', 'POST', '/account', { headers: await accountHeaders(appOne, sub) });
    expect(account.body.public_address).toEqual({ ETH: express.ETH.public_address, SOL: express.SOL.public_address });
    const enclave = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': appOne.secret_key },
      json: { auth_jwt: await mintToken(appOne, sub), network: 'ETH', wallet_group_id: 'default' },
    });
    expect(enclave.body.wallet_id).toBe(express.ETH.wallet_id);
  });

  it('20 concurrent first calls return one wallet', async () => {
    const headers = await expressHeaders(appOne, uniqueUser('express-race'), 'ETH');
    const responses = await Promise.all(Array.from({ length: 20 }, () => expressWallet(headers)));
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(responses.map((r) => r.body.wallet_id)).size).toBe(1);
  });

  it('accepts a legacy provider id with a Deprecation header', async () => {
    const response = await expressWallet(await expressHeaders(appTwo, uniqueUser('legacy'), 'ETH', { providerId: appTwo.legacy_provider_ids[0] }));
    expect(response.status).toBe(200);
    expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
  });

  it('refuses bad credentials, a foreign provider id and unknown chains', async () => {
    const sub = uniqueUser('express-bad');
    const good = await expressHeaders(appOne, sub, 'ETH');
    const cases: [Record<string, string>, number, string][] = [
      [{ ...good, 'x-service-api-key': '' }, 401, 'MISSING_API_KEY'],
      [{ ...good, 'x-service-api-key': 'ak_nope_nope_nope_nope' }, 401, 'INVALID_API_KEY'],
      [{ ...good, 'x-service-api-key': appOne.secret_key }, 401, 'INVALID_API_KEY'],
      [{ ...good, 'x-oidc-provider-id': '' }, 400, 'MISSING_PROVIDER_ID'],
      [{ ...good, 'x-oidc-provider-id': appTwo.provider_id }, 403, 'PROVIDER_MISMATCH'],
      [{ ...good, 'x-oidc-provider-id': appTwo.legacy_provider_ids[0]! }, 403, 'PROVIDER_MISMATCH'],
      [{ ...good, authorization: `Bearer ${await mintToken(appTwo, sub)}` }, 401, 'INVALID_TOKEN'],
      [{ ...good, 'x-service-chain': 'BTC' }, 400, 'INVALID_CHAIN'],
      [{ ...good, 'x-service-chain': 'eth' }, 400, 'INVALID_CHAIN'],
      [{ ...good, 'x-service-chain': '' }, 400, 'INVALID_CHAIN'],
    ];
    for (const [headers, status, code] of cases) {
      const response = await expressWallet(headers);
      expect(response.status, code).toBe(status);
      expect(expectErrorShape(response.body).code).toBe(code);
    }
  });
});

describe('POST /v2/wallet/sign/*', () => {
  it("signs messages and transactions with the user's EVM wallet; raw hashes only where the app's policy allows them", async () => {
    const sub = uniqueUser('express-sign');
    const headers = await expressHeaders(appOne, sub, 'ARB');
    const { public_address: address, wallet_id } = (await expressWallet(headers)).body;

    // Issue 22: the built-in policy refuses raw-hash signing on the express channel (an EIP-7702
    // authorisation digest or a permit can hide behind a hash); test/api/policies.test.ts has the rest.
    const hash = keccak256(stringToBytes('express data'));
    const data = await call('express', 'POST', '/v2/wallet/sign/data', { headers, json: { raw_data_hash: hash } });
    expect(data.status).toBe(403);
    expect(data.body.error).toMatchObject({ code: 'POLICY_DENIED', rule_id: 'default.express-no-raw-hash' });

    const message = await call('express', 'POST', '/v2/wallet/sign/message', { headers, json: { message: 'hi', wallet_id } });
    expect(message.status).toBe(200);
    expect(await verifyMessage({ address, message: 'hi', signature: message.body.signature })).toBe(true);

    const transaction = { type: 'eip1559', chainId: 42161, nonce: 0, to: address, value: '1', gas: '21000', maxFeePerGas: '10', maxPriorityFeePerGas: '1' };
    const tx = await call('express', 'POST', '/v2/wallet/sign/transaction', { headers, json: { transaction } });
    expect(tx.status).toBe(200);
    expect(parseTransaction(tx.body.signed_transaction).chainId).toBe(42161);
    expect(await recoverTransactionAddress({ serializedTransaction: tx.body.signed_transaction })).toBe(address);
  });

  it('signs with the Solana wallet for SOL', async () => {
    const headers = await expressHeaders(appOne, uniqueUser('express-sol'), 'SOL');
    const address = (await expressWallet(headers)).body.public_address;
    const response = await call('express', 'POST', '/v2/wallet/sign/message', { headers, json: { message: '0xc0ffee', encoding: 'hex' } });
    expect(response.status).toBe(200);
    expect(ed25519.verify(hexToBytes(response.body.signature), hexToBytes('0xc0ffee'), bs58.decode(address))).toBe(true);
  });

  it('refuses another wallet id, invalid bodies, and unauthenticated calls', async () => {
    const headers = await expressHeaders(appOne, uniqueUser('express-sign-bad'), 'ETH');
    const hash = keccak256(stringToBytes('x'));
    const mismatch = await call('express', 'POST', '/v2/wallet/sign/data', {
      headers,
      json: { raw_data_hash: hash, wallet_id: '00000000-0000-8000-8000-000000000000' },
    });
    expect(mismatch.status).toBe(403);
    expect(expectErrorShape(mismatch.body).code).toBe('WALLET_MISMATCH');
    const invalid = await call('express', 'POST', '/v2/wallet/sign/data', { headers, json: { raw_data_hash: '0x12' } });
    expect(invalid.status).toBe(400);
    expect(expectErrorShape(invalid.body).message).toContain('body.raw_data_hash');
    const solTxOnEvm = await call('express', 'POST', '/v2/wallet/sign/transaction', { headers, json: { transaction: 'AAAA' } });
    expect(solTxOnEvm.status).toBe(400);
    const noAuth = await call('express', 'POST', '/v2/wallet/sign/data', { headers: { ...headers, authorization: '' }, json: { raw_data_hash: hash } });
    expect(noAuth.status).toBe(401);
  });
});

describe('express v1 paths', () => {
  it('redirect apps created before 2026-07-31 to /v2/ with 308, which a client follows', async () => {
    const headers = await expressHeaders(appTwo, uniqueUser('v1-redirect'), 'ETH');
    for (const [from, to] of [
      ['/v1/wallet', '/v2/wallet'],
      ['/v1/wallet/sign/data', '/v2/wallet/sign/data'],
      ['/v1/wallet/sign/transaction', '/v2/wallet/sign/transaction'],
    ]) {
      const response = await fetch(`${sandbox.urls.express}${from}`, { method: 'POST', headers, redirect: 'manual' });
      expect(response.status).toBe(308);
      expect(response.headers.get('location')).toBe(to);
    }
    const followed = await call('express', 'POST', '/v1/wallet', { headers });
    expect(followed.status).toBe(200);
    expect(followed.body.chain).toBe('ETH');
    const signed = await call('express', 'POST', '/v1/wallet/sign/message', { headers, json: { message: 'v1' } });
    expect(signed.status).toBe(200);
    expect(await verifyMessage({ address: followed.body.public_address, message: 'v1', signature: signed.body.signature })).toBe(true);
    // Followed to /v2/wallet/sign/data, a raw hash meets the built-in policy of issue 22 as v2 does.
    const data = await call('express', 'POST', '/v1/wallet/sign/data', { headers, json: { raw_data_hash: keccak256(stringToBytes('v1')) } });
    expect(data.status).toBe(403);
    expect(data.body.error).toMatchObject({ code: 'POLICY_DENIED', rule_id: 'default.express-no-raw-hash' });
  });

  it('ban apps created on or after 2026-07-31 from v1', async () => {
    const headers = await expressHeaders(appOne, uniqueUser('v1-ban'), 'ETH');
    for (const path of ['/v1/wallet', '/v1/wallet/sign/message']) {
      const response = await call('express', 'POST', path, { headers, json: { message: 'x' } });
      expect(response.status).toBe(403);
      expect(expectErrorShape(response.body).code).toBe('V1_BANNED');
    }
  });

  it('need an API key, and know only the three sign operations', async () => {
    expect((await call('express', 'POST', '/v1/wallet')).status).toBe(401);
    const bogus = await call('express', 'POST', '/v1/wallet/sign/bogus', { headers: { 'x-service-api-key': appTwo.api_key } });
    expect(bogus.status).toBe(404);
  });
});
