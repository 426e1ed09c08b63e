import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { importJWK, type JWK, SignJWT } from 'jose';
import { devAppPaths } from '../infra/local/applications.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';

/**
 * `npm run bench:transfers [-- --count 10]`: transfers on the sandbox with zero artificial latency
 * (anvil automines, the bridge fills at once, venues credit from their chain watchers), through
 * the HTTP API and the local Step Functions running statemachines/transfer.asl.json:
 * - end-to-end latency of a one-step deposit (self → venue_b on ARB) and of a three-step
 *   venue-to-venue transfer (venue_b on ARB → bridge → venue_d on INK), from POST /transfer to the
 *   task read back `completed`;
 * - state transitions per step (StateEntered + StateRetried, what AWS bills; target ≤ 6) and
 *   Lambda invocations per step, from the local Step Functions' counts of each execution.
 * The local Wait lasts one sandbox tick (SANDBOX_TICK_MS, or SANDBOX_STEP_WAIT_MS; 200 ms by default), so latency includes one such
 * Wait per step.
 */
const { values } = parseArgs({ options: { count: { type: 'string', default: '10' } } });
const COUNT = Number(values.count);

process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const dataDir = await mkdtemp(join(tmpdir(), 'bench-transfers-'));
const runtime = await startLocalRuntime({ dataDir, ports: { account: 0, enclave: 0, express: 0 } });
const app = runtime.apps[0]!;
const issuerKey = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;
const token = await new SignJWT({})
  .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid! })
  .setIssuer(app.oidc.issuer)
  .setAudience(app.oidc.audience!)
  .setSubject('bench-transfers')
  .setIssuedAt()
  .setExpirationTime('2h')
  .sign(await importJWK(issuerKey, 'ES256'));
const headers = { authorization: `Bearer ${token}`, 'x-service-secret-key': app.secret_key, 'content-type': 'application/json' };
const api = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${runtime.urls.account}${path}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
  const json = (await response.json()) as any;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
};
const account = await api('POST', '/account');
const evm = account.public_address.ETH as string;

async function faucet(chain: string, token: string, amount: string) {
  await api('POST', '/sandbox/faucet', { chain, address: evm, token, amount });
}
await faucet('ARB', 'ETH', '10');
await faucet('ARB', 'USDC', '100000');
await faucet('INK', 'ETH', '10');
await faucet('INK', 'USDC', '100');
await api('POST', '/account/init-perp-dex', { dex: 'venue_b' });
await api('POST', '/account/init-perp-dex', { dex: 'venue_d' });

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function run(name: string, body: object, steps: number) {
  const latencies: number[] = [];
  let transitions = 0;
  let invocations = 0;
  for (let i = 0; i < COUNT + 1; i++) {
    const started = performance.now();
    const { task_id } = await api('POST', '/transfer', body);
    let task = await api('GET', `/task/${task_id}`);
    while (task.status === 'pending' || task.status === 'in_progress') {
      await new Promise((resolve) => setTimeout(resolve, 20));
      task = await api('GET', `/task/${task_id}`);
    }
    const elapsed = performance.now() - started;
    if (task.status !== 'completed') throw new Error(`${name}: task ${task_id} ended ${task.status}: ${JSON.stringify(task.metadata.failure)}`);
    const execution = await runtime.stepFunctions.closed(task.metadata.execution_name);
    if (i === 0) continue; // warm-up (module loads, first quotes)
    latencies.push(elapsed);
    transitions += execution.counts.transitions;
    invocations += execution.counts.lambda_invocations;
  }
  const sorted = latencies.sort((a, b) => a - b);
  const perStep = (total: number) => (total / COUNT / steps).toFixed(2);
  process.stdout.write(
    `${name.padEnd(40)} end to end p50 ${pct(sorted, 50).toFixed(0)} / p99 ${pct(sorted, 99).toFixed(0)} ms   ` +
      `transitions/step ${perStep(transitions)} (target ≤ 6)   Lambda invocations/step ${perStep(invocations)}\n`,
  );
}

process.stdout.write(`transfers on the sandbox, ${COUNT} each (after 1 warm-up), sequential, Node ${process.version}\n`);
await run('self → venue_b (1 step: deposit)', { source: 'self', destination: 'venue_b', amount: '20', chain: 'ARB', token: 'USDC' }, 1);
await run('venue_b → venue_d (3 steps)', { source: 'venue_b', destination: 'venue_d', amount: '8' }, 3);

await runtime.stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(0);
