import { v7 as uuidv7 } from 'uuid';
import { type Address, parseUnits } from 'viem';
import type { AccountRecord } from '../accounts/account-record.ts';
import { requireAccount } from '../accounts/account-service.ts';
import type { AuthenticatedUser } from '../auth/authenticate.ts';
import { insufficient } from '../chains/sender/funds.ts';
import type { Table } from '../db/client.ts';
import { ConflictError, DomainError, NotFoundError, ValidationError } from '../errors.ts';
import { logger } from '../logger.ts';
import type { VenueId } from '../venues/default-status.ts';
import type { ChainCode } from '../wallets/networks.ts';
import { claimIdempotencyKey, type IdempotencyRecord, requestHash, type StoredResponse } from '../withdrawals/idempotency.ts';
import { type EstimateDeps, estimateTransferCost, type TransferCostEstimate } from './estimate.ts';
import { type ExecutionStatus, executionInput, type TransferExecutor } from './executor.ts';
import { type PlannedStep, planToJson, planTransfer, TRANSFER_DECIMALS, type TransferPlan } from './planner.ts';
import type { TransferInput } from './schemas.ts';
import { executionName, type StepRecord, type TaskRecord, toTaskResource } from './task.ts';
import { type ClosedOutcome, claimRekick, completeFinishedTask, getTask, listTasks, markStarted, putTask, resumeTask, settleClosed } from './task-store.ts';

/**
 * The transfer and task routes (issue 11 §1, §4; spec Endpoints: estimate, create, list, get,
 * resume). The execution itself is the state machine's (statemachines/transfer.asl.json); these
 * routes plan, store the task item, and start, re-kick, reconcile or resume its execution through
 * the TransferExecutor port.
 *
 * Task status decisions (README "Transfers"):
 * - `pending` from creation (and after a resume) until the first step starts.
 * - `cancelled` when the attempt's execution stopped without finishing: ABORTED (an operator's
 *   StopExecution) or TIMED_OUT (the machine's TimeoutSeconds). GET records it when it sees the
 *   closed execution; `cancel_reason` says which.
 * - `failed` when a step recorded a final failure, or when the execution ended (FAILED, or
 *   SUCCEEDED with a step not completed) while the task was still pending or in progress: code
 *   EXECUTION_FAILED. SUCCEEDED with every step completed makes it `completed`.
 * - `failed` and `cancelled` can be resumed; a resume is a new attempt from the first unfinished step.
 */
/** What the task routes (list, get, resume) use. */
export interface TaskDeps {
  readonly table: Table;
  readonly executor: TransferExecutor;
  readonly now: () => Date;
}

/** What the estimate and create routes use besides. */
export interface TransferServiceDeps extends TaskDeps {
  /** The estimate's ports for one user's wallets; `feeChain` is the chain of the route's first wallet holding (platform fee recipient). */
  readonly estimateDeps: (wallet: { readonly evm: Address; readonly sol: string }, feeChain: ChainCode) => EstimateDeps;
  /** How long an Idempotency-Key's claim keeps retries out (DEFAULT_CLAIM_LEASE_MS when unset). */
  readonly claimLeaseMs?: number;
  /** False when this deployment has no bridge (BRIDGE_URL unset): routes with a bridge step answer 503. Default true. */
  readonly bridgeConfigured?: boolean;
  /** The wallet's balances on the chains (POST /transfer checks the first step is funded: shared/chains Chains in production). */
  readonly balances: WalletBalances;
}

/** Port: a wallet's balance of a token (a transfer token or the chain's native coin), in base units. */
export interface WalletBalances {
  balance(chain: ChainCode, owner: string, token: string): Promise<bigint>;
}

/** 503: the route needs the bridge and this deployment has none configured (BRIDGE_URL). */
export class BridgeNotConfiguredError extends DomainError {
  constructor() {
    super(503, 'BRIDGE_NOT_CONFIGURED', 'This route needs a bridge, and none is configured on this deployment');
  }
}

