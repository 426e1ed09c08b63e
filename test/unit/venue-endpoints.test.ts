import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { importJWK, type JWK, SignJWT } from 'jose';
import { type Address, getAddress, type Hex, hexToBytes, verifyMessage, verifyTypedData } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { accountEncryptionContext, getAccount, putAccountIfAbsent } from '../../shared/accounts/account-record.ts';
import { AppRegistry, getApplication } from '../../shared/apps/app-registry.ts';
import { registerApplication } from '../../shared/apps/register-application.ts';
import { ChainUnavailableError } from '../../shared/chains/errors.ts';
import { generateEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import { LocalOpJwtSigner } from '../../shared/crypto/local-op-jwt-signer.ts';
import { sealSecrets } from '../../shared/crypto/secret-box.ts';
import type { Table } from '../../shared/db/client.ts';
import { signHash } from '../../shared/enclave/wallet-keys.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import type { HttpResult } from '../../shared/http/response.ts';
import { defaultPerpDexStatus, VENUE_IDS, type VenueId } from '../../shared/venues/default-status.ts';
import {
  type EvmChainCode,
  type TradingSetup,
  type VenueBalances,
  type VenueDriver,
  type VenueFields,
  VenueRuleError,
  type VenueRules,
  type VenueWallet,
} from '../../shared/venues/driver.ts';
import { VenueRegistry } from '../../shared/venues/registry.ts';
import { type ChainReader, FIRST_DEPOSIT_GAS } from '../../shared/venues/service.ts';
import type { EnclaveCredentials, SignOperation, WalletEnclave } from '../../shared/wallets/enclave-client.ts';
import { captureJsonLines } from './support/capture-output.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

/**
 * The five venue endpoints through their handler factories, against dynalite, the local key
 * wrapper and op_jwt signer, and real secp256k1 signatures. The venue is a test double of the
 * VenueDriver port (CountingVenueDriver below: it counts calls and holds its accounts in
 * memory); the enclave is a test double that signs `sign_data` with a real key after checking
 * the access key and op_jwt it is sent. The chains are a fixed ChainReader. API tests against
 * the sandbox venues cover the real adapters.
 */

const USDC = 1_000_000n; // 6 decimals
const GWEI = 1_000_000_000n;

/** Rules shaped like venue_b's (research §1): ARB USDC, 5 minimum, 1 USDC withdrawal fee. */
function rulesFor(venue: VenueId): VenueRules {
  const chain: EvmChainCode = venue === 'venue_e' ? 'POL' : venue === 'venue_d' ? 'INK' : venue === 'venue_c' ? 'ETH' : 'ARB';
  const token = venue === 'venue_e' ? 'USDC.E' : 'USDC';
  return {
    venue,
    chain,
    token,
    decimals: 6,
    deposit: { supported: true, minimum: 5n * USDC, fee: { amount: 0n, token, feeType: 'none', note: null }, note: 'below the minimum is lost' },
    withdrawal: { supported: true, minimum: 2n * USDC, fee: { amount: 1n * USDC, token, feeType: 'fixed', note: 'charged by the venue' }, note: null },
    firstDepositMinimum: 5n * USDC,
  };
}

/** Test double of a venue adapter: counts calls, verifies the wallet's signature on onboarding. */
class CountingVenueDriver implements VenueDriver {
  readonly id: VenueId;
  readonly rules: VenueRules;
  initAccountCalls = 0;
  initTradingCalls: { replace: boolean; metadata: Readonly<Record<string, unknown>> }[] = [];
  balance = 0n;
  failBalances: Error | undefined;
  /** balances() never answers (a stalled venue). */
  stallBalances = false;
  failInit: Error | undefined;
  /** Keys handed out, newest last (the test checks they never reach the table or logs). */
  readonly issuedKeys: Hex[] = [];

  constructor(id: VenueId) {
    this.id = id;
    this.rules = rulesFor(id);
  }

  async initAccount(wallet: VenueWallet): Promise<VenueFields> {
    this.initAccountCalls++;
    if (this.failInit) throw this.failInit;
    const typedData = onboardingTypedData(wallet.address);
    const signature = await wallet.signTypedData(typedData);
    if (!(await verifyTypedData({ ...typedData, address: wallet.address, signature }))) throw new Error('bad onboarding signature');
    await new Promise((done) => setTimeout(done, 50)); // a venue round trip: concurrent callers overlap
    return { account_address: wallet.address };
  }

  async balances(): Promise<VenueBalances> {
    if (this.failBalances) throw this.failBalances;
    if (this.stallBalances) return new Promise<never>(() => {});
    return { balance: this.balance, account_value: this.balance + 250_000n, available_for_withdrawal: this.balance / 2n };
  }

  async initTrading(_wallet: VenueWallet, _fields: VenueFields, metadata: Readonly<Record<string, unknown>>, replace: boolean): Promise<TradingSetup> {
    this.initTradingCalls.push({ replace, metadata });
    const key = generatePrivateKey();
    this.issuedKeys.push(key);
    return {
      stored: {
        agent_address: privateKeyToAccount(key).address,
        agent_name: (metadata.agent_name as string | undefined) ?? null,
        builder_address: (metadata.builder_address as string | undefined) ?? null,
        max_builder_fee_rate: (metadata.max_builder_fee_rate as string | undefined) ?? null,
      },
      oneTime: { agent_private_key: key },
    };
  }

  async prepareDeposit(): Promise<never> {
    throw new Error('not used by these endpoints');
  }
  async withdraw(): Promise<never> {
    throw new Error('not used by these endpoints');
  }
  async withdrawalStatus(): Promise<never> {
    throw new Error('not used by these endpoints');
  }
}

function onboardingTypedData(address: Address) {
  return {
    domain: { name: 'UnitVenue', version: '1', chainId: 42161 },
    types: {
      Onboarding: [
        { name: 'owner', type: 'address' },
        { name: 'action', type: 'string' },
      ],
    },
    primaryType: 'Onboarding' as const,
    message: { owner: address, action: 'onboard' },
  };
}

/** Test double of the chains: balances per (chain, token) of any owner, a fixed gas price. */
class FixedChains implements ChainReader {
  readonly balances = new Map<string, bigint>();
  gasPrice = async () => 2n * GWEI;
  chainsCarrying = (token: string): EvmChainCode[] => (token === 'USDC.E' ? ['ARB', 'POL'] : ['ETH', 'ARB', 'POL', 'INK']);
  decimals = (_chain: EvmChainCode, token: string) => (token === 'ETH' || token === 'POL' ? 18 : 6);
  native = (chain: EvmChainCode) => (chain === 'POL' ? 'POL' : 'ETH');
  readonly down = new Set<EvmChainCode>();
  balance = async (chain: EvmChainCode, _owner: Address, token: string) => {
    if (this.down.has(chain)) throw new ChainUnavailableError(chain, 'connection refused');
    return this.balances.get(`${chain}/${token}`) ?? 0n;
  };
}

/** Test double of the enclave's sign_data: checks the access key and op_jwt, signs with a real key. */
class SigningEnclave implements WalletEnclave {
  signCalls = 0;
  readonly privateKey: Hex;
  readonly accessKey: string;
  constructor(privateKey: Hex, accessKey: string) {
    this.privateKey = privateKey;
    this.accessKey = accessKey;
  }
  async createWallet(): Promise<never> {
    throw new Error('not used here');
  }
  async sign(_credentials: EnclaveCredentials, operation: SignOperation, body: Record<string, unknown>) {
    this.signCalls++;
    if (operation !== 'sign_data' || body.access_key !== this.accessKey || typeof body.op_jwt !== 'string') throw new Error('unexpected enclave call');
    return { signature: await signHash('evm', hexToBytes(this.privateKey), body.raw_data_hash as Hex) };
  }
}

let table: Table;
let stop: () => Promise<void>;
let dataDir: string;
let apps: AppRegistry;
let secretKey: string;
let issuerKey: JWK;
let keyWrapper: LocalKeyWrapper;
let opJwtSigner: LocalOpJwtSigner;
const userKey = generatePrivateKey();
const userAddress = privateKeyToAccount(userKey).address;
const ACCESS_KEY = 'ak-venue-unit';

const context = { awsRequestId: 'req-1', functionName: 'unit', getRemainingTimeInMillis: () => 29_000 } as unknown as Context;

function event(init: { method?: string; path: string; headers: Record<string, string>; body?: unknown; query?: Record<string, string> }): APIGatewayProxyEvent {
  const method = init.method ?? 'GET';
  const headers = { ...(init.body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...init.headers };
  return {
    resource: init.path,
    path: init.path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    queryStringParameters: init.query ?? null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      httpMethod: method,
      path: init.path,
      resourcePath: init.path,
      stage: 'prod',
      requestId: 'req-1',
      identity: { sourceIp: '127.0.0.1', userAgent: 'unit' },
    },
    body: init.body !== undefined ? JSON.stringify(init.body) : null,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
}

async function invoke(adapter: (event: any, context: Context) => Promise<HttpResult>, request: APIGatewayProxyEvent, jsonBody = false) {
  const result = (await httpHandler(adapter, { jsonBody })(request, context)) as HttpResult;
  return { status: result.statusCode, headers: result.headers ?? {}, raw: result.body ?? '', body: result.body ? JSON.parse(result.body) : undefined };
}

async function userJwt(sub: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid! })
    .setIssuer('https://idp.unit')
    .setAudience('venue-api')
    .setSubject(sub)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(await importJWK(issuerKey, 'ES256'));
}

