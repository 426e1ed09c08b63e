import { type Address, type Hex } from 'viem';
import { getTransactionReceipt } from 'viem/actions';
import { v7 as uuidv7 } from 'uuid';
import { type AccountRecord, getAccount } from '../../accounts/account-record.ts';
import type { Chains } from '../../chains/chains.ts';
import type { EvmCall } from '../../chains/evm-chain.ts';
import type { Broadcast, SendJournal } from '../../chains/sender/ports.ts';
import type { Senders } from '../../chains/sender/senders.ts';
import type { Table } from '../../db/client.ts';
import { DomainError } from '../../errors.ts';
import { logger } from '../../logger.ts';
import { parseAmount } from '../../money.ts';
import type { VenueDriver, VenueFields } from '../../venues/driver.ts';
import { VenueRuleError } from '../../venues/driver.ts';
import type { VenueRegistry } from '../../venues/registry.ts';
import { type BridgeClient, type BridgeDepositCall, BridgeRefusedError } from '../bridge.ts';
import { platformFee } from '../estimate.ts';
import { type PlatformFeeSettings, platformFeeFor } from '../platform-fee.ts';
import { TRANSFER_DECIMALS } from '../planner.ts';
import { type RecordedSend, type SettleInvocation, STEP_FAILED_ERROR, type StepInvocation, type StepRecord, type StepResult, type TaskRecord } from '../task.ts';
import { StepFailure, stepFailedError, stepRetryableError, StepTransient } from './outcomes.ts';
import { loadTask, recordFailure, writeStep } from './store.ts';
import type { StepWallet, StepWallets } from './wallets.ts';

/**
 * The step Lambdas' use case (statemachines/transfer.asl.json invokes them with StepInvocation):
 * every call re-reads the task item and goes on from what is recorded there, so a retry, a crash,
 * a redrive or a concurrent duplicate finds the same intent and the same signed transactions.
 *
 * Order inside one step (each line a conditional UpdateItem before the effect it guards):
 * 1. start: `pending` → `submitted`, amount_in, the platform fee it will take (step 0 only), task → in_progress;
 * 2. intent: the venue withdrawal's idempotency key / the deposit's baseline and expected credit;
 * 3. each transaction: signed, recorded in steps[i].sends[label] (attribute_not_exists), then broadcast
 *    (shared/chains/sender SendJournal); a recorded one is re-broadcast and awaited, never re-signed;
 * 4. outcome: `completed` with amount_out (the last step completes the task), or `failed` + task failure.
 */
export interface StepDeps {
  readonly table: Table;
  readonly chains: Chains;
  readonly senders: Senders;
  readonly wallets: StepWallets;
  readonly platformFee: PlatformFeeSettings;
  readonly venues?: VenueRegistry;
  readonly bridge?: BridgeClient;
  readonly now: () => Date;
  /** Wait between polls (TRANSFER_POLL_SECONDS; 1 in the sandbox). */
  readonly pollSeconds?: number;
  /** A step still unsettled this long after it started fails STEP_TIMED_OUT (TRANSFER_STEP_DEADLINE_SECONDS, default 3600). */
  readonly deadlineSeconds?: number;
}

export const DEFAULT_STEP_DEADLINE_SECONDS = 3_600;

/** The call a resumed send carries: unused, the sender re-broadcasts the recorded transaction. */
const NO_ADDRESS = '0x0000000000000000000000000000000000000000' as Address;

interface Ctx {
  readonly deps: StepDeps;
  readonly inv: StepInvocation;
  task: TaskRecord;
  step: StepRecord;
  readonly account: AccountRecord;
  readonly wallet: StepWallet;
}

type Outcome = { readonly done: false; readonly waitSeconds?: number } | { readonly done: true; readonly amountOut: bigint; readonly results?: Record<string, string> };