/** The estimate route: the table (the account) and the estimate's ports. */
export type EstimateRouteDeps = Pick<TransferServiceDeps, 'table' | 'estimateDeps' | 'bridgeConfigured'>;

const walletOf = (account: AccountRecord) => ({ evm: account.public_address.ETH as Address, sol: account.public_address.SOL });

/**
 * Whether the destination venue takes its first deposit (the larger first-deposit minimum): true
 * until the account shows the venue funded, i.e. trading set up there (init-perp-dex-trading
 * requires funds) or a transfer's deposit recorded `funded`.
 */
function isFirstDeposit(account: AccountRecord, plan: TransferPlan): boolean {
  if (plan.destination === 'self') return false;
  const status = account.perp_dex_status[plan.destination as VenueId];
  return !(status?.funded === true || status?.trade_initialized === true);
}

async function estimateFor(deps: EstimateRouteDeps, account: AccountRecord, plan: TransferPlan): Promise<TransferCostEstimate> {
  if (deps.bridgeConfigured === false && plan.steps.some((step) => step.action === 'bridge')) throw new BridgeNotConfiguredError();
  return estimateTransferCost(deps.estimateDeps(walletOf(account), plan.origin.chain), plan, {
    firstDeposit: isFirstDeposit(account, plan),
    venues: account.perp_dex_status,
  });
}

/** `POST /transfer/estimate-transfer-cost`. */
export async function estimateTransfer(deps: EstimateRouteDeps, user: AuthenticatedUser, body: TransferInput): Promise<TransferCostEstimate> {
  const plan = planTransfer(body);
  const account = await requireAccount(deps, user);
  return estimateFor(deps, account, plan);
}

export interface AcceptedTask {
  readonly status: number;
  readonly body: { readonly success: true; readonly task_id: string; readonly message: string };
  readonly replayed: boolean;
}

/** 202: the task is stored and its execution started (or will be, see GET); the body names it. */
export const ACCEPTED = 202;

function requireInitialized(account: AccountRecord, venue: VenueId, side: 'source' | 'destination') {
  if (!account.perp_dex_status[venue]?.initialized) {
    throw new ConflictError('DEX_NOT_INITIALIZED', `body.${side}: ${venue} is not initialized for this user: call POST /account/init-perp-dex first`);
  }
}

/**
 * `POST /transfer`: plans, checks the venues are set up, estimates (422 below the effective
 * minimum), stores the task (pending, attempt 0) and starts attempt 0's execution. A start that
 * fails leaves the task pending without `execution_started_at`: GET re-kicks it once.
 * `Idempotency-Key` as on POST /withdraw: the same key and body return the same task.
 */
export async function createTransfer(deps: TransferServiceDeps, user: AuthenticatedUser, body: TransferInput, idempotencyKey?: string): Promise<AcceptedTask> {
  const plan = planTransfer(body);
  let record: IdempotencyRecord | undefined;
  if (idempotencyKey) {
    const hash = requestHash({ route: 'POST /transfer', ...body });
    const claim = await claimIdempotencyKey(
      deps.table,
      { appId: user.app.app_id, sub: user.identity.sub, key: idempotencyKey },
      hash,
      deps.now().getTime(),
      deps.claimLeaseMs,
      'transfer',
    );
    if (claim.kind === 'replay') return { ...(claim.response as StoredResponse & Pick<AcceptedTask, 'body'>), replayed: true };
    // 'resume': an earlier attempt with this key stopped before it answered. It bound its task id
    // to the key before storing the task, so a stored task is found and started, never made twice.
    record = claim.record;
    if (record.subject) {
      const stored = await getTask(deps.table, user.app.app_id, user.identity.sub, record.subject);
      if (stored) {
        if (!stored.execution_started_at) await startAttempt(deps, stored);
        const response = accepted(stored.task_id, stored.steps.length, String(stored.route.route_id));
        await record.complete(response);
        return { ...response, replayed: true };
      }
    }
  }
  let stored = false;
  try {
    const account = await requireAccount(deps, user);
    if (plan.source !== 'self') requireInitialized(account, plan.source as VenueId, 'source');
    if (plan.destination !== 'self') requireInitialized(account, plan.destination as VenueId, 'destination');
    const estimate = await estimateFor(deps, account, plan);
    // A bridge that gives no quote now would not take the deposit either: no task with an unknown fee.
    if (estimate.route.bridge_estimation_error) {
      throw new DomainError(503, 'BRIDGE_UNAVAILABLE', `The bridge gave no quote (${estimate.route.bridge_estimation_error}); try again later`);
    }
    await requireSourceFunded(deps.balances, account, plan, estimate);
    const taskId = record?.subject ?? uuidv7();
    if (record && !record.subject) await record.bindSubject(taskId);
    const task = newTask(deps, user, account, body, plan, estimate, taskId);
    await putTask(deps.table, task);
    stored = true;
    await startAttempt(deps, task);
    const response = accepted(task.task_id, task.steps.length, plan.routeId);
    await record?.complete(response);
    return { ...response, replayed: false };
  } catch (error) {
    // Nothing stored: the key may be used again. Stored: a retry finds the task through the key.
    await (stored ? record?.releaseLease() : record?.abandon());
    throw error;
  }
}