async function createAccount(sub: string) {
  const userId = `u-${sub}`;
  await putAccountIfAbsent(table, {
    app_id: 'venue-app',
    app_user_id: sub,
    user_id: userId,
    public_address: { ETH: userAddress, SOL: '11111111111111111111111111111112' },
    perp_dex_status: defaultPerpDexStatus(),
    wallets: { evm: { wallet_id: `w-${sub}` }, sol: { wallet_id: `ws-${sub}` } },
    sealed: await sealSecrets(keyWrapper, accountEncryptionContext({ app_id: 'venue-app', user_id: userId }), {
      evm_access_key: Buffer.from(ACCESS_KEY),
      sol_access_key: Buffer.from('ak-sol'),
    }),
    created_at: '2026-11-22T00:00:00.000Z',
  });
  return { 'x-service-secret-key': secretKey, authorization: `Bearer ${await userJwt(sub)}` };
}

/** One world per test: a driver per venue (venue_e left unconfigured), chains, enclave. */
function world(options: { configured?: readonly VenueId[] } = {}) {
  const configured = options.configured ?? ['venue_a', 'venue_b', 'venue_c', 'venue_d'];
  const drivers = Object.fromEntries(VENUE_IDS.map((venue) => [venue, new CountingVenueDriver(venue)])) as Record<VenueId, CountingVenueDriver>;
  const urls = Object.fromEntries(configured.map((venue) => [venue, `https://${venue}.example.com`]));
  const venues = new VenueRegistry(urls, Object.fromEntries(VENUE_IDS.map((venue) => [venue, () => drivers[venue]])));
  const chains = new FixedChains();
  const enclave = new SigningEnclave(userKey, ACCESS_KEY);
  const deps = { apps, table, venues, chains, keyWrapper, opJwtSigner, enclave, venueReadTimeoutMs: 200 };
  return {
    drivers,
    chains,
    enclave,
    fund(chain: EvmChainCode, token: string, amount: bigint) {
      chains.balances.set(`${chain}/${token}`, amount);
    },
    check: (headers: Record<string, string>, body: unknown) =>
      invoke(makeCheckPerpDexRequirements(deps), event({ method: 'POST', path: '/account/check-perp-dex-requirements', headers, body }), true),
    init: (headers: Record<string, string>, body: unknown) =>
      invoke(makeInitPerpDex(deps), event({ method: 'POST', path: '/account/init-perp-dex', headers, body }), true),
    initTrading: (headers: Record<string, string>, body: unknown) =>
      invoke(makeInitPerpDexTrading(deps), event({ method: 'POST', path: '/account/init-perp-dex-trading', headers, body }), true),
    perp: (headers: Record<string, string>, query?: Record<string, string>) => invoke(makeGetPerp(deps), event({ path: '/account/perp', headers, query })),
    credentials: (headers: Record<string, string>, query?: Record<string, string>) =>
      invoke(makeGetPerpCredentials(deps), event({ path: '/account/perp-credentials', headers, query })),
  };
}