/** One invocation: submit (start, intent, sends) or poll (the same, then the outcome). */
export async function runStep(deps: StepDeps, inv: StepInvocation): Promise<StepResult> {
  const wait = deps.pollSeconds ?? 1;
  const guarded = await guard(deps, inv);
  if ('result' in guarded) return guarded.result;
  let { task, step } = guarded;
  try {
    const account = await getAccount(deps.table, task.app_id, task.app_user_id);
    if (!account) throw new StepFailure('ACCOUNT_NOT_FOUND', 'The account of this transfer no longer exists');
    if (step.status === 'pending') {
      await start(deps, inv, task, step);
      ({ task, step } = await reload(deps, inv));
      if (step.status === 'completed') return { settled: true, wait_seconds: 0 };
    }
    const ctx: Ctx = { deps, inv, task, step, account, wallet: await deps.wallets.open(task, account) };
    const outcome = await ACTIONS[step.action](ctx);
    if (!outcome.done) {
      if (inv.phase === 'poll' && timedOut(deps, ctx.step)) throw new StepFailure('STEP_TIMED_OUT', `The ${step.action} did not settle within ${deps.deadlineSeconds ?? DEFAULT_STEP_DEADLINE_SECONDS} s; a resume adopts it if it still lands`);
      return { settled: false, wait_seconds: outcome.waitSeconds ?? wait };
    }
    await complete(ctx, outcome.amountOut, outcome.results);
    return { settled: true, wait_seconds: 0 };
  } catch (error) {
    const failure = asFailure(error) ?? (inv.phase === 'poll' && !isStepFailed(error) && timedOut(deps, step) ? new StepFailure('STEP_TIMED_OUT', `The ${step.action} met only trouble past its deadline; a resume adopts it if it still lands`) : undefined);
    if (failure) {
      const recorded = await recordFailure(deps.table, inv.task, inv.attempt, { step: inv.index, code: failure.code, message: failure.message }, deps.now().toISOString(), step.try);
      // A concurrent duplicate of this step may have completed it meanwhile: then nothing failed.
      if (!recorded && (await loadTask(deps.table, inv.task))?.steps[inv.index]?.status === 'completed') return { settled: true, wait_seconds: 0 };
      logger.warn('transfer step failed', { task_id: inv.task.task_id, index: inv.index, code: failure.code });
      throw stepFailedError(`step ${inv.index} failed: ${failure.code}`);
    }
    if (isStepFailed(error)) throw error;
    logger.info('transfer step transient trouble', { task_id: inv.task.task_id, index: inv.index, phase: inv.phase, error });
    if (inv.phase === 'poll') return { settled: false, wait_seconds: wait };
    throw stepRetryableError(`step ${inv.index}: transient trouble, retry`);
  }
}

/**
 * The guards, read from the store (ConsistentRead), never from the payload. A refusal has no
 * effect. Choice: a stale attempt, a closed task (completed, failed, cancelled), a failed step or
 * an unfinished previous step all throw STEP_FAILED_ERROR without writing, so the execution
 * ends (its settle finds the failure recorded, or the attempt stale, and writes nothing); a step
 * already completed answers `settled` (a duplicate invocation is harmless).
 */
async function guard(deps: StepDeps, inv: StepInvocation): Promise<{ result: StepResult } | { task: TaskRecord; step: StepRecord }> {
  const task = await loadTask(deps.table, inv.task);
  if (!task) throw stepFailedError('the task does not exist');
  if (task.attempt !== inv.attempt) throw stepFailedError(`stale execution: attempt ${inv.attempt}, the task is on attempt ${task.attempt}`);
  const step = task.steps[inv.index];
  if (!step) throw stepFailedError(`the task has no step ${inv.index}`);
  if (step.status === 'completed') return { result: { settled: true, wait_seconds: 0 } };
  if (task.status === 'completed' || step.status === 'failed') throw stepFailedError(`the task is ${task.status}, step ${inv.index} ${step.status}`);
  // failed / cancelled with this step under way: this attempt ended. With the step pending, it is a
  // resumed attempt (a resume resets the step and bumps the attempt): its first write reopens the task.
  if ((task.status === 'failed' || task.status === 'cancelled') && step.status !== 'pending') throw stepFailedError(`the task is ${task.status}`);
  if (inv.index > 0 && task.steps[inv.index - 1]?.status !== 'completed') throw stepFailedError(`step ${inv.index - 1} is not completed`);
  return { task, step };
}

async function reload(deps: StepDeps, inv: StepInvocation): Promise<{ task: TaskRecord; step: StepRecord }> {
  const guarded = await guard(deps, inv);
  if ('result' in guarded) {
    const task = (await loadTask(deps.table, inv.task))!;
    return { task, step: task.steps[inv.index]! };
  }
  return guarded;
}

