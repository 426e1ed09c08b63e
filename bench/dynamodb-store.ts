import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CreateTableCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import { type DynamoDbStore, prepareDynamoDbStore } from '../infra/local/dynamodb-store.ts';
import { createDocumentClient } from '../shared/db/client.ts';
import { localCreateTableInput } from '../shared/db/table-definition.ts';

/**
 * `npm run bench:store [-- --pairs 3000] [--rounds 2]`: what a table call costs on the embedded
 * dynalite with each SANDBOX_DYNAMODB_STORE (infra/local/dynamodb-store.ts): `disk` (LevelDB under
 * DATA_DIR) or `memory`. Each round starts a fresh engine per store, as the runtime does, and makes
 * `pairs` PutItem + GetItem pairs over HTTP with the document client the handlers use, on 300
 * items of about 500 bytes. The stores alternate round by round, so a machine that speeds up or
 * slows down during the run shows in both. Prints CPU (user + system) and wall time per call.
 */
const { values } = parseArgs({ options: { pairs: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '2' } } });
const PAIRS = Number(values.pairs);
const ROUNDS = Number(values.rounds);
if (!Number.isSafeInteger(PAIRS) || PAIRS < 1 || !Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error('--pairs and --rounds: positive whole numbers');

process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'bench';
process.env.AWS_SECRET_ACCESS_KEY ??= 'bench';

async function round(store: DynamoDbStore): Promise<{ cpuMs: number; wallMs: number }> {
  const dataDir = await mkdtemp(join(tmpdir(), `bench-store-${store}-`));
  const path = await prepareDynamoDbStore(dataDir, store);
  const engine: Server = dynalite({ ...(path ? { path } : {}), createTableMs: 0 });
  await new Promise<void>((done) => engine.listen(0, '127.0.0.1', done));
  const doc = createDocumentClient(`http://127.0.0.1:${(engine.address() as { port: number }).port}`);
  try {
    await doc.send(new CreateTableCommand(localCreateTableInput('bench')));
    // dynalite answers CreateTable with the table CREATING, ACTIVE a timer later (createTableMs).
    await waitUntilTableExists({ client: doc, maxWaitTime: 10, minDelay: 1, maxDelay: 1 }, { TableName: 'bench' });
    const value = 'x'.repeat(500);
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < PAIRS; i++) {
      const key = { pk: `ITEM#${i % 300}`, sk: 'ITEM' };
      await doc.send(new PutCommand({ TableName: 'bench', Item: { ...key, value, n: i } }));
      await doc.send(new GetCommand({ TableName: 'bench', Key: key, ConsistentRead: true }));
    }
    const used = process.cpuUsage(cpu);
    return { cpuMs: (used.user + used.system) / 1000 / (2 * PAIRS), wallMs: (performance.now() - started) / (2 * PAIRS) };
  } finally {
    doc.destroy();
    await new Promise((done) => engine.close(done));
    await rm(dataDir, { recursive: true, force: true });
  }
}

console.log(`dynalite, ${PAIRS} PutItem + GetItem pairs per round, per call:`);
for (let r = 1; r <= ROUNDS; r++) {
  for (const store of ['disk', 'memory'] as const) {
    const { cpuMs, wallMs } = await round(store);
    console.log(`  round ${r} ${store.padEnd(6)} ${cpuMs.toFixed(3)} ms CPU  ${wallMs.toFixed(3)} ms wall`);
  }
}
