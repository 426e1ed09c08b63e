import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { importJWK, type JWK, SignJWT } from 'jose';
import { devAppPaths } from '../infra/local/applications.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';

/**
 * `npm run bench:api [-- --requests 1000 --concurrency 8]`: latency (p50/p99) and throughput
 * of the local runtime over real HTTP, embedded dynalite, local key providers. Not a test:
 * it prints numbers.
 */
const { values } = parseArgs({ options: { requests: { type: 'string', default: '1000' }, concurrency: { type: 'string', default: '8' } } });
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);

process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true'; // no EMF lines between the numbers
const dataDir = await mkdtemp(join(tmpdir(), 'bench-'));
const runtime = await startLocalRuntime({ dataDir, ports: { account: 0, enclave: 0, express: 0 } });
const [app] = runtime.apps;
const issuerKey = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;

/** A JWT of the app's identity provider, with a fresh `jti`: as an op_jwt it is good for one enclave call. */
async function token(sub: string, ttl = 3600) {
  return new SignJWT({ jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid! })
    .setIssuer(app!.oidc.issuer)
    .setAudience(app!.oidc.audience!)
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime(`${ttl}s`)
    .sign(await importJWK(issuerKey, 'ES256'));
}

const userHeaders = { authorization: `Bearer ${await token('bench-user')}`, 'x-service-secret-key': app!.secret_key };

async function timed(url: string, init: RequestInit): Promise<number> {
  const started = performance.now();
  const response = await fetch(url, init);
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${response.status}`);
  return performance.now() - started;
}

async function measure(name: string, request: () => Promise<number>) {
  for (let i = 0; i < 20; i++) await request(); // warm-up: module load, JWKS import, caches
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) latencies.push(await request());
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(2);
  process.stdout.write(
    `${name.padEnd(40)} p50 ${pct(50).padStart(7)} ms   p99 ${pct(99).padStart(7)} ms   ${(latencies.length / seconds).toFixed(0).padStart(6)} req/s\n`,
  );
}

const firstCreate = await timed(`${runtime.urls.account}/account`, { method: 'POST', headers: userHeaders });
process.stdout.write(`local runtime, ${REQUESTS} requests per endpoint, concurrency ${CONCURRENCY}, Node ${process.version}\n`);
process.stdout.write(`first POST /account (creates 2 wallets, cold modules): ${firstCreate.toFixed(1)} ms\n`);

await measure('GET /account', () => timed(`${runtime.urls.account}/account`, { headers: userHeaders }));
await measure('POST /wallet/sign', () =>
  timed(`${runtime.urls.account}/wallet/sign`, {
    method: 'POST',
    headers: { ...userHeaders, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'bench' }),
  }),
);

// Venue routes against the sandbox venue_b: the requirements (balances and gas price from the
// sandbox chain), a venue account (one init, timed once), its assets (the venue's
// clearinghouseState) and its stored credentials.
const address = ((await (await fetch(`${runtime.urls.account}/account`, { headers: userHeaders })).json()) as { public_address: { ETH: string } })
  .public_address.ETH;
for (const [token, amount] of [
  ['USDC', '20'],
  ['ETH', '0.01'],
]) {
  await timed(`${runtime.urls.account}/sandbox/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chain: 'ARB', address, token, amount }),
  });
}
const jsonPost = (path: string, body: unknown) => () =>
  timed(`${runtime.urls.account}${path}`, { method: 'POST', headers: { ...userHeaders, 'content-type': 'application/json' }, body: JSON.stringify(body) });
await measure('POST /account/check-perp-dex-requirements', jsonPost('/account/check-perp-dex-requirements', { dex: 'venue_b' }));
process.stdout.write(`first POST /account/init-perp-dex (venue_b): ${(await jsonPost('/account/init-perp-dex', { dex: 'venue_b' })()).toFixed(1)} ms\n`);
await measure('GET /account/perp (venue_b)', () => timed(`${runtime.urls.account}/account/perp?dex=venue_b`, { headers: userHeaders }));
await measure('GET /account/perp-credentials (venue_b)', () => timed(`${runtime.urls.account}/account/perp-credentials?dex=venue_b`, { headers: userHeaders }));

// The enclave directly: one op_jwt per call, as a client would send it.
const wallet = (await (
  await fetch(`${runtime.urls.enclave}/v2/api/wallet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-secret-key': app!.secret_key },
    body: JSON.stringify({ auth_jwt: await token('bench-user'), network: 'ETH', wallet_group_id: 'bench' }),
  })
).json()) as { wallet_id: string; access_key: string };
// Minted before the clock starts (20 warm-ups + the measured requests): an op_jwt is single-use.
const opJwts = await Promise.all(Array.from({ length: 20 + REQUESTS }, () => token('bench-user', 300)));
await measure('enclave POST /v2/api/wallet/sign_data', () =>
  timed(`${runtime.urls.enclave}/v2/api/wallet/sign_data`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-secret-key': app!.secret_key },
    body: JSON.stringify({ op_jwt: opJwts.pop(), access_key: wallet.access_key, wallet_id: wallet.wallet_id, raw_data_hash: `0x${'ab'.repeat(32)}` }),
  }),
);

await runtime.stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(0);