async function refresh(ctx: Ctx): Promise<void> {
  const { task, step } = await reload(ctx.deps, ctx.inv);
  if (step.try !== ctx.step.try) throw stepFailedError('the step was reset by a resume');
  ctx.task = task;
  ctx.step = step;
}

/** The step's input: step 0 the task amount, step i what step i−1 delivered. */
function amountIn(task: TaskRecord, index: number): bigint {
  if (index === 0) return parseAmount(task.amount, TRANSFER_DECIMALS);
  return BigInt(task.steps[index - 1]!.amount_out!);
}

/** Where the money first sits in the user's wallet: step 0 (a self source's holding, or the source venue's payout). */
function feeChain(step: StepRecord): string {
  return (step.action === 'bridge' ? step.from!.chain : step.holding!.chain) as string;
}

/**
 * The platform fee, taken once, by step 0, exactly as estimateTransferCost computes it
 * (estimate.ts flowMoney: platformFee(config, amount − the source venue's withdrawal fee)).
 */
function platformFeeOf(deps: StepDeps, step: StepRecord, amount: bigint): bigint {
  if (step.index !== 0) return 0n;
  const config = platformFeeFor(deps.platformFee, feeChain(step));
  const venueFee = step.action === 'withdrawal' ? deps.venues!.driver(step.venue!).rules.withdrawal.fee.amount : 0n;
  const base = amount - venueFee;
  return platformFee(config, base < 0n ? 0n : base);
}

async function start(deps: StepDeps, inv: StepInvocation, task: TaskRecord, step: StepRecord): Promise<void> {
  const amount = amountIn(task, inv.index);
  const fee = platformFeeOf(deps, step, amount);
  const now = deps.now().toISOString();
  await writeStep(deps.table, {
    ref: inv.task,
    attempt: inv.attempt,
    index: inv.index,
    tryNumber: step.try,
    stepStatusIn: ['pending'],
    starting: true,
    step: { status: 'submitted', amount_in: amount.toString(), platform_fee: fee.toString(), started_at: now, sends: {} },
    task: { status: 'in_progress' },
    now,
  });
}

async function complete(ctx: Ctx, amountOut: bigint, results?: Record<string, string>): Promise<void> {
  const { deps, inv } = ctx;
  const now = deps.now().toISOString();
  const last = inv.index === ctx.task.steps.length - 1;
  const written = await writeStep(deps.table, {
    ref: inv.task,
    attempt: inv.attempt,
    index: inv.index,
    tryNumber: ctx.step.try,
    stepStatusIn: ['submitted'],
    step: { status: 'completed', completed_at: now, amount_out: amountOut.toString(), ...(results ? { result_tx_hashes: results } : {}) },
    task: { current_step: inv.index + 1, ...(last ? { status: 'completed' } : {}) },
    now,
  });
  if (!written) {
    await refresh(ctx);
    if (ctx.step.status !== 'completed') throw new StepTransient('the completion write lost a race');
  }
}

const isStepFailed = (error: unknown) => error instanceof Error && error.name === STEP_FAILED_ERROR;

function timedOut(deps: StepDeps, step: StepRecord): boolean {
  if (!step.started_at) return false;
  return deps.now().getTime() - Date.parse(step.started_at) > (deps.deadlineSeconds ?? DEFAULT_STEP_DEADLINE_SECONDS) * 1000;
}

