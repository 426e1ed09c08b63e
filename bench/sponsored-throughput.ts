import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { importJWK, type JWK, SignJWT } from 'jose';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { devAppPaths } from '../infra/local/applications.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';

/**
 * `npm run bench:sponsor [-- --users 200] [--rounds 3] [--rtt 5]` (issue 25): `users` users, each with
 * its own wallet, send one 1-USDC withdrawal on ARB at the same moment, in one run of the local
 * runtime, three ways: paying their own gas (each wallet its own nonce); gas-sponsored as a
 * wallet's first sponsored send (EIP-7702: the delegation is set in the same transaction, so the
 * wallet signs an authorisation and the execute digest, and a sponsor signs the transaction);
 * gas-sponsored again by those same, now delegated, wallets (the wallet signs the digest only).
 * Every sponsored send needs a sponsor's nonce: SPONSOR_POOL_SIZE sponsors share them (default 8).
 * Prints each burst's throughput (sends / wall time of the burst) and p50/p99 request latency,
 * and the ratios to the unsponsored burst. A 409 is retried after its Retry-After with the same
 * Idempotency-Key, as a client does (counted, and in the latency); every withdrawal must end 200
 * (exit 1 otherwise).
 */
const { values } = parseArgs({
  options: { users: { type: 'string', default: '40' }, rounds: { type: 'string', default: '1' }, rtt: { type: 'string', default: '0' } },
});
/**
 * `--rtt <ms>`: every table call and every HTTP call the functions make (enclave, chain RPC) waits
 * that much more, as a network round trip in AWS does (bench:enclave's `--rtt` for the table). The
 * sandbox runs every function on one thread, so without it the bench measures CPU per send; with
 * it, also how long a send holds a lease, which is what caps one sponsor account.
 */
