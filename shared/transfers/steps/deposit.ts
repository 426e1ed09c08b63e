import type { Hex } from 'viem';
import { getTransactionReceipt } from 'viem/actions';
import type { RecordedSend } from '../task.ts';
import { type Ctx, NO_ADDRESS, type Outcome, recordIntent, refresh, sendEvm, type StepKind, takePlatformFee } from './core.ts';
import { StepFailure } from './outcomes.ts';
import { writeStep } from './store.ts';
import { venueDriver, venueFailure, type VenueStepDeps } from './venue.ts';
import { takeVenueLock } from './venue-lock.ts';

/**
 * The user's wallet deposits into the venue: the venue balance before (`baseline`) and what the
 * venue will credit are recorded before the first call; each call is its own journaled send
 * (`deposit_0`, `deposit_1`, …, in order); the step completes once the balance shows the credit.
 */
async function depositStep(ctx: Ctx<VenueStepDeps>): Promise<Outcome> {
  const { driver, fields } = venueDriver(ctx);
  const holding = ctx.step.holding!;
  const amount = BigInt(ctx.step.amount_in!) - BigInt(ctx.step.platform_fee ?? '0');
  // The user's balance lock at this venue (venue-lock.ts), from before the baseline until the credit shows; busy: wait (poll).
  const lock = await takeVenueLock(ctx.deps.table, ctx.inv.task, ctx.step, ctx.step.baseline !== undefined);
  if (lock === 'busy') return { done: false };
  if (lock === 'taken-over') throw new StepFailure('VENUE_LOCK_LOST', `The ${ctx.step.venue} balance lock of this deposit expired and another transfer took it: resume the task`);
  if (ctx.step.baseline === undefined) await adoptDeposit(ctx);
  if (ctx.step.baseline === undefined) {
    // Prepared first: an amount the venue refuses (below its minimum) fails the step before the fee is taken.
    const plan = await driver.prepareDeposit(ctx.wallet.venue, fields, amount);
    await takePlatformFee(ctx, holding.chain, holding.token);
    const baseline = (await driver.balances(ctx.wallet.venue, fields)).balance;
    await recordIntent(ctx, { baseline: baseline.toString(), expected_credit: plan.expectedCredit.toString(), deposit_calls: plan.calls.length }, 'baseline');
  }
  await takePlatformFee(ctx, holding.chain, holding.token);
  const sends = ctx.step.sends ?? {};
  const callCount = ctx.step.deposit_calls ?? 0;
  const missing = Array.from({ length: callCount }, (_, k) => `deposit_${k}`).some((label) => !sends[label]);
  const plan = missing ? await driver.prepareDeposit(ctx.wallet.venue, fields, amount) : undefined;
  for (let k = 0; k < callCount; k++) {
    const label = `deposit_${k}`;
    // A recorded call is re-broadcast from its record (the sender ignores the call then).
    const call = plan?.calls[k] ?? { to: NO_ADDRESS, data: '0x' as Hex, value: 0n, label };
    const spends = { token: holding.token, amount: /approve/i.test(call.label) ? 0n : amount };
    await sendEvm(ctx, label, holding.chain, { to: call.to, data: call.data, value: call.value ?? 0n }, spends);
  }
  const balance = (await driver.balances(ctx.wallet.venue, fields)).balance;
  const expected = BigInt(ctx.step.expected_credit!);
  if (balance < BigInt(ctx.step.baseline!) + expected) return { done: false };
  return { done: true, amountOut: expected };
}

/** A previous try's deposit sends are adopted (re-broadcast and awaited) unless they reverted. */
async function adoptDeposit(ctx: Ctx<VenueStepDeps>): Promise<void> {
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    const sends = Object.entries(previous.sends ?? {}).filter(([label]) => label.startsWith('deposit_'));
    if (sends.length === 0 || previous.baseline === undefined) continue;
    // A try that sent only part of its calls (an approve without its deposit) is not adopted: this try deposits afresh.
    if (previous.deposit_calls !== undefined && sends.length < previous.deposit_calls) continue;
    const landed: Record<string, RecordedSend> = {};
    for (const [label, send] of sends) {
      const evm = await ctx.deps.chains.evm(send.chain as never);
      const receipt = await getTransactionReceipt(evm.client, { hash: send.tx_hash as Hex }).catch(() => null);
      if (receipt?.status === 'reverted') return;
      landed[label] = send;
    }
    await writeStep(ctx.deps.table, {
      ref: ctx.inv.task,
      attempt: ctx.inv.attempt,
      index: ctx.inv.index,
      tryNumber: ctx.step.try,
      stepStatusIn: ['submitted'],
      absent: ['baseline'],
      sends: landed,
      step: { baseline: previous.baseline, expected_credit: previous.expected_credit, deposit_calls: previous.deposit_calls ?? sends.length },
      now: ctx.deps.now().toISOString(),
    });
    await refresh(ctx);
    return;
  }
}

/**
 * The deposit kind (functions/transfers/deposit-step.ts): venues and EVM only. A deposit's
 * holding is the venue's chain (the planner makes a self source on another chain a bridge first),
 * and every venue is on an EVM chain.
 */
export const DEPOSIT_KIND: StepKind<VenueStepDeps> = { action: 'deposit', run: depositStep, failure: venueFailure };
