import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import bs58 from 'bs58';
import { importJWK, type JWK, SignJWT } from 'jose';
import { type Hex, hexToBytes, recoverAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putAccountIfAbsent } from '../../shared/accounts/account-record.ts';
import { AppRegistry } from '../../shared/apps/app-registry.ts';
import { registerApplication } from '../../shared/apps/register-application.ts';
import { DEFAULT_V1_RETIREMENT } from '../../shared/config.ts';
import { generateEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import type { Table } from '../../shared/db/client.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import type { HttpResult } from '../../shared/http/response.ts';
import type { EnclaveCredentials, EnclaveWallet, WalletEnclave } from '../../shared/wallets/enclave-client.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

/**
 * Handlers through their factories (`makeX(deps)`), with real local adapters: dynalite for the
 * table, the local key wrapper, jose-signed user JWTs. Only the wallet enclave's HTTP API is an
 * in-memory stand-in (the API tests cover the real one). Each handler module also builds its
 * production `handler` at import, from the environment set below: that exercises the
 * composition roots too.
 */
let table: Table;
let stop: () => Promise<void>;
let dataDir: string;
let apps: AppRegistry;
let secretKey: string;
let apiKey: string;
let oldApiKey: string;
let issuerKey: JWK;

const context = { awsRequestId: 'req-1', functionName: 'unit', getRemainingTimeInMillis: () => 29_000 } as unknown as Context;

function event(init: {
  method?: string;
  path?: string;
  resource?: string;
  stagePath?: string;
  headers?: Record<string, string>;
  body?: unknown;
  pathParameters?: Record<string, string>;
}): APIGatewayProxyEvent {
  const method = init.method ?? 'GET';
  const path = init.path ?? '/';
  const resource = init.resource ?? path;
  const hasBody = init.body !== undefined;
  // Header names as a REST API passes them: as the caller sent them (the handler lower-cases them).
  const headers = { ...(hasBody ? { 'Content-Type': 'application/json' } : {}), ...init.headers };
  return {
    resource,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: init.pathParameters ?? null,
    stageVariables: null,
    requestContext: {
      httpMethod: method,
      path: init.stagePath ?? path,
      resourcePath: resource,
      stage: 'prod',
      requestId: 'req-1',
      identity: { sourceIp: '127.0.0.1', userAgent: 'unit' },
    },
    body: hasBody ? JSON.stringify(init.body) : null,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
}

async function invoke(adapter: (event: any, context: Context) => Promise<HttpResult>, request: APIGatewayProxyEvent, jsonBody = false) {
  const result = (await httpHandler(adapter, { jsonBody })(request, context)) as HttpResult;
  return { status: result.statusCode, headers: result.headers ?? {}, body: result.body ? JSON.parse(result.body) : undefined };
}

async function userJwt(sub: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid! })
    .setIssuer('https://idp.unit')
    .setAudience('unit-api')
    .setSubject(sub)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(await importJWK(issuerKey, 'ES256'));
}

/** The enclave's get-or-create, in memory: one wallet per (group, network, identity). */
class InMemoryEnclave implements WalletEnclave {
  readonly created = new Map<string, EnclaveWallet>();
  calls = 0;
  async createWallet(_credentials: EnclaveCredentials, input: { authJwt: string; network: string; walletGroupId: string }): Promise<EnclaveWallet> {
    this.calls++;
    const sub = JSON.parse(Buffer.from(input.authJwt.split('.')[1]!, 'base64url').toString()).sub as string;
    const key = `${input.walletGroupId}/${input.network}/${sub}`;
    let wallet = this.created.get(key);
    if (!wallet) {
      const address =
        input.network === 'SOL'
          ? bs58.encode(ed25519.getPublicKey(ed25519.utils.randomSecretKey()))
          : `0x${'ab'.repeat(19)}${this.created.size.toString(16).padStart(2, '0')}`;
      wallet = {
        wallet_id: `w-${this.created.size}`,
        access_key: `ak-${this.created.size}`,
        public_address: address,
        network: input.network,
        wallet_group_id: input.walletGroupId,
      } as EnclaveWallet;
      this.created.set(key, wallet);
    }
    return wallet;
  }
  async sign(): Promise<Record<string, unknown>> {
    throw new Error('not used here');
  }
}

beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('handlers-unit'));
  dataDir = await mkdtemp(join(tmpdir(), 'handlers-unit-'));
  // What the composition roots read when the modules are imported (local adapters, no AWS).
  Object.assign(process.env, {
    TABLE_NAME: table.name,
    DYNAMODB_ENDPOINT: 'http://127.0.0.1:1',
    KEY_PROVIDER: 'local',
    OP_JWT_SIGNER: 'local',
    DATA_DIR: dataDir,
    TEE_URL: 'http://127.0.0.1:1',
  });
  apps = new AppRegistry(table);
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  issuerKey = privateJwk;
  const oidc = { provider_id: 'idp', issuer: 'https://idp.unit', audience: 'unit-api', jwks: { keys: [publicJwk] } };
  ({ secret_key: secretKey, api_key: apiKey } = await registerApplication(table, { app_id: 'unit-app', oidc, trusted_keys: [] }));
  ({ api_key: oldApiKey } = await registerApplication(table, { app_id: 'old-app', oidc, trusted_keys: [], created_at: new Date('2026-01-01T00:00:00Z') }));
}, 60_000);

afterAll(async () => {
  await stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('account handlers', () => {
  it('GET /account: 401 without the app secret, 404 before the account exists, then the account', async () => {
    const { makeGetAccount } = await import('../../functions/account/get-account.ts');
    const getAccount = makeGetAccount({ table, apps });
    const token = await userJwt('alice');

    const anonymous = await invoke(getAccount, event({ path: '/account', headers: { authorization: `Bearer ${token}` } }));
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ success: false, error: { code: 'MISSING_SECRET_KEY' } });

    const headers = { 'x-service-secret-key': secretKey, authorization: `Bearer ${token}` };
    const missing = await invoke(getAccount, event({ path: '/account', headers }));
    expect(missing).toMatchObject({ status: 404, body: { success: false, error: { code: 'ACCOUNT_NOT_FOUND' } } });

    await putAccountIfAbsent(table, {
      app_id: 'unit-app',
      app_user_id: 'alice',
      user_id: 'u-alice',
      public_address: { ETH: '0x0000000000000000000000000000000000000001', SOL: '11111111111111111111111111111112' },
      perp_dex_status: {} as never,
      wallets: { evm: { wallet_id: 'w-e' }, sol: { wallet_id: 'w-s' } },
      sealed: {} as never,
      created_at: '2026-11-22T00:00:00.000Z',
    });
    const found = await invoke(getAccount, event({ path: '/account', headers }));
    expect(found.status).toBe(200);
    expect(found.body.public_address).toEqual({ ETH: '0x0000000000000000000000000000000000000001', SOL: '11111111111111111111111111111112' });
  });

  it('POST /account: concurrent first calls create one account with one pair of wallets, sealed with the local key', async () => {
    const { makeCreateAccount } = await import('../../functions/account/create-account.ts');
    const enclave = new InMemoryEnclave();
    const keyWrapper = new LocalKeyWrapper(dataDir, 'account');
    const createAccount = makeCreateAccount({ table, apps, keyWrapper, enclave, now: () => new Date('2026-11-22T10:00:00Z') });
    const headers = { 'x-service-secret-key': secretKey, authorization: `Bearer ${await userJwt('bob')}` };
    const answers = await Promise.all(Array.from({ length: 5 }, () => invoke(createAccount, event({ method: 'POST', path: '/account', headers }))));
    for (const answer of answers) expect(answer.status).toBe(200);
    const addresses = new Set(answers.map((answer) => JSON.stringify(answer.body.public_address)));
    expect(addresses.size).toBe(1);
    expect(enclave.created.size).toBe(2); // one EVM and one Solana wallet
    const again = await invoke(createAccount, event({ method: 'POST', path: '/account', headers }));
    expect(JSON.stringify(again.body.public_address)).toBe([...addresses][0]);
  });
});

