import { type Address, erc20Abi, getAddress, type Hex, parseEventLogs } from 'viem';
import { getLogs, getTransactionReceipt } from 'viem/actions';
import { type EvmChainCode, isEvmChain } from '../../chains/chain-config.ts';
import type { DepositStep, RecordedSend } from '../task.ts';
import {
  amountInOf,
  type Ctx,
  feeNotCharged,
  NO_ADDRESS,
  type Outcome,
  platformFeeOwed,
  recordIntent,
  refresh,
  requireFunded,
  type StepKind,
  sendEvm,
  sendOutcome,
  takePlatformFee,
  writeOwnStep,
} from './core.ts';
import { StepFailure, StepTransient } from './outcomes.ts';
import { type VenueStepDeps, venueDriver, venueFailure } from './venue.ts';
import { takeVenueLock } from './venue-lock.ts';

/**
 * The user's wallet deposits into the venue: the venue balance before (`baseline`) and what the
 * venue will credit are recorded before the first call; each call is its own journaled send
 * (`deposit_0`, `deposit_1`, …, in order); the step completes once the balance shows the credit.
 *
 * Two other ends, both read from what the venue does, never from a caller's word:
 * - refunded: the deposit came back to the wallet on chain (findRefund): recorded once in
 *   result_tx_hashes.refund, the step fails DEPOSIT_REFUNDED; a resume deposits again (once).
 * - not credited: the deposit landed but the balance never shows it (the venue kept it, or holds
 *   it): past the step deadline the step fails DEPOSIT_NOT_CREDITED. A resume adopts that same
 *   deposit (never a second one) and waits again: only the venue (its support, or an operator
 *   clearing a sandbox fault) can credit or return it.
 */
async function depositStep(ctx: Ctx<VenueStepDeps, 'deposit'>): Promise<Outcome> {
  const { driver, fields } = venueDriver(ctx);
  const holding = ctx.step.holding;
  const chain = venueChain(ctx.step);
  const amount = amountInOf(ctx.step) - BigInt(ctx.step.platform_fee ?? '0');
  // The user's balance lock at this venue (venue-lock.ts), from before the baseline until the credit shows; busy: wait (poll).
  const lock = await takeVenueLock(ctx.deps.table, ctx.inv.task, ctx.step, ctx.step.baseline !== undefined);
  if (lock === 'busy') return { done: false };
  if (lock === 'taken-over')
    throw new StepFailure('VENUE_LOCK_LOST', `The ${ctx.step.venue} balance lock of this deposit expired and another transfer took it: resume the task`);
  if (ctx.step.baseline === undefined) await adoptDeposit(ctx);
  if (ctx.step.baseline === undefined) {
    // Prepared first: an amount the venue refuses (below its minimum) fails the step with nothing sent.
    const plan = await driver.prepareDeposit(ctx.wallet.venue, fields, amount);
    const evm = await ctx.deps.chains.evm(chain);
    const owed = amount + (await platformFeeOwed(ctx));
    requireFunded(`${holding.token} on ${holding.chain} for the deposit and the platform fee`, owed, await evm.balance(ctx.wallet.evmAddress, holding.token));
    const baseline = (await driver.balances(ctx.wallet.venue, fields)).balance;
    await recordIntent(ctx, { baseline: baseline.toString(), expected_credit: plan.expectedCredit.toString(), deposit_calls: plan.calls.length }, 'baseline');
  }
  const sends = ctx.step.sends ?? {};
  const callCount = ctx.step.deposit_calls ?? 0;
  const missing = Array.from({ length: callCount }, (_, k) => `deposit_${k}`).some((label) => !sends[label]);
  const plan = missing ? await driver.prepareDeposit(ctx.wallet.venue, fields, amount) : undefined;
  for (let k = 0; k < callCount; k++) {
    const label = `deposit_${k}`;
    // A recorded call is re-broadcast from its record (the sender ignores the call then).
    const call = plan?.calls[k] ?? { to: NO_ADDRESS, data: '0x' as Hex, value: 0n, label };
    const spends = { token: holding.token, amount: /approve/i.test(call.label) ? 0n : amount };
    await sendEvm(ctx, label, chain, { to: call.to, data: call.data, value: call.value ?? 0n }, spends);
  }
  const balance = (await driver.balances(ctx.wallet.venue, fields)).balance;
  // Both recorded together (recordIntent, or adopted from an earlier try) before the first call.
  const { baseline, expected_credit } = ctx.step;
  if (baseline === undefined || expected_credit === undefined) throw new StepTransient('the deposit intent is not recorded');
  const expected = BigInt(expected_credit);
  if (balance >= BigInt(baseline) + expected) {
    // The fee only once the venue credited the deposit (one it returns or keeps uncredited takes none).
    await takePlatformFee(ctx, holding.chain, holding.token);
    return { done: true, amountOut: expected };
  }
  const refund = await findRefund(ctx, ctx.step.sends ?? {}, amount);
  if (refund) {
    const results = ctx.step.result_tx_hashes ?? {};
    const label = results.refund === undefined || results.refund === refund ? 'refund' : `refund_${ctx.step.try}`;
    if (results[label] !== refund) {
      const step = { result_tx_hashes: { ...results, [label]: refund } };
      await writeOwnStep(ctx, { stepStatusIn: ['submitted'], step });
    }
    throw new StepFailure(
      'DEPOSIT_REFUNDED',
      `${ctx.step.venue} returned the deposit to the wallet (transaction ${refund}); the money is back in the wallet${feeNotCharged(ctx.step)}; resume the task to deposit again`,
    );
  }
  const late = new StepFailure(
    'DEPOSIT_NOT_CREDITED',
    `The deposit transaction to ${ctx.step.venue} landed but the venue has not credited it${feeNotCharged(ctx.step)}; resume the task to keep waiting for the same deposit (it is never sent twice), or contact the venue`,
  );
  return { done: false, late };
}

