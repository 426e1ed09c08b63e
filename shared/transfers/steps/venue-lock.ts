import { getItem, type Table } from '../../db/client.ts';
import { releaseLease, takeLease } from '../../db/lease.ts';
import type { VenueId } from '../../venues/default-status.ts';
import type { StepRecord, TaskRef } from '../task.ts';
import { loadTask } from './store.ts';

/**
 * The per-(user, venue) balance lock (venueBalanceLease below, a shared/db/lease.ts takeLease lease): while
 * one transfer step is changing a user's balance at a venue, no other step of that user reads or
 * changes it. Without it two transfers of one user on one venue break each other:
 * - a deposit sees its credit as `balance ≥ baseline + expected`: a withdrawal in between lowers
 *   the balance for good and the deposit waits until its deadline (STEP_TIMED_OUT);
 * - two venue_d deposits each approve their own amount to the same spender: the second approve
 *   overwrites the first and one deposit reverts (ERC20InsufficientAllowance).
 *
 * Holder: `task_id:index:try`, stable across the step's invocations (submit and each poll are
 * separate Lambda invocations; a crashed process's step re-driven later is the same holder and
 * takes it back). A deposit takes it before it reads its baseline and holds it until its credit
 * shows; a withdrawal takes it before it reads its baseline and releases it once the venue
 * accepted the request (its reference is recorded: the venue has debited). Each look renews it;
 * every terminal transition of the step releases it (core.ts: completed, failed, settle); a holder
 * whose step ended without releasing it (a crash in between) loses it to the next taker at once
 * (releaseIfStale), and a holder that vanished (an execution aborted) after VENUE_LOCK_MS.
 *
 * Waiting happens in the poll phase, not in ASL retries: a step that finds the lock busy records
 * nothing and answers "not done" (submit: the execution goes on to Wait + Poll; poll: settled
 * false), so waiting for another transfer costs poll rounds within the step's deadline, never the
 * 5 TransferStepRetryable retries.
 */
export const VENUE_LOCK_MS = 300_000;

export type VenueLock = 'held' | 'taken-over' | 'busy';

/** What the lock knows of a step: the holder (index, try) and, for a venue step, the venue. */
type LockHolder = Pick<StepRecord, 'index' | 'try'>;
type LockStep = LockHolder & ({ readonly action: 'bridge' } | { readonly action: 'withdrawal' | 'deposit'; readonly venue: VenueId });

const holderOf = (ref: TaskRef, step: LockHolder) => `${ref.task_id}:${step.index}:${step.try}`;
/**
 * The lock's item (listed in shared/db/keys.ts; built here, not in `keys`, so the ~130 bytes stay
 * out of the bundles that do not run venue steps: InitPerpDex sits at the 700 KB budget).
 */
export const venueBalanceLease = (venue: string, appId: string, appUserId: string) => ({ pk: `LEASE#VENUEBAL#${venue}#${appId}#${appUserId}`, sk: 'LEASE' });
const keyOf = (ref: TaskRef, venue: string) => venueBalanceLease(venue, ref.app_id, ref.app_user_id);

/**
 * Takes (or renews) the lock for this step. `held`: this step already held it (a later
 * invocation, a re-drive) or took it free; `taken-over`: it took it FRESH although `resuming`
 * says it had it before (the step's lease expired meanwhile, so another step may have moved the
 * balance: what this step read under it may be stale); `busy`: another step holds it.
 */
export async function takeVenueLock(table: Table, ref: TaskRef, step: LockHolder & { readonly venue: VenueId }, resuming: boolean): Promise<VenueLock> {
  const key = keyOf(ref, step.venue);
  const holder = holderOf(ref, step);
  let taken = await takeLease(table, key, holder, VENUE_LOCK_MS);
  if (!taken && (await releaseIfStale(table, ref, key))) taken = await takeLease(table, key, holder, VENUE_LOCK_MS);
  if (!taken) return 'busy';
  return taken.resumed || !resuming ? 'held' : 'taken-over';
}

/**
 * Frees a lock whose holder will never release it: its step completed or failed, was reset by a
 * resume (another try), or its task ended. A terminal transition writes the step, then releases
 * the lock (core.ts): a process killed between the two left the lock to its VENUE_LOCK_MS expiry,
 * and every other transfer of the user on that venue waited five minutes (the kill -9 test once
 * caught it). Released only while that holder still has it (releaseLease's condition).
 */
async function releaseIfStale(table: Table, ref: TaskRef, key: { pk: string; sk: string }): Promise<boolean> {
  const owner = (await getItem(table, key))?.owner;
  if (typeof owner !== 'string') return false;
  const [taskId, index, tryNumber] = owner.split(':');
  if (!taskId || index === undefined || tryNumber === undefined) return false;
  const task = await loadTask(table, { app_id: ref.app_id, app_user_id: ref.app_user_id, task_id: taskId });
  const held = task?.steps[Number(index)];
  const running = task !== undefined && (task.status === 'pending' || task.status === 'in_progress');
  if (running && held !== undefined && held.try === Number(tryNumber) && held.status !== 'completed' && held.status !== 'failed') return false;
  await releaseLease(table, key, owner);
  return true;
}

/** Releases the lock if this step (this try) holds it; a no-op for any other step, and for steps without a venue (a bridge). */
export async function releaseVenueLock(table: Table, ref: TaskRef, step: LockStep): Promise<void> {
  if (step.action === 'bridge') return;
  await releaseLease(table, keyOf(ref, step.venue), holderOf(ref, step));
}
