import { spawn } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableState } from '../../infra/local/venues/durable-state.ts';

/**
 * A sandbox venue's state file (DurableState): what a change acknowledged is on disk, whole, even
 * when the process dies by SIGKILL mid-write; a change that throws leaves the state as it was.
 * On disk it is a snapshot plus a journal of changes (`<path>.log`): each case reopens the file to
 * see what a restart would.
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
  it('survives kill -9 in the middle of writes (journal appends and snapshots): a restart holds at least every acknowledged change', async () => {
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

    // The snapshot is whole JSON whatever the moment of the kill (20 KB changes: a new snapshot every dozen or so).
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({ n: expect.any(Number) });
    const reopened = await DurableState.open(path, () => ({ n: -1, pad: '' }));
    const { n, pad } = reopened.read();
    expect(n).toBeGreaterThanOrEqual(acknowledged);
    expect(pad).toHaveLength(20000 + (n % 997));
    // And it goes on from there: a later change is durable too.
    await reopened.transact((draft) => {
      draft.n += 1;
    });
    expect((await DurableState.open(path, () => ({ n: -1, pad: '' }))).read().n).toBe(n + 1);
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
    expect((await reopen(path)).read()).toEqual({ items: [] });
    await Promise.all(Array.from({ length: 20 }, (_, i) => state.transact((draft) => void draft.items.push(i))));
    expect(state.read().items).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect((await reopen(path)).read().items).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('a small change appends a line to the journal, not a new snapshot; a change that changes nothing writes nothing', async () => {
    const path = join(await tempDir(), 'state.json');
    const state = await DurableState.open(path, () => ({ items: [] as number[], big: 'x'.repeat(100_000) }));
    const snapshot = await readFile(path, 'utf8');
    await state.transact((draft) => void draft.items.push(1));
    await state.transact((draft) => draft.items.length);
    expect(await readFile(path, 'utf8')).toBe(snapshot);
    expect((await readFile(`${path}.log`, 'utf8')).trim().split('\n')).toHaveLength(2); // the header and one change
    expect((await reopen(path)).read().items).toEqual([1]);
  });

  it('a torn last line (a crash mid-append) is dropped on open, and the next change starts a line of its own', async () => {
    const path = join(await tempDir(), 'state.json');
    const state = await DurableState.open(path, () => ({ items: [] as number[] }));
    for (const item of [1, 2, 3]) await state.transact((draft) => void draft.items.push(item));
    await appendFile(`${path}.log`, '[{"op":"add","path":["items",3],"val');
    const restarted = await reopen(path);
    expect(restarted.read().items).toEqual([1, 2, 3]);
    await restarted.transact((draft) => void draft.items.push(4));
    expect((await reopen(path)).read().items).toEqual([1, 2, 3, 4]);
  });

  it('a journal of an older snapshot (a crash between a new snapshot and its fresh journal) is ignored: no change applies twice', async () => {
    const path = join(await tempDir(), 'state.json');
    const state = await DurableState.open(path, () => ({ items: [] as number[], pad: '' }));
    for (const item of [1, 2]) await state.transact((draft) => void draft.items.push(item));
    const oldJournal = await readFile(`${path}.log`, 'utf8');
    // Bigger than the journal may grow: this change is written as a new snapshot.
    await state.transact((draft) => {
      draft.items.push(3);
      draft.pad = 'p'.repeat(300_000);
    });
    await writeFile(`${path}.log`, oldJournal);
    expect((await reopen(path)).read().items).toEqual([1, 2, 3]);
  });

  it('a change whose append fails is refused, and the next change starts a new snapshot and journal: nothing acknowledged is lost', async () => {
    const path = join(await tempDir(), 'state.json');
    const state = await DurableState.open(path, () => ({ items: [] as number[] }));
    await state.transact((draft) => void draft.items.push(1));
    // The journal cannot be opened for appending (a directory in its place): the change fails.
    await rm(`${path}.log`);
    await mkdir(`${path}.log`);
    await expect(state.transact((draft) => void draft.items.push(2))).rejects.toThrow();
    expect(state.read().items).toEqual([1]);
    await rm(`${path}.log`, { recursive: true });
    await state.transact((draft) => void draft.items.push(3));
    expect((await reopen(path)).read().items).toEqual([1, 3]);
  });

  it("a change's result is a plain copy (usable after the change); the current document is frozen", async () => {
    const path = join(await tempDir(), 'state.json');
    const state = await DurableState.open(path, () => ({ accounts: {} as Record<string, { balance: number }> }));
    const answer = await state.transact((draft) => {
      draft.accounts.alice = { balance: 5 };
      return { status: 200, body: { account: draft.accounts.alice, all: Object.values(draft.accounts) } };
    });
    expect(answer).toEqual({ status: 200, body: { account: { balance: 5 }, all: [{ balance: 5 }] } });
    expect(() => {
      (state.read().accounts.alice as { balance: number }).balance = 6;
    }).toThrow(TypeError);
    expect((await reopen(path)).read().accounts.alice).toEqual({ balance: 5 });
  });

  it('a key named after an Object.prototype member is kept across a restart (written as a snapshot: the journal cannot replay it)', async () => {
    const path = join(await tempDir(), 'state.json');
    const state = await DurableState.open(path, () => ({ byName: {} as Record<string, number> }));
    await state.transact((draft) => {
      for (const [index, name] of ['constructor', 'toString'].entries()) draft.byName[name] = index + 1;
    });
    const restarted = (await reopen(path)).read().byName;
    expect(Object.entries(restarted)).toEqual([
      ['constructor', 1],
      ['toString', 2],
    ]);
  });
});

/** What a restart reads: `path` opened again (it must exist). */
function reopen<T = any>(path: string): Promise<DurableState<T>> {
  return DurableState.open<T>(path, () => {
    throw new Error(`${path} is missing`);
  });
}