/** The chain of the deposit: every venue is on an EVM chain (the planner bridges a self source elsewhere first). */
function venueChain(step: DepositStep): EvmChainCode {
  if (!isEvmChain(step.holding.chain))
    throw new StepFailure('UNSUPPORTED_CHAIN', `A deposit into ${step.venue} is sent on an EVM chain, not ${step.holding.chain}`);
  return step.holding.chain;
}

/** Only the ERC-20 Transfer event, for decoding receipts and log queries. */
const TRANSFER_EVENT = transferEvent();

function transferEvent() {
  const event = erc20Abi.find((item) => item.type === 'event' && item.name === 'Transfer');
  if (!event) throw new Error("viem's erc20Abi has no Transfer event");
  return event;
}

/**
 * The venue's refund of a deposit, looked for on chain (undefined: none yet). The rule: an ERC-20
 * Transfer of the deposited token TO the user's wallet, after the deposit's own Transfer (a later
 * block, or the same block at a later log index), from anyone but the wallet itself, of exactly the
 * deposited amount (or that amount minus the venue's fixed deposit fee, when its rules have one).
 * The sender is not matched against a list: a real venue refunds from its bridge / vault contract
 * (often the deposit address itself), the sandbox venues from their vault EOA (framework.ts
 * host.pay), an address no driver publishes. Limits: an unrelated transfer of that exact amount to
 * the wallet while the deposit is uncredited would read as a refund (the caller only asks after the
 * venue balance failed to show the credit); a refund split in parts or net of a variable fee is
 * not recognised (the step then ends DEPOSIT_NOT_CREDITED at its deadline).
 */