/**
 * 422 INSUFFICIENT_FUNDS with the numbers, and no task, as POST /withdraw refuses: a self source's
 * wallet must hold what the first step spends now, the amount (the platform fee comes out of it)
 * and, where the user pays it, the first step's gas with the senders' 20 % gas-limit headroom, plus
 * any native value its calls carry. The step checks again before its first send (balances move
 * between acceptance and execution). A venue source is the venue's to refuse: its payout comes
 * first and the fee out of the payout, so nothing is charged when it refuses.
 */
async function requireSourceFunded(balances: WalletBalances, account: AccountRecord, plan: TransferPlan, estimate: TransferCostEstimate): Promise<void> {
  if (plan.source !== 'self') return;
  const { chain, token } = plan.origin;
  const owner = chain === 'SOL' ? account.public_address.SOL : account.public_address.ETH;
  const available = await balances.balance(chain, owner, token);
  if (available < plan.amount) throw insufficient(`${token} on ${chain}`, plan.amount, available, TRANSFER_DECIMALS);
  const gas = estimate.steps[0]?.gas_breakdown;
  if (!gas) return;
  const decimals = gas.native_token === 'SOL' ? 9 : 18;
  const units = BigInt(gas.gas_units);
  const limit = gas.native_token === 'SOL' ? units : (units * 12n + 9n) / 10n;
  const needed = (gas.paid_by === 'user' ? limit * BigInt(gas.gas_price) : 0n) + parseUnits(gas.native_value, decimals);
  if (needed === 0n) return;
  const native = await balances.balance(chain, owner, gas.native_token);
  if (native < needed) throw insufficient(`${gas.native_token} on ${chain} for the first step's gas`, needed, native, decimals);
}

function accepted(taskId: string, steps: number, routeId: string) {
  return {
    status: ACCEPTED,
    body: {
      success: true as const,
      task_id: taskId,
      message: `Transfer accepted: ${steps} step${steps === 1 ? '' : 's'} (${routeId}); follow it with GET /task/${taskId}`,
    },
  };
}

