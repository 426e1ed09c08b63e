import { PublicKey } from '@solana/web3.js';
import { getAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, appTwo, call, expectErrorShape, mintToken, uniqueUser } from './support/client.ts';

const DEFAULT_STATUS = {
  venue_a: { initialized: false, account_id: null, vault: null, stark_public_key: null, api_key: null },
  venue_b: { initialized: false, account_address: null },
  venue_c: { initialized: false, l2_address: null, l2_public_key: null },
  venue_d: { initialized: false, account_address: null },
  venue_e: { initialized: false, proxy_wallet_address: null, service_wallet_address: null },
};

describe('POST /account and GET /account', () => {
  it('GET before creation is a 404', async () => {
    const response = await call('account', 'GET', '/account', { headers: await accountHeaders(appOne, uniqueUser('early')) });
    expect(response.status).toBe(404);
    expect(expectErrorShape(response.body).code).toBe('ACCOUNT_NOT_FOUND');
  });

  it('creates the account with an EIP-55 EVM address, a Solana key and all five venues', async () => {
    const sub = uniqueUser('create');
    const headers = await accountHeaders(appOne, sub);
    const created = await call('account', 'POST', '/account', { headers });
    expect(created.status).toBe(200);
    const body = created.body;
    expect(Object.keys(body).sort()).toEqual(['app_user_id', 'perp_dex_status', 'public_address', 'success', 'user_id']);
    expect(body.success).toBe(true);
    expect(body.app_user_id).toBe(sub);
    expect(body.user_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Object.keys(body.public_address).sort()).toEqual(['ETH', 'SOL']);
    expect(getAddress(body.public_address.ETH)).toBe(body.public_address.ETH);
    expect(new PublicKey(body.public_address.SOL).toBytes()).toHaveLength(32);
    expect(body.perp_dex_status).toEqual(DEFAULT_STATUS);

    const fetched = await call('account', 'GET', '/account', { headers });
    expect(fetched.status).toBe(200);
    const { success: _success, ...withoutSuccess } = body;
    expect(fetched.body).toEqual(withoutSuccess);

    const again = await call('account', 'POST', '/account', { headers });
    expect(again.body).toEqual(body);
  });

  it('keeps users of different apps apart even with the same sub', async () => {
    const sub = uniqueUser('sameSub');
    const one = await call('account', 'POST', '/account', { headers: await accountHeaders(appOne, sub) });
    const two = await call('account', 'POST', '/account', { headers: await accountHeaders(appTwo, sub) });
    expect(one.status).toBe(200);
    expect(two.status).toBe(200);
    expect(two.body.user_id).not.toBe(one.body.user_id);
    expect(two.body.public_address.ETH).not.toBe(one.body.public_address.ETH);
  });

  it('30 concurrent first calls yield exactly one account and one pair of wallets', async () => {
    const sub = uniqueUser('race');
    const headers = await accountHeaders(appOne, sub);
    const responses = await Promise.all(Array.from({ length: 30 }, () => call('account', 'POST', '/account', { headers })));
    expect(responses.map((r) => r.status)).toEqual(Array(30).fill(200));
    expect(new Set(responses.map((r) => r.body.user_id)).size).toBe(1);
    expect(new Set(responses.map((r) => r.body.public_address.ETH)).size).toBe(1);
    expect(new Set(responses.map((r) => r.body.public_address.SOL)).size).toBe(1);
    const stored = await call('account', 'GET', '/account', { headers });
    expect(stored.body.user_id).toBe(responses[0]!.body.user_id);
  });

  it('uses the same wallets the enclave gives this identity in the app default group', async () => {
    const sub = uniqueUser('coherent');
    const account = await call('account', 'POST', '/account', { headers: await accountHeaders(appOne, sub) });
    const authJwt = await mintToken(appOne, sub);
    for (const [network, key] of [
      ['ETH', 'ETH'],
      ['ARB', 'ETH'],
      ['SOL', 'SOL'],
    ] as const) {
      const wallet = await call('enclave', 'POST', '/v2/api/wallet', {
        headers: { 'x-service-secret-key': appOne.secret_key },
        json: { auth_jwt: authJwt, network, wallet_group_id: 'default' },
      });
      expect(wallet.status).toBe(200);
      expect(wallet.body.public_address).toBe(account.body.public_address[key]);
    }
  });
});