/** Enough on ARB for venue_b's first deposit and its gas. */
function fundForVenueB(w: ReturnType<typeof world>) {
  w.fund('ARB', 'USDC', 12n * USDC + 500_000n);
  w.fund('ARB', 'ETH', 10n ** 16n);
}

async function tableText(): Promise<string> {
  const out = await table.doc.send(new ScanCommand({ TableName: table.name }));
  return JSON.stringify(out.Items);
}

/** The handler modules, imported once the environment their composition roots read is set. */
let makeCheckPerpDexRequirements: typeof import('../../functions/account/check-perp-dex-requirements.ts').makeCheckPerpDexRequirements;
let makeInitPerpDex: typeof import('../../functions/account/init-perp-dex.ts').makeInitPerpDex;
let makeInitPerpDexTrading: typeof import('../../functions/account/init-perp-dex-trading.ts').makeInitPerpDexTrading;
let makeGetPerp: typeof import('../../functions/account/get-perp.ts').makeGetPerp;
let makeGetPerpCredentials: typeof import('../../functions/account/get-perp-credentials.ts').makeGetPerpCredentials;

let subject = 0;
const nextUser = () => createAccount(`user-${++subject}`);

beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('venue-endpoints-unit'));
  dataDir = await mkdtemp(join(tmpdir(), 'venue-endpoints-'));
  // The composition roots read these when the handler modules are imported (local adapters, no AWS).
  Object.assign(process.env, {
    TABLE_NAME: table.name,
    DYNAMODB_ENDPOINT: 'http://127.0.0.1:1',
    KEY_PROVIDER: 'local',
    OP_JWT_SIGNER: 'local',
    DATA_DIR: dataDir,
    TEE_URL: 'http://127.0.0.1:1',
    CHAINS_CONFIG: JSON.stringify(
      JSON.parse((await import('node:fs')).readFileSync(new URL('../../infra/config/chains.mainnet.json', import.meta.url), 'utf8')),
    ),
    RPC_URLS_SECRET: 'unit/rpc-urls',
    VENUE_URLS: '{"venue_b":"https://venue-b.example.com"}',
  });
  ({ makeCheckPerpDexRequirements } = await import('../../functions/account/check-perp-dex-requirements.ts'));
  ({ makeInitPerpDex } = await import('../../functions/account/init-perp-dex.ts'));
  ({ makeInitPerpDexTrading } = await import('../../functions/account/init-perp-dex-trading.ts'));
  ({ makeGetPerp } = await import('../../functions/account/get-perp.ts'));
  ({ makeGetPerpCredentials } = await import('../../functions/account/get-perp-credentials.ts'));
  apps = new AppRegistry(table);
  keyWrapper = new LocalKeyWrapper(dataDir, 'account');
  opJwtSigner = new LocalOpJwtSigner(dataDir);
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  issuerKey = privateJwk;
  ({ secret_key: secretKey } = await registerApplication(table, {
    app_id: 'venue-app',
    oidc: { provider_id: 'idp', issuer: 'https://idp.unit', audience: 'venue-api', jwks: { keys: [publicJwk] } },
    trusted_keys: [await opJwtSigner.publicJwk()],
  }));
}, 60_000);

