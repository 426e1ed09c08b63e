import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Table } from '../../shared/db/client.ts';
import { acquireLease, LeaseLostError } from '../../shared/db/lease.ts';
import { DYNAMO_ENGINES, startEngineTable } from './support/dynamodb-engines.ts';

/**
 * The lease is one conditional UpdateItem per step, so no update is ever lost: N workers doing M
 * acquire / increment / release rounds on one lease end with the counter at exactly N*M, on both
 * engines. (The read-then-put lease it replaces ended at 94 of 320 on dynalite.)
 */
const WORKERS = 8;
const ROUNDS = 40;

describe.each(DYNAMO_ENGINES)('lease on %s', { timeout: 120_000 }, (engine) => {
  let table: Table;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ table, stop } = await startEngineTable(engine, 'lease-contention'));
  }, 90_000);
  afterAll(() => stop?.());

  it(`${WORKERS} workers x ${ROUNDS} rounds of acquire / increment / release count exactly ${WORKERS * ROUNDS}`, async () => {
    const key = { pk: `LEASE#count#${engine}`, sk: 'LEASE' };
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const lease = await acquireLease<{ count: number }>(table, key, { leaseMs: 10_000, waitMs: 60_000 });
          if (++inside > 1) overlaps++;
          const next = (lease.state?.count ?? 0) + 1;
          await new Promise((done) => setImmediate(done));
          inside--;
          await lease.release({ count: next });
        }
      }),
    );
    const last = await acquireLease<{ count: number }>(table, key, { leaseMs: 1_000, waitMs: 1_000 });
    expect(overlaps).toBe(0);
    expect(last.state?.count).toBe(WORKERS * ROUNDS);
    await last.release();
  });

  it('a release without state keeps the stored state; a stale holder cannot release or renew a lease taken over', async () => {
    const key = { pk: `LEASE#stale#${engine}`, sk: 'LEASE' };
    let clock = 5_000_000;
    const now = () => clock;
    const first = await acquireLease<{ n: number }>(table, key, { leaseMs: 1_000, waitMs: 0, now });
    await first.release({ n: 1 });
    const second = await acquireLease<{ n: number }>(table, key, { leaseMs: 1_000, waitMs: 0, now });
    expect(second.state).toEqual({ n: 1 });
    await second.renew();
    expect(second.expiresAt).toBe(clock + 1_000);
    clock += 2_000; // second's lease expires; a third holder takes over
    const third = await acquireLease<{ n: number }>(table, key, { leaseMs: 1_000, waitMs: 0, now });
    await expect(second.renew()).rejects.toBeInstanceOf(LeaseLostError);
    await second.release({ n: 99 }); // not the owner any more: no effect
    await third.release();
    const fourth = await acquireLease<{ n: number }>(table, key, { leaseMs: 1_000, waitMs: 0, now });
    expect(fourth.state).toEqual({ n: 1 });
    await fourth.release();
  });

  it('renewing keeps others out past the original expiry', async () => {
    const key = { pk: `LEASE#renew#${engine}`, sk: 'LEASE' };
    let clock = 9_000_000;
    const now = () => clock;
    const holder = await acquireLease(table, key, { leaseMs: 1_000, waitMs: 0, now });
    clock += 800;
    await holder.renew();
    clock += 800; // past the first expiry, within the renewed one
    await expect(acquireLease(table, key, { leaseMs: 1_000, waitMs: 0, now })).rejects.toThrow(/busy/);
    await holder.release();
  });
});
