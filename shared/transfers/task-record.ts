import * as v from 'valibot';
import { VENUE_IDS } from '../venues/default-status.ts';
import { CHAIN_CODES } from '../wallets/networks.ts';
import { TRANSFER_TOKENS } from './planner.ts';

/**
 * A transfer task as stored: ONE item of the single table holds the task, its route and the
 * exactly-once record of every step (spec, "Transfer task"; issue 11). Step Lambdas update their
 * own `steps[i]` with conditional writes; the API reads one item. Whoever reads the item parses it
 * with `parseTaskItem` (never a cast), so the types below say what the item holds.
 *
 * Keys (shared/db/keys.ts `keys.task`, `keys.tasksOf`):
 * - pk `TASKS#<app_id>#<app_user_id>`, sk `TASK#<task_id>`. task ids are UUIDv7, so sk order is
 *   creation order: `GET /tasks` is a Query on pk with ScanIndexForward=false (never a Scan);
 *   `GET /task/{id}` is a GetItem with the caller's pk, so another user's task is simply absent.
 *
 * Amounts are base-unit integers as decimal strings (`"25500000"`) in the item, bigint in code,
 * decimal strings ("25.5") on the wire.
 */
/** `self` or a venue (schemas.ts TRANSFER_LOCATIONS; not imported from there, whose request schemas would come along into every bundle that reads a task). */
const LocationSchema = v.picklist(['self', ...VENUE_IDS]);

const TaskStatusSchema = v.picklist(['pending', 'in_progress', 'completed', 'failed', 'cancelled']);
export type TaskStatus = v.InferOutput<typeof TaskStatusSchema>;

/** One step's exactly-once state. `pending` → `submitted` → `completed` | `failed`. */
const StepStatusSchema = v.picklist(['pending', 'submitted', 'completed', 'failed']);
export type StepStatus = v.InferOutput<typeof StepStatusSchema>;

/** A token on a chain: where the money sits between steps (planner.ts `Holding`). */
const HoldingSchema = v.object({ chain: v.picklist(CHAIN_CODES), token: v.picklist(TRANSFER_TOKENS) });

const ErrorSchema = v.object({ code: v.string(), message: v.string() });

/** What a recorded send must move to count as sent (shared/chains/sender/ports.ts `ExpectedEffect`). */
const ExpectedEffectSchema = v.object({
  token: v.string(),
  amount: v.string(),
  from: v.string(),
  to: v.optional(v.string()),
  executor_nonce: v.optional(v.string()),
});

/** A transaction the step signed, recorded BEFORE it is broadcast (shared/chains/sender SendJournal). */
const RecordedSendSchema = v.object({
  chain: v.picklist(CHAIN_CODES),
  tx_hash: v.string(),
  /** The signed wire form (0x-hex or base64), kept to re-broadcast after a crash; never in a response. */
  raw: v.string(),
  /** What it must move to count as sent (shared/chains/sender/effect.ts); absent on older records. */
  effect: v.optional(ExpectedEffectSchema),
  /** EVM: every transaction signed for this send when it was replaced (same nonce: at most one mined); tx_hash is the latest or the mined one. */
  candidates: v.optional(v.array(v.object({ tx_hash: v.string(), raw: v.string() }))),
  /** Solana: the block height past which its blockhash is expired (decimal); what proves it can no longer land. */
  last_valid_block_height: v.optional(v.string()),
  /** Gas-sponsored sends: the pool sponsor that signed it (slot and address), so a resume re-broadcasts and replaces from that one. */
  sponsor: v.optional(v.object({ slot: v.pipe(v.number(), v.integer(), v.minValue(0)), address: v.string() })),
});
export type RecordedSend = v.InferOutput<typeof RecordedSendSchema>;

/** `sends[label]`: each transaction of the try (labels like `approve`, `deposit_0`, `bridge`, `platform_fee`). */
const SendsSchema = v.record(v.string(), RecordedSendSchema);

/**
 * The per-try records every kind keeps. A resume (POST /task/{id}/resume) that re-runs a failed
 * step moves them, with the kind's own ones, to `previous_tries` (task-store.ts PER_TRY_FIELDS).
 */
