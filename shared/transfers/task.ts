import type { ExpectedEffect } from '../chains/sender/ports.ts';
import type { VenueId } from '../venues/default-status.ts';
import type { Holding, StepGasPolicy } from './planner.ts';
import type { TransferLocation } from './schemas.ts';

/**
 * A transfer task as stored: ONE item of the single table holds the task, its route and the
 * exactly-once record of every step (spec, "Transfer task"; issue 11). Step Lambdas update their
 * own `steps[i]` with conditional writes; the API reads one item.
 *
 * Keys (shared/db/keys.ts `keys.task`, `keys.tasksOf`):
 * - pk `TASKS#<app_id>#<app_user_id>`, sk `TASK#<task_id>`. task ids are UUIDv7, so sk order is
 *   creation order: `GET /tasks` is a Query on pk with ScanIndexForward=false (never a Scan);
 *   `GET /task/{id}` is a GetItem with the caller's pk, so another user's task is simply absent.
 *
 * Amounts are base-unit integers as decimal strings (`"25500000"`) in the item, bigint in code,
 * decimal strings ("25.5") on the wire.
 */
export type TaskStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | 'cancelled';

/** One step's exactly-once state. `pending` → `submitted` → `completed` | `failed`. */
export type StepStatus = 'pending' | 'submitted' | 'completed' | 'failed';

/** A transaction the step signed, recorded BEFORE it is broadcast (shared/chains/sender SendJournal). */
export interface RecordedSend {
  readonly chain: string;
  readonly tx_hash: string;
  /** The signed wire form (0x-hex or base64), kept to re-broadcast after a crash; never in a response. */
  readonly raw: string;
  /** What it must move to count as sent (shared/chains/sender/effect.ts); absent on older records. */
  readonly effect?: ExpectedEffect;
}

export interface StepRecord {
  readonly index: number;
  readonly action: 'withdrawal' | 'bridge' | 'deposit';
  /** withdrawal/deposit: the venue. */
  readonly venue?: VenueId;
  /** withdrawal/deposit: where the money is (the venue's chain and token). bridge: see from/to. */
  readonly holding?: Holding;
  readonly from?: Holding;
  readonly to?: Holding;
  readonly gas_policy: StepGasPolicy;
  status: StepStatus;
  /** Incremented by a resume that re-runs a failed step; every per-try record below belongs to this try. */
  try: number;
  /** What this step moves (base units). Filled when the step submits: step 0 from the task, step i from steps[i-1].amount_out. */
  amount_in?: string;
  /** What reached the next holding (base units), once completed. */
  amount_out?: string;
  /** Platform fee taken by this step (base units; only the first step that holds the money in the user's wallet). */
  platform_fee?: string;
  /**
   * Exactly-once intent records of this try, written with conditional updates BEFORE acting:
   * - `sends[label]`: each transaction (labels like `approve`, `deposit`, `bridge`, `platform_fee`).
   * - `idempotency_key`: the venue withdrawal's key (a UUIDv7), chosen once per try.
   * - `reference`: the venue's withdrawal reference / the bridge quote id.
   * - `baseline`: the venue balance read before a deposit (the credit is seen as balance ≥ baseline + expected).
   * - `expected_credit`: what the venue will credit.
   */
  sends?: Record<string, RecordedSend>;
  idempotency_key?: string;
  reference?: string;
  baseline?: string;
  expected_credit?: string;
  /** deposit: how many calls the venue's plan has (`sends.deposit_0` … `deposit_<n-1>`), recorded with the baseline. */
  deposit_calls?: number;
  /** Public outcome hashes: venue payout tx, bridge fill/refund tx. */
  result_tx_hashes?: Record<string, string>;
  error?: { readonly code: string; readonly message: string };
  /**
   * Records of earlier tries of this step, moved here by a resume (POST /task/{id}/resume) when it
   * resets a failed step to `pending` with `try + 1`. A new try must first look at them: a venue
   * withdrawal or bridge deposit of an earlier try that is not finally failed is adopted (polled),
   * never requested again.
   */
  previous_tries?: { readonly try: number; readonly sends?: Record<string, RecordedSend>; readonly idempotency_key?: string; readonly reference?: string; readonly baseline?: string; readonly expected_credit?: string; readonly deposit_calls?: number; readonly amount_in?: string; readonly error?: { readonly code: string; readonly message: string } }[];
  started_at?: string;
  completed_at?: string;
}

export interface TaskRecord {
  readonly entity: 'task';
  readonly task_id: string;
  readonly user_id: string;
  readonly app_id: string;
  readonly app_user_id: string;
  /** The JWT issuer of the user (public): steps mint an op_jwt for (iss, app_user_id) without any stored JWT. */
  readonly iss: string;
  readonly source: TransferLocation;
  readonly destination: TransferLocation;
  /** Decimal string as requested. */
  readonly amount: string;
  readonly chain: string;
  readonly token: string;
  readonly destination_chain?: string;
  readonly destination_token?: string;
  readonly gas_sponsored: boolean;
  status: TaskStatus;
  readonly created_at: string;
  updated_at: string;
  /** 0 for the first execution; each accepted resume adds one. */
  attempt: number;
  /** `<task_id>-a<attempt>`: the Step Functions execution name of the current attempt. */
  execution_name: string;
  /** Set once StartExecution for the current attempt returned; absent = the start may have been lost (GET re-kicks once). */
  execution_started_at?: string;
  /** True once GET re-kicked a pending task whose start was lost (it does so at most once per attempt). */
  rekicked?: boolean;
  /** The planned route (planToJson) and the estimate's numbers at creation. */
  readonly route: Record<string, unknown>;
  readonly steps: StepRecord[];
  /** Index of the step running or next to run. */
  current_step: number;
  failure?: { readonly step: number; readonly code: string; readonly message: string };
  /** Why a task became cancelled (execution aborted or timed out). */
  cancel_reason?: string;
}