const RTT_MS = Number(values.rtt);
const USERS = Number(values.users);
const ROUNDS = Number(values.rounds);
if (!Number.isSafeInteger(USERS) || USERS < 1 || !Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error('--users and --rounds: positive whole numbers');

if (!Number.isFinite(RTT_MS) || RTT_MS < 0) throw new Error('--rtt: milliseconds, 0 or more');
const benchFetch = globalThis.fetch;
if (RTT_MS > 0) {
  const pause = () => new Promise((done) => setTimeout(done, RTT_MS));
  const send = DynamoDBDocumentClient.prototype.send as (...args: unknown[]) => Promise<unknown>;
  DynamoDBDocumentClient.prototype.send = async function (this: unknown, ...args: unknown[]) {
    await pause();
    return send.apply(this, args);
  } as typeof DynamoDBDocumentClient.prototype.send;
  globalThis.fetch = async (...args: Parameters<typeof fetch>) => {
    await pause();
    return benchFetch(...args);
  };
}

process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const dataDir = await mkdtemp(join(tmpdir(), 'bench-sponsor-'));
const startedAt = performance.now();
const runtime = await startLocalRuntime({ dataDir, ports: { account: 0, enclave: 0, express: 0 } });
const startMs = performance.now() - startedAt;
const app = runtime.apps[0];
if (!app) throw new Error('no dev app');
const issuerKey = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;
const signingKey = await importJWK(issuerKey, 'ES256');
const account = runtime.urls.account;

async function faucet(address: string, token: string, amount: string) {
  const response = await benchFetch(`${account}/sandbox/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chain: 'ARB', address, token, amount }),
  });
  if (!response.ok) throw new Error(`faucet: ${await response.text()}`);
}

/** A user with an account, 10 USDC and some ETH for gas on ARB (the sponsored ones never spend it). */
async function newUser(sub: string) {
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid ?? '' })
    .setIssuer(app!.oidc.issuer)
    .setAudience(app!.oidc.audience ?? '')
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(signingKey);
  const headers = { authorization: `Bearer ${token}`, 'x-service-secret-key': app!.secret_key, 'content-type': 'application/json' };
  const created = await benchFetch(`${account}/account`, { method: 'POST', headers });
  if (!created.ok) throw new Error(`account: ${created.status} ${await created.text()}`);
  const { public_address } = (await created.json()) as { public_address: { ETH: string } };
  await faucet(public_address.ETH, 'USDC', '10');
  await faucet(public_address.ETH, 'ETH', '0.01');
  return headers;
}

/** Users made a few at a time (setting them up is not what is measured). */
async function newUsers(prefix: string, count: number) {
  const users: Awaited<ReturnType<typeof newUser>>[] = [];
  for (let i = 0; i < count; i += 10)
    users.push(...(await Promise.all(Array.from({ length: Math.min(10, count - i) }, (_, j) => newUser(`${prefix}-${i + j}`)))));
  return users;
}

const withdraw = (headers: Record<string, string>, sponsored: boolean, key = crypto.randomUUID(), to = privateKeyToAddress(generatePrivateKey())) =>
  benchFetch(`${account}/withdraw`, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': key },
    body: JSON.stringify({ to_address: to, amount: '1', chain: 'ARB', ...(sponsored ? { gas_sponsored: true } : {}) }),
  });

/**
 * One user's withdrawal as a client should send it: a 409 (SENDER_BUSY: every sponsor busy for as
 * long as the wallet's lease allows; WITHDRAWAL_IN_PROGRESS) is retried after its Retry-After with
 * the same Idempotency-Key and body, so it is still one withdrawal. Returns the final status and
 * how many 409s it took.
 */
async function withdrawUntilAnswered(headers: Record<string, string>, sponsored: boolean) {
  const key = crypto.randomUUID();
  const to = privateKeyToAddress(generatePrivateKey());
  for (let busy = 0; ; busy++) {
    const response = await withdraw(headers, sponsored, key, to);
    const body = await response.text();
    if (response.status !== 409 || busy >= 10) return { status: response.status, body, busy };
    await new Promise((done) => setTimeout(done, Number(response.headers.get('retry-after') ?? '1') * 1000));
  }
}
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

interface Round {
  readonly throughput: number;
  readonly p50: number;
  readonly p99: number;
  readonly wall: number;
  readonly ok: number;
  /** 409s answered on the way (each retried with the same Idempotency-Key). */
  readonly busy: number;
}

async function burst(users: Record<string, string>[], sponsored: boolean): Promise<Round> {
  const started = performance.now();
  const outcomes = await Promise.all(
    users.map(async (headers) => {
      const { status, body, busy } = await withdrawUntilAnswered(headers, sponsored);
      const ms = performance.now() - started;
      if (status !== 200) process.stderr.write(`${sponsored ? 'sponsored' : 'unsponsored'}: ${status} ${body}\n`);
      return { ms, ok: status === 200, busy };
    }),
  );
  const wall = performance.now() - started;
  const sorted = outcomes.map((l) => l.ms).sort((a, b) => a - b);
  const busy = outcomes.reduce((sum, l) => sum + l.busy, 0);
  return { throughput: (users.length / wall) * 1000, p50: pct(sorted, 50), p99: pct(sorted, 99), wall, ok: outcomes.filter((l) => l.ok).length, busy };
}

process.stdout.write(
  `bench:sponsor: ${USERS} users, one 1-USDC ARB withdrawal each at once; SPONSOR_POOL_SIZE ${process.env.SPONSOR_POOL_SIZE ?? '8 (default)'}; ` +
    `${RTT_MS > 0 ? `+${RTT_MS} ms per table and HTTP call; ` : ''}` +
    `runtime up in ${(startMs / 1000).toFixed(1)} s; Node ${process.version}\n`,
);
// Warm-up: every handler module loaded, one send of each kind.
const warm = await newUsers('warm', 2);
for (const [i, headers] of warm.entries()) {
  const response = await withdraw(headers, i === 1);
  if (response.status !== 200) throw new Error(`warm-up: ${response.status} ${await response.text()}`);
}

type Kind = 'unsponsored' | 'sponsored, first send' | 'sponsored, delegated';
const KINDS: readonly Kind[] = ['unsponsored', 'sponsored, first send', 'sponsored, delegated'];
const results = new Map<Kind, Round[]>(KINDS.map((kind) => [kind, []]));
for (let round = 0; round < ROUNDS; round++) {
  const plainUsers = await newUsers(`plain-${round}`, USERS);
  const sponsoredUsers = await newUsers(`sponsored-${round}`, USERS);
  for (const kind of KINDS) {
    const result = await burst(kind === 'unsponsored' ? plainUsers : sponsoredUsers, kind !== 'unsponsored');
    results.get(kind)?.push(result);
    process.stdout.write(
      `  round ${round + 1} ${kind.padEnd(22)} ${result.ok}/${USERS} 200 (${result.busy} 409 retried), wall ${result.wall.toFixed(0)} ms, ${result.throughput.toFixed(1)}/s, ` +
        `p50 ${result.p50.toFixed(0)} ms, p99 ${result.p99.toFixed(0)} ms\n`,
    );
  }
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN;
const summary = (kind: Kind) => {
  const rounds = results.get(kind) ?? [];
  return {
    throughput: median(rounds.map((r) => r.throughput)),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    ok: rounds.reduce((sum, r) => sum + r.ok, 0),
    busy: rounds.reduce((sum, r) => sum + r.busy, 0),
  };
};
const total = USERS * ROUNDS;
const plain = summary('unsponsored');
let table = `\n| ${USERS} users at once (median of ${ROUNDS}) | throughput | p50 | p99 | 200s (409s retried) | throughput vs unsponsored (>= 0.8) | p99 vs unsponsored (<= 1.5) |\n|---|---|---|---|---|---|---|\n`;
let allOk = true;
for (const kind of KINDS) {
  const row = summary(kind);
  allOk &&= row.ok === total;
  const ratios = kind === 'unsponsored' ? '| |' : `${(row.throughput / plain.throughput).toFixed(2)}x | ${(row.p99 / plain.p99).toFixed(2)}x |`;
  table += `| ${kind} | ${row.throughput.toFixed(1)}/s | ${row.p50.toFixed(0)} ms | ${row.p99.toFixed(0)} ms | ${row.ok}/${total} (${row.busy}) | ${ratios}\n`;
}
process.stdout.write(table);

await runtime.stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(allOk ? 0 : 1);