describe('express handlers', () => {
  it('GET /v1/identity/provider: the provider for a valid secret key, 401 otherwise', async () => {
    const { makeGetIdentityProvider } = await import('../../functions/express/get-identity-provider.ts');
    const getProvider = makeGetIdentityProvider({ apps });
    const ok = await invoke(getProvider, event({ path: '/v1/identity/provider', headers: { 'x-service-secret-key': secretKey } }));
    expect(ok).toMatchObject({ status: 200, body: { success: true, provider_id: 'idp', issuer: 'https://idp.unit', audience: 'unit-api' } });
    const wrong = await invoke(getProvider, event({ path: '/v1/identity/provider', headers: { 'x-service-secret-key': 'sk_wrong' } }));
    expect(wrong).toMatchObject({ status: 401, body: { success: false, error: { code: 'INVALID_SECRET_KEY' } } });
  });

  it('POST /v1/wallet/sign/{operation}: 308 to /v2/ for apps created before the cutoff, 403 after, 404 for an unknown operation', async () => {
    const { makeExpressV1Wallet } = await import('../../functions/express/v1-wallet.ts');
    const v1Wallet = makeExpressV1Wallet({ apps });
    const sign = (key: string, operation: string, stagePath?: string) =>
      invoke(
        v1Wallet,
        event({
          method: 'POST',
          path: `/v1/wallet/sign/${operation}`,
          resource: '/v1/wallet/sign/{operation}',
          stagePath,
          headers: { 'X-Service-Api-Key': key },
          pathParameters: { operation },
        }),
      );
    const old = await sign(oldApiKey, 'message');
    expect(old.status).toBe(308);
    expect(old.headers.location).toBe('/v2/wallet/sign/message');
    // Reached through the stage's URL (execute-api): the redirect keeps the stage prefix.
    expect((await sign(oldApiKey, 'message', '/prod/v1/wallet/sign/message')).headers.location).toBe('/prod/v2/wallet/sign/message');
    expect(await sign(apiKey, 'message')).toMatchObject({ status: 403, body: { error: { code: 'V1_BANNED' } } });
    expect(await sign(oldApiKey, 'nothing')).toMatchObject({ status: 404, body: { error: { code: 'ROUTE_NOT_FOUND' } } });
  });
});

describe('enclave v1 handlers (no KMS key in their deps)', () => {
  it('create a wallet under an encryption_context, then sign with it; a wrong context is refused', async () => {
    const { makeV1CreateWallet } = await import('../../functions/enclave/v1-create-wallet.ts');
    const { makeV1SignData } = await import('../../functions/enclave/v1-sign-data.ts');
    const deps = { table, apps, now: () => new Date('2026-07-01T00:00:00Z'), v1RetiresAt: new Date(DEFAULT_V1_RETIREMENT) };
    const headers = { 'x-service-secret-key': secretKey };
    const created = await invoke(
      makeV1CreateWallet(deps),
      event({ method: 'POST', path: '/v1/api/wallet', headers, body: { encryption_context: 'ctx-1', network: 'ETH', wallet_group_id: 'g1' } }),
      true,
    );
    expect(created.status).toBe(200);
    const { wallet_id, access_key, public_address } = created.body;
    const hash = `0x${'11'.repeat(32)}` as Hex;
    const signData = makeV1SignData(deps);
    const signed = await invoke(
      signData,
      event({ method: 'POST', path: '/v1/api/wallet/sign_data', headers, body: { encryption_context: 'ctx-1', access_key, wallet_id, raw_data_hash: hash } }),
      true,
    );
    expect(signed.status).toBe(200);
    expect(await recoverAddress({ hash, signature: signed.body.signature as Hex })).toBe(public_address);
    expect(hexToBytes(signed.body.signature as Hex)).toHaveLength(65);

    const wrong = await invoke(
      signData,
      event({ method: 'POST', path: '/v1/api/wallet/sign_data', headers, body: { encryption_context: 'ctx-2', access_key, wallet_id, raw_data_hash: hash } }),
      true,
    );
    expect(wrong.status).toBeGreaterThanOrEqual(400);
    expect(wrong.status).toBeLessThan(500);
    expect(wrong.body.success).toBe(false);

    const retired = await invoke(
      makeV1SignData({ ...deps, now: () => new Date(DEFAULT_V1_RETIREMENT) }),
      event({ method: 'POST', path: '/v1/api/wallet/sign_data', headers, body: { encryption_context: 'ctx-1', access_key, wallet_id, raw_data_hash: hash } }),
      true,
    );
    expect(retired).toMatchObject({ status: 410, body: { error: { code: 'V1_RETIRED' } } });
  });
});

