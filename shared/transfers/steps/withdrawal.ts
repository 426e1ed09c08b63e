import { v7 as uuidv7 } from 'uuid';
import { type VenueDriver, type VenueFields, VenueRuleError } from '../../venues/driver.ts';
import type { PayoutWatch } from '../../venues/payouts.ts';
import { amountInOf, type Ctx, type Outcome, recordIntent, type StepKind, takePlatformFee } from './core.ts';
import { StepFailure, StepTransient } from './outcomes.ts';
import { payoutClaim } from './payout-claim.ts';
import { type VenueStepDeps, venueDriver, venueFailure } from './venue.ts';
import { releaseVenueLock, takeVenueLock } from './venue-lock.ts';

/**
 * The venue pays out to the user's wallet. Intent: a UUIDv7 idempotency key and the venue
 * balance before the request (`baseline`), then `driver.withdraw(key)`, then the reference.
 * A crash between the request and the reference: drivers whose request is idempotent by key
 * (venue_a salt, venue_b nonce, venue_c nonce, venue_e id: all derived from the key) are simply
 * asked again; venue_d (no client id, its memory is per process) is asked again only when its
 * balance still shows no debit since `baseline`, otherwise the step fails WITHDRAWAL_UNRECONCILED
 * (the payout still reaches the user's own wallet; nothing is requested twice). A request the
 * venue refused withdrew nothing: the try records `request_refused`, and a resumed try mints a new
 * key rather than adopt that one (venue_b spends a refused action's nonce, so the same key would be
 * refused again as a duplicate: the conservation run caught a task failed for good that way).
 *
 * Completion is what the live venue shows (issue 23): venue_b and venue_d pay from their bridge /
 * withdraw pool on chain, found after `payout_from_block` (the payout chain's head, recorded with
 * the intent, before the first request) and claimed in the table (payout-claim.ts), so one
 * payout log never completes two withdrawals; the claimed log is recorded as `payout_log`.
 */
async function withdrawal(ctx: Ctx<VenueStepDeps, 'withdrawal'>): Promise<Outcome> {
  const { driver, fields } = venueDriver(ctx);
  const wallet = ctx.wallet.venue;
  const amount = amountInOf(ctx.step);
  const locking = !ctx.step.reference;
  if (locking) {
    // The user's balance lock at this venue (venue-lock.ts) from before the baseline until the request is accepted; busy: wait (poll).
    const lock = await takeVenueLock(ctx.deps.table, ctx.inv.task, ctx.step, ctx.step.idempotency_key !== undefined);
    if (lock === 'busy') return { done: false };
    // Taken over after an expiry: another step may have moved the balance, so venue_d's debit check below cannot be trusted.
    if (lock === 'taken-over' && driver.id === 'venue_d')
      throw new StepFailure(
        'VENUE_LOCK_LOST',
        'The venue_d balance lock of this withdrawal expired and another transfer took it; its request cannot be reconciled',
      );
  }
  if (!ctx.step.idempotency_key) {
    const adopted = await adoptWithdrawal(ctx, driver, fields);
    // An adopted request keeps its own baseline: the venue_d check below must compare with the balance before IT.
    const baseline = adopted?.baseline ?? (await driver.balances(wallet, fields)).balance.toString();
    // Likewise its payout is looked for from before IT; a new request's from the head now, before it is made.
    const fromBlock = adopted ? adopted.fromBlock : driver.payoutBlock ? (await driver.payoutBlock()).toString() : undefined;
    await recordIntent(
      ctx,
      {
        idempotency_key: adopted?.key ?? uuidv7(),
        baseline,
        ...(fromBlock !== undefined ? { payout_from_block: fromBlock } : {}),
        ...(adopted?.reference ? { reference: adopted.reference } : {}),
      },
      'idempotency_key',
    );
  }
  if (!ctx.step.reference) {
    if (driver.id === 'venue_d' && ctx.step.baseline !== undefined) {
      const balance = (await driver.balances(wallet, fields)).balance;
      if (balance <= BigInt(ctx.step.baseline) - amount) {
        throw new StepFailure(
          'WITHDRAWAL_UNRECONCILED',
          'venue_d shows this withdrawal debited but its reference was not recorded; the payout goes to your own wallet',
        );
      }
    }
    const key = ctx.step.idempotency_key;
    if (!key) throw new StepTransient('the withdrawal key is not recorded');
    let reference: string;
    try {
      ({ reference } = await driver.withdraw(wallet, fields, amount, key));
    } catch (error) {
      // Refused: nothing was withdrawn under this key, and a resumed try mints its own (adoptWithdrawal).
      // Recorded once (a re-run of this try after a lost failure write meets the same refusal).
      if (error instanceof VenueRuleError && !ctx.step.request_refused) await recordIntent(ctx, { request_refused: true }, 'request_refused');
      throw error;
    }
    await recordIntent(ctx, { reference }, 'reference');
  }
  if (locking) await releaseVenueLock(ctx.deps.table, ctx.inv.task, ctx.step); // the venue has debited (or an adopted request had)
  const reference = ctx.step.reference;
  if (!reference) throw new StepTransient('the withdrawal reference is not recorded');
  const key = ctx.step.idempotency_key;
  if (!key) throw new StepTransient('the withdrawal key is not recorded');
  const status = await driver.withdrawalStatus(wallet, fields, reference, payoutWatch(ctx, driver, ctx.step.index, key, ctx.step.payout_from_block));
  if (status.state === 'pending') return { done: false };
  if (status.state === 'failed') throw new StepFailure('VENUE_WITHDRAWAL_FAILED', `${driver.id} reports the withdrawal failed: ${status.reason}`);
  if (status.logIndex !== undefined) await recordIntent(ctx, { payout_log: `${status.txHash}:${status.logIndex}` }, 'payout_log');
  const payout = amount - driver.rules.withdrawal.fee.amount;
  const holding = ctx.step.holding;
  const fee = await takePlatformFee(ctx, holding.chain, holding.token);
  return { done: true, amountOut: payout - fee, results: { payout: status.txHash } };
}