/** Business failures end the step; everything else is transient. */
function asFailure(error: unknown): StepFailure | undefined {
  if (error instanceof StepFailure) return error;
  if (error instanceof VenueRuleError) return new StepFailure(error.code, error.message);
  if (error instanceof BridgeRefusedError) return new StepFailure(error.code, error.message);
  if (error instanceof DomainError && error.status >= 400 && error.status < 500 && error.status !== 409) return new StepFailure(error.code, error.message);
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Sends: one label, one transaction, whatever happens.

class RecordTaken extends Error {}

/**
 * Sends one labelled transaction through the exactly-once sender: `previous` is what
 * steps[i].sends[label] holds (re-broadcast and awaited), `record` the conditional write of it
 * (a concurrent duplicate that lost the write does not broadcast; it then resumes the winner's).
 */
async function sendOnce(ctx: Ctx, label: string, chain: string, send: (journal: SendJournal) => Promise<{ txHash: string }>): Promise<string> {
  const known = ctx.step.sends?.[label];
  // Already included: nothing to re-broadcast (a poll only looks).
  if (known && (await landed(ctx.deps, known))) return known.tx_hash;
  for (let round = 0; round < 2; round++) {
    const recorded = ctx.step.sends?.[label];
    const journal: SendJournal = {
      ...(recorded ? { previous: { tx_hash: recorded.tx_hash, raw: recorded.raw } } : {}),
      record: async (broadcast: Broadcast) => {
        const entry: RecordedSend = { chain, tx_hash: broadcast.tx_hash, raw: broadcast.raw };
        const ok = await writeStep(ctx.deps.table, {
          ref: ctx.inv.task,
          attempt: ctx.inv.attempt,
          index: ctx.inv.index,
          tryNumber: ctx.step.try,
          stepStatusIn: ['submitted'],
          sends: { [label]: entry },
          now: ctx.deps.now().toISOString(),
        });
        if (!ok) throw new RecordTaken(`${label} was recorded by another invocation`);
      },
    };
    try {
      return (await send(journal)).txHash;
    } catch (error) {
      if (!(error instanceof RecordTaken)) throw error;
      await refresh(ctx);
    }
  }
  throw new StepTransient(`${label}: the record kept changing`);
}

/** True when the recorded transaction is included and succeeded (a short look, no waiting). */
async function landed(deps: StepDeps, send: RecordedSend): Promise<boolean> {
  try {
    if (send.chain === 'SOL') {
      const status = await (await deps.chains.sol()).waitForConfirmation(send.tx_hash, 1);
      return status !== null && !status.err;
    }
    const receipt = await getTransactionReceipt((await deps.chains.evm(send.chain as never)).client, { hash: send.tx_hash as Hex });
    return receipt.status === 'success';
  } catch {
    return false;
  }
}

/** An EVM call from the user's wallet (sponsored when the step says so). */
function sendEvm(ctx: Ctx, label: string, chainCode: string, call: EvmCall, spends: { token: string; amount: bigint }): Promise<string> {
  const { deps, wallet } = ctx;
  return sendOnce(ctx, label, chainCode, async (journal) => {
    const chain = await deps.chains.evm(chainCode as never);
    return ctx.step.gas_policy === 'sponsored'
      ? deps.senders.sponsored.send({ chain, account: wallet.evmAddress, call, spends, signer: wallet.evm, journal })
      : deps.senders.evm.send({ chain, from: wallet.evmAddress, call, spends, signer: wallet.evm, journal });
  });
}

function sendSolana(ctx: Ctx, label: string, to: string, token: string, amount: bigint, memo?: string): Promise<string> {
  const { deps, wallet } = ctx;
  return sendOnce(ctx, label, 'SOL', async (journal) => {
    const chain = await deps.chains.sol();
    return deps.senders.solana.send({ chain, from: wallet.solAddress, to, token, amount, ...(memo ? { reference: memo } : {}), signer: wallet.sol, journal });
  });
}

/** The platform fee of step 0, from the user's wallet to the recipient of that chain family (label `platform_fee`). */
async function takePlatformFee(ctx: Ctx, chain: string, token: string): Promise<bigint> {
  const fee = BigInt(ctx.step.platform_fee ?? '0');
  if (fee === 0n) return 0n;
  if (!ctx.step.sends?.platform_fee) {
    // A resumed try: the fee an earlier try recorded is adopted (awaited), never charged again.
    const earlier = (ctx.step.previous_tries ?? []).map((previous) => previous.sends?.platform_fee).find((send) => send !== undefined);
    if (earlier) {
      await writeStep(ctx.deps.table, { ref: ctx.inv.task, attempt: ctx.inv.attempt, index: ctx.inv.index, tryNumber: ctx.step.try, stepStatusIn: ['submitted'], sends: { platform_fee: earlier }, now: ctx.deps.now().toISOString() });
      await refresh(ctx);
    }
  }
  const recipient = platformFeeFor(ctx.deps.platformFee, chain).recipient!;
  if (chain === 'SOL') await sendSolana(ctx, 'platform_fee', recipient, token, fee, `platform-fee:${ctx.inv.task.task_id}`);
  else {
    const evm = await ctx.deps.chains.evm(chain as never);
    await sendEvm(ctx, 'platform_fee', chain, evm.transferCall(token, recipient as Address, fee), { token, amount: fee });
  }
  return fee;
}

/** Records step fields once (attribute_not_exists on the first); then re-reads, whoever won. */
async function recordIntent(ctx: Ctx, fields: Record<string, unknown>, onceField: string): Promise<void> {
  await writeStep(ctx.deps.table, {
    ref: ctx.inv.task,
    attempt: ctx.inv.attempt,
    index: ctx.inv.index,
    tryNumber: ctx.step.try,
    stepStatusIn: ['submitted'],
    absent: [onceField],
    step: fields,
    now: ctx.deps.now().toISOString(),
  });
  await refresh(ctx);
}

function venueDriver(ctx: Ctx): { driver: VenueDriver; fields: VenueFields } {
  const venue = ctx.step.venue!;
  const status = ctx.account.perp_dex_status[venue];
  if (!status?.initialized) throw new StepFailure('DEX_NOT_INITIALIZED', `${venue} is not initialized for this account: call POST /account/init-perp-dex first`);
  if (!ctx.deps.venues) throw new StepFailure('VENUE_NOT_CONFIGURED', `${venue} is not configured on this deployment`);
  const fields = Object.fromEntries(Object.entries(status).filter(([, value]) => value === null || ['string', 'number', 'boolean'].includes(typeof value))) as VenueFields;
  return { driver: ctx.deps.venues.driver(venue), fields };
}

// ---------------------------------------------------------------------------------------------
// The three actions.

/**
 * The venue pays out to the user's wallet. Intent: a UUIDv7 idempotency key and the venue
 * balance before the request (`baseline`), then `driver.withdraw(key)`, then the reference.
 * A crash between the request and the reference: drivers whose request is idempotent by key
 * (venue_a salt, venue_b nonce, venue_c nonce, venue_e id: all derived from the key) are simply
 * asked again; venue_d (no client id, its memory is per process) is asked again only when its
 * balance still shows no debit since `baseline`, otherwise the step fails WITHDRAWAL_UNRECONCILED
 * (the payout still reaches the user's own wallet; nothing is requested twice).
 */
async function withdrawal(ctx: Ctx): Promise<Outcome> {
  const { driver, fields } = venueDriver(ctx);
  const wallet = ctx.wallet.venue;
  const amount = BigInt(ctx.step.amount_in!);
  if (!ctx.step.idempotency_key) {
    const adopted = await adoptWithdrawal(ctx, driver, fields);
    // An adopted request keeps its own baseline: the venue_d check below must compare with the balance before IT.
    const baseline = adopted?.baseline ?? (await driver.balances(wallet, fields)).balance.toString();
    await recordIntent(ctx, { idempotency_key: adopted?.key ?? uuidv7(), baseline, ...(adopted?.reference ? { reference: adopted.reference } : {}) }, 'idempotency_key');
  }
  if (!ctx.step.reference) {
    if (driver.id === 'venue_d' && ctx.step.baseline !== undefined) {
      const balance = (await driver.balances(wallet, fields)).balance;
      if (balance <= BigInt(ctx.step.baseline) - amount) {
        throw new StepFailure('WITHDRAWAL_UNRECONCILED', 'venue_d shows this withdrawal debited but its reference was not recorded; the payout goes to your own wallet');
      }
    }
    const { reference } = await driver.withdraw(wallet, fields, amount, ctx.step.idempotency_key!);
    await recordIntent(ctx, { reference }, 'reference');
  }
  const status = await driver.withdrawalStatus(wallet, fields, ctx.step.reference!);
  if (status.state === 'pending') return { done: false };
  if (status.state === 'failed') throw new StepFailure('VENUE_WITHDRAWAL_FAILED', `${driver.id} reports the withdrawal failed: ${status.reason}`);
  const payout = amount - driver.rules.withdrawal.fee.amount;
  const holding = ctx.step.holding!;
  const fee = await takePlatformFee(ctx, holding.chain, holding.token);
  return { done: true, amountOut: payout - fee, results: { payout: status.txHash } };
}

/** A previous try's withdrawal that is not finally failed is adopted (same key and reference), never requested again. */
async function adoptWithdrawal(ctx: Ctx, driver: VenueDriver, fields: VenueFields): Promise<{ key: string; reference?: string; baseline?: string } | undefined> {
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    if (!previous.idempotency_key) continue;
    const baseline = previous.baseline !== undefined ? { baseline: previous.baseline } : {};
    if (!previous.reference) return { key: previous.idempotency_key, ...baseline };
    const status = await driver.withdrawalStatus(ctx.wallet.venue, fields, previous.reference);
    if (status.state !== 'failed') return { key: previous.idempotency_key, reference: previous.reference, ...baseline };
  }
  return undefined;
}

