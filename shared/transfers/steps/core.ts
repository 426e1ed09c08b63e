import type { Address } from 'viem';
import { type AccountRecord, getAccount } from '../../accounts/account-record.ts';
import type { EvmChainCode } from '../../chains/chain-config.ts';
import type { EvmCall } from '../../chains/evm-chain.ts';
import type { EvmChains } from '../../chains/evm-chains.ts';
import { type EvmSender, evmSendOutcome, type Spend } from '../../chains/sender/evm-sender.ts';
import { insufficient } from '../../chains/sender/funds.ts';
import type { Broadcast, SendJournal } from '../../chains/sender/ports.ts';
import type { SponsoredEvmSender } from '../../chains/sender/sponsored-sender.ts';
import type { Table } from '../../db/client.ts';
import { DomainError } from '../../errors.ts';
import { logger } from '../../logger.ts';
import { parseAmount } from '../../money.ts';
import type { ChainCode } from '../../wallets/networks.ts';
import { type SponsorshipBudget, SponsorshipBudgetExceededError } from '../../withdrawals/sponsorship-budget.ts';
import { platformFee } from '../estimate.ts';
import { TRANSFER_DECIMALS } from '../planner.ts';
import { type PlatformFeeSettings, platformFeeFor } from '../platform-fee.ts';
import {
  type RecordedSend,
  type SettleInvocation,
  STEP_FAILED_ERROR,
  type StepAction,
  type StepInvocation,
  type StepOf,
  type StepRecord,
  type StepResult,
  type TaskRecord,
} from '../task.ts';
import { isStepOf } from '../task-record.ts';
import { StepFailure, StepTransient, stepFailedError, stepRetryableError } from './outcomes.ts';
import { loadTask, recordFailure, type StepWrite, writeStep } from './store.ts';
import { releaseVenueLock } from './venue-lock.ts';
import type { StepWallet, StepWallets } from './wallets.ts';

/**
 * The step Lambdas' use case, without any step kind (statemachines/transfer.asl.json invokes them
 * with StepInvocation): every call re-reads the task item and goes on from what is recorded there,
 * so a retry, a crash, a redrive or a concurrent duplicate finds the same intent and the same
 * signed transactions. The kinds live in withdrawal.ts, bridge.ts and deposit.ts, each imported
 * only by its own Lambda: the venue kinds carry no Solana code, the bridge kind no venue code
 * (bench:bundles). This module imports neither.
 *
 * Order inside one step (each line a conditional UpdateItem before the effect it guards):
 * 1. start: `pending` → `submitted`, amount_in, the platform fee it will take (step 0 only), task → in_progress;
 * 2. intent: the venue withdrawal's idempotency key / the deposit's baseline and expected credit;
 * 3. each transaction: signed, recorded in steps[i].sends[label] (attribute_not_exists), then broadcast
 *    (shared/chains/sender SendJournal); a recorded one is re-broadcast and awaited, never re-signed;
 * 4. outcome: `completed` with amount_out (the last step completes the task), or `failed` + task failure;
 *    either releases the step's venue balance lock (venue-lock.ts), as does settle.
 *
 * The poll phase long-polls: an unsettled step is looked at again every POLL_INTERVAL_MS for up
 * to `pollWindowMs` before the Lambda answers `settled: false` (statemachines/README.md, "Polling").
 */
export interface StepCoreDeps {
  readonly table: Table;
  readonly chains: EvmChains;
  readonly senders: EvmSenders;
  readonly wallets: StepWallets;
  readonly platformFee: PlatformFeeSettings;
  readonly now: () => Date;
  /** Wait between polls (TRANSFER_POLL_SECONDS; 1 in the sandbox). */
  readonly pollSeconds?: number;
  /** A step still unsettled this long after it started fails STEP_TIMED_OUT (TRANSFER_STEP_DEADLINE_SECONDS, default 3600). */
  readonly deadlineSeconds?: number;
  /** A step unsettled this long after it started records `task.stuck`, once per try (TRANSFER_STUCK_SECONDS, default 900). */
  readonly stuckSeconds?: number;
  /** How long one poll invocation keeps re-checking an unsettled step (TRANSFER_POLL_WINDOW_MS; 0 here, one look, when unset). */
  readonly pollWindowMs?: number;
  /** The pause between two looks inside one long poll (TRANSFER_POLL_INTERVAL_MS; POLL_INTERVAL_MS when unset). */
  readonly pollIntervalMs?: number;
  /** The daily budget of sponsored sends (shared/withdrawals/sponsorship-budget.ts): where `senders.sponsored` is. */
  readonly sponsorship?: SponsorshipBudget;
}