/** A previous try's withdrawal that is not finally failed is adopted (same key and reference), never requested again. */
async function adoptWithdrawal(
  ctx: Ctx<VenueStepDeps, 'withdrawal'>,
  driver: VenueDriver,
  fields: VenueFields,
): Promise<{ key: string; reference?: string; baseline?: string; fromBlock: string | undefined } | undefined> {
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    if (!previous.idempotency_key || previous.request_refused) continue;
    const baseline = previous.baseline !== undefined ? { baseline: previous.baseline } : {};
    const fromBlock = previous.payout_from_block;
    if (!previous.reference) return { key: previous.idempotency_key, ...baseline, fromBlock };
    const watch = payoutWatch(ctx, driver, ctx.step.index, previous.idempotency_key, fromBlock);
    const status = await driver.withdrawalStatus(ctx.wallet.venue, fields, previous.reference, watch);
    if (status.state !== 'failed') return { key: previous.idempotency_key, reference: previous.reference, ...baseline, fromBlock };
  }
  return undefined;
}

/** Where a driver that watches the chain looks for this withdrawal's payout; none for a step recorded before payout_from_block (the driver's own lookback). */
function payoutWatch(
  ctx: Ctx<VenueStepDeps, 'withdrawal'>,
  driver: VenueDriver,
  index: number,
  key: string,
  fromBlock: string | undefined,
): PayoutWatch | undefined {
  if (fromBlock === undefined) return undefined;
  return { fromBlock: BigInt(fromBlock), claim: payoutClaim(ctx.deps.table, ctx.inv.task, driver.rules.chain, index, key) };
}

/** The withdrawal kind (functions/transfers/withdrawal-step.ts): venues and EVM only. */
export const WITHDRAWAL_KIND: StepKind<VenueStepDeps, 'withdrawal'> = {
  action: 'withdrawal',
  run: withdrawal,
  // The source venue keeps its withdrawal fee before the money reaches the wallet the platform fee is taken from.
  feeBaseDeduction: (deps, step) => (deps.venues ? deps.venues.driver(step.venue).rules.withdrawal.fee.amount : 0n),
  failure: venueFailure,
};