/**
 * The user's wallet sends `from` into the bridge; the bridge fills `to` to the same user. A quote
 * is asked for as long as no deposit is recorded (an expired one is simply replaced); once the
 * deposit is recorded, only its status matters.
 */
async function bridgeStep(ctx: Ctx): Promise<Outcome> {
  const { deps } = ctx;
  if (!deps.bridge) throw new StepFailure('BRIDGE_NOT_CONFIGURED', 'No bridge is configured on this deployment');
  const from = ctx.step.from!;
  const to = ctx.step.to!;
  const fee = BigInt(ctx.step.platform_fee ?? '0');
  const addressOn = (chain: string) => (chain === 'SOL' ? ctx.wallet.solAddress : ctx.wallet.evmAddress);
  let waitSeconds: number | undefined;
  if (!ctx.step.sends?.bridge) await adoptBridgeDeposit(ctx);
  if (!ctx.step.sends?.bridge) {
    const amount = BigInt(ctx.step.amount_in!) - fee;
    // Quoted first: a route or amount the bridge refuses fails the step before the fee is taken.
    const quote = await deps.bridge.quote({ route: { from, to }, amount, sender: addressOn(from.chain), recipient: addressOn(to.chain) });
    await takePlatformFee(ctx, from.chain, from.token);
    if (Date.parse(quote.expires_at) <= deps.now().getTime()) throw new StepTransient('the bridge quote expired before the deposit');
    await writeStep(deps.table, { ref: ctx.inv.task, attempt: ctx.inv.attempt, index: ctx.inv.index, tryNumber: ctx.step.try, stepStatusIn: ['submitted'], step: { reference: quote.quote_id }, now: deps.now().toISOString() });
    waitSeconds = Math.min(30, Math.max(1, Math.ceil(quote.estimated_fill_ms / 1000)));
    const call = quote.deposit[0];
    if (!call || quote.deposit.length !== 1) throw new StepFailure('BRIDGE_FAILED', 'The bridge quote carries no single deposit call');
    await sendBridgeDeposit(ctx, call, from.token, quote.amount);
    await refresh(ctx);
  } else {
    await takePlatformFee(ctx, from.chain, from.token);
    const recorded = ctx.step.sends.bridge;
    // Resume (or finish) the recorded deposit: re-broadcast and await it, never a new one.
    if (recorded.chain === 'SOL') await sendSolana(ctx, 'bridge', '', from.token, 0n);
    else await sendEvm(ctx, 'bridge', recorded.chain, { to: NO_ADDRESS, data: '0x', value: 0n }, { token: from.token, amount: 0n });
  }
  const deposit = ctx.step.sends!.bridge!;
  const status = await deps.bridge.status({ chain: from.chain as never, tx: deposit.tx_hash });
  if (status.status === 'DONE' && status.substatus === 'COMPLETED' && status.receiving) {
    return { done: true, amountOut: status.receiving.amount, results: { fill: status.receiving.tx_hash } };
  }
  if (status.status === 'FAILED' || (status.status === 'DONE' && status.substatus === 'REFUNDED')) {
    if (!status.refund) return { done: false, waitSeconds };
    await writeStep(deps.table, { ref: ctx.inv.task, attempt: ctx.inv.attempt, index: ctx.inv.index, tryNumber: ctx.step.try, step: { result_tx_hashes: { refund: status.refund.tx_hash } }, now: deps.now().toISOString() });
    const code = status.status === 'FAILED' ? 'BRIDGE_FAILED' : 'BRIDGE_REFUNDED';
    throw new StepFailure(code, `The bridge did not fill (${status.substatus ?? status.status}); ${status.refund.amount} base units were refunded to your wallet on ${from.chain}`);
  }
  return { done: false, waitSeconds };
}

