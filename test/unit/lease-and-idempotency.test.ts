import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Table } from '../../shared/db/client.ts';
import { acquireLease, LeaseTimeoutError } from '../../shared/db/lease.ts';
import { ConflictError, UnprocessableError } from '../../shared/errors.ts';
import { claimIdempotencyKey, claimLeaseMs, DEFAULT_CLAIM_LEASE_MS, requestHash } from '../../shared/withdrawals/idempotency.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

let table: Table;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('lease-unit'));
});
afterAll(() => stop());

describe('sender leases', () => {
  it('exclude each other, carry state to the next holder, and time out when busy', async () => {
    const key = { pk: 'LEASE#ARB#0xabc', sk: 'LEASE' };
    const first = await acquireLease<{ next_nonce: number }>(table, key, { leaseMs: 5_000, waitMs: 10_000 });
    expect(first.state).toBeUndefined();
    await expect(acquireLease(table, key, { leaseMs: 5_000, waitMs: 100 })).rejects.toBeInstanceOf(LeaseTimeoutError);
    await first.release({ next_nonce: 7 });
    const second = await acquireLease<{ next_nonce: number }>(table, key, { leaseMs: 5_000, waitMs: 100 });
    expect(second.state).toEqual({ next_nonce: 7 });
    await second.release();
  });

  it('serialise concurrent holders: critical sections never overlap', async () => {
    const key = { pk: 'LEASE#ARB#0xdef', sk: 'LEASE' };
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        const lease = await acquireLease(table, key, { leaseMs: 5_000, waitMs: 20_000 });
        inside++;
        maxInside = Math.max(maxInside, inside);
        await new Promise((done) => setTimeout(done, 5));
        inside--;
        await lease.release();
      }),
    );
    expect(maxInside).toBe(1);
  });

  it('an expired lease (a crashed holder) is taken over', async () => {
    const key = { pk: 'LEASE#ARB#0x123', sk: 'LEASE' };
    let clock = 1_000_000;
    await acquireLease(table, key, { leaseMs: 1_000, waitMs: 0, now: () => clock }); // never released
    clock += 2_000;
    const next = await acquireLease(table, key, { leaseMs: 1_000, waitMs: 0, now: () => clock });
    await next.release();
  });
});