/**
 * The EVM exactly-once senders (shared/chains/sender): all a venue step sends with. `sponsored`
 * only where a step can be gas-sponsored (bridge, deposit); a withdrawal's sends (the platform
 * fee out of the payout) are the user's own (gas policy `venue`), so its Lambda has none.
 */
export interface EvmSenders {
  readonly evm: EvmSender;
  readonly sponsored?: SponsoredEvmSender;
}

export const DEFAULT_STEP_DEADLINE_SECONDS = 3_600;

/** A quarter of the deadline: time to alert someone while the step can still settle (a venue that credits late). */
export const DEFAULT_STUCK_SECONDS = 900;

/** Pause between two looks inside one long poll. */
export const POLL_INTERVAL_MS = 200;

/** The call a resumed send carries: unused, the sender re-broadcasts the recorded transaction. */
export const NO_ADDRESS = '0x0000000000000000000000000000000000000000' as Address;

/** One invocation of a step of kind `A`: `step` is that kind's record, re-read by every `refresh`. */
export interface Ctx<D extends StepCoreDeps = StepCoreDeps, A extends StepAction = StepAction> {
  readonly deps: D;
  /** What the core's sends need of the kind: its action (checked on every re-read) and its Solana sends. */
  readonly kind: Pick<StepKind<D, A>, 'action' | 'solana'>;
  readonly inv: StepInvocation;
  task: TaskRecord;
  step: StepOf<A>;
  readonly account: AccountRecord;
  readonly wallet: StepWallet;
}

/**
 * `late`: the failure to record instead of STEP_TIMED_OUT when the step is still unsettled past its
 * deadline (e.g. a deposit that landed and the venue has not credited: DEPOSIT_NOT_CREDITED).
 */
export type Outcome =
  | { readonly done: false; readonly waitSeconds?: number; readonly late?: StepFailure }
  | { readonly done: true; readonly amountOut: bigint; readonly results?: Record<string, string> };

/** Solana sends, for the kind whose money can sit on Solana (the bridge). */
export interface SolanaSends<D extends StepCoreDeps = StepCoreDeps> {
  send(ctx: Ctx<D>, label: string, to: string, token: string, amount: bigint, memo?: string): Promise<string>;
  /** The recorded transaction as the cluster shows it now (a short look, no waiting): see sendOutcome. */
  outcome(ctx: Ctx<D>, send: RecordedSend): Promise<SendOutcome>;
}

/** `landed`: included with its effect; `failed`: reverted or without its effect (final); `unknown`: not yet, or no answer. */
export type SendOutcome = 'landed' | 'failed' | 'unknown';

/** One step kind (`A`): what it does with its own step record, and what it adds to the core. */
export interface StepKind<D extends StepCoreDeps = StepCoreDeps, A extends StepAction = StepAction> {
  readonly action: A;
  /** Goes on from the record: sends what is missing, then looks at the outcome once. */
  run(ctx: Ctx<D, A>): Promise<Outcome>;
  /** What step 0 pays before the platform fee is computed (the source venue's withdrawal fee). */
  feeBaseDeduction?(deps: D, step: StepOf<A>): bigint;
  /** The kind's own business errors (a venue rule, a bridge refusal) as step failures. */
  failure?(error: unknown): StepFailure | undefined;
  readonly solana?: SolanaSends<D>;
}