async function sendBridgeDeposit(ctx: Ctx, call: BridgeDepositCall, token: string, amount: bigint): Promise<void> {
  if (call.kind === 'spl_transfer') {
    await sendSolana(ctx, 'bridge', call.to, call.token, call.amount, call.memo);
  } else {
    await sendEvm(ctx, 'bridge', call.chain, { to: call.to, data: call.data, value: call.value }, { token, amount });
  }
}

/** A previous try's bridge deposit that the bridge has not refused or refunded is adopted (polled), never sent again. */
async function adoptBridgeDeposit(ctx: Ctx): Promise<void> {
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    const deposit = previous.sends?.bridge;
    if (!deposit) continue;
    const status = await ctx.deps.bridge!.status({ chain: ctx.step.from!.chain as never, tx: deposit.tx_hash });
    if (status.status === 'FAILED' || (status.status === 'DONE' && status.substatus === 'REFUNDED')) continue;
    await writeStep(ctx.deps.table, {
      ref: ctx.inv.task,
      attempt: ctx.inv.attempt,
      index: ctx.inv.index,
      tryNumber: ctx.step.try,
      stepStatusIn: ['submitted'],
      sends: { bridge: deposit },
      step: { ...(previous.reference ? { reference: previous.reference } : {}) },
      now: ctx.deps.now().toISOString(),
    });
    await refresh(ctx);
    return;
  }
}

