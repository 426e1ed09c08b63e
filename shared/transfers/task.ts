import type { StepAction, StepRecord, TaskRecord } from './task-record.ts';

/**
 * The transfer task item and its steps (types, schema and parser): task-record.ts. This module
 * holds what the API and the state machine exchange about a task.
 */
export type {
  BridgeStep,
  DepositStep,
  RecordedSend,
  StepAction,
  StepOf,
  StepRecord,
  StepStatus,
  TaskRecord,
  TaskStatus,
  WithdrawalStep,
} from './task-record.ts';

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
  readonly steps: readonly { readonly index: number; readonly action: StepAction; readonly function: string; readonly first_wait_seconds: number }[];
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
    ...(step.action !== 'bridge' ? { dex: step.venue } : {}),
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
        ...(feeStatusOf(step) ? { platform_fee_status: feeStatusOf(step) } : {}),
        ...(step.platform_fee_waived && !step.sends?.platform_fee ? { platform_fee_waived: step.platform_fee_waived } : {}),
        ...('reference' in step && step.reference ? { reference: step.reference } : {}),
        sends: Object.fromEntries(Object.entries(step.sends ?? {}).map(([label, send]) => [label, { chain: send.chain, tx_hash: send.tx_hash }])),
        ...(step.result_tx_hashes ? { results: step.result_tx_hashes } : {}),
        ...(step.error ? { error: step.error } : {}),
        ...(step.completed_at ? { completed_at: step.completed_at } : {}),
        ...(step.stuck_at ? { stuck_at: step.stuck_at } : {}),
        // Earlier tries of a resumed step: their public hashes and errors (never `raw` or keys).
        ...(step.previous_tries?.length
          ? {
              previous_tries: step.previous_tries.map((t) => ({
                try: t.try,
                tx_hashes: Object.values(t.sends ?? {}).map((send) => send.tx_hash),
                ...(t.error ? { error: t.error } : {}),
              })),
            }
          : {}),
      })),
      ...(task.failure ? { failure: task.failure } : {}),
      ...(task.cancel_reason ? { cancel_reason: task.cancel_reason } : {}),
    },
  };
}

/**
 * Where a step's platform fee stands (docs/guide/account.md, "Fees"): `charged` once its send is
 * recorded; `waived` for a delivered move that did not earn it; `not_charged` while the step is
 * failed (its move did not happen: nothing was taken); `pending` until the move is delivered.
 */
export type PlatformFeeStatus = 'pending' | 'charged' | 'waived' | 'not_charged';

function feeStatusOf(step: StepRecord): PlatformFeeStatus | undefined {
  if (!step.platform_fee || BigInt(step.platform_fee) === 0n) return undefined;
  if (step.sends?.platform_fee) return 'charged';
  if (step.platform_fee_waived) return 'waived';
  return step.status === 'failed' ? 'not_charged' : 'pending';
}
