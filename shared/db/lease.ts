import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, type Table } from './client.ts';

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
}

export async function acquireLease<S extends object>(table: Table, key: { pk: string; sk: string }, options: LeaseOptions): Promise<Lease<S>> {
  const now = options.now ?? Date.now;
  const owner = randomUUID();
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
          ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':owner': owner, ':until': expiresAt, ':now': at },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return heldLease<S>(table, key, owner, expiresAt, out.Attributes?.state as S | undefined, options.leaseMs, now);
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    if (now() >= deadline) throw new LeaseTimeoutError(`lease ${key.pk} busy for ${options.waitMs} ms`);
    const pause = Math.min(200, 5 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random());
    await new Promise((done) => setTimeout(done, Math.max(0, Math.min(pause, deadline - now() + 1))));
  }
}

function heldLease<S>(
  table: Table,
  key: { pk: string; sk: string },
  owner: string,
  expiresAt: number,
  state: S | undefined,
  leaseMs: number,
  now: () => number,
): Lease<S> {
  const lease = {
    state,
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

/**
 * A lease whose holder spans several processes (a transfer step's submit and polls, each its own
 * Lambda invocation): `owner` is the holder's stable id. ONE conditional UpdateItem, no waiting:
 * taken (free or expired) or taken back (this owner still holds it; renewed) → `{ resumed }`,
 * resumed true when this owner held it before the call; held by another → undefined.
 */
export async function takeLease(
  table: Table,
  key: { pk: string; sk: string },
  owner: string,
  leaseMs: number,
  now = Date.now(),
): Promise<{ resumed: boolean } | undefined> {
  try {
    const out = await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: key,
        UpdateExpression: 'SET #owner = :owner, expires_at = :until',
        ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now OR #owner = :owner',
        ExpressionAttributeNames: { '#owner': 'owner' },
        ExpressionAttributeValues: { ':owner': owner, ':until': now + leaseMs, ':now': now },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    return { resumed: out.Attributes?.owner === owner };
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/**
 * Releases the lease if `owner` still holds it (else nothing: it expired and was taken over, or
 * was released already). Lease.release is this; a holder without its Lease at hand (a later
 * process; takeLease) calls it directly.
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
