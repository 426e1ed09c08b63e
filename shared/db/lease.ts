import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type Table, isConditionalCheckFailed } from './client.ts';

/**
 * A lease on one item: a mutual-exclusion lock with an expiry, so a crashed holder cannot block
 * others for longer than the lease. The item may carry state that survives between holders (an
 * EVM next nonce). Every step is ONE conditional UpdateItem (dynalite has no transactions):
 * acquiring never reads first and never writes the state back, so a release landing between a
 * read and a write cannot be overwritten; the state a holder sees is what the winning update
 * returned (ReturnValues ALL_NEW).
 */
export interface Lease<S> {
  readonly state: S | undefined;
  /** True when `options.owner` already held it (a holder spanning several processes took it back, renewed). */
  readonly resumed: boolean;
  /** Epoch ms at which others may take the lease over (as written by this holder). */
  readonly expiresAt: number;
  /** Releases the lease; `state`, when given, is stored for the next holder (else the stored state stays). */
  release(state?: S): Promise<void>;
  /** Extends the lease by its length from now; throws LeaseLostError when it expired and was taken over. */
  renew(): Promise<void>;
}

export class LeaseTimeoutError extends Error {}

/** The lease expired and another holder took it: whatever was read under it may be stale. */
export class LeaseLostError extends Error {}

export interface LeaseOptions {
  readonly leaseMs: number;
  /** How long to queue for a busy lease before LeaseTimeoutError. */
  readonly waitMs: number;
  readonly now?: () => number;
  /**
   * A stable holder id (default: a fresh UUID per acquisition). A holder whose work spans several
   * processes (a transfer step's submit and polls) passes the same id each time: the lease it
   * still holds is taken back (and renewed) instead of waited for.
   */
  readonly owner?: string;
}

export async function acquireLease<S extends object>(table: Table, key: { pk: string; sk: string }, options: LeaseOptions): Promise<Lease<S>> {
  const now = options.now ?? Date.now;
  const owner = options.owner ?? randomUUID();
  const deadline = now() + options.waitMs;
  for (let attempt = 0; ; attempt++) {
    const at = now();
    const expiresAt = at + options.leaseMs;
    try {
      const out = await table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: key,
          UpdateExpression: 'SET #owner = :owner, expires_at = :until',
          ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now OR #owner = :owner',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':owner': owner, ':until': expiresAt, ':now': at },
          // The item before the update: its state is unchanged by it, its owner tells a take-back.
          ReturnValues: 'ALL_OLD',
        }),
      );
      const before = out.Attributes;
      return heldLease<S>(table, key, owner, expiresAt, before?.state as S | undefined, before?.owner === owner, options.leaseMs, now);
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    if (now() >= deadline) throw new LeaseTimeoutError(`lease ${key.pk} busy for ${options.waitMs} ms`);
    const pause = Math.min(200, 5 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random());
    await new Promise((done) => setTimeout(done, Math.max(0, Math.min(pause, deadline - now() + 1))));
  }
}

/**
 * Releases the lease if `owner` still holds it (else nothing: it expired and was taken over, or
 * was released already). For a holder that has no Lease object at hand (a later process).
 */
export async function releaseLease(table: Table, key: { pk: string; sk: string }, owner: string, state?: unknown): Promise<void> {
  try {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: key,
        // expires_at 0: free at once; the state stays for the next holder.
        UpdateExpression: state === undefined ? 'REMOVE #owner SET expires_at = :zero' : 'REMOVE #owner SET expires_at = :zero, #state = :state',
        ConditionExpression: '#owner = :owner',
        ExpressionAttributeNames: { '#owner': 'owner', ...(state === undefined ? {} : { '#state': 'state' }) },
        ExpressionAttributeValues: { ':owner': owner, ':zero': 0, ...(state === undefined ? {} : { ':state': state }) },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error; // expired and taken over: nothing of ours to release
  }
}

function heldLease<S>(table: Table, key: { pk: string; sk: string }, owner: string, expiresAt: number, state: S | undefined, resumed: boolean, leaseMs: number, now: () => number): Lease<S> {
  const lease = {
    state,
    resumed,
    expiresAt,
    release: (next?: S) => releaseLease(table, key, owner, next),
    renew: async () => {
      const until = now() + leaseMs;
      try {
        await table.doc.send(
          new UpdateCommand({
            TableName: table.name,
            Key: key,
            UpdateExpression: 'SET expires_at = :until',
            ConditionExpression: '#owner = :owner',
            ExpressionAttributeNames: { '#owner': 'owner' },
            ExpressionAttributeValues: { ':owner': owner, ':until': until },
          }),
        );
      } catch (error) {
        if (isConditionalCheckFailed(error)) throw new LeaseLostError(`lease ${key.pk} expired and was taken over`);
        throw error;
      }
      lease.expiresAt = until;
    },
  };
  return lease;
}
