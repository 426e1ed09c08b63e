import { type Address, getAddress, keccak256, recoverAddress, stringToBytes, verifyMessage } from 'viem';
import { describe, expect, it } from 'vitest';
import { ApiError, createAccountClient, createEnclaveClient, createExpressClient, unwrap } from '../../shared/client/index.ts';
import { appOne, mintToken, registerPublicHashes, registerSecrets, sandbox, uniqueUser } from './support/client.ts';

/**
 * The typed client (shared/client/) against the running services: one flow per service, written
 * only with the generated types (a field the documents lose fails `tsc`; a field the service stops
 * sending fails here). Every answer goes through the suite's secret and hash registers, as
 * `call()` answers do, so the log scan still covers what these flows were handed.
 */
async function registeringFetch(request: Request): Promise<Response> {
  const response = await fetch(request);
  const text = await response.clone().text();
  try {
    const body: unknown = JSON.parse(text);
    registerSecrets(body);
    registerPublicHashes(body);
  } catch {
    // Not JSON: nothing to register.
  }
  return response;
}

describe('typed client: account service', () => {
  it('creates an account, reads it back and signs a message with its EVM wallet', async () => {
    const sub = uniqueUser('typed-account');
    const client = createAccountClient({
      baseUrl: sandbox.urls.account,
      token: () => mintToken(appOne, sub),
      secretKey: appOne.secret_key,
      fetch: registeringFetch,
    });

    const created = await unwrap(client.POST('/account'));
    expect(created.success).toBe(true);
    expect(created.app_user_id).toBe(sub);
    const evm: Address = getAddress(created.public_address.ETH);
    const sol: string = created.public_address.SOL;
    expect(sol).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);

    const account = await unwrap(client.GET('/account'));
    expect(account.user_id).toBe(created.user_id);
    expect(account.public_address).toEqual(created.public_address);
    const venueB: boolean = account.perp_dex_status.venue_b.initialized;
    expect(venueB).toBe(false);

    const signed = await unwrap(client.POST('/wallet/sign', { body: { message: 'hello from the typed client' } }));
    const hash = keccak256(stringToBytes('hello from the typed client'));
    expect(signed.raw_data_hash).toBe(hash);
    expect(await recoverAddress({ hash, signature: signed.signature as `0x${string}` })).toBe(evm);
  });

  it('answers a refusal as a typed error, and unwrap turns it into an ApiError with code and request id', async () => {
    const client = createAccountClient({
      baseUrl: sandbox.urls.account,
      token: await mintToken(appOne, uniqueUser('typed-none')),
      secretKey: appOne.secret_key,
    });
    const { data, error, response } = await client.GET('/account');
    expect(data).toBeUndefined();
    expect(response.status).toBe(404);
    expect(error?.error.code).toBe('ACCOUNT_NOT_FOUND');

    const refused = await unwrap(client.GET('/account')).catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 404, code: 'ACCOUNT_NOT_FOUND', requestId: expect.any(String) });
  });

  it("lets a header given on the call win over the client's own", async () => {
    const client = createAccountClient({ baseUrl: sandbox.urls.account, token: 'not-a-jwt', secretKey: appOne.secret_key });
    const { response } = await client.GET('/account', { headers: { authorization: `Bearer ${await mintToken(appOne, uniqueUser('typed-override'))}` } });
    expect(response.status).toBe(404);
    const { error } = await client.GET('/account');
    expect(error?.error.code).toBe('INVALID_TOKEN');
  });
});

describe('typed client: wallet enclave', () => {
  it('creates a v2 wallet and signs a message authorised by an op_jwt and the access key', async () => {
    const sub = uniqueUser('typed-enclave');
    const enclave = createEnclaveClient({ baseUrl: sandbox.urls.enclave, secretKey: appOne.secret_key, fetch: registeringFetch });

    const wallet = await unwrap(enclave.POST('/v2/api/wallet', { body: { auth_jwt: await mintToken(appOne, sub), network: 'ARB', wallet_group_id: 'typed' } }));
    expect(wallet).toMatchObject({ success: true, network: 'ARB', wallet_group_id: 'typed' });
    const address: Address = getAddress(wallet.public_address);

    // op_jwt: a JWT of the app's identity provider naming the same user, living at most 300 s.
    const signed = await unwrap(
      enclave.POST('/v2/api/wallet/sign_message', {
        body: {
          op_jwt: await mintToken(appOne, sub, { ttlSeconds: 120 }),
          access_key: wallet.access_key,
          wallet_id: wallet.wallet_id,
          message: 'typed enclave',
        },
      }),
    );
    expect(signed.wallet_id).toBe(wallet.wallet_id);
    expect(await verifyMessage({ address, message: 'typed enclave', signature: signed.signature as `0x${string}` })).toBe(true);

    const { error, response } = await enclave.POST('/v2/api/wallet/sign_message', {
      body: {
        op_jwt: await mintToken(appOne, sub, { ttlSeconds: 600 }),
        access_key: wallet.access_key,
        wallet_id: wallet.wallet_id,
        message: 'too long an op_jwt',
      },
    });
    expect(response.status).toBe(401);
    expect(error?.error.code).toBe('INVALID_OP_JWT');
  });
});

describe('typed client: express wallet', () => {
  it("looks up the provider with the secret key, then gets or creates the user's wallet with the API key", async () => {
    const sub = uniqueUser('typed-express');
    const lookup = createExpressClient({ baseUrl: sandbox.urls.express, secretKey: appOne.secret_key, fetch: registeringFetch });
    const provider = await unwrap(lookup.GET('/v1/identity/provider'));
    expect(provider).toEqual({ success: true, provider_id: appOne.provider_id, issuer: appOne.issuer, audience: appOne.audience });

    const express = createExpressClient({
      baseUrl: sandbox.urls.express,
      apiKey: appOne.api_key,
      token: () => mintToken(appOne, sub),
      providerId: provider.provider_id,
      chain: 'ARB',
      fetch: registeringFetch,
    });
    const wallet = await unwrap(express.POST('/v2/wallet'));
    expect(wallet.chain).toBe('ARB');
    const again = await unwrap(express.POST('/v2/wallet', { headers: { 'x-service-chain': 'ETH' } }));
    expect(again).toEqual({ success: true, public_address: wallet.public_address, chain: 'ETH', wallet_id: wallet.wallet_id });
    const sol = await unwrap(express.POST('/v2/wallet', { headers: { 'x-service-chain': 'SOL' } }));
    expect(sol.wallet_id).not.toBe(wallet.wallet_id);

    // The same user's account-service address is the express wallet's (one wallet per user).
    const account = createAccountClient({
      baseUrl: sandbox.urls.account,
      token: () => mintToken(appOne, sub),
      secretKey: appOne.secret_key,
      fetch: registeringFetch,
    });
    const created = await unwrap(account.POST('/account'));
    expect(created.public_address).toEqual({ ETH: wallet.public_address, SOL: sol.public_address });
  });
});