async function findRefund(ctx: Ctx<VenueStepDeps, 'deposit'>, sends: Record<string, RecordedSend>, amount: bigint): Promise<Hex | undefined> {
  const deposits = Object.entries(sends).filter(([label]) => label.startsWith('deposit_'));
  if (deposits.length === 0) return undefined;
  const holding = ctx.step.holding;
  const evm = await ctx.deps.chains.evm(venueChain(ctx.step));
  const token = evm.tokenAddress(holding.token);
  if (!token) return undefined;
  const wallet = getAddress(ctx.wallet.evmAddress);
  // The deposit's own Transfer out of the wallet: where the refund search starts.
  let after: { block: bigint; logIndex: number } | undefined;
  for (const [, send] of deposits) {
    const receipt = await getTransactionReceipt(evm.client, { hash: send.tx_hash as Hex }).catch(() => null);
    if (receipt?.status !== 'success') continue;
    const outs = parseEventLogs({ abi: [TRANSFER_EVENT], logs: receipt.logs }).filter(
      (log) => getAddress(log.address) === getAddress(token) && getAddress(log.args.from) === wallet,
    );
    for (const log of outs) after = { block: log.blockNumber, logIndex: log.logIndex };
  }
  if (!after) return undefined;
  const fee = feeOf(ctx);
  const amounts = new Set([amount, ...(fee > 0n && fee < amount ? [amount - fee] : [])]);
  const logs = await getLogs(evm.client, {
    address: token as Address,
    event: TRANSFER_EVENT,
    args: { to: wallet },
    fromBlock: after.block,
    toBlock: 'latest',
    strict: true,
  });
  const refund = logs.find(
    (log) => (log.blockNumber > after.block || log.logIndex > after.logIndex) && getAddress(log.args.from) !== wallet && amounts.has(log.args.value),
  );
  return refund?.transactionHash ?? undefined;
}

/** The venue's fixed deposit fee (0 when it has none or its fee is quoted per deposit). */
function feeOf(ctx: Ctx<VenueStepDeps, 'deposit'>): bigint {
  const rule = ctx.deps.venues?.driver(ctx.step.venue).rules.deposit.fee;
  return rule?.feeType === 'fixed' ? rule.amount : 0n;
}

/**
 * A previous try's deposit sends are adopted (re-broadcast and awaited) unless they reverted or
 * the venue refunded them (that try failed DEPOSIT_REFUNDED, or the refund is on chain by now):
 * then this try deposits again. The most recent try with a deposit decides (an earlier one was
 * either adopted by it or refunded / reverted before it).
 */
async function adoptDeposit(ctx: Ctx<VenueStepDeps, 'deposit'>): Promise<void> {
  const amount = amountInOf(ctx.step) - BigInt(ctx.step.platform_fee ?? '0');
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    const sends = Object.entries(previous.sends ?? {}).filter(([label]) => label.startsWith('deposit_'));
    if (sends.length === 0 || previous.baseline === undefined) continue;
    // A try that sent only part of its calls (an approve without its deposit) is not adopted: this try deposits afresh.
    if (previous.deposit_calls !== undefined && sends.length < previous.deposit_calls) continue;
    if (previous.error?.code === 'DEPOSIT_REFUNDED') return;
    const previousAmount = previous.amount_in === undefined ? amount : BigInt(previous.amount_in) - BigInt(ctx.step.platform_fee ?? '0');
    if (await findRefund(ctx, Object.fromEntries(sends), previousAmount)) return;
    const landed: Record<string, RecordedSend> = {};
    for (const [label, send] of sends) {
      // Reverted, or included without its effect: that deposit moved nothing, this try deposits afresh.
      if ((await sendOutcome(ctx, send)) === 'failed') return;
      landed[label] = send;
    }
    await writeOwnStep(ctx, {
      stepStatusIn: ['submitted'],
      absent: ['baseline'],
      sends: landed,
      step: { baseline: previous.baseline, expected_credit: previous.expected_credit, deposit_calls: previous.deposit_calls ?? sends.length },
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
export const DEPOSIT_KIND: StepKind<VenueStepDeps, 'deposit'> = { action: 'deposit', run: depositStep, failure: venueFailure };