/**
 * The user's wallet deposits into the venue: the venue balance before (`baseline`) and what the
 * venue will credit are recorded before the first call; each call is its own journaled send
 * (`deposit_0`, `deposit_1`, …, in order); the step completes once the balance shows the credit.
 */
async function depositStep(ctx: Ctx): Promise<Outcome> {
  const { driver, fields } = venueDriver(ctx);
  const holding = ctx.step.holding!;
  const amount = BigInt(ctx.step.amount_in!) - BigInt(ctx.step.platform_fee ?? '0');
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
async function adoptDeposit(ctx: Ctx): Promise<void> {
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    const sends = Object.entries(previous.sends ?? {}).filter(([label]) => label.startsWith('deposit_'));
    if (sends.length === 0 || previous.baseline === undefined) continue;
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
      step: { baseline: previous.baseline, expected_credit: previous.expected_credit, deposit_calls: sends.length },
      now: ctx.deps.now().toISOString(),
    });
    await refresh(ctx);
    return;
  }
}

const ACTIONS: Record<StepRecord['action'], (ctx: Ctx) => Promise<Outcome>> = { withdrawal, bridge: bridgeStep, deposit: depositStep };

/**
 * The Map's Catch: records the failure when the step could not (a crash, retries exhausted, a
 * Lambda timeout). Idempotent: nothing happens when the attempt is stale, the task completed or a
 * failure is already recorded. The message is a fixed sentence per error name, never the Cause.
 */
export async function settle(deps: Pick<StepDeps, 'table' | 'now'>, inv: SettleInvocation): Promise<{ recorded: boolean }> {
  const task = await loadTask(deps.table, inv.task);
  if (!task || task.attempt !== inv.attempt || task.failure || task.status === 'completed') return { recorded: false };
  const index = Math.min(task.current_step, task.steps.length - 1);
  const step = task.steps[index]!;
  const code = /^[A-Za-z0-9_.]{1,64}$/.test(inv.error.Error) ? inv.error.Error : 'STEP_ERROR';
  const message = SETTLE_MESSAGES[code] ?? `Step ${index} (${step.action}) stopped with ${code}; resume the task to continue from it`;
  const onStep = step.status !== 'completed' ? step.try : undefined;
  return { recorded: await recordFailure(deps.table, inv.task, inv.attempt, { step: index, code, message }, deps.now().toISOString(), onStep) };
}

const SETTLE_MESSAGES: Record<string, string> = {
  'States.Timeout': 'The step did not finish in time; resume the task to continue from it',
  'States.TaskFailed': 'The step could not be run; resume the task to continue from it',
  TransferStepRetryable: 'The step kept meeting transient trouble; resume the task to continue from it',
};