afterAll(async () => {
  await stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('venue endpoints: dex, authentication, account', () => {
  let w: ReturnType<typeof world>;
  beforeEach(() => {
    w = world();
  });

  it('answers 400 naming `dex` when it is missing or unknown, on all five endpoints', async () => {
    const headers = await nextUser();
    for (const body of [{}, { dex: 'venue_f' }, { dex: 7 }]) {
      for (const call of [w.check, w.init, w.initTrading]) {
        const answer = await call(headers, body);
        expect(answer.status).toBe(400);
        expect(answer.body.error.code).toBe('INVALID_REQUEST');
        expect(answer.body.error.message).toMatch(/^body\.dex: /);
      }
    }
    expect((await w.check(headers, {})).body.error.message).toBe('body.dex: is required');
    expect((await w.check(headers, { dex: 'venue_f' })).body.error.message).toBe('body.dex: must be one of venue_a, venue_b, venue_c, venue_d, venue_e');
    for (const call of [w.perp, w.credentials]) {
      for (const query of [undefined, { dex: 'VENUE_B' }]) {
        const answer = await call(headers, query);
        expect(answer.status).toBe(400);
        expect(answer.body.error.message).toMatch(/^query\.dex: /);
      }
    }
  });

  it('answers 401 without the app secret and 404 ACCOUNT_NOT_FOUND before the account exists', async () => {
    const token = await userJwt('nobody-yet');
    const anonymous = await w.check({ authorization: `Bearer ${token}` }, { dex: 'venue_b' });
    expect(anonymous).toMatchObject({ status: 401, body: { success: false, error: { code: 'MISSING_SECRET_KEY' } } });
    const headers = { 'x-service-secret-key': secretKey, authorization: `Bearer ${token}` };
    for (const answer of [
      await w.check(headers, { dex: 'venue_b' }),
      await w.init(headers, { dex: 'venue_b' }),
      await w.initTrading(headers, { dex: 'venue_b' }),
      await w.perp(headers, { dex: 'venue_b' }),
      await w.credentials(headers, { dex: 'venue_b' }),
    ]) {
      expect(answer).toMatchObject({ status: 404, body: { success: false, error: { code: 'ACCOUNT_NOT_FOUND' } } });
    }
  });

  it('answers 503 VENUE_NOT_CONFIGURED for a venue without a base URL (requirements, init), and `error` on GET /account/perp', async () => {
    const headers = await nextUser();
    expect(await w.check(headers, { dex: 'venue_e' })).toMatchObject({
      status: 503,
      body: { error: { code: 'VENUE_NOT_CONFIGURED', message: 'venue_e is not configured on this deployment' } },
    });
    expect(await w.init(headers, { dex: 'venue_e' })).toMatchObject({ status: 503, body: { error: { code: 'VENUE_NOT_CONFIGURED' } } });
    expect(w.drivers.venue_e.initAccountCalls).toBe(0);
  });
});

describe('POST /account/check-perp-dex-requirements', () => {
  it("reports what is missing: the first-deposit minimum on the venue's chain and the gas, as decimal strings", async () => {
    const w = world();
    const headers = await nextUser();
    w.fund('ETH', 'USDC', 40n * USDC); // on the wrong chain for venue_b
    w.fund('ARB', 'USDC', 1_200_000n);
    const answer = await w.check(headers, { dex: 'venue_b' });
    expect(answer.status).toBe(200);
    const gas = FIRST_DEPOSIT_GAS.venue_b * 2n * GWEI;
    expect(answer.body).toMatchObject({
      success: true,
      dex: 'venue_b',
      requirements_met: false,
      requirements: {
        requirements_met: false,
        usdc_required: '5',
        usdc_available: '1.2',
        usdc_sufficient: false,
        chain_balances: { ETH: '40', ARB: '1.2', POL: '0', INK: '0' },
        eth_required: (Number(gas) / 1e18).toString(),
        eth_available: '0',
        eth_sufficient: false,
        chain: 'ARB',
        token: 'USDC',
        gas_token: 'ETH',
      },
    });
    expect(answer.body.message).toBe(answer.body.requirements.message);
    expect(answer.body.message).toMatch(/at least 5 USDC on ARB .*holds 1\.2.*40 on ETH.*bridged/);
    expect(answer.body.message).toMatch(/ETH on ARB for gas/);
  });

  it("leaves a chain that does not answer out of chain_balances, but fails (502) when the venue's own chain does not", async () => {
    const w = world();
    const headers = await nextUser();
    fundForVenueB(w);
    w.chains.down.add('INK');
    const partial = await w.check(headers, { dex: 'venue_b' });
    expect(partial).toMatchObject({ status: 200, body: { requirements_met: true, requirements: { chain_balances: { ETH: '0', ARB: '12.5', POL: '0' } } } });
    expect(Object.keys(partial.body.requirements.chain_balances)).not.toContain('INK');
    w.chains.down.add('ARB');
    const failed = await w.check(headers, { dex: 'venue_b' });
    expect(failed).toMatchObject({ status: 502, body: { success: false, error: { code: 'CHAIN_UNAVAILABLE' } } });
  });

  it('is met when both are covered; venue_e counts USDC.E on POL and gas in POL', async () => {
    const w = world({ configured: ['venue_b', 'venue_e'] });
    const headers = await nextUser();
    fundForVenueB(w);
    const b = await w.check(headers, { dex: 'venue_b' });
    expect(b.body).toMatchObject({
      requirements_met: true,
      requirements: { usdc_available: '12.5', usdc_sufficient: true, eth_available: '0.01', eth_sufficient: true },
    });
    expect(b.body.message).toMatch(/^Requirements met for venue_b/);

    w.fund('POL', 'USDC.E', 5n * USDC); // exactly the minimum
    const e = await w.check(headers, { dex: 'venue_e' });
    expect(e.body).toMatchObject({
      requirements_met: false,
      requirements: { chain: 'POL', token: 'USDC.E', gas_token: 'POL', usdc_sufficient: true, eth_sufficient: false, chain_balances: { ARB: '0', POL: '5' } },
    });
    expect(e.body.message).toMatch(/POL on POL for gas/);
    expect(e.body.message).not.toMatch(/USDC\.E on POL for the first deposit/);
  });
});

describe('POST /account/init-perp-dex', () => {
  it('refuses with 422 REQUIREMENTS_NOT_MET and stores nothing while the requirements are not met', async () => {
    const w = world();
    const headers = await nextUser();
    const before = await getAccount(table, 'venue-app', `user-${subject}`);
    const answer = await w.init(headers, { dex: 'venue_b' });
    expect(answer).toMatchObject({ status: 422, body: { success: false, error: { code: 'REQUIREMENTS_NOT_MET' } } });
    expect(answer.body.error.message).toMatch(/at least 5 USDC on ARB/);
    expect(w.drivers.venue_b.initAccountCalls).toBe(0);
    expect(w.enclave.signCalls).toBe(0);
    expect(await getAccount(table, 'venue-app', `user-${subject}`)).toEqual(before);
  });

  it("creates the venue account with the wallet's signature, stores its fields; again: the stored status, no venue call; force_reinit: redone", async () => {
    const w = world();
    const headers = await nextUser();
    const sub = `user-${subject}`;
    fundForVenueB(w);
    const first = await w.init(headers, { dex: 'venue_b', metadata: { referral: 'x' } });
    expect(first).toMatchObject({ status: 200, body: { success: true, dex: 'venue_b', status: { initialized: true, account_address: userAddress } } });
    expect(w.drivers.venue_b.initAccountCalls).toBe(1);
    expect(w.enclave.signCalls).toBe(1); // the onboarding signature, verified by the driver
    const stored = (await getAccount(table, 'venue-app', sub))!.perp_dex_status;
    expect(stored.venue_b).toEqual({ initialized: true, account_address: userAddress });
    expect(stored.venue_a).toEqual(defaultPerpDexStatus().venue_a); // the other venues untouched

    // Requirements no longer matter once initialized (funds may be at the venue now).
    w.fund('ARB', 'USDC', 0n);
    const again = await w.init(headers, { dex: 'venue_b' });
    expect(again).toMatchObject({ status: 200, body: { status: { initialized: true, account_address: userAddress } } });
    expect(again.body.message).toMatch(/already initialized/);
    expect(w.drivers.venue_b.initAccountCalls).toBe(1);

    const forced = await w.init(headers, { dex: 'venue_b', force_reinit: true });
    expect(forced).toMatchObject({ status: 200, body: { status: { initialized: true, account_address: userAddress } } });
    expect(forced.body.message).toBe('venue_b re-initialized');
    expect(w.drivers.venue_b.initAccountCalls).toBe(2);
  });

  it('makes exactly one venue account for concurrent calls of one user and venue', async () => {
    const w = world();
    const headers = await nextUser();
    fundForVenueB(w);
    const answers = await Promise.all(Array.from({ length: 6 }, () => w.init(headers, { dex: 'venue_b' })));
    for (const answer of answers) expect(answer).toMatchObject({ status: 200, body: { status: { initialized: true, account_address: userAddress } } });
    expect(w.drivers.venue_b.initAccountCalls).toBe(1);
    // Another venue of the same user is not serialised behind it, and is its own account.
    w.fund('ETH', 'USDC', 6n * USDC);
    w.fund('ETH', 'ETH', 10n ** 17n);
    const [c1, c2] = await Promise.all([w.init(headers, { dex: 'venue_c' }), w.init(headers, { dex: 'venue_c' })]);
    expect([c1.status, c2.status]).toEqual([200, 200]);
    expect(w.drivers.venue_c.initAccountCalls).toBe(1);
  });

  it('maps a venue rule to 422 with its code and a failing venue to 502 VENUE_UNAVAILABLE without internals; nothing stored', async () => {
    const w = world();
    const headers = await nextUser();
    fundForVenueB(w);
    w.drivers.venue_b.failInit = new VenueRuleError('BELOW_VENUE_MINIMUM', 'below the venue minimum');
    expect(await w.init(headers, { dex: 'venue_b' })).toMatchObject({ status: 422, body: { error: { code: 'BELOW_VENUE_MINIMUM' } } });
    w.drivers.venue_b.failInit = new Error('connect ECONNREFUSED 10.0.0.7:8443 https://internal.venue/path?key=abc');
    const failed = await w.init(headers, { dex: 'venue_b' });
    expect(failed).toMatchObject({
      status: 502,
      body: { error: { code: 'VENUE_UNAVAILABLE', message: 'venue_b did not answer as expected; try again later' } },
    });
    expect(failed.raw).not.toMatch(/ECONNREFUSED|10\.0\.0\.7|internal\.venue/);
    expect((await getAccount(table, 'venue-app', `user-${subject}`))!.perp_dex_status.venue_b.initialized).toBe(false);
  });
});

describe('POST /account/init-perp-dex-trading', () => {
  it('is refused before init-perp-dex (409 DEX_NOT_INITIALIZED) and while unfunded (409 DEX_NOT_FUNDED), distinct codes', async () => {
    const w = world();
    const headers = await nextUser();
    expect(await w.initTrading(headers, { dex: 'venue_b' })).toMatchObject({ status: 409, body: { error: { code: 'DEX_NOT_INITIALIZED' } } });
    fundForVenueB(w);
    await w.init(headers, { dex: 'venue_b' });
    const unfunded = await w.initTrading(headers, { dex: 'venue_b' });
    expect(unfunded).toMatchObject({ status: 409, body: { error: { code: 'DEX_NOT_FUNDED' } } });
    expect(unfunded.body.error.message).toMatch(/deposit at least 5 USDC/);
    expect(w.drivers.venue_b.initTradingCalls).toHaveLength(0);
  });

  it('returns the one-time key exactly once: never in the table, the logs, a later response; force_reinit replaces it', async () => {
    const w = world();
    const headers = await nextUser();
    fundForVenueB(w);
    await w.init(headers, { dex: 'venue_b' });
    w.drivers.venue_b.balance = 7n * USDC;
    const builder = '0x52908400098527886e0f7030069857d2e4169ee7';
    let answer!: Awaited<ReturnType<typeof w.initTrading>>;
    const logs = await captureJsonLines(async () => {
      answer = await w.initTrading(headers, { dex: 'venue_b', metadata: { agent_name: 'bot 1', builder_address: builder, max_builder_fee_rate: '0.05%' } });
    });
    const key = w.drivers.venue_b.issuedKeys[0]!;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      success: true,
      dex: 'venue_b',
      status: {
        trade_initialized: true,
        agent_private_key: key,
        agent_address: privateKeyToAccount(key).address,
        agent_name: 'bot 1',
        builder_address: getAddress(builder), // normalised by the schema
        max_builder_fee_rate: '0.05%',
      },
    });
    expect(w.drivers.venue_b.initTradingCalls).toEqual([
      { replace: false, metadata: { agent_name: 'bot 1', builder_address: getAddress(builder), max_builder_fee_rate: '0.05%' } },
    ]);
    expect(logs.length).toBeGreaterThan(0); // the request was logged, just not the key
    const keyBody = key.slice(2);
    expect(JSON.stringify(logs)).not.toContain(keyBody);
    expect(await tableText()).not.toContain(keyBody);
    const stored = (await getAccount(table, 'venue-app', `user-${subject}`))!.perp_dex_status.venue_b;
    expect(stored).toMatchObject({ initialized: true, trade_initialized: true, agent_address: privateKeyToAccount(key).address, agent_name: 'bot 1' });

    const credentials = await w.credentials(headers, { dex: 'venue_b' });
    expect(credentials.body).toEqual({
      dex: 'venue_b',
      initialized: true,
      trade_initialized: true,
      error: null,
      account_address: userAddress,
      agent_name: 'bot 1',
      agent_address: privateKeyToAccount(key).address,
      builder_address: getAddress(builder),
      max_builder_fee_rate: '0.05%',
    });
    const later = [credentials, await w.perp(headers, { dex: 'venue_b' }), await w.init(headers, { dex: 'venue_b' })];
    for (const response of later) expect(response.raw).not.toContain(keyBody);

    const repeat = await w.initTrading(headers, { dex: 'venue_b' });
    expect(repeat).toMatchObject({ status: 409, body: { error: { code: 'TRADING_ALREADY_INITIALIZED' } } });
    expect(repeat.raw).not.toContain(keyBody);

    const replaced = await w.initTrading(headers, { dex: 'venue_b', force_reinit: true });
    const newKey = w.drivers.venue_b.issuedKeys[1]!;
    expect(newKey).not.toBe(key);
    expect(replaced).toMatchObject({ status: 200, body: { status: { agent_private_key: newKey, agent_address: privateKeyToAccount(newKey).address } } });
    expect(w.drivers.venue_b.initTradingCalls[1]!.replace).toBe(true);
    expect(await tableText()).not.toContain(newKey.slice(2));
    // The replaced status no longer names the old agent.
    expect((await w.credentials(headers, { dex: 'venue_b' })).body.agent_address).toBe(privateKeyToAccount(newKey).address);
  });

  it("validates each venue's metadata: venue_b fields and formats, venue_c/venue_d `name`, none for venue_a/venue_e", async () => {
    const w = world();
    const headers = await nextUser();
    const refused = async (dex: VenueId, metadata: unknown, field: RegExp) => {
      const answer = await w.initTrading(headers, { dex, metadata });
      expect(answer.status, JSON.stringify(metadata)).toBe(400);
      expect(answer.body.error.message).toMatch(field);
    };
    await refused(
      'venue_b',
      { builder_address: '0x1234', max_builder_fee_rate: '0.01%' },
      /^body\.metadata\.builder_address: must be a 0x-prefixed 20-byte hex address/,
    );
    await refused(
      'venue_b',
      { builder_address: `0x${'ab'.repeat(20)}`, max_builder_fee_rate: '0.2%' },
      /^body\.metadata\.max_builder_fee_rate: must be at most 0\.1%/,
    );
    await refused(
      'venue_b',
      { builder_address: `0x${'ab'.repeat(20)}`, max_builder_fee_rate: '0.01' },
      /^body\.metadata\.max_builder_fee_rate: must be a percent string/,
    );
    await refused('venue_b', { builder_address: `0x${'ab'.repeat(20)}` }, /^body\.metadata: builder_address and max_builder_fee_rate go together/);
    await refused('venue_b', { agent_name: 'x'.repeat(17) }, /^body\.metadata\.agent_name: must be 1-16 characters/);
    await refused('venue_b', { agent_name: '' }, /^body\.metadata\.agent_name: /);
    await refused('venue_b', { name: 'n' }, /^body\.metadata\.name: is not allowed/);
    await refused('venue_c', { name: 'bad/name' }, /^body\.metadata\.name: must be 1-64 characters/);
    await refused('venue_d', { name: 'thirteen-char' }, /^body\.metadata\.name: must be 1-12 characters/);
    await refused('venue_a', { name: 'x' }, /^body\.metadata\.name: is not allowed/);
    await refused('venue_e', { agent_name: 'x' }, /^body\.metadata\.agent_name: is not allowed/);
    await refused('venue_b', 'text', /^body\.metadata: must be a JSON object/);
    await refused('venue_b', { agent_name: 'ok', referrer: 'x' }, /^body\.metadata\.referrer: is not allowed/);
    await refused('venue_c', { name: 5 }, /^body\.metadata\.name: must be of type string/);
    // Well-formed metadata passes validation and reaches the state check.
    expect(await w.initTrading(headers, { dex: 'venue_d', metadata: { name: 'default' } })).toMatchObject({
      status: 409,
      body: { error: { code: 'DEX_NOT_INITIALIZED' } },
    });
  });
});

