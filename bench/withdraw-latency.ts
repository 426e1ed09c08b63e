import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Keypair } from '@solana/web3.js';
import { importJWK, type JWK, SignJWT } from 'jose';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { devAppPaths } from '../infra/local/applications.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';

/**
 * `npm run bench:withdraw [-- --count 100]`: withdrawal latency on the sandbox chains (anvil
 * automines; LiteSVM confirms at once), end to end and split into signing (enclave calls),
 * broadcast and inclusion, from each response's Server-Timing header. Sequential sends from one
 * wallet, so the figures are per withdrawal; then bursts of parallel sends from one wallet, which
 * queue on its sender lease (shared/chains/sender), for the throughput one wallet gets.
 */
const { values } = parseArgs({ options: { count: { type: 'string', default: '100' } } });
const COUNT = Number(values.count);

process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true'; // no EMF lines between the numbers
// One user makes 100+ sponsored withdrawals here: past the default 20 a day (shared/withdrawals/sponsorship-budget.ts).
process.env.SPONSOR_DAILY_SENDS_PER_USER = '100000';
const dataDir = await mkdtemp(join(tmpdir(), 'bench-withdraw-'));
const runtime = await startLocalRuntime({ dataDir, ports: { account: 0, enclave: 0, express: 0 } });
const app = runtime.apps[0]!;
const issuerKey = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;
const token = await new SignJWT({})
  .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid! })
  .setIssuer(app.oidc.issuer)
  .setAudience(app.oidc.audience!)
  .setSubject('bench-withdraw')
  .setIssuedAt()
  .setExpirationTime('2h')
  .sign(await importJWK(issuerKey, 'ES256'));
const headers = { authorization: `Bearer ${token}`, 'x-service-secret-key': app.secret_key, 'content-type': 'application/json' };
const account = (await (await fetch(`${runtime.urls.account}/account`, { method: 'POST', headers })).json()) as {
  public_address: { ETH: string; SOL: string };
};

async function faucet(chain: string, address: string, token: string, amount: string) {
  const response = await fetch(`${runtime.urls.account}/sandbox/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chain, address, token, amount }),
  });
  if (!response.ok) throw new Error(`faucet: ${await response.text()}`);
}
await faucet('ARB', account.public_address.ETH, 'ETH', '10');
await faucet('ARB', account.public_address.ETH, 'USDC', '100000');
await faucet('SOL', account.public_address.SOL, 'SOL', '10');
await faucet('SOL', account.public_address.SOL, 'USDC', '100000');

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function run(name: string, body: () => object) {
  const phases: Record<'total' | 'sign' | 'broadcast' | 'inclusion', number[]> = { total: [], sign: [], broadcast: [], inclusion: [] };
  for (let i = 0; i < COUNT + 3; i++) {
    const started = performance.now();
    const response = await fetch(`${runtime.urls.account}/withdraw`, { method: 'POST', headers, body: JSON.stringify(body()) });
    const total = performance.now() - started;
    if (!response.ok) throw new Error(`${name}: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
    if (i < 3) continue; // warm-up
    phases.total.push(total);
    for (const part of (response.headers.get('server-timing') ?? '').split(',')) {
      const [phase, dur] = part.trim().split(';dur=') as ['sign' | 'broadcast' | 'inclusion', string];
      phases[phase]?.push(Number(dur));
    }
  }
  const line = (Object.keys(phases) as (keyof typeof phases)[])
    .map((phase) => {
      const sorted = phases[phase].sort((a, b) => a - b);
      return `${phase} p50 ${pct(sorted, 50).toFixed(1)} / p99 ${pct(sorted, 99).toFixed(1)} ms`;
    })
    .join('   ');
  process.stdout.write(`${name.padEnd(26)} ${line}\n`);
}

process.stdout.write(`withdrawals on the sandbox chains, ${COUNT} each (after 3 warm-up), sequential, Node ${process.version}\n`);
await run('ARB USDC', () => ({ to_address: privateKeyToAddress(generatePrivateKey()), amount: '1', chain: 'ARB' }));
await run('ARB USDC, gas sponsored', () => ({ to_address: privateKeyToAddress(generatePrivateKey()), amount: '1', chain: 'ARB', gas_sponsored: true }));
await run('SOL USDC (new token acct)', () => ({ to_address: Keypair.generate().publicKey.toBase58(), amount: '1', chain: 'SOL' }));

/** `size` withdrawals from one wallet at once, `rounds` times: wall time per burst and withdrawals per second. */
async function burst(name: string, size: number, rounds: number, body: () => object) {
  const walls: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    const responses = await Promise.all(
      Array.from({ length: size }, () => fetch(`${runtime.urls.account}/withdraw`, { method: 'POST', headers, body: JSON.stringify(body()) })),
    );
    walls.push(performance.now() - started);
    for (const response of responses) if (!response.ok) throw new Error(`${name}: ${response.status} ${await response.text()}`);
  }
  const sorted = walls.sort((a, b) => a - b);
  const median = pct(sorted, 50);
  process.stdout.write(
    `${name.padEnd(26)} ${size} at once from one wallet, ${rounds} bursts: wall p50 ${median.toFixed(0)} / max ${sorted.at(-1)!.toFixed(0)} ms, ${((size / median) * 1000).toFixed(1)} withdrawals/s\n`,
  );
}

await burst('ARB USDC burst', 20, 5, () => ({ to_address: privateKeyToAddress(generatePrivateKey()), amount: '1', chain: 'ARB' }));
await burst('ARB USDC sponsored burst', 20, 5, () => ({
  to_address: privateKeyToAddress(generatePrivateKey()),
  amount: '1',
  chain: 'ARB',
  gas_sponsored: true,
}));

await runtime.stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(0);
