import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DurableState } from '../infra/local/venues/durable-state.ts';

/**
 * `npm run bench:state [-- --entries 600] [--changes 1000]`: what one change of a sandbox
 * component's state (DurableState: the venues', the bridge's, the local Step Functions') costs as
 * its document grows. The document holds `entries` records of about 900 bytes, as the bridge's
 * quotes and transfers after a long run (its document reached 550 KB in one conservation test);
 * each change updates one record and adds one, as a fill does. Prints CPU (user + system, so the
 * fsyncs' kernel time counts) and wall time per change, the snapshot and journal sizes at the end,
 * and how long a restart takes to read them back.
 */
const { values } = parseArgs({ options: { entries: { type: 'string', default: '600' }, changes: { type: 'string', default: '1000' } } });
const ENTRIES = Number(values.entries);
const CHANGES = Number(values.changes);
if (!Number.isSafeInteger(ENTRIES) || ENTRIES < 1 || !Number.isSafeInteger(CHANGES) || CHANGES < 1)
  throw new Error('--entries and --changes: positive whole numbers');

interface Transfer {
  readonly id: string;
  state: string;
  readonly amount: string;
  readonly sender: string;
  readonly route: Record<string, string>;
  readonly note: string;
}
interface Document {
  cursor: string;
  transfers: Record<string, Transfer>;
}

const transfer = (index: number): Transfer => ({
  id: `quote-${index.toString().padStart(8, '0')}`,
  state: 'waiting',
  amount: String(1_000_000 + index),
  sender: `0x${index.toString(16).padStart(40, '0')}`,
  route: { from_chain: 'ARB', to_chain: 'POL', from_token: 'USDC', to_token: 'USDC', tool: 'sandbox-bridge' },
  note: 'x'.repeat(640),
});

const dir = await mkdtemp(join(tmpdir(), 'bench-durable-state-'));
const path = join(dir, 'state.json');
try {
  const state = await DurableState.open<Document>(path, () => ({
    cursor: '0',
    transfers: Object.fromEntries(Array.from({ length: ENTRIES }, (_, index) => [transfer(index).id, transfer(index)])),
  }));
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let change = 0; change < CHANGES; change++) {
    await state.transact((draft) => {
      const id = transfer(change % ENTRIES).id;
      draft.transfers[id]!.state = change % 2 === 0 ? 'filling' : 'completed';
      const added = transfer(ENTRIES + change);
      draft.transfers[added.id] = added;
      draft.cursor = String(change);
    });
  }
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const kb = async (file: string) => ((await stat(file).catch(() => ({ size: 0 }))).size / 1024).toFixed(0);
  const reopenStarted = performance.now();
  const reopened = await DurableState.open<Document>(path, () => {
    throw new Error('the document is missing');
  });
  const reopenMs = performance.now() - reopenStarted;
  if (Object.keys(reopened.read().transfers).length !== ENTRIES + CHANGES) throw new Error('the reopened document lost changes');
  console.log(`DurableState, ${CHANGES} changes from ${ENTRIES} records (${ENTRIES + CHANGES} at the end):`);
  console.log(`  per change: ${((used.user + used.system) / 1000 / CHANGES).toFixed(3)} ms CPU (user + system), ${(wallMs / CHANGES).toFixed(3)} ms wall`);
  console.log(`  on disk: snapshot ${await kb(path)} KB, journal ${await kb(`${path}.log`)} KB; a restart reads them in ${reopenMs.toFixed(0)} ms`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
