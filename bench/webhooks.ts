import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { importJWK, type JWK, SignJWT } from 'jose';
import { Webhook } from 'standardwebhooks';
import { devAppPaths } from '../infra/local/applications.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';

/**
 * `npm run bench:webhooks [-- --count 20 --users 2]`: events on the sandbox (issue 24), with the
 * same machinery as AWS (the table's stream → the publisher → the FIFO queue → the deliverer):
 * - delivery latency, from the state change (the event's `occurred_at`, the time of the write that
 *   recorded it) to the receiver on 127.0.0.1 holding the verified request: p50, p99, max;
 * - table writes per task step and per event, counted on the table's stream: the task item's
 *   writes (the outbox entry rides in the write that changes the state: no write added on the
 *   change path) and the publisher's own writes (the log item, the event's placement, the log's
 *   HEAD) per event.
 * `count` self → venue_b transfers (one deposit step each), `users` users side by side.
 */
const { values } = parseArgs({ options: { count: { type: 'string', default: '20' }, users: { type: 'string', default: '2' } } });
const COUNT = Number(values.count);
const USERS = Number(values.users);

process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const dataDir = await mkdtemp(join(tmpdir(), 'bench-webhooks-'));
const runtime = await startLocalRuntime({ dataDir, ports: { account: 0, enclave: 0, express: 0 } });
const app = runtime.apps[0]!;
const issuerKey = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;

// Writes by kind of item, from the table's stream (every write through the sandbox's proxy).
const writes = new Map<string, number>();
const unsubscribe = runtime.tableStream.subscribe(runtime.tableName, (record) => {
  const pk = record.dynamodb?.Keys?.pk?.S ?? '';
  const sk = record.dynamodb?.Keys?.sk?.S ?? '';
  const kind = pk.startsWith('TASKS#') && sk.startsWith('TASK#') ? 'task' : pk.split('#')[0]!;
  writes.set(kind, (writes.get(kind) ?? 0) + 1);
});

const received: { id: string; type: string; latencyMs: number }[] = [];
let secret = '';
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const at = Date.now();
    const body = Buffer.concat(chunks).toString('utf8');
    const event = new Webhook(secret).verify(body, req.headers as Record<string, string>) as { id: string; type: string; occurred_at: string };
    received.push({ id: event.id, type: event.type, latencyMs: at - Date.parse(event.occurred_at) });
    res.writeHead(204).end();
  });
});
await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));

const appHeaders = { 'x-service-secret-key': app.secret_key, 'content-type': 'application/json' };
const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
  const response = await fetch(`${runtime.urls.account}${path}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
  const json = (await response.json()) as any;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
};
secret = (await call('POST', '/webhook-endpoints', appHeaders, { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks` })).secret;

async function user(index: number) {
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid! })
    .setIssuer(app.oidc.issuer)
    .setAudience(app.oidc.audience!)
    .setSubject(`bench-webhooks-${index}`)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(await importJWK(issuerKey, 'ES256'));
  const headers = { ...appHeaders, authorization: `Bearer ${token}` };
  const account = await call('POST', '/account', headers);
  const evm = account.public_address.ETH as string;
  for (const [token, amount] of [
    ['ETH', '10'],
    ['USDC', '100000'],
  ])
    await call('POST', '/sandbox/faucet', headers, { chain: 'ARB', address: evm, token, amount });
  await call('POST', '/account/init-perp-dex', headers, { dex: 'venue_b' });
  return headers;
}
const users = await Promise.all(Array.from({ length: USERS }, (_, i) => user(i)));

const before = new Map(writes);
const eventsBefore = received.length;
const tasks: string[] = [];
await Promise.all(
  users.map(async (headers, u) => {
    for (let i = u; i < COUNT; i += USERS) {
      const { task_id } = await call('POST', '/transfer', headers, { source: 'self', destination: 'venue_b', amount: '10', chain: 'ARB', token: 'USDC' });
      tasks.push(task_id);
      for (;;) {
        const task = await call('GET', `/task/${task_id}`, headers);
        if (task.status === 'completed') break;
        if (task.status === 'failed' || task.status === 'cancelled') throw new Error(`task ${task_id} ${task.status}`);
        await new Promise((wake) => setTimeout(wake, 50));
      }
    }
  }),
);
// Until every event of these tasks is delivered: each task writes created, 2 step updates, completed.
const taskEvents = () => received.slice(eventsBefore).filter((r) => r.type.startsWith('task.')).length;
const deadline = Date.now() + 60_000;
while (taskEvents() < COUNT * 4 && Date.now() < deadline) await new Promise((wake) => setTimeout(wake, 20));
unsubscribe();

const delta = (kind: string) => (writes.get(kind) ?? 0) - (before.get(kind) ?? 0);
const measured = received.slice(eventsBefore).filter((r) => r.type.startsWith('task.'));
const latencies = measured.map((r) => r.latencyMs).sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
const events = measured.length;
console.log(`webhooks: ${COUNT} self → venue_b transfers (1 step each), ${USERS} users side by side, ${events} events delivered (expected ${COUNT * 4})`);
console.log(`delivery latency, state change → receiver (ms): p50 ${pct(50)}  p99 ${pct(99)}  max ${latencies.at(-1)}`);
const byType = new Map<string, number[]>();
for (const r of measured) byType.set(r.type, [...(byType.get(r.type) ?? []), r.latencyMs]);
console.log(`  p50 by type: ${[...byType].map(([type, values]) => `${type} ${values.sort((a, b) => a - b)[Math.floor(values.length / 2)]}`).join(', ')}`);
console.log(
  `table writes: task item ${(delta('task') / COUNT).toFixed(1)} per task (1 step), none added for events (the outbox entry is in the state change's own write); publisher per event: ${(delta('EVENTS') / events).toFixed(2)} log (item + HEAD), ${(delta('EVENTID') / events).toFixed(2)} placement`,
);
await new Promise<void>((done) => receiver.close(() => done()));
await runtime.stop();
await rm(dataDir, { recursive: true, force: true });