function newTask(
  deps: TransferServiceDeps,
  user: AuthenticatedUser,
  account: AccountRecord,
  body: TransferInput,
  plan: TransferPlan,
  estimate: TransferCostEstimate,
  taskId: string,
): TaskRecord {
  const now = deps.now().toISOString();
  const steps = plan.steps.map(newStep);
  // The wire `chain`/`token`: the wallet side of the route (a self source's, else where the money lands in the wallet).
  const walletSide = plan.source === 'self' || plan.destination !== 'self' ? plan.origin : plan.target;
  return {
    entity: 'task',
    task_id: taskId,
    user_id: account.user_id,
    app_id: user.app.app_id,
    app_user_id: user.identity.sub,
    iss: user.identity.iss,
    source: plan.source,
    destination: plan.destination,
    amount: body.amount,
    chain: walletSide.chain,
    token: walletSide.token,
    ...(body.destination_chain ? { destination_chain: body.destination_chain } : {}),
    ...(body.destination_token ? { destination_token: body.destination_token } : {}),
    gas_sponsored: plan.gasSponsored,
    status: 'pending',
    created_at: now,
    updated_at: now,
    attempt: 0,
    execution_name: executionName(taskId, 0),
    route: {
      ...planToJson(plan),
      estimate: {
        total_cost_usdc: estimate.total_cost_usdc,
        total_cost_eth: estimate.total_cost_eth,
        amount_received: estimate.route.amount_received,
        effective_minimum_deposit: estimate.route.effective_minimum_deposit,
        gas_policy: estimate.route.gas_policy,
        ...(estimate.route.bridge_estimation_error ? { bridge_estimation_error: estimate.route.bridge_estimation_error } : {}),
        steps: estimate.steps.map((step) => ({
          action: step.action,
          dex: step.dex,
          amount_in: step.amount_in,
          amount_out: step.amount_out,
          cost_usdc: step.cost_usdc,
          breakdown: step.breakdown,
        })),
      },
    },
    steps,
    current_step: 0,
  };
}

/** A planned step as its record starts: pending, try 0, nothing sent. */
function newStep(step: PlannedStep, index: number): StepRecord {
  const fresh = { index, status: 'pending', try: 0 } as const;
  switch (step.action) {
    case 'withdrawal':
      return { ...fresh, action: step.action, venue: step.venue, holding: step.holding, gas_policy: step.gasPolicy };
    case 'bridge':
      return { ...fresh, action: step.action, from: step.from, to: step.to, gas_policy: step.gasPolicy };
    case 'deposit':
      return { ...fresh, action: step.action, venue: step.venue, holding: step.holding, gas_policy: step.gasPolicy };
  }
}

/** Starts the task's current attempt and records the start; a failure is logged and leaves the task pending (GET re-kicks it). */
async function startAttempt(deps: TaskDeps, task: TaskRecord): Promise<boolean> {
  try {
    await deps.executor.start(task.execution_name, executionInput(task, deps.executor.functions()));
  } catch (error) {
    logger.warn('transfer execution not started; the task stays pending', { task_id: task.task_id, attempt: task.attempt, error });
    return false;
  }
  try {
    await markStarted(deps.table, task, task.attempt, deps.now());
  } catch (error) {
    // Started but not recorded: GET's re-kick starts the same name again (ExecutionAlreadyExists = started) and records it.
    logger.warn('transfer execution started but not recorded', { task_id: task.task_id, attempt: task.attempt, error });
  }
  return true;
}

