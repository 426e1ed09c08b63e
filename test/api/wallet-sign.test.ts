import { keccak256, recoverAddress, stringToBytes, toBytes, verifyMessage } from 'viem';
import { beforeAll, describe, expect, it } from 'vitest';
import { accountHeaders, appOne, call, expectErrorShape, mintToken, uniqueUser } from './support/client.ts';

/** `POST /wallet/sign` (spec, Sign rules). */
describe('POST /wallet/sign', () => {
  let headers: Record<string, string>;
  let address: `0x${string}`;
  const sub = uniqueUser('signer');

  beforeAll(async () => {
    headers = await accountHeaders(appOne, sub);
    const account = await call('account', 'POST', '/account', { headers });
    expect(account.status).toBe(200);
    address = account.body.public_address.ETH;
  });

  it('signs keccak256(message) without a prefix; the signature recovers to the ETH address', async () => {
    const response = await call('account', 'POST', '/wallet/sign', { headers, json: { message: 'hello venue' } });
    expect(response.status).toBe(200);
    const hash = keccak256(stringToBytes('hello venue'));
    expect(response.body).toEqual({
      success: true,
      signature: expect.stringMatching(/^0x[0-9a-f]{130}$/),
      raw_data_hash: hash,
      app_user_id: expect.any(String),
    });
    expect(['1b', '1c']).toContain(response.body.signature.slice(-2));
    expect(await recoverAddress({ hash, signature: response.body.signature })).toBe(address);
  });

  // docs/guide/account.md and enclave.md: the two doors sign one message differently, and each is
  // verified as the guide shows (the same EVM key: the account's wallet is the user's default one).
  it("is not EIP-191, unlike the enclave's sign_message: recoverAddress(keccak256) for one, verifyMessage for the other", async () => {
    const message = 'Sign in to venue_b';
    const account = await call('account', 'POST', '/wallet/sign', { headers, json: { message } });
    expect(account.status).toBe(200);
    const signature = account.body.signature as `0x${string}`;
    expect(await recoverAddress({ hash: keccak256(toBytes(message)), signature })).toBe(address);
    expect(await verifyMessage({ address, message, signature })).toBe(false);

    const secret = { 'x-service-secret-key': appOne.secret_key };
    const wallet = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: secret,
      json: { auth_jwt: await mintToken(appOne, sub), network: 'ETH', wallet_group_id: 'default' },
    });
    expect(wallet.status).toBe(200);
    expect(wallet.body.public_address).toBe(address);
    const enclave = await call('enclave', 'POST', '/v2/api/wallet/sign_message', {
      headers: secret,
      json: { op_jwt: await mintToken(appOne, sub, { ttlSeconds: 120 }), access_key: wallet.body.access_key, wallet_id: wallet.body.wallet_id, message },
    });
    expect(enclave.status).toBe(200);
    expect(enclave.body.signature).not.toBe(signature);
    expect(await verifyMessage({ address, message, signature: enclave.body.signature })).toBe(true);
    expect(await recoverAddress({ hash: keccak256(toBytes(message)), signature: enclave.body.signature })).not.toBe(address);
  });

  it('signs raw_data_hash as given, and prefers it when message is also given', async () => {
    const hash = keccak256(stringToBytes('some typed data digest'));
    for (const json of [{ raw_data_hash: hash }, { raw_data_hash: hash, message: 'ignored' }]) {
      const response = await call('account', 'POST', '/wallet/sign', { headers, json });
      expect(response.status).toBe(200);
      expect(response.body.raw_data_hash).toBe(hash);
      expect(await recoverAddress({ hash, signature: response.body.signature })).toBe(address);
    }
  });

  it('400 when neither raw_data_hash nor message is given, or the hash is malformed', async () => {
    for (const json of [{}, { raw_data_hash: '0x1234' }, { raw_data_hash: 'not-hex' }, { message: 42 }]) {
      const response = await call('account', 'POST', '/wallet/sign', { headers, json });
      expect(response.status).toBe(400);
      expectErrorShape(response.body);
    }
  });

  it('404 for a user without an account', async () => {
    const response = await call('account', 'POST', '/wallet/sign', { headers: await accountHeaders(appOne, uniqueUser('nobody')), json: { message: 'x' } });
    expect(response.status).toBe(404);
    expect(expectErrorShape(response.body).code).toBe('ACCOUNT_NOT_FOUND');
  });
});
