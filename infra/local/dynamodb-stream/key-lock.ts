/**
 * Per-item locks for the stream proxy: a write's read-write-read runs alone on its item, so its
 * OldImage is the NewImage of the write before it and records leave in the item's write order.
 * Several keys (BatchWriteItem, TransactWriteItems) are taken in sorted order: no deadlock.
 */
export class KeyLock {
  readonly #waiters = new Map<string, (() => void)[]>();

  async acquire(names: readonly string[]): Promise<() => void> {
    const sorted = [...new Set(names)].sort();
    for (const name of sorted) await this.#take(name);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const name of sorted) this.#release(name);
    };
  }

  #take(name: string): Promise<void> {
    const queue = this.#waiters.get(name);
    if (!queue) {
      this.#waiters.set(name, []);
      return Promise.resolve();
    }
    return new Promise((done) => queue.push(done));
  }

  #release(name: string) {
    const queue = this.#waiters.get(name);
    const next = queue?.shift();
    if (next) next();
    else this.#waiters.delete(name);
  }
}