/** The kinds one Lambda runs, each under its own action. */
export type StepKinds<D extends StepCoreDeps> = { readonly [A in StepAction]?: StepKind<D, A> };

/**
 * One invocation: submit (start, intent, sends) or poll (the same, then the outcome, looked at
 * again until it settles or the poll window closes). `kinds`: the kinds this Lambda runs; a step
 * of another kind is refused without effect.
 */
export async function runStep<D extends StepCoreDeps>(deps: D, kinds: StepKinds<D>, inv: StepInvocation): Promise<StepResult> {
  const guarded = await guard(deps, inv);
  if (guarded.result) return guarded.result;
  const { task, step } = guarded;
  // Each kind runs its own step type: the switch pairs the record with the kind of its action.
  switch (step.action) {
    case 'withdrawal':
      return runKind(deps, kinds, kinds.withdrawal, inv, task, step);
    case 'bridge':
      return runKind(deps, kinds, kinds.bridge, inv, task, step);
    case 'deposit':
      return runKind(deps, kinds, kinds.deposit, inv, task, step);
  }
}

async function runKind<D extends StepCoreDeps, A extends StepAction>(
  deps: D,
  kinds: StepKinds<D>,
  kind: StepKind<D, A> | undefined,
  inv: StepInvocation,
  first: TaskRecord,
  guarded: StepOf<A>,
): Promise<StepResult> {
  const wait = deps.pollSeconds ?? 1;
  if (!kind) throw stepFailedError(`step ${inv.index} is a ${guarded.action}; this function runs ${Object.keys(kinds).join(', ')} steps`);
  let task = first;
  let step = guarded;
  const windowEnds = performance.now() + (inv.phase === 'poll' ? (deps.pollWindowMs ?? 0) : 0);
  try {
    const account = await getAccount(deps.table, task.app_id, task.app_user_id);
    if (!account) throw new StepFailure('ACCOUNT_NOT_FOUND', 'The account of this transfer no longer exists');
    if (step.status === 'pending') {
      await start(deps, kind, inv, task, step);
      ({ task, step } = await reload(deps, inv, kind.action));
      if (step.status === 'completed') return { settled: true, wait_seconds: 0 };
    }
    const ctx: Ctx<D, A> = { deps, kind, inv, task, step, account, wallet: await deps.wallets.open(task, account) };
    let outcome = await kind.run(ctx);
    // Long poll: look again while the window lasts (each look re-reads the record first).
    const pause = deps.pollIntervalMs ?? POLL_INTERVAL_MS;
    while (!outcome.done && inv.phase === 'poll' && performance.now() + pause < windowEnds && !timedOut(deps, ctx.step)) {
      await new Promise((wake) => setTimeout(wake, pause));
      await refresh(ctx);
      if (ctx.step.status === 'completed') return { settled: true, wait_seconds: 0 };
      outcome = await kind.run(ctx);
    }
    if (!outcome.done) {
      if (inv.phase === 'poll' && timedOut(deps, ctx.step)) {
        // A step that reaches its deadline was stuck: said first (once per try) if no poll window
        // ended between the two, so watchers always hear task.stuck before task.failed.
        await reportStuck(ctx);
        throw (
          outcome.late ??
          new StepFailure(
            'STEP_TIMED_OUT',
            `The ${step.action} did not settle within ${deps.deadlineSeconds ?? DEFAULT_STEP_DEADLINE_SECONDS} s; a resume adopts it if it still lands`,
          )
        );
      }
      if (inv.phase === 'poll') await reportStuck(ctx);
      return { settled: false, wait_seconds: outcome.waitSeconds ?? wait };
    }
    await complete(ctx, outcome.amountOut, outcome.results);
    return { settled: true, wait_seconds: 0 };
  } catch (error) {
    const failure =
      asFailure(kind, error) ??
      (inv.phase === 'poll' && !isStepFailed(error) && timedOut(deps, step)
        ? new StepFailure('STEP_TIMED_OUT', `The ${step.action} met only trouble past its deadline; a resume adopts it if it still lands`)
        : undefined);
    if (failure) {
      const recorded = await recordFailure(
        deps.table,
        inv.task,
        inv.attempt,
        { step: inv.index, code: failure.code, message: failure.message },
        deps.now().toISOString(),
        step.try,
      );
      await releaseVenueLock(deps.table, inv.task, step);
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
async function guard(deps: StepCoreDeps, inv: StepInvocation): Promise<{ readonly task: TaskRecord; readonly step: StepRecord; readonly result?: StepResult }> {
  const task = await loadTask(deps.table, inv.task);
  if (!task) throw stepFailedError('the task does not exist');
  if (task.attempt !== inv.attempt) throw stepFailedError(`stale execution: attempt ${inv.attempt}, the task is on attempt ${task.attempt}`);
  const step = task.steps[inv.index];
  if (!step) throw stepFailedError(`the task has no step ${inv.index}`);
  if (step.status === 'completed') return { task, step, result: { settled: true, wait_seconds: 0 } };
  if (task.status === 'completed' || step.status === 'failed') throw stepFailedError(`the task is ${task.status}, step ${inv.index} ${step.status}`);
  // failed / cancelled with this step under way: this attempt ended. With the step pending, it is a
  // resumed attempt (a resume resets the step and bumps the attempt): its first write reopens the task.
  if ((task.status === 'failed' || task.status === 'cancelled') && step.status !== 'pending') throw stepFailedError(`the task is ${task.status}`);
  if (inv.index > 0 && task.steps[inv.index - 1]?.status !== 'completed') throw stepFailedError(`step ${inv.index - 1} is not completed`);
  return { task, step };
}

/** The guards again, and the step as now recorded (completed, too); a step's kind never changes, it is checked all the same. */
async function reload<A extends StepAction>(deps: StepCoreDeps, inv: StepInvocation, action: A): Promise<{ task: TaskRecord; step: StepOf<A> }> {
  const { task, step } = await guard(deps, inv);
  if (!isStepOf(step, action)) throw stepFailedError(`step ${inv.index} is a ${step.action}, not a ${action}`);
  return { task, step };
}

export async function refresh<D extends StepCoreDeps, A extends StepAction>(ctx: Ctx<D, A>): Promise<void> {
  const { task, step } = await reload(ctx.deps, ctx.inv, ctx.kind.action);
  if (step.try !== ctx.step.try) throw stepFailedError('the step was reset by a resume');
  ctx.task = task;
  ctx.step = step;
}

/** The step's input: step 0 the task amount, step i what step i−1 delivered. */
function amountIn(task: TaskRecord, index: number): bigint {
  if (index === 0) return parseAmount(task.amount, TRANSFER_DECIMALS);
  const delivered = task.steps[index - 1]?.amount_out;
  // The guards let a step start only after the previous one completed, which records amount_out.
  if (delivered === undefined) throw new Error(`step ${index - 1} records no amount_out`);
  return BigInt(delivered);
}

/** What the step moves: recorded by its start, before any kind runs. */
export function amountInOf(step: StepRecord): bigint {
  if (step.amount_in === undefined) throw new Error(`step ${step.index} records no amount_in`);
  return BigInt(step.amount_in);
}

/** Where the money first sits in the user's wallet: step 0 (a self source's holding, or the source venue's payout). */
function feeChain(step: StepRecord): ChainCode {
  return step.action === 'bridge' ? step.from.chain : step.holding.chain;
}

/**
 * The platform fee, taken once, by step 0, exactly as estimateTransferCost computes it
 * (estimate.ts flowMoney: platformFee(config, amount − the source venue's withdrawal fee)).
 */
function platformFeeOf<D extends StepCoreDeps, A extends StepAction>(deps: D, kind: StepKind<D, A>, step: StepOf<A>, amount: bigint): bigint {
  if (step.index !== 0) return 0n;
  const config = platformFeeFor(deps.platformFee, feeChain(step));
  const base = amount - (kind.feeBaseDeduction?.(deps, step) ?? 0n);
  return platformFee(config, base < 0n ? 0n : base);
}

async function start<D extends StepCoreDeps, A extends StepAction>(
  deps: D,
  kind: StepKind<D, A>,
  inv: StepInvocation,
  task: TaskRecord,
  step: StepOf<A>,
): Promise<void> {
  const amount = amountIn(task, inv.index);
  const fee = platformFeeOf(deps, kind, step, amount);
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

async function complete<D extends StepCoreDeps, A extends StepAction>(ctx: Ctx<D, A>, amountOut: bigint, results?: Record<string, string>): Promise<void> {
  const { deps, inv } = ctx;
  const now = deps.now().toISOString();
  const last = inv.index === ctx.task.steps.length - 1;
  const written = await writeOwnStep(
    ctx,
    {
      stepStatusIn: ['submitted'],
      step: { status: 'completed', completed_at: now, amount_out: amountOut.toString(), ...(results ? { result_tx_hashes: results } : {}) },
      task: { current_step: inv.index + 1, ...(last ? { status: 'completed' } : {}) },
    },
    now,
  );
  if (!written) {
    await refresh(ctx);
    if (ctx.step.status !== 'completed') throw new StepTransient('the completion write lost a race');
  }
  await releaseVenueLock(deps.table, inv.task, ctx.step);
}

const isStepFailed = (error: unknown) => error instanceof Error && error.name === STEP_FAILED_ERROR;

/**
 * `task.stuck` (issue 24): a step still unsettled `stuckSeconds` after it started records
 * `stuck_at` with the event, once per try (the write requires `stuck_at` absent), so whoever
 * watches the app's events hears of it well before the deadline fails it.
 */
async function reportStuck<D extends StepCoreDeps, A extends StepAction>(ctx: Ctx<D, A>): Promise<void> {
  const { deps, step } = ctx;
  if (!step.started_at || step.stuck_at) return;
  if (deps.now().getTime() - Date.parse(step.started_at) <= (deps.stuckSeconds ?? DEFAULT_STUCK_SECONDS) * 1000) return;
  const now = deps.now().toISOString();
  await writeOwnStep(ctx, { stepStatusIn: ['submitted'], absent: ['stuck_at'], step: { stuck_at: now }, events: ['task.stuck'] }, now);
}

function timedOut(deps: StepCoreDeps, step: StepRecord): boolean {
  if (!step.started_at) return false;
  return deps.now().getTime() - Date.parse(step.started_at) > (deps.deadlineSeconds ?? DEFAULT_STEP_DEADLINE_SECONDS) * 1000;
}

/** Business failures end the step; everything else is transient. */
function asFailure<D extends StepCoreDeps, A extends StepAction>(kind: StepKind<D, A>, error: unknown): StepFailure | undefined {
  if (error instanceof StepFailure) return error;
  const own = kind.failure?.(error);
  if (own) return own;
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
export async function sendOnce(ctx: Ctx, label: string, chain: ChainCode, send: (journal: SendJournal) => Promise<{ txHash: string }>): Promise<string> {
  const known = ctx.step.sends?.[label];
  // Already included with its effect: nothing to re-broadcast (a poll only looks). A replaced send
  // goes through the sender, which reports (and records) the candidate that was mined.
  if (known && !known.candidates && (await sendOutcome(ctx, known)) === 'landed') return known.tx_hash;
  for (let round = 0; round < 2; round++) {
    const recorded = ctx.step.sends?.[label];
    const entry = (broadcast: Broadcast): RecordedSend => ({
      chain,
      tx_hash: broadcast.tx_hash,
      raw: broadcast.raw,
      ...(broadcast.effect ? { effect: broadcast.effect } : {}),
      ...(broadcast.candidates ? { candidates: broadcast.candidates.map(({ tx_hash, raw }) => ({ tx_hash, raw })) } : {}),
      ...(broadcast.last_valid_block_height ? { last_valid_block_height: broadcast.last_valid_block_height } : {}),
      ...(broadcast.sponsor ? { sponsor: { slot: broadcast.sponsor.slot, address: broadcast.sponsor.address } } : {}),
    });
    const journal: SendJournal = {
      ...(recorded
        ? {
            previous: {
              tx_hash: recorded.tx_hash,
              raw: recorded.raw,
              ...(recorded.effect ? { effect: recorded.effect } : {}),
              ...(recorded.candidates ? { candidates: recorded.candidates } : {}),
              ...(recorded.last_valid_block_height ? { last_valid_block_height: recorded.last_valid_block_height } : {}),
              ...(recorded.sponsor ? { sponsor: recorded.sponsor } : {}),
            },
          }
        : {}),
      record: async (broadcast: Broadcast) => {
        const ok = await writeOwnStep(ctx, {
          stepStatusIn: ['submitted'],
          sends: { [label]: entry(broadcast) },
        });
        if (!ok) throw new RecordTaken(`${label} was recorded by another invocation`);
      },
      // A replacement (before its broadcast) or the mined candidate: only over the entry this invocation holds.
      replace: async (next: Broadcast, current: Broadcast) => {
        const ok = await writeOwnStep(ctx, {
          stepStatusIn: ['submitted'],
          replaceSend: { label, send: entry(next), current: current.tx_hash },
        });
        if (!ok) throw new RecordTaken(`${label} was replaced by another invocation`);
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

/** A recorded send as its chain shows it now (a short look, no waiting). */
export async function sendOutcome<D extends StepCoreDeps>(ctx: Ctx<D>, send: RecordedSend): Promise<SendOutcome> {
  if (send.chain === 'SOL') return ctx.kind.solana ? ctx.kind.solana.outcome(ctx, send) : 'unknown';
  return evmSendOutcome(await ctx.deps.chains.evm(send.chain), send);
}

/** An EVM call from the user's wallet (sponsored when the step says so). */
export function sendEvm(ctx: Ctx, label: string, chainCode: EvmChainCode, call: EvmCall, spends: Spend): Promise<string> {
  const { deps, wallet } = ctx;
  return sendOnce(ctx, label, chainCode, async (journal) => {
    const chain = await deps.chains.evm(chainCode);
    if (ctx.step.gas_policy !== 'sponsored') return deps.senders.evm.send({ chain, from: wallet.evmAddress, call, spends, signer: wallet.evm, journal });
    if (!deps.senders.sponsored || !deps.sponsorship)
      throw new StepFailure('GAS_SPONSORSHIP_UNAVAILABLE', `A ${ctx.step.action} step is not sent with sponsored gas`);
    // Counted once per send: a retry that resumes a recorded send does not count again.
    if (!journal.previous) await consumeSponsorship(deps.sponsorship, ctx.task);
    return deps.senders.sponsored.send({ chain, account: wallet.evmAddress, call, spends, signer: wallet.evm, journal });
  });
}

/** The user's daily sponsorship: over it the step fails SPONSORSHIP_BUDGET_EXCEEDED (resume it after 00:00 UTC, or the route unsponsored). */
async function consumeSponsorship(budget: SponsorshipBudget, task: TaskRecord): Promise<void> {
  try {
    await budget.consume(task.app_id, task.app_user_id);
  } catch (error) {
    if (error instanceof SponsorshipBudgetExceededError) throw new StepFailure(error.code, `${error.message}; resume the task then`);
    throw error;
  }
}

/** Why a delivered step's platform fee is not taken (recorded once in the step's `platform_fee_waived`). */
export interface FeeWaiver {
  readonly code: string;
  readonly message: string;
}

/**
 * The platform fee of step 0 (label `platform_fee`), from the user's wallet to the recipient of
 * that chain family. A kind calls it only once its own move is delivered: the venue's payout in the
 * wallet, the venue's credit of a deposit, the bridge's fill. A move that is refunded, fails or is
 * never sent keeps no fee (docs/guide/account.md, "Fees"): nothing was taken, so nothing has to be
 * returned, however often the step is resumed or crashes. On Solana only through a kind that sends
 * there (the bridge; a venue step's money is on the venue's EVM chain). The kind checks before its
 * first send that the move and the fee it still owes are funded (requireFunded).
 *
 * A delivered move never fails for its fee: the fee is waived, recorded once in
 * `platform_fee_waived` and never sent afterwards, when the kind says the delivery does not earn it
 * (`waive`: a bridge fill below the minimum its quote guaranteed), or when the fee send is refused
 * before anything is signed (the wallet no longer holds the fee or its gas, the sponsorship budget
 * is spent). Returns the fee taken: 0 when none is owed or it is waived.
 */
export async function takePlatformFee<D extends StepCoreDeps>(ctx: Ctx<D>, chain: ChainCode, token: string, waive?: FeeWaiver): Promise<bigint> {
  const fee = BigInt(ctx.step.platform_fee ?? '0');
  if (fee === 0n) return 0n;
  await adoptPlatformFee(ctx);
  if (!ctx.step.sends?.platform_fee) {
    if (ctx.step.platform_fee_waived) return 0n;
    if (waive) return waivePlatformFee(ctx, chain, token, waive);
  }
  // A fee is planned only where a recipient is configured (platformFeeFor: no recipient, no fee).
  const { recipient } = platformFeeFor(ctx.deps.platformFee, chain);
  if (recipient === undefined) throw new Error(`internal: step ${ctx.step.action} owes a platform fee on ${chain}, and no fee recipient is configured there`);
  try {
    if (chain === 'SOL') {
      if (!ctx.kind.solana) throw new StepFailure('UNSUPPORTED_CHAIN', `A ${ctx.step.action} step does not send on Solana`);
      await ctx.kind.solana.send(ctx, 'platform_fee', recipient, token, fee, `platform-fee:${ctx.inv.task.task_id}`);
    } else {
      const evm = await ctx.deps.chains.evm(chain);
      await sendEvm(ctx, 'platform_fee', chain, evm.transferCall(token, recipient as Address, fee), { token, amount: fee, to: recipient });
    }
  } catch (error) {
    const refused = error instanceof StepFailure || (error instanceof DomainError && error.status >= 400 && error.status < 500 && error.status !== 409);
    if (!refused) throw error;
    await refresh(ctx);
    // Refused after it was recorded (never so today: the senders check funds and budget first): it stands, and so does the error.
    if (ctx.step.sends?.platform_fee) throw error;
    return waivePlatformFee(ctx, chain, token, { code: (error as StepFailure | DomainError).code, message: (error as Error).message });
  }
  return fee;
}

/**
 * Records the waiver once, only while no fee send is recorded. A concurrent duplicate that
 * recorded its fee send first wins: that send is awaited and counts (it moved the fee).
 */
async function waivePlatformFee<D extends StepCoreDeps>(ctx: Ctx<D>, chain: ChainCode, token: string, waiver: FeeWaiver): Promise<bigint> {
  await writeOwnStep(ctx, {
    stepStatusIn: ['submitted'],
    absent: ['platform_fee_waived', 'sends.platform_fee'],
    step: { platform_fee_waived: { code: waiver.code, message: waiver.message } },
  });
  await refresh(ctx);
  if (ctx.step.sends?.platform_fee) return takePlatformFee(ctx, chain, token);
  logger.warn('platform fee waived', { task_id: ctx.inv.task.task_id, index: ctx.inv.index, code: ctx.step.platform_fee_waived?.code });
  return 0n;
}

/**
 * What a failure message adds about the platform fee of a step whose move did not happen: none
 * was charged (a fee only follows a delivered move, see takePlatformFee).
 */
export function feeNotCharged(step: StepRecord): string {
  const fee = BigInt(step.platform_fee ?? '0');
  if (fee === 0n || step.sends?.platform_fee) return '';
  return `; the platform fee (${fee} base units) was not charged`;
}

/**
 * A resumed try adopts the fee an earlier try sent (awaited), so it is never charged twice; an
 * earlier fee send that failed on chain (reverted, or without its effect) moved nothing and is not
 * adopted.
 */
async function adoptPlatformFee<D extends StepCoreDeps>(ctx: Ctx<D>): Promise<void> {
  if (ctx.step.sends?.platform_fee) return;
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    const earlier = previous.sends?.platform_fee;
    if (!earlier || (await sendOutcome(ctx, earlier)) === 'failed') continue;
    await writeOwnStep(ctx, { stepStatusIn: ['submitted'], sends: { platform_fee: earlier } });
    await refresh(ctx);
    return;
  }
}

/** What of the platform fee this try still has to send: none once a fee send is recorded or adopted. */
export async function platformFeeOwed<D extends StepCoreDeps>(ctx: Ctx<D>): Promise<bigint> {
  const fee = BigInt(ctx.step.platform_fee ?? '0');
  if (fee === 0n) return 0n;
  await adoptPlatformFee(ctx);
  return ctx.step.sends?.platform_fee ? 0n : fee;
}

/**
 * Before a step's first send: its own move and the fee it still owes are in the wallet now (the
 * balance can move between acceptance and execution), or the step fails INSUFFICIENT_FUNDS with
 * nothing sent and can be resumed once funded. Transfer tokens have 6 decimals everywhere.
 */
export function requireFunded(what: string, needed: bigint, available: bigint): void {
  if (available < needed) throw insufficient(what, needed, available, TRANSFER_DECIMALS);
}

/** A write to this invocation's own step: its task, attempt, index and try as read, stamped now. */
export function writeOwnStep(
  ctx: Pick<Ctx, 'deps' | 'inv' | 'step'>,
  write: Omit<StepWrite, 'ref' | 'attempt' | 'index' | 'tryNumber' | 'now'>,
  now = ctx.deps.now().toISOString(),
): Promise<boolean> {
  return writeStep(ctx.deps.table, { ref: ctx.inv.task, attempt: ctx.inv.attempt, index: ctx.inv.index, tryNumber: ctx.step.try, ...write, now });
}

/** Records step fields once (attribute_not_exists on the first); then re-reads, whoever won. */
export async function recordIntent(ctx: Ctx, fields: Record<string, unknown>, onceField: string): Promise<void> {
  await writeOwnStep(ctx, {
    stepStatusIn: ['submitted'],
    absent: [onceField],
    step: fields,
  });
  await refresh(ctx);
}

/**
 * The Map's Catch: records the failure when the step could not (a crash, retries exhausted, a
 * Lambda timeout). Idempotent: nothing happens when the attempt is stale, the task completed or a
 * failure is already recorded. The message is a fixed sentence per error name, never the Cause.
 */
export async function settle(deps: Pick<StepCoreDeps, 'table' | 'now'>, inv: SettleInvocation): Promise<{ recorded: boolean }> {
  const task = await loadTask(deps.table, inv.task);
  if (!task || task.attempt !== inv.attempt || task.failure || task.status === 'completed') return { recorded: false };
  const index = Math.min(task.current_step, task.steps.length - 1);
  const step = task.steps[index];
  if (!step) throw new Error('internal: a task to settle has no steps'); // a task is planned with at least one step
  const code = /^[A-Za-z0-9_.]{1,64}$/.test(inv.error.Error) ? inv.error.Error : 'STEP_ERROR';
  const message = SETTLE_MESSAGES[code] ?? `Step ${index} (${step.action}) stopped with ${code}; resume the task to continue from it`;
  const onStep = step.status !== 'completed' ? step.try : undefined;
  const recorded = await recordFailure(deps.table, inv.task, inv.attempt, { step: index, code, message }, deps.now().toISOString(), onStep);
  if (recorded) await releaseVenueLock(deps.table, inv.task, step);
  return { recorded };
}

const SETTLE_MESSAGES: Record<string, string> = {
  'States.Timeout': 'The step did not finish in time; resume the task to continue from it',
  'States.TaskFailed': 'The step could not be run; resume the task to continue from it',
  TransferStepRetryable: 'The step kept meeting transient trouble; resume the task to continue from it',
};
