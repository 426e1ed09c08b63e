import { createHash } from 'node:crypto';
import { type FileHandle, mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { current, type Draft, enablePatches, freeze, Immer, isDraft, type Patch } from 'immer';

/**
 * One JSON document on disk that a sandbox component answers from. `transact` runs one change at
 * a time and makes it durable before it becomes current and returns: what a caller was told is on
 * disk and survives a restart or `kill -9`. A change that throws leaves the document as it was.
 *
 * On disk: the document as of its last snapshot (`path`: the JSON itself, as before the journal
 * existed) and a journal of the changes since (`path.log`): a header line naming the snapshot's
 * SHA-256, then one line per change with the change's Immer patches, appended and fsync'd. A
 * change is one short append, not a rewrite of the whole document: the bridge's document grows to
 * hundreds of KB in a long run, and rewriting it (parse, stringify, write, two fsyncs) on each of
 * its 1,700 changes in one conservation test cost about 6 s of CPU. Once the journal outgrows the
 * snapshot (at least JOURNAL_MIN_BYTES) the snapshot is rewritten and a fresh journal started.
 *
 * Crash safety: a change is acknowledged only after its line is fsync'd; a torn last line (a crash
 * mid-append) was never acknowledged and is dropped on open. A journal whose header names another
 * snapshot (a crash after a new snapshot was renamed in, before its fresh journal was) holds only
 * changes that snapshot already has, and is ignored. Changes are drafts (Immer, structural
 * sharing): the current document is frozen, so a write outside `transact` throws instead of
 * silently diverging from the disk.
 */
export class DurableState<T> {
  private current: T;
  private tail: Promise<unknown> = Promise.resolve();
  /** Bytes of the current journal; infinite after a failed write (the next change writes a snapshot). */
  private journalBytes = 0;
  private snapshotBytes = 0;

  private readonly path: string;

  private constructor(path: string, initial: T) {
    this.path = path;
    this.current = freeze(initial, true);
  }

  /** Reads `path` (and its journal), or starts from `initial()` (written at once) when there is no file yet. */
  static async open<T>(path: string, initial: () => T): Promise<DurableState<T>> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const loaded = await load<T>(path);
    if (!loaded) {
      const state = new DurableState<T>(path, initial());
      await state.snapshot();
      return state;
    }
    const state = new DurableState<T>(path, loaded.document);
    state.snapshotBytes = loaded.snapshotBytes;
    if (loaded.journalBytes === 0) await state.snapshot();
    else {
      state.journalBytes = loaded.journalBytes;
      // A torn line is cut off now, so the next append starts a line of its own.
      if (loaded.torn) await truncate(journalPath(path), loaded.journalBytes);
    }
    return state;
  }

  /** The current document; read-only (frozen): change it through `transact`. */
  read(): T {
    return this.current;
  }

  transact<R>(change: (draft: T) => R): Promise<R> {
    const run = this.tail.then(async () => {
      let result!: R;
      const [next, patches] = immer.produceWithPatches(this.current as object, (draft) => {
        result = detach(change(draft as T));
      });
      if (patches.length > 0) {
        if (patches.some(reserved)) {
          // applyPatches refuses such paths on replay: the whole document goes to disk instead.
          await this.snapshot(next as T);
        } else {
          const line = `${JSON.stringify(patches)}\n`;
          const bytes = Buffer.byteLength(line);
          if (this.journalBytes + bytes > Math.max(JOURNAL_MIN_BYTES, this.snapshotBytes)) await this.snapshot(next as T);
          else {
            // A failed append may have left part of its line: the next change starts a new snapshot and journal.
            const before = this.journalBytes;
            this.journalBytes = Number.POSITIVE_INFINITY;
            await append(journalPath(this.path), line);
            this.journalBytes = before + bytes;
          }
        }
      }
      this.current = next as T;
      return result;
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Writes `document` as the snapshot, then a fresh journal naming it (until both are written, a change starts over with a snapshot). */
  private async snapshot(document: T = this.current): Promise<void> {
    this.journalBytes = Number.POSITIVE_INFINITY;
    const text = JSON.stringify(document);
    await writeDurably(this.path, text);
    const header = journalHeader(text);
    await writeDurably(journalPath(this.path), header);
    this.snapshotBytes = Buffer.byteLength(text);
    this.journalBytes = Buffer.byteLength(header);
  }
}

/**
 * The document at `path` as a restart would read it (snapshot and journal), without taking it
 * over: for tools and tests looking at a component's state (as parsed JSON, untyped).
 */
export async function readDurableDocument<T = any>(path: string): Promise<T> {
  const loaded = await load<T>(path);
  if (!loaded) throw new Error(`${path}: no such document`);
  return loaded.document;
}

/** Replaces the document at `path`, whose owner is stopped: a new snapshot and an empty journal, what its next start reads. */
export async function replaceDurableDocument(path: string, document: unknown): Promise<void> {
  const text = JSON.stringify(document);
  await writeDurably(path, text);
  await writeDurably(journalPath(path), journalHeader(text));
}

/** The snapshot with the journal's complete lines applied (a journal of another snapshot is ignored). */
async function load<T>(path: string): Promise<{ document: T; snapshotBytes: number; journalBytes: number; torn: boolean } | undefined> {
  const text = await readIfPresent(path);
  if (text === undefined) return undefined;
  let document = JSON.parse(text) as T;
  const journal = await readIfPresent(journalPath(path));
  let journalBytes = 0;
  if (journal !== undefined) {
    const lines = journal.split('\n');
    // Every line but the last ended with its newline; the last, unterminated, was torn.
    const complete = lines.slice(0, -1);
    if (complete[0] !== undefined && complete[0] === journalHeader(text).trimEnd()) {
      // One draft for the whole journal: each line on its own would copy the path to every change again.
      document = replay.applyPatches(
        document as object,
        complete.slice(1).flatMap((line) => JSON.parse(line) as Patch[]),
      ) as T;
      journalBytes = complete.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
    }
  }
  const torn = journal !== undefined && journalBytes > 0 && Buffer.byteLength(journal) !== journalBytes;
  return { document, snapshotBytes: Buffer.byteLength(text), journalBytes, torn };
}

const journalHeader = (snapshot: string) => `${JSON.stringify({ snapshot: digest(snapshot) })}\n`;

/** The journal may grow to the snapshot's size, and to at least this much, before a new snapshot. */
const JOURNAL_MIN_BYTES = 256 * 1024;

enablePatches();
const immer = new Immer({ autoFreeze: true });
/** Replays a journal: a document read for a tool stays mutable; `open` freezes what it keeps. */
const replay = new Immer({ autoFreeze: false });

const journalPath = (path: string) => `${path}.log`;

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

/** A patch applyPatches would refuse (prototype-named keys in its path). */
function reserved(patch: Patch): boolean {
  return patch.path.some((key) => key === '__proto__' || key === 'constructor' || key === 'prototype');
}

/** A change's result, with every draft in it (at any depth) replaced by a plain copy: drafts die with the change. */
function detach<R>(value: R): R {
  if (isDraft(value)) return current(value as Draft<R>) as R;
  if (Array.isArray(value)) return value.map(detach) as R;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[key] = detach(item);
    return copy as R;
  }
  return value;
}

async function readIfPresent(path: string): Promise<string | undefined> {
  return readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
}

/** `use` with `path` open (created 0600 when `flags` create it), closed whatever happens. */
async function withFile(path: string, flags: string, use: (file: FileHandle) => Promise<void>): Promise<void> {
  const file = await open(path, flags, 0o600);
  try {
    await use(file);
  } finally {
    await file.close();
  }
}

async function append(path: string, line: string): Promise<void> {
  await withFile(path, 'a', async (file) => {
    await file.writeFile(line, 'utf8');
    await file.datasync();
  });
}

async function truncate(path: string, bytes: number): Promise<void> {
  await withFile(path, 'r+', async (file) => {
    await file.truncate(bytes);
    await file.datasync();
  });
}

async function writeDurably(path: string, text: string): Promise<void> {
  const temporary = `${path}.tmp`;
  await withFile(temporary, 'w', async (file) => {
    await file.writeFile(text, 'utf8');
    await file.sync();
  });
  await rename(temporary, path);
  await withFile(dirname(path), 'r', (directory) => directory.sync());
}
