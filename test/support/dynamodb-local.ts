import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { freePort } from './free-port.ts';

/**
 * DynamoDB Local (the jar from the npm package amplify-dynamodb-simulator, Java 17), one JVM for
 * the whole run, shared by the projects that need it (`sharedDynamoDbLocal`): the
 * api-dynamodb-local project's runtime (its own table) and the unit files whose claims must hold
 * on both engines (test/unit/support/dynamodb-engines.ts, each on a table of its own). A JVM boot
 * and warm-up cost about 5 CPU-s on our machines: one per run, not one per project or file.
 */
const ROOT = resolve(import.meta.dirname, '../..');

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly process: ChildProcess;
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

/**
 * The run's DynamoDB Local: started by the first project's global setup that asks, stopped when
 * the last one that asked releases it. Global setups run in vitest's main process, each project
 * with its own module instances: the JVM is kept on `globalThis`.
 */
export async function sharedDynamoDbLocal(): Promise<{ endpoint: string; release: () => Promise<void> }> {
  const scope = globalThis as { [SHARED]?: { users: number; started: Promise<DynamoDbLocal & { workDir: string }> } };
  scope[SHARED] ??= {
    users: 0,
    started: (async () => {
      const workDir = await mkdtemp(join(tmpdir(), 'ddb-local-'));
      return { ...(await startDynamoDbLocal(workDir)), workDir };
    })(),
  };
  const shared = scope[SHARED];
  shared.users += 1;
  const engine = await shared.started.catch((error: unknown) => {
    if (scope[SHARED] === shared) delete scope[SHARED];
    throw error;
  });
  let released = false;
  return {
    endpoint: engine.endpoint,
    release: async () => {
      if (released) return;
      released = true;
      shared.users -= 1;
      if (shared.users > 0) return;
      if (scope[SHARED] === shared) delete scope[SHARED];
      await stopChild(engine.process);
      await rm(engine.workDir, { recursive: true, force: true });
    },
  };
}
const SHARED = Symbol.for('perp-wallet.test.dynamodb-local');

/**
 * DynamoDB Local takes a port number (not 0): one probed free here can be taken (by a runtime's
 * component, or any process) before the JVM binds it. The JVM then reports the failed bind and
 * lingers, so that is watched for and answered with another port.
 */
export async function startDynamoDbLocal(workDir: string): Promise<{ endpoint: string; process: ChildProcess }> {
  for (let attempt = 1; ; attempt++) {
    const started = await spawnDynamoDbLocal(workDir, await freePort());
    if (started !== 'port taken') return started;
    if (attempt === 5) throw new Error('DynamoDB Local: every port tried was taken before it could bind it');
  }
}

async function spawnDynamoDbLocal(workDir: string, port: number): Promise<{ endpoint: string; process: ChildProcess } | 'port taken'> {
  const home = join(ROOT, 'node_modules/amplify-dynamodb-simulator/emulator');
  const child = spawn(
    'java',
    [
      // A test JVM lives a minute: C1 only and one GC thread spend less of the 2 cores on JIT and
      // GC (measured alone, with the runtime logging to a file: api-dynamodb-local 58 → 51 s wall, 106 → 86 CPU-s).
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      `-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(home, 'DynamoDBLocal.jar'),
      '-inMemory',
      '-port',
      String(port),
    ],
    {
      // It writes dynamodb-local-metadata.json into its working directory: keep that out of the repo.
      cwd: workDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      if (/BindException|Failed to bind/.test(output)) {
        await stopChild(child);
        return 'port taken';
      }
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode} (is Java 17 installed?):\n${output}`);
      try {
        await client.send(new ListTablesCommand({}));
        // Answered: from here on its output is not needed.
        for (const stream of [child.stdout!, child.stderr!]) stream.removeAllListeners('data').resume();
        return { endpoint, process: child };
      } catch (error) {
        if (Date.now() > deadline) {
          await stopChild(child);
          throw new Error(`DynamoDB Local did not answer within 60 s: ${(error as Error).message}\n${output}`);
        }
        await new Promise((done) => setTimeout(done, 250));
      }
    }
  } finally {
    client.destroy();
  }
}