describe('the $default route (ANY on every REST resource)', () => {
  const notFound = async (service: string, method: string, resource: string, path = resource) => {
    const { adapter } = await import('../../functions/common/not-found.ts');
    const { withServiceName } = await import('../../shared/observability/service-name.ts');
    return withServiceName(service, () => invoke(adapter, event({ method, path, resource })));
  };

  it("answers another method on a known resource with 405 and Allow (that service's methods only)", async () => {
    const answer = await notFound('account', 'DELETE', '/account');
    expect(answer).toMatchObject({ status: 405, body: { success: false, error: { code: 'METHOD_NOT_ALLOWED' } } });
    expect(answer.headers.allow).toBe('GET, HEAD, POST');
    expect((await notFound('express', 'GET', '/v1/wallet/sign/{operation}', '/v1/wallet/sign/data')).headers.allow).toBe('POST');
    // /v1/wallet is an express resource, not an account one.
    expect(await notFound('account', 'GET', '/v1/wallet')).toMatchObject({ status: 404, body: { error: { code: 'ROUTE_NOT_FOUND' } } });
  });

  it('answers path prefixes and {proxy+} catch-alls with 404', async () => {
    expect(await notFound('enclave', 'POST', '/v2/api')).toMatchObject({ status: 404, body: { error: { code: 'ROUTE_NOT_FOUND' } } });
    expect(await notFound('enclave', 'GET', '/{proxy+}', '/nope')).toMatchObject({
      status: 404,
      body: { error: { code: 'ROUTE_NOT_FOUND', message: 'No route for GET /nope' } },
    });
  });

  it('names the service that serves a path sent to another one, with its URL where the stage has it', async () => {
    // A deployment's stage has no URLs: the service is named, the URL left to the caller.
    expect(await notFound('express', 'POST', '/{proxy+}', '/account')).toEqual({
      status: 404,
      headers: expect.any(Object),
      body: {
        success: false,
        error: {
          code: 'ROUTE_NOT_FOUND',
          message:
            "No route for POST /account on the express wallet service: /account is an account-service route (GET, HEAD, POST); send it to the account service's URL",
        },
      },
    });
    // The local sandbox's stage variables name each service's URL.
    const { adapter } = await import('../../functions/common/not-found.ts');
    const { withServiceName } = await import('../../shared/observability/service-name.ts');
    const stageVariables = { account_url: 'http://127.0.0.1:3000', enclave_url: 'http://127.0.0.1:3001', express_url: 'http://127.0.0.1:3002' };
    const sent = (service: string, method: string, path: string) =>
      withServiceName(service, () => invoke(adapter, { ...event({ method, path, resource: '/{proxy+}' }), stageVariables }));
    expect((await sent('express', 'POST', '/account')).body.error.message).toBe(
      'No route for POST /account on the express wallet service: /account is an account-service route (GET, HEAD, POST); send it to the account service at http://127.0.0.1:3000',
    );
    expect((await sent('account', 'POST', '/v2/api/wallet/sign_message')).body.error.message).toBe(
      'No route for POST /v2/api/wallet/sign_message on the account service: /v2/api/wallet/sign_message is an enclave-service route (POST); send it to the wallet enclave at http://127.0.0.1:3001',
    );
    // Path variables match one non-empty segment; a path no service has stays plain.
    expect((await sent('express', 'GET', '/task/0190a5c4-0000-7000-8000-000000000000')).body.error.message).toMatch(
      /is an account-service route \(GET, HEAD\); send it to the account service at http:\/\/127\.0\.0\.1:3000$/,
    );
    expect((await sent('express', 'GET', '/task/')).body.error.message).toBe('No route for GET /task/');
    expect((await sent('express', 'GET', '/nope')).body.error.message).toBe('No route for GET /nope');
    // A stage variable that is not a URL is not echoed.
    const odd = await withServiceName('express', () =>
      invoke(adapter, { ...event({ method: 'POST', path: '/account', resource: '/{proxy+}' }), stageVariables: { account_url: 'javascript:alert(1)' } }),
    );
    expect(odd.body.error.message).toMatch(/send it to the account service's URL$/);
  });
});

describe('request bodies', () => {
  const echo = async (body: string) => {
    const adapter = async (request: { body: unknown }) => ({ statusCode: 200, headers: {}, body: JSON.stringify({ got: typeof request.body }) });
    return invoke(adapter, { ...event({ method: 'POST', path: '/x', body: {} }), body }, true);
  };

  it('are refused over 256 KiB with 413 PAYLOAD_TOO_LARGE, before parsing', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(256 * 1024) });
    expect(await echo(big)).toMatchObject({ status: 413, body: { success: false, error: { code: 'PAYLOAD_TOO_LARGE' } } });
    // Not in characters but in UTF-8 bytes: 100 Ki of a 3-byte character is 300 KiB.
    expect(await echo(JSON.stringify({ pad: '€'.repeat(100 * 1024) }))).toMatchObject({ status: 413 });
    expect(await echo(JSON.stringify({ pad: 'x'.repeat(200 * 1024) }))).toMatchObject({ status: 200, body: { got: 'object' } });
  });
});