describe('GET /account/perp and /account/perp-credentials', () => {
  it('not initialized: initialized false, assets and transfer_rules null, error null; no venue call; venue_b credential fields null', async () => {
    const w = world();
    const headers = await nextUser();
    w.drivers.venue_b.failBalances = new Error('must not be called');
    for (const dex of VENUE_IDS) {
      expect(await w.perp(headers, { dex })).toEqual(
        expect.objectContaining({ status: 200, body: { dex, initialized: false, assets: null, transfer_rules: null, error: null } }),
      );
    }
    expect((await w.credentials(headers, { dex: 'venue_b' })).body).toEqual({
      dex: 'venue_b',
      initialized: false,
      trade_initialized: false,
      error: null,
      account_address: null,
      agent_name: null,
      agent_address: null,
      builder_address: null,
      max_builder_fee_rate: null,
    });
  });

  it('initialized: assets from the venue and transfer_rules from its rules, as decimal strings; a failing venue is 200 with `error`', async () => {
    const w = world();
    const headers = await nextUser();
    fundForVenueB(w);
    await w.init(headers, { dex: 'venue_b' });
    w.drivers.venue_b.balance = 7_250_000n;
    const answer = await w.perp(headers, { dex: 'venue_b' });
    expect(answer).toEqual(
      expect.objectContaining({
        status: 200,
        body: {
          dex: 'venue_b',
          initialized: true,
          assets: { balance: '7.25', account_value: '7.5', available_for_withdrawal: '3.625' },
          transfer_rules: {
            chain: 'ARB',
            token: 'USDC',
            deposit: {
              supported: true,
              minimum_amount: '5',
              fee: { amount: '0', token: 'USDC', fee_type: 'none', note: null },
              note: 'below the minimum is lost',
            },
            withdrawal: {
              supported: true,
              minimum_amount: '2',
              fee: { amount: '1', token: 'USDC', fee_type: 'fixed', note: 'charged by the venue' },
              note: null,
            },
          },
          error: null,
        },
      }),
    );

    w.drivers.venue_b.failBalances = new Error('socket hang up at https://10.1.2.3/info');
    let failed!: Awaited<ReturnType<typeof w.perp>>;
    const logs = await captureJsonLines(async () => {
      failed = await w.perp(headers, { dex: 'venue_b' });
    });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ dex: 'venue_b', initialized: true, assets: null, error: 'venue_b could not be read just now; try again later' });
    expect(failed.body.transfer_rules.chain).toBe('ARB');
    expect(failed.raw).not.toMatch(/10\.1\.2\.3|socket/);
    expect(logs.some((line) => line.message === 'venue balances unavailable')).toBe(true);

    // A venue that does not answer at all: the same, within the read timeout, not a gateway 504.
    w.drivers.venue_b.failBalances = undefined;
    w.drivers.venue_b.stallBalances = true;
    const started = Date.now();
    const stalled = await w.perp(headers, { dex: 'venue_b' });
    expect(stalled).toMatchObject({ status: 200, body: { assets: null, error: 'venue_b could not be read just now; try again later' } });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('a venue initialized earlier but no longer configured: 200 with `error`, never a 5xx', async () => {
    const configuredW = world();
    const headers = await nextUser();
    fundForVenueB(configuredW);
    await configuredW.init(headers, { dex: 'venue_b' });
    const unconfigured = world({ configured: [] });
    expect(await unconfigured.perp(headers, { dex: 'venue_b' })).toEqual(
      expect.objectContaining({
        status: 200,
        body: { dex: 'venue_b', initialized: true, assets: null, transfer_rules: null, error: 'venue_b is not configured on this deployment' },
      }),
    );
    // Credentials come from the account alone.
    expect((await unconfigured.credentials(headers, { dex: 'venue_b' })).body).toMatchObject({ initialized: true, trade_initialized: false, error: null });
  });
});

