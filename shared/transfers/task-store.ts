import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { appendOutbox, OUTBOX_ATTRIBUTE, outboxEntries } from '../events/outbox.ts';
import { executionName, type StepRecord, type TaskRecord } from './task.ts';
import { parseTaskItem } from './task-record.ts';

/**
 * The task item's reads and the API's conditional writes (shared/transfers/task.ts). Every write
 * here is conditional on the attempt the caller saw, so a write of an older attempt never
 * lands on a newer one; the step Lambdas write `steps[i]` the same way.
 */
type TaskKey = { readonly app_id: string; readonly app_user_id: string; readonly task_id: string };
const keyOf = (task: TaskKey) => keys.task(task.app_id, task.app_user_id, task.task_id);

/** The per-try fields of a step that a resume moves to `previous_tries`. */
export const PER_TRY_FIELDS = [
  'sends',
  'idempotency_key',
  'request_refused',
  'reference',
  'to_amount_min',
  'baseline',
  'payout_from_block',
  'payout_log',
  'expected_credit',
  'deposit_calls',
  'amount_in',
  'error',
  'stuck_at',
] as const;
const PER_TRY = new Set<string>(PER_TRY_FIELDS);

/** Creates the task with its `task.created` event (shared/events/outbox.ts). */
export async function putTask(table: Table, task: TaskRecord): Promise<void> {
  const item = { ...keyOf(task), ...task, [OUTBOX_ATTRIBUTE]: outboxEntries(['task.created'], task.created_at) };
  await table.doc.send(new PutCommand({ TableName: table.name, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
}

export async function getTask(table: Table, appId: string, appUserId: string, taskId: string): Promise<TaskRecord | undefined> {
  const out = await table.doc.send(new GetCommand({ TableName: table.name, Key: keys.task(appId, appUserId, taskId), ConsistentRead: true }));
  return out.Item ? parseTaskItem(out.Item) : undefined;
}

/** The user's most recent tasks, newest first: a Query on the user's task partition (task ids are UUIDv7). */
export async function listTasks(table: Table, appId: string, appUserId: string, limit: number): Promise<TaskRecord[]> {
  const out = await table.doc.send(
    new QueryCommand({
      TableName: table.name,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :task)',
      ExpressionAttributeValues: { ':pk': keys.tasksOf(appId, appUserId), ':task': 'TASK#' },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  // The schema drops the keys (pk, sk): a task is what it holds, not where it is stored.
  return (out.Items ?? []).map((item) => parseTaskItem(item));
}

/** Runs a conditional update; false when the condition failed. */
async function conditional(table: Table, task: TaskKey, update: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName' | 'Key'>): Promise<boolean> {
  try {
    await table.doc.send(new UpdateCommand({ TableName: table.name, Key: keyOf(task), ...update }));
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/** StartExecution of `attempt` returned: records it (only while that attempt is current). */
export function markStarted(table: Table, task: TaskKey, attempt: number, now: Date): Promise<boolean> {
  return conditional(table, task, {
    UpdateExpression: 'SET execution_started_at = :now, updated_at = :now',
    ConditionExpression: 'attempt = :attempt',
    ExpressionAttributeValues: { ':now': now.toISOString(), ':attempt': attempt },
  });
}

/**
 * GET found the task pending with no recorded start: claims the one re-kick of this attempt.
 * True for exactly one caller.
 */
export function claimRekick(table: Table, task: TaskKey, attempt: number, now: Date): Promise<boolean> {
  return conditional(table, task, {
    UpdateExpression: 'SET rekicked = :true, updated_at = :now',
    ConditionExpression: '#status = :pending AND attempt = :attempt AND attribute_not_exists(execution_started_at) AND attribute_not_exists(rekicked)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':true': true, ':now': now.toISOString(), ':pending': 'pending', ':attempt': attempt },
  });
}

export type ClosedOutcome =
  | { readonly status: 'completed'; readonly current_step: number }
  | { readonly status: 'cancelled'; readonly cancel_reason: string }
  | { readonly status: 'failed'; readonly failure: { readonly step: number; readonly code: string; readonly message: string } };

/** The attempt's execution closed without recording an outcome: records it, if the task is still pending or in progress at that attempt. */
export function settleClosed(table: Table, task: TaskKey, attempt: number, outcome: ClosedOutcome, now: Date): Promise<boolean> {
  const detail =
    outcome.status === 'completed'
      ? { field: 'current_step', value: outcome.current_step }
      : outcome.status === 'cancelled'
        ? { field: 'cancel_reason', value: outcome.cancel_reason }
        : { field: 'failure', value: outcome.failure };
  const update = {
    sets: ['#status = :status', '#detail = :detail', 'updated_at = :now'],
    names: { '#status': 'status', '#detail': detail.field } as Record<string, string>,
    values: {
      ':status': outcome.status,
      ':detail': detail.value,
      ':now': now.toISOString(),
      ':pending': 'pending',
      ':running': 'in_progress',
      ':attempt': attempt,
    } as Record<string, unknown>,
  };
  appendOutbox(update, [`task.${outcome.status}`], now.toISOString());
  return conditional(table, task, {
    UpdateExpression: `SET ${update.sets.join(', ')}`,
    ConditionExpression: '#status IN (:pending, :running) AND attempt = :attempt',
    ExpressionAttributeNames: update.names,
    ExpressionAttributeValues: update.values,
  });
}

/**
 * Resume (POST /task/{id}/resume): ONE conditional update takes the task from failed/cancelled at
 * the attempt the caller read to pending at attempt + 1, with the new execution name and no trace
 * of the old execution. The first unfinished step `k`, if it failed, goes back to pending with
 * try + 1 and its per-try records moved to `previous_tries`. Of concurrent resumes exactly one
 * passes the condition; the others get false.
 */
export async function resumeTask(table: Table, seen: TaskRecord, k: number, now: Date): Promise<boolean> {
  const names: Record<string, string> = { '#status': 'status' };
  const values: Record<string, unknown> = {
    ':failed': 'failed',
    ':cancelled': 'cancelled',
    ':seen': seen.attempt,
    ':pending': 'pending',
    ':next': seen.attempt + 1,
    ':name': executionName(seen.task_id, seen.attempt + 1),
    ':now': now.toISOString(),
    ':k': k,
  };
  const set = ['#status = :pending', 'attempt = :next', 'execution_name = :name', 'updated_at = :now', 'current_step = :k'];
  const remove = ['execution_started_at', 'rekicked', 'failure', 'cancel_reason'];
  let condition = '#status IN (:failed, :cancelled) AND attempt = :seen';
  const step: StepRecord | undefined = seen.steps[k];
  if (step?.status === 'failed') {
    const path = `#steps[${k}]`;
    names['#steps'] = 'steps';
    names['#try'] = 'try';
    names['#stepStatus'] = 'status';
    const record: Record<string, unknown> = { try: step.try };
    // The kind's own per-try fields are among them (a deposit has no idempotency key): taken as the step holds them.
    for (const [field, value] of Object.entries(step)) if (PER_TRY.has(field) && value !== undefined) record[field] = value;
    for (const field of PER_TRY_FIELDS) names[`#f_${field}`] = field;
    Object.assign(values, { ':stepFailed': 'failed', ':seenTry': step.try, ':nextTry': step.try + 1, ':prev': [record], ':empty': [] });
    set.push(
      `${path}.#stepStatus = :pending`,
      `${path}.#try = :nextTry`,
      `${path}.previous_tries = list_append(if_not_exists(${path}.previous_tries, :empty), :prev)`,
    );
    remove.push(...PER_TRY_FIELDS.map((field) => `${path}.#f_${field}`));
    condition += ` AND ${path}.#stepStatus = :stepFailed AND ${path}.#try = :seenTry`;
  }
  appendOutbox({ sets: set, names, values }, ['task.resumed'], now.toISOString());
  return conditional(table, seen, {
    UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  });
}

/** A failed or cancelled task whose steps all completed (its end was not recorded): it is completed. */
export function completeFinishedTask(table: Table, seen: TaskRecord, now: Date): Promise<boolean> {
  const update = {
    sets: ['#status = :completed', 'updated_at = :now', 'current_step = :n'],
    names: { '#status': 'status' } as Record<string, string>,
    values: {
      ':completed': 'completed',
      ':now': now.toISOString(),
      ':n': seen.steps.length,
      ':failed': 'failed',
      ':cancelled': 'cancelled',
      ':seen': seen.attempt,
    } as Record<string, unknown>,
  };
  appendOutbox(update, ['task.completed'], now.toISOString());
  return conditional(table, seen, {
    UpdateExpression: `SET ${update.sets.join(', ')} REMOVE failure, cancel_reason`,
    ConditionExpression: '#status IN (:failed, :cancelled) AND attempt = :seen',
    ExpressionAttributeNames: update.names,
    ExpressionAttributeValues: update.values,
  });
}
