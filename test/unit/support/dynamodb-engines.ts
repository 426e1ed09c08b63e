import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDocumentClient, type Table } from '../../../shared/db/client.ts';
import { localCreateTableInput } from '../../../shared/db/table-definition.ts';
import { freePort } from '../../support/free-port.ts';
import { startDynaliteTable } from './dynalite-table.ts';

/**
 * The single table on either local engine, for unit tests whose claim must hold on both:
 * dynalite (in process) and DynamoDB Local (the Java engine from amplify-dynamodb-simulator).
 */
export type DynamoEngine = 'dynalite' | 'dynamodb-local';
export const DYNAMO_ENGINES: readonly DynamoEngine[] = ['dynalite', 'dynamodb-local'];

const ROOT = resolve(import.meta.dirname, '../../..');

export function startEngineTable(engine: DynamoEngine, name: string): Promise<{ table: Table; stop: () => Promise<void> }> {
  return engine === 'dynalite' ? startDynaliteTable(name) : startDynamoDbLocalTable(name);
}

async function startDynamoDbLocalTable(name: string): Promise<{ table: Table; stop: () => Promise<void> }> {
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  const home = join(ROOT, 'node_modules/amplify-dynamodb-simulator/emulator');
  const workDir = await mkdtemp(join(tmpdir(), 'ddb-local-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    'java',
    [`-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`, '-jar', join(home, 'DynamoDBLocal.jar'), '-inMemory', '-port', String(port)],
    {
      cwd: workDir,
      stdio: 'ignore',
    },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({ endpoint });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode} (is Java 17 installed?)`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer within 60 s: ${(error as Error).message}`);
      await new Promise((done) => setTimeout(done, 250));
    }
  }
  await client.send(new CreateTableCommand(localCreateTableInput(name)));
  client.destroy();
  return {
    table: { doc: createDocumentClient(endpoint), name },
    stop: async () => {
      if (child.exitCode === null) {
        await new Promise<void>((done) => {
          child.once('exit', () => done());
          child.kill('SIGTERM');
        });
      }
      await rm(workDir, { recursive: true, force: true });
    },
  };
}