describe('the venue wallet (signatures through the enclave path)', () => {
  it("signs EIP-712 typed data and EIP-191 messages that verify for the account's address, opening the access key only when signing", async () => {
    const { venueWallet } = await import('../../shared/venues/venue-wallet.ts');
    await nextUser();
    const account = (await getAccount(table, 'venue-app', `user-${subject}`))!;
    const enclave = new SigningEnclave(userKey, ACCESS_KEY);
    let decrypts = 0;
    const countingWrapper = {
      generateDataKey: keyWrapper.generateDataKey.bind(keyWrapper),
      decryptDataKey: (...args: Parameters<LocalKeyWrapper['decryptDataKey']>) => {
        decrypts++;
        return keyWrapper.decryptDataKey(...args);
      },
    };
    const app = (await getApplication(table, 'venue-app'))!;
    const user = { app, secretKey, identity: { iss: 'https://idp.unit', sub: `user-${subject}` }, token: 'unused' } as never;
    const wallet = venueWallet({ keyWrapper: countingWrapper as never, opJwtSigner, enclave }, user, account);
    expect(wallet.address).toBe(userAddress);
    expect(decrypts).toBe(0);
    const typedData = onboardingTypedData(wallet.address);
    expect(await verifyTypedData({ ...typedData, address: userAddress, signature: await wallet.signTypedData(typedData) })).toBe(true);
    const message = 'venue unit: sign in';
    expect(await verifyMessage({ address: userAddress, message, signature: await wallet.signMessage(message) })).toBe(true);
    expect(enclave.signCalls).toBe(2);
    expect(decrypts).toBe(1); // the access key is opened once per wallet
  });
});
