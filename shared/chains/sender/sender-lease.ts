import type { Table } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { acquireLease, type Lease, LeaseLostError, LeaseTimeoutError } from '../../db/lease.ts';
import { ConflictError } from '../../errors.ts';

/**
 * One sender's lease (per chain and address): held while choosing a nonce, signing and
 * broadcasting, so parallel sends from one account never collide. It stores the next nonce for
 * the next holder: with a load-balanced RPC whose pending nonce lags, the stored one wins.
 */
export interface LeaseTiming {
  /** How long a holder may keep the lease (sign + broadcast). */
  readonly leaseMs: number;
  /** How long to queue for it before 409 SENDER_BUSY. */
  readonly waitMs: number;
}

export const DEFAULT_LEASE_TIMING: LeaseTiming = { leaseMs: 15_000, waitMs: 20_000 };

export interface NonceState {
  readonly next_nonce?: number;
}

/** A sender's queue moves by one send (sign + broadcast) in about a second or two: retry after 2 s. */
export const SENDER_BUSY_RETRY_AFTER_SECONDS = 2;

export function senderBusy(chain: string, sender: string): ConflictError {
  return new ConflictError('SENDER_BUSY', `Too many transactions from ${sender} on ${chain} at once; retry shortly`, {
    retryAfterSeconds: SENDER_BUSY_RETRY_AFTER_SECONDS,
  });
}

/**
 * Runs `work` under the sender's lease. `work` returns the nonce it used (stored +1 for the next
 * holder) or none (the stored state stays). Any error releases the lease without consuming a nonce.
 */
export async function withSenderLease<T>(
  table: Table,
  sender: { chain: string; address: string },
  timing: LeaseTiming & { now?: () => number },
  work: (lease: Lease<NonceState>) => Promise<{ result: T; nonce?: number }>,
): Promise<T> {
  const lease = await tryAcquireSenderLease(table, sender, timing);
  if (!lease) throw senderBusy(sender.chain, sender.address);
  return underSenderLease(lease, sender, work);
}

/**
 * The sender's lease, queueing at most `timing.waitMs` (0: one conditional update, no wait);
 * undefined when it stayed busy. For callers that choose among several senders (sponsor-pool.ts).
 */
export async function tryAcquireSenderLease(
  table: Table,
  sender: { chain: string; address: string },
  timing: LeaseTiming & { now?: () => number },
): Promise<Lease<NonceState> | undefined> {
  try {
    return await acquireLease<NonceState>(table, keys.senderLease(sender.chain, sender.address), timing);
  } catch (error) {
    if (error instanceof LeaseTimeoutError) return undefined;
    throw error;
  }
}

/** `work` under a lease already held (withSenderLease's second half): the nonce it used is stored +1; any error releases it. */
export async function underSenderLease<T>(
  lease: Lease<NonceState>,
  sender: { chain: string; address: string },
  work: (lease: Lease<NonceState>) => Promise<{ result: T; nonce?: number }>,
): Promise<T> {
  let outcome: { result: T; nonce?: number };
  try {
    outcome = await work(lease);
  } catch (error) {
    await lease.release();
    if (error instanceof LeaseLostError) throw senderBusy(sender.chain, sender.address);
    throw error;
  }
  await lease.release(outcome.nonce === undefined ? undefined : { next_nonce: outcome.nonce + 1 });
  return outcome.result;
}
