import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lockDataDir } from '../../infra/local/runtime.ts';

/** Start time (field 22 of /proc/<pid>/stat) of a process. */
async function startTime(pid: number): Promise<string> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[19]!;
}

async function procState(pid: number): Promise<string> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[0]!;
}

/**
 * The DATA_DIR lock: a live owner refuses a second runtime; an owner that is gone, a zombie (killed
 * with -9, not yet reaped) or a reused pid does not, so a restart right after `kill -9` works.
 */
describe.runIf(process.platform === 'linux')('DATA_DIR lock', () => {
  const cleanup: (() => Promise<unknown> | undefined)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function dataDir(lock?: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'lock-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    if (lock !== undefined) await writeFile(join(dir, 'runtime.lock'), lock);
    return dir;
  }

  function sleeper(): ChildProcess {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    cleanup.push(() => void child.kill('SIGKILL'));
    return child;
  }

  it('refuses while the owner lives, by pid and start time, and by pid alone (a lock of an older version)', async () => {
    const owner = sleeper();
    await expect(lockDataDir(await dataDir(`${owner.pid} ${await startTime(owner.pid!)}`))).rejects.toThrow(/in use by another local runtime \(pid \d+\)/);
    await expect(lockDataDir(await dataDir(`${owner.pid}`))).rejects.toThrow(/in use by another local runtime/);
  });

  it('takes over a lock whose pid now belongs to another process (pid reuse)', async () => {
    const other = sleeper();
    const dir = await dataDir(`${other.pid} 1`);
    const release = await lockDataDir(dir);
    expect((await readFile(join(dir, 'runtime.lock'), 'utf8')).split(' ')[0]).toBe(String(process.pid));
    await release();
  });

  it('takes over a lock whose owner was killed with -9 and is not yet reaped (a zombie)', async () => {
    // The exec'd parent never waits, so the killed child stays a zombie, as a killed runtime does
    // until its parent reaps it.
    const parent = spawn('sh', ['-c', 'sleep 60 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    cleanup.push(() => void parent.kill('SIGKILL'));
    const pid = Number(await new Promise<string>((done) => parent.stdout!.once('data', (chunk: Buffer) => done(chunk.toString()))));
    // Until the shell has exec'd, it may still reap its background job (dash does, before exec):
    // kill the child only once the parent is `sleep`, which never waits.
    for (let i = 0; i < 200 && (await readFile(`/proc/${parent.pid}/comm`, 'utf8')).trim() !== 'sleep'; i++) await new Promise((done) => setTimeout(done, 10));
    expect((await readFile(`/proc/${parent.pid}/comm`, 'utf8')).trim()).toBe('sleep');
    const dir = await dataDir(`${pid} ${await startTime(pid)}`);
    await expect(lockDataDir(dir)).rejects.toThrow(/in use/); // alive: refused
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 100 && (await procState(pid)) !== 'Z'; i++) await new Promise((done) => setTimeout(done, 10));
    expect(await procState(pid)).toBe('Z');
    const release = await lockDataDir(dir);
    await release();
  });

  it('takes over a lock whose owner is gone', async () => {
    const gone = spawn('true');
    await new Promise((done) => gone.once('exit', done));
    const release = await lockDataDir(await dataDir(`${gone.pid}`));
    await release();
  });
});
