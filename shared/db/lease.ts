import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { type Table, getItem, isConditionalCheckFailed } from './client.ts';

/**
 * A lease on one item: a mutual-exclusion lock with an expiry, so a crashed holder cannot block
 * others for longer than the lease. Held by conditional writes only (dynalite has no
 * transactions). The item may carry state that survives between holders (an EVM next nonce).
 */
export interface Lease<S> {
  readonly state: S | undefined;
  /** Releases the lease, storing `state` for the next holder. */
  release(state?: S): Promise<void>;
}

export class LeaseTimeoutError extends Error {}

export async function acquireLease<S extends object>(
  table: Table,
  key: { pk: string; sk: string },
  options: { leaseMs: number; waitMs: number; now?: () => number },
): Promise<Lease<S>> {
  const now = options.now ?? Date.now;
  const owner = randomUUID();
  const deadline = now() + options.waitMs;
  for (let attempt = 0; ; attempt++) {
    const previous = (await getItem(table, key)) as { state?: S } | undefined;
    try {
      await table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: { ...key, owner, expires_at: now() + options.leaseMs, ...(previous?.state ? { state: previous.state } : {}) },
          ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
          ExpressionAttributeValues: { ':now': now() },
        }),
      );
      return {
        state: previous?.state,
        release: async (state) => {
          try {
            await table.doc.send(
              new PutCommand({
                TableName: table.name,
                // expires_at 0: free at once, while the state stays for the next holder.
                Item: { ...key, owner: null, expires_at: 0, ...(state ?? previous?.state ? { state: state ?? previous?.state } : {}) },
                ConditionExpression: '#owner = :owner',
                ExpressionAttributeNames: { '#owner': 'owner' },
                ExpressionAttributeValues: { ':owner': owner },
              }),
            );
          } catch (error) {
            if (!isConditionalCheckFailed(error)) throw error; // lease expired and taken over: nothing to release
          }
        },
      };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    if (now() > deadline) throw new LeaseTimeoutError(`lease ${key.pk} busy for ${options.waitMs} ms`);
    await new Promise((done) => setTimeout(done, Math.min(200, 5 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random())));
  }
}
