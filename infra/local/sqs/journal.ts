import { type FileHandle, mkdir, open, readFile, rename, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * One queue's append-only journal: one JSON record a line. A change is applied in memory and its
 * record appended in the same synchronous step (so the file's order is the memory's order); the
 * caller then awaits `flush()` before answering. Writes are group-committed: every record appended
 * while the previous write was on its way goes out in the next single write + fdatasync, so a burst
 * of sends costs one fsync, not one each (rewriting a whole JSON document per change, as
 * venues/durable-state.ts does, cost seconds of CPU once the document grew).
 *
 * `compact(snapshot)` replaces the file with the records `snapshot()` returns, taken when the
 * rewrite starts: those describe every change appended so far (memory already holds them), so the
 * records still pending are dropped rather than written twice.
 */
export class Journal {
  private readonly path: string;
  private file: FileHandle;
  private pending: string[] = [];
  private tail: Promise<void> = Promise.resolve();
  private next: Promise<void> | undefined;
  /** Records in the file (written or pending): what compaction weighs against the live ones. */
  private lines: number;

  private constructor(path: string, file: FileHandle, lines: number) {
    this.path = path;
    this.file = file;
    this.lines = lines;
  }

  /** Opens (or creates) the journal and returns its records. A last line cut by a kill mid-write is dropped. */
  static async open(path: string): Promise<{ journal: Journal; records: unknown[] }> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (text === undefined) {
      // The file's directory entry must be on disk too before the first acknowledged record counts.
      await (await open(path, 'a', 0o600)).close();
      await syncDirectory(dirname(path));
      const file = await open(path, 'a', 0o600);
      return { journal: new Journal(path, file, 0), records: [] };
    }
    const end = text.lastIndexOf('\n') + 1;
    // A torn tail was never acknowledged (its flush had not returned): cut it so the next record starts on a fresh line.
    if (end < text.length) await truncate(path, Buffer.byteLength(text.slice(0, end)));
    const records = text
      .slice(0, end)
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as unknown);
    const file = await open(path, 'a', 0o600);
    return { journal: new Journal(path, file, records.length), records };
  }

  get size(): number {
    return this.lines;
  }

  append(record: unknown): void {
    this.pending.push(`${JSON.stringify(record)}\n`);
    this.lines += 1;
  }

  /** Resolves once every record appended so far is on disk. */
  flush(): Promise<void> {
    if (this.pending.length === 0) return this.tail;
    if (!this.next) {
      const write = this.tail.then(async () => {
        this.next = undefined;
        const text = this.pending.join('');
        this.pending = [];
        if (text.length === 0) return; // a compaction took them
        await this.file.write(text);
        await this.file.datasync();
      });
      this.next = write;
      this.tail = write.catch(() => undefined);
    }
    return this.next;
  }

  compact(snapshot: () => unknown[]): Promise<void> {
    const run = this.tail.then(async () => {
      const records = snapshot();
      this.pending = [];
      const temporary = `${this.path}.compact`;
      const out = await open(temporary, 'w', 0o600);
      try {
        await out.write(records.map((record) => `${JSON.stringify(record)}\n`).join(''));
        await out.sync();
      } finally {
        await out.close();
      }
      await rename(temporary, this.path);
      await syncDirectory(dirname(this.path));
      await this.file.close();
      this.file = await open(this.path, 'a', 0o600);
      this.lines = records.length + this.pending.length;
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.tail;
    await this.file.close();
  }
}

async function syncDirectory(path: string): Promise<void> {
  const directory = await open(path, 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}