/** `GET /tasks?limit=`: the user's most recent tasks, newest first. */
export async function listUserTasks(deps: Pick<TaskDeps, 'table'>, user: AuthenticatedUser, limit: number) {
  const account = await requireAccount(deps, user);
  const tasks = await listTasks(deps.table, user.app.app_id, user.identity.sub, limit);
  return { user_id: account.user_id, tasks: tasks.map(toTaskResource) };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function parseTaskId(value: string | undefined): string {
  if (!value || !UUID.test(value)) throw new ValidationError('path.task_id: must be a UUID');
  return value.toLowerCase();
}

async function requireTask(deps: Pick<TaskDeps, 'table'>, user: AuthenticatedUser, taskId: string): Promise<TaskRecord> {
  const task = await getTask(deps.table, user.app.app_id, user.identity.sub, taskId);
  if (!task) throw new NotFoundError('TASK_NOT_FOUND', `No task ${taskId} for this user`);
  return task;
}

/** What a closed execution means for a task still pending or in progress (null: nothing to record). */
export function closedOutcome(task: TaskRecord, status: ExecutionStatus | undefined): ClosedOutcome | null {
  switch (status) {
    case 'ABORTED':
      return { status: 'cancelled', cancel_reason: `execution ${task.execution_name} was stopped (aborted) before the transfer finished` };
    case 'TIMED_OUT':
      return { status: 'cancelled', cancel_reason: `execution ${task.execution_name} timed out before the transfer finished` };
    case 'SUCCEEDED':
      // Every step recorded completed: the transfer is done, only the task's end was not recorded.
      if (task.steps.every((step) => step.status === 'completed')) return { status: 'completed', current_step: task.steps.length };
      return endedWithoutOutcome(task, status); // it ended without the steps' outcome
    case 'FAILED':
      return endedWithoutOutcome(task, status);
    default:
      return null; // RUNNING, PENDING_REDRIVE, or no execution of that name
  }
}

function endedWithoutOutcome(task: TaskRecord, status: 'SUCCEEDED' | 'FAILED'): ClosedOutcome {
  return {
    status: 'failed',
    failure: {
      step: task.current_step,
      code: 'EXECUTION_FAILED',
      message: `execution ${task.execution_name} ended (${status}) without recording the outcome of step ${task.current_step + 1}`,
    },
  };
}

/**
 * `GET /task/{task_id}`: the caller's own task (another user's is absent by key). A pending task
 * whose start was lost is re-kicked once per attempt; a task whose execution closed without
 * recording an outcome is reconciled (cancelled or failed, see closedOutcome).
 */
export async function getUserTask(deps: TaskDeps, user: AuthenticatedUser, taskId: string) {
  let task = await requireTask(deps, user, taskId);
  if (task.status === 'pending' && !task.execution_started_at && !task.rekicked) {
    if (await claimRekick(deps.table, task, task.attempt, deps.now())) await startAttempt(deps, task);
    task = await requireTask(deps, user, taskId);
  } else if ((task.status === 'pending' || task.status === 'in_progress') && (task.execution_started_at || task.rekicked)) {
    let status: ExecutionStatus | undefined;
    try {
      status = await deps.executor.describe(task.execution_name);
    } catch (error) {
      logger.warn('transfer execution not described; the task is shown as stored', { task_id: task.task_id, error });
    }
    const outcome = closedOutcome(task, status);
    if (outcome && (await settleClosed(deps.table, task, task.attempt, outcome, deps.now()))) task = await requireTask(deps, user, taskId);
  }
  return toTaskResource(task);
}

/**
 * `POST /task/{task_id}/resume`: only a failed or cancelled task (409 TASK_NOT_RESUMABLE naming
 * the status otherwise). One conditional update makes the new attempt (task-store resumeTask), so
 * of concurrent resumes exactly one starts an execution; the others see the task pending (409).
 */
export async function resumeUserTask(deps: TaskDeps, user: AuthenticatedUser, taskId: string): Promise<AcceptedTask> {
  const seen = await requireTask(deps, user, taskId);
  const notResumable = (status: string) => new ConflictError('TASK_NOT_RESUMABLE', `The task is ${status}; only a failed or cancelled task can be resumed`);
  if (seen.status !== 'failed' && seen.status !== 'cancelled') throw notResumable(seen.status);
  const unfinished = [...seen.steps.entries()].find(([, step]) => step.status !== 'completed');
  if (!unfinished) {
    // Every step completed but the end was not recorded: nothing to run again.
    if (!(await completeFinishedTask(deps.table, seen, deps.now()))) throw notResumable((await requireTask(deps, user, taskId)).status);
    return {
      status: ACCEPTED,
      body: { success: true, task_id: taskId, message: 'Every step had completed; the task is completed, nothing was run again' },
      replayed: false,
    };
  }
  const [k, step] = unfinished;
  if (!(await resumeTask(deps.table, seen, k, deps.now()))) throw notResumable((await requireTask(deps, user, taskId)).status);
  const resumed = await requireTask(deps, user, taskId);
  await startAttempt(deps, resumed);
  return {
    status: ACCEPTED,
    body: { success: true, task_id: taskId, message: `Resuming from step ${k + 1} of ${seen.steps.length} (${step.action}), attempt ${seen.attempt + 1}` },
    replayed: false,
  };
}