const perTry = {
  sends: v.optional(SendsSchema),
  /** When this try was reported stuck (`task.stuck`, issue 24): unsettled past TRANSFER_STUCK_SECONDS. */
  stuck_at: v.optional(v.string()),
  /** What this step moves (base units). Filled when the step submits: step 0 from the task, step i from steps[i-1].amount_out. */
  amount_in: v.optional(v.string()),
  error: v.optional(ErrorSchema),
};

/**
 * The venue withdrawal's intent: its key (a UUIDv7, chosen once per try), the venue balance before
 * the request, the payout chain's head before it (`payout_from_block`, venues whose payout is
 * found on chain), the venue's reference; then the payout log it claimed (`<tx hash>:<log index>`).
 * `request_refused`: the venue (or the driver's own rules) refused the request under this key, so
 * nothing was withdrawn with it and a later try must not adopt it (venue_b spends a nonce on a
 * refused action: the same key would be refused again as a duplicate nonce).
 */
const withdrawalTry = {
  ...perTry,
  idempotency_key: v.optional(v.string()),
  request_refused: v.optional(v.literal(true)),
  baseline: v.optional(v.string()),
  payout_from_block: v.optional(v.string()),
  reference: v.optional(v.string()),
  payout_log: v.optional(v.string()),
};
/** The bridge deposit's quote id, and the least its fill may pay (the quote's toAmountMin, base units). */
const bridgeTry = { ...perTry, reference: v.optional(v.string()), to_amount_min: v.optional(v.string()) };
/**
 * The venue deposit's intent, recorded once before its first call: the venue balance before
 * (`baseline`; the credit is seen as balance ≥ baseline + expected_credit), what the venue will
 * credit, and how many calls its plan has (`sends.deposit_0` … `deposit_<n-1>`).
 */
const depositTry = { ...perTry, baseline: v.optional(v.string()), expected_credit: v.optional(v.string()), deposit_calls: v.optional(v.number()) };

/**
 * What every step kind holds besides its per-try records. Records of earlier tries of the step
 * are in `previous_tries` (moved there by a resume when it resets a failed step to `pending` with
 * `try + 1`): a new try must first look at them: a venue withdrawal or bridge deposit of an
 * earlier try that is not finally failed is adopted (polled), never requested again.
 */
const stepBase = {
  index: v.number(),
  status: StepStatusSchema,
  /** Incremented by a resume that re-runs a failed step; every per-try record belongs to this try. */
  try: v.number(),
  /** What reached the next holding (base units), once completed. */
  amount_out: v.optional(v.string()),
  /**
   * Platform fee this step owes (base units; only the first step that holds the money in the
   * user's wallet), sent as `sends.platform_fee` once the step's move is delivered.
   */
  platform_fee: v.optional(v.string()),
  /** Why the fee of a delivered move was not taken (steps/core.ts takePlatformFee): recorded once, never sent afterwards. */
  platform_fee_waived: v.optional(v.object({ code: v.string(), message: v.string() })),
  /** Public outcome hashes: venue payout tx, bridge fill/refund tx, a venue's deposit refund. */
  result_tx_hashes: v.optional(v.record(v.string(), v.string())),
  started_at: v.optional(v.string()),
  completed_at: v.optional(v.string()),
};

/** The venue pays out to the user's wallet on `holding` (the venue's chain and token); its payout's gas is the venue's. */
const WithdrawalStepSchema = v.object({
  ...stepBase,
  ...withdrawalTry,
  action: v.literal('withdrawal'),
  venue: v.picklist(VENUE_IDS),
  holding: HoldingSchema,
  gas_policy: v.literal('venue'),
  previous_tries: v.optional(v.array(v.object({ try: v.number(), ...withdrawalTry }))),
});

/** The user's wallet sends `from` through the bridge; the bridge fills `to` to the same user. */
const BridgeStepSchema = v.object({
  ...stepBase,
  ...bridgeTry,
  action: v.literal('bridge'),
  from: HoldingSchema,
  to: HoldingSchema,
  gas_policy: v.picklist(['sponsored', 'user']),
  previous_tries: v.optional(v.array(v.object({ try: v.number(), ...bridgeTry }))),
});

