import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LocalRuntimeError } from './local-runtime-error.ts';

/**
 * Where the embedded dynalite keeps the table (SANDBOX_DYNAMODB_STORE): `disk` (the default) under
 * DATA_DIR/dynamodb, so a restart finds every account, wallet and task; `memory` in the process
 * only, for a sandbox that is started once on a fresh DATA_DIR and thrown away (the API tests'
 * runtime, the conservation run). The same engine either way, without LevelDB's reads from disk:
 * a table call costs 25-33 % less CPU on the 2-core machine (`npm run bench:store`).
 *
 * An in-memory table is gone when the process stops, while the chains, venues and bridge under
 * DATA_DIR keep their state: a restart on that DATA_DIR would show funds on chain and no wallet
 * holding their keys. So a memory store starts only on a DATA_DIR without a table (neither one on
 * disk nor the mark an earlier in-memory run leaves), and leaves that mark, which makes any later
 * start on the DATA_DIR refuse with one line instead of starting on an empty table.
 */
export type DynamoDbStore = 'disk' | 'memory';

const MEMORY_MARK = 'dynamodb.in-memory';

export function dynamodbStore(env: NodeJS.ProcessEnv = process.env): DynamoDbStore {
  const raw = env.SANDBOX_DYNAMODB_STORE;
  if (raw === undefined || raw === '' || raw === 'disk') return 'disk';
  if (raw === 'memory') return 'memory';
  throw new LocalRuntimeError(`SANDBOX_DYNAMODB_STORE must be "disk" or "memory", not ${JSON.stringify(raw)}`);
}

/** The dynalite `path` for `store` (undefined: in memory), after the checks above; marks DATA_DIR for a memory store. */
export async function prepareDynamoDbStore(dataDir: string, store: DynamoDbStore): Promise<string | undefined> {
  const onDisk = join(dataDir, 'dynamodb');
  if (existsSync(join(dataDir, MEMORY_MARK))) {
    throw new LocalRuntimeError(
      `the table of DATA_DIR ${dataDir} was kept in memory (SANDBOX_DYNAMODB_STORE=memory) by an earlier run and is gone; start on a fresh DATA_DIR`,
    );
  }
  if (store === 'disk') return onDisk;
  if (existsSync(onDisk)) {
    throw new LocalRuntimeError(
      `SANDBOX_DYNAMODB_STORE=memory needs a DATA_DIR without a table, and ${dataDir} holds one on disk: use a fresh DATA_DIR, or the disk store`,
    );
  }
  await writeFile(join(dataDir, MEMORY_MARK), 'The table of this DATA_DIR was kept in memory (SANDBOX_DYNAMODB_STORE=memory): it is gone.\n', {
    mode: 0o600,
  });
  return undefined;
}
