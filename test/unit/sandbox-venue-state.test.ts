import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableState } from '../../infra/local/venues/durable-state.ts';

/**
 * A sandbox venue's state file (DurableState): what a change acknowledged is on disk, whole, even
 * when the process dies by SIGKILL mid-write; a change that throws leaves the state as it was.
 */
const MODULE = pathToFileURL(resolve(import.meta.dirname, '../../infra/local/venues/durable-state.ts')).href;
const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir() {
  const dir = await mkdtemp(join(tmpdir(), 'venue-state-'));
  dirs.push(dir);
  return dir;
}

describe('DurableState', () => {
  it('survives kill -9 in the middle of writes: the file parses and holds at least every acknowledged change', async () => {
    const path = join(await tempDir(), 'venues', 'venue_x.json');
    const script = `
      const { DurableState } = await import(${JSON.stringify(MODULE)});
      const state = await DurableState.open(${JSON.stringify(path)}, () => ({ n: 0, pad: '' }));
      for (;;) {
        const n = await state.transact((draft) => { draft.n += 1; draft.pad = 'x'.repeat(20000 + (draft.n % 997)); return draft.n; });
        process.stdout.write(n + '\\n');
      }`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let acknowledged = 0;
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((done, fail) => {
      child.stdout.on('data', (chunk: Buffer) => {
        const lines = chunk.toString().trim().split('\n');
        acknowledged = Math.max(acknowledged, Number(lines.at(-1)));
        if (acknowledged >= 150) done();
      });
      child.once('exit', () => fail(new Error(`writer exited early: ${stderr}`)));
    });
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;

    const onDisk = JSON.parse(await readFile(path, 'utf8')) as { n: number; pad: string };
    expect(onDisk.n).toBeGreaterThanOrEqual(acknowledged);
    expect(onDisk.pad).toHaveLength(20000 + (onDisk.n % 997));
    const reopened = await DurableState.open(path, () => ({ n: -1, pad: '' }));
    expect(reopened.read().n).toBe(onDisk.n);
  }, 30_000);

  it('a change that throws changes nothing, in memory or on disk; changes run one at a time', async () => {
    const path = join(await tempDir(), 'state.json');
    const state = await DurableState.open(path, () => ({ items: [] as number[] }));
    await expect(
      state.transact((draft) => {
        draft.items.push(1);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(state.read().items).toEqual([]);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ items: [] });
    await Promise.all(Array.from({ length: 20 }, (_, i) => state.transact((draft) => void draft.items.push(i))));
    expect(state.read().items).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(JSON.parse(await readFile(path, 'utf8')).items).toHaveLength(20);
  });
});