/** What a Step Functions execution of statemachines/transfer.asl.json identifies a task by. */
export interface TaskRef {
  readonly app_id: string;
  readonly app_user_id: string;
  readonly task_id: string;
}

/**
 * The execution input. `steps` lists only the steps still to run (a resume starts a new
 * execution with the unfinished ones); each names the Lambda of its kind (`function`: a function
 * name or ARN, from TRANSFER_STEP_FUNCTIONS) and the first Wait before polling.
 */
export interface ExecutionInput {
  readonly task: TaskRef;
  readonly attempt: number;
  readonly steps: readonly { readonly index: number; readonly action: StepRecord['action']; readonly function: string; readonly first_wait_seconds: number }[];
  /** The settle Lambda (records a failure the steps could not record themselves). */
  readonly settle_function: string;
}

/** The payload every step Lambda receives (built by the Map's ItemSelector). */
export interface StepInvocation {
  readonly task: TaskRef;
  readonly attempt: number;
  readonly index: number;
  readonly phase: 'submit' | 'poll';
}

/**
 * What a step Lambda returns. `settled` true ends the step (the step record is `completed`); false
 * means Wait `wait_seconds` and poll again. A step that fails for good records `failed` on the
 * step and the task and THROWS `TransferStepFailed` (the Map's Catch then runs settle, which finds
 * it recorded). Transient trouble throws other errors, which the Task's Retry handles.
 */
export interface StepResult {
  readonly settled: boolean;
  readonly wait_seconds: number;
}

/** The payload of the settle Lambda (the Map's Catch, ResultPath $.error). */
export interface SettleInvocation {
  readonly task: TaskRef;
  readonly attempt: number;
  readonly error: { readonly Error: string; readonly Cause?: string };
}

/** Error name a step throws after recording a final failure (not retried by the ASL). */
export const STEP_FAILED_ERROR = 'TransferStepFailed';

/** Error name a step throws for transient trouble while submitting (an upstream 5xx, a lease held): the ASL retries it. */
export const STEP_RETRYABLE_ERROR = 'TransferStepRetryable';

/** Execution name for an attempt (≤ 80 characters, no reserved characters: research B). */
export const executionName = (taskId: string, attempt: number) => `${taskId}-a${attempt}`;

/**
 * The task as the API returns it (spec, "Transfer task"): never `sends[*].raw`, idempotency keys,
 * or any secret; `metadata` carries the route and the checkpoints.
 */
export function toTaskResource(task: TaskRecord) {
  const steps = task.steps.map((step) => ({
    action: step.action,
    status: step.status,
    ...(step.venue ? { dex: step.venue } : {}),
    tx_hashes: [...Object.values(step.sends ?? {}).map((send) => send.tx_hash), ...Object.values(step.result_tx_hashes ?? {})],
  }));
  return {
    task_id: task.task_id,
    user_id: task.user_id,
    source: task.source,
    destination: task.destination,
    amount: task.amount,
    chain: task.chain,
    token: task.token,
    status: task.status,
    created_at: task.created_at,
    updated_at: task.updated_at,
    progress: { current_step: task.current_step, total_steps: task.steps.length, steps },
    metadata: {
      route: task.route,
      attempt: task.attempt,
      execution_name: task.execution_name,
      checkpoints: task.steps.map((step) => ({
        index: step.index,
        action: step.action,
        status: step.status,
        try: step.try,
        ...(step.amount_in ? { amount_in: step.amount_in } : {}),
        ...(step.amount_out ? { amount_out: step.amount_out } : {}),
        ...(step.platform_fee ? { platform_fee: step.platform_fee } : {}),
        ...(step.reference ? { reference: step.reference } : {}),
        sends: Object.fromEntries(Object.entries(step.sends ?? {}).map(([label, send]) => [label, { chain: send.chain, tx_hash: send.tx_hash }])),
        ...(step.result_tx_hashes ? { results: step.result_tx_hashes } : {}),
        ...(step.error ? { error: step.error } : {}),
        ...(step.completed_at ? { completed_at: step.completed_at } : {}),
        // Earlier tries of a resumed step: their public hashes and errors (never `raw` or keys).
        ...(step.previous_tries?.length
          ? { previous_tries: step.previous_tries.map((t) => ({ try: t.try, tx_hashes: Object.values(t.sends ?? {}).map((send) => send.tx_hash), ...(t.error ? { error: t.error } : {}) })) }
          : {}),
      })),
      ...(task.failure ? { failure: task.failure } : {}),
      ...(task.cancel_reason ? { cancel_reason: task.cancel_reason } : {}),
    },
  };
}