/** The user's wallet deposits into the venue on `holding` (the venue's chain and token). */
const DepositStepSchema = v.object({
  ...stepBase,
  ...depositTry,
  action: v.literal('deposit'),
  venue: v.picklist(VENUE_IDS),
  holding: HoldingSchema,
  gas_policy: v.picklist(['sponsored', 'user']),
  previous_tries: v.optional(v.array(v.object({ try: v.number(), ...depositTry }))),
});

const StepRecordSchema = v.variant('action', [WithdrawalStepSchema, BridgeStepSchema, DepositStepSchema]);

export type WithdrawalStep = v.InferOutput<typeof WithdrawalStepSchema>;
export type BridgeStep = v.InferOutput<typeof BridgeStepSchema>;
export type DepositStep = v.InferOutput<typeof DepositStepSchema>;
/** One step's exactly-once record: a union on `action`, each kind with its own fields. */
export type StepRecord = v.InferOutput<typeof StepRecordSchema>;
export type StepAction = StepRecord['action'];
type StepsByAction = { readonly withdrawal: WithdrawalStep; readonly bridge: BridgeStep; readonly deposit: DepositStep };
/** The step of one kind (`StepOf<'bridge'>` is BridgeStep; `StepOf<StepAction>` any step). */
export type StepOf<A extends StepAction> = StepsByAction[A];

/** Narrows a step to a kind, checked at run time (a step's kind never changes, but it is read anew on every look). */
export function isStepOf<A extends StepAction>(step: StepRecord, action: A): step is StepOf<A> {
  return step.action === action;
}

const TaskRecordSchema = v.object({
  entity: v.literal('task'),
  task_id: v.string(),
  user_id: v.string(),
  app_id: v.string(),
  app_user_id: v.string(),
  /** The JWT issuer of the user (public): steps mint an op_jwt for (iss, app_user_id) without any stored JWT. */
  iss: v.string(),
  source: LocationSchema,
  destination: LocationSchema,
  /** Decimal string as requested. */
  amount: v.string(),
  chain: v.string(),
  token: v.string(),
  destination_chain: v.optional(v.string()),
  destination_token: v.optional(v.string()),
  gas_sponsored: v.boolean(),
  status: TaskStatusSchema,
  created_at: v.string(),
  updated_at: v.string(),
  /** 0 for the first execution; each accepted resume adds one. */
  attempt: v.number(),
  /** `<task_id>-a<attempt>`: the Step Functions execution name of the current attempt. */
  execution_name: v.string(),
  /** Set once StartExecution for the current attempt returned; absent = the start may have been lost (GET re-kicks once). */
  execution_started_at: v.optional(v.string()),
  /** True once GET re-kicked a pending task whose start was lost (it does so at most once per attempt). */
  rekicked: v.optional(v.boolean()),
  /** The planned route (planToJson) and the estimate's numbers at creation. */
  route: v.record(v.string(), v.unknown()),
  steps: v.array(StepRecordSchema),
  /** Index of the step running or next to run. */
  current_step: v.number(),
  failure: v.optional(v.object({ step: v.number(), code: v.string(), message: v.string() })),
  /** Why a task became cancelled (execution aborted or timed out). */
  cancel_reason: v.optional(v.string()),
});
export type TaskRecord = v.InferOutput<typeof TaskRecordSchema>;

/** A stored task item that does not parse: a bug or a hand edit, never the caller's fault (a 500; in a step, no retry helps). */
export class MalformedTaskError extends Error {
  override readonly name = 'MalformedTaskError';
}

/**
 * The task of a stored item (its keys, pk and sk, are not part of it). Throws MalformedTaskError
 * naming the task and each bad field with what was expected, never the value found there (an
 * item holds signed transactions and idempotency keys).
 */
export function parseTaskItem(item: Readonly<Record<string, unknown>>): TaskRecord {
  const result = v.safeParse(TaskRecordSchema, item);
  if (result.success) return result.output;
  const problems = result.issues.map(
    (issue) => `${v.getDotPath(issue) ?? '(item)'}: ${issue.input === undefined ? 'is missing' : issue.expected ? `expected ${issue.expected}` : 'is invalid'}`,
  );
  const taskId = typeof item.task_id === 'string' ? item.task_id : '(no task_id)';
  throw new MalformedTaskError(`The stored transfer task ${taskId} is malformed: ${problems.join('; ')}`);
}