describe('idempotency keys', () => {
  const scope = (key: string) => ({ appId: 'app', sub: 'alice', key });
  const hash = requestHash({ amount: '1' });

  it('new, then in progress (409), then replay of the stored response', async () => {
    const claim = await claimIdempotencyKey(table, scope('k1'), hash, 1_000);
    expect(claim.kind).toBe('new');
    await expect(claimIdempotencyKey(table, scope('k1'), hash, 2_000)).rejects.toBeInstanceOf(ConflictError);
    if (claim.kind !== 'new') throw new Error('unreachable');
    await claim.record.complete({ status: 200, body: { success: true, tx_hash: '0x1' } });
    expect(await claimIdempotencyKey(table, scope('k1'), hash, 3_000)).toEqual({
      kind: 'replay',
      response: { status: 200, body: { success: true, tx_hash: '0x1' } },
    });
  });

  it('a claim keeps retries out only as long as a send can take (sender lease + inclusion wait + 5 s), and says when to retry', async () => {
    expect(claimLeaseMs(20_000)).toBe(40_000);
    expect(claimLeaseMs(20_000)).toBe(40_000); // WITHDRAW_INCLUSION_TIMEOUT_MS's maximum
    expect(DEFAULT_CLAIM_LEASE_MS).toBe(40_000);
    const first = await claimIdempotencyKey(table, scope('k7'), hash, 1_000);
    if (first.kind !== 'new') throw new Error('unreachable');
    await first.record.record({ tx_hash: '0xcafe', raw: '0x02fa' });
    // ...the process dies here. 10.5 s later a retry is told to come back in 30 s (rounded up).
    await expect(claimIdempotencyKey(table, scope('k7'), hash, 11_500)).rejects.toMatchObject({
      status: 409,
      code: 'WITHDRAWAL_IN_PROGRESS',
      retryAfterSeconds: 30,
    });
    // A configured inclusion timeout sets the claim: 15 + 3 + 5 s.
    await claimIdempotencyKey(table, scope('k8'), hash, 1_000, claimLeaseMs(3_000));
    await expect(claimIdempotencyKey(table, scope('k8'), hash, 1_000 + 22_999, claimLeaseMs(3_000))).rejects.toMatchObject({ retryAfterSeconds: 1 });
    expect(await claimIdempotencyKey(table, scope('k8'), hash, 1_000 + 23_000, claimLeaseMs(3_000))).toMatchObject({ kind: 'resume' });
    // At 41 s the default claim is over: the retry resumes with the stored transaction.
    expect(await claimIdempotencyKey(table, scope('k7'), hash, 1_000 + 40_000)).toMatchObject({ kind: 'resume', record: { previous: { tx_hash: '0xcafe' } } });
  });

  it('another body with the same key is a 422', async () => {
    await claimIdempotencyKey(table, scope('k2'), hash, 1_000);
    await expect(claimIdempotencyKey(table, scope('k2'), requestHash({ amount: '2' }), 1_500)).rejects.toBeInstanceOf(UnprocessableError);
  });

  it('after a crash the lease expires and a retry resumes with the stored signed transaction, once', async () => {
    const first = await claimIdempotencyKey(table, scope('k3'), hash, 1_000);
    if (first.kind !== 'new') throw new Error('unreachable');
    await first.record.record({ tx_hash: '0xfeed', raw: '0x02f8' });
    // ...the process dies here: no complete(), no abandon().
    const later = 1_000 + 61_000;
    const [a, b] = await Promise.allSettled([claimIdempotencyKey(table, scope('k3'), hash, later), claimIdempotencyKey(table, scope('k3'), hash, later)]);
    const resumed = [a, b].filter((r) => r.status === 'fulfilled');
    expect(resumed).toHaveLength(1);
    expect((resumed[0] as PromiseFulfilledResult<{ kind: string; record?: unknown }>).value).toMatchObject({
      kind: 'resume',
      record: { previous: { tx_hash: '0xfeed', raw: '0x02f8' } },
    });
  });

  it('after an inclusion timeout the lease is released: an immediate retry resumes', async () => {
    const first = await claimIdempotencyKey(table, scope('k5'), hash, 1_000);
    if (first.kind !== 'new') throw new Error('unreachable');
    await first.record.record({ tx_hash: '0xbeef', raw: '0x02f9' });
    await first.record.releaseLease();
    expect(await claimIdempotencyKey(table, scope('k5'), hash, 1_500)).toMatchObject({ kind: 'resume', record: { previous: { tx_hash: '0xbeef' } } });
  });

  it('an attempt that stalled past its lease and was taken over can neither record nor settle the key', async () => {
    const stalled = await claimIdempotencyKey(table, scope('k6'), hash, 1_000);
    if (stalled.kind !== 'new') throw new Error('unreachable');
    const takeover = await claimIdempotencyKey(table, scope('k6'), hash, 1_000 + 61_000);
    if (takeover.kind !== 'resume') throw new Error('unreachable');
    expect(takeover.record.previous).toBeUndefined();
    // The stalled attempt wakes up: it may not record (so it never broadcasts) ...
    await expect(stalled.record.record({ tx_hash: '0xold', raw: '0x02aa' })).rejects.toMatchObject({ code: 'WITHDRAWAL_IN_PROGRESS' });
    // ... and its failure handling leaves the new attempt's key alone.
    await stalled.record.settleFailure(new Error('stalled'));
    await takeover.record.record({ tx_hash: '0xnew', raw: '0x02bb' });
    await stalled.record.complete({ status: 200, body: { tx_hash: '0xold' } });
    await takeover.record.complete({ status: 200, body: { tx_hash: '0xnew' } });
    expect(await claimIdempotencyKey(table, scope('k6'), hash, 70_000)).toEqual({ kind: 'replay', response: { status: 200, body: { tx_hash: '0xnew' } } });
  });

  it('an abandoned key can be used again', async () => {
    const first = await claimIdempotencyKey(table, scope('k4'), hash, 1_000);
    if (first.kind !== 'new') throw new Error('unreachable');
    await first.record.abandon();
    expect((await claimIdempotencyKey(table, scope('k4'), hash, 1_100)).kind).toBe('new');
  });
});
