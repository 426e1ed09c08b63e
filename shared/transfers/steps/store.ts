import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getItem, isConditionalCheckFailed, type Table } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { appendOutbox } from '../../events/outbox.ts';
import type { EventType } from '../../events/types.ts';
import type { RecordedSend, StepRecord, TaskRecord, TaskRef } from '../task.ts';
import { parseTaskItem } from '../task-record.ts';

/**
 * The task item as the step Lambdas write it: every write is ONE conditional UpdateItem on the
 * task, guarded in the store (never trusted from the payload):
 * - the attempt is the invocation's (a stale execution cannot write);
 * - the task is running (in_progress); a step's first write also accepts pending, or failed /
 *   cancelled on a resumed attempt, and clears that attempt's failure;
 * - the step is on the try the caller read (a resume that reset it in between wins).
 * `false` = the condition failed: someone else decided first; the caller reloads and re-reads.
 */
export async function loadTask(table: Table, ref: TaskRef): Promise<TaskRecord | undefined> {
  const item = await getItem(table, keys.task(ref.app_id, ref.app_user_id, ref.task_id));
  return item ? parseTaskItem(item) : undefined;
}

export interface StepWrite {
  readonly ref: TaskRef;
  readonly attempt: number;
  readonly index: number;
  /** The step's try as read; the write refuses a step a resume has reset since. */
  readonly tryNumber: number;
  /** Fields of steps[index] to set. */
  readonly step?: Readonly<Record<string, unknown>>;
  /** Entries of steps[index].sends to set (each only when absent). */
  readonly sends?: Readonly<Record<string, RecordedSend>>;
  /**
   * One entry of steps[index].sends to overwrite, only while it still names `current` (its
   * tx_hash): a replacement candidate or the mined one (shared/chains/sender/evm-inclusion.ts).
   */
  readonly replaceSend?: { readonly label: string; readonly send: RecordedSend; readonly current: string };
  /** Fields of steps[index] that must be absent (intent chosen once); `a.b` names a nested one. */
  readonly absent?: readonly string[];
  /** The step's status must be one of these. */
  readonly stepStatusIn?: readonly StepRecord['status'][];
  /** The step's first write (pending → submitted): see writeStep. */
  readonly starting?: boolean;
  /** Top-level task fields to set. */
  readonly task?: Readonly<Record<string, unknown>>;
  /** Events this write reports besides those its step and task status imply (`task.stuck`). */
  readonly events?: readonly EventType[];
  readonly now: string;
}

export async function writeStep(table: Table, write: StepWrite): Promise<boolean> {
  const names: Record<string, string> = {
    '#steps': 'steps',
    '#attempt': 'attempt',
    '#status': 'status',
    '#updated': 'updated_at',
    '#current': 'current_step',
    '#try': 'try',
  };
  const values: Record<string, unknown> = {
    ':attempt': write.attempt,
    ':now': write.now,
    ':current': write.task?.current_step ?? write.index,
    ':try': write.tryNumber,
  };
  const at = `#steps[${write.index}]`;
  const sets = ['#updated = :now', '#current = :current'];
  const conditions = ['#attempt = :attempt', `${at}.#try = :try`];
  let remove = '';
  if (write.starting) {
    // The first write of a step: from pending (a new task), in_progress (a later step) or failed /
    // cancelled (a resumed attempt: the attempt matches, the reset step is pending). It clears the
    // previous attempt's failure; whatever is recorded after it belongs to this attempt.
    values[':completed'] = 'completed';
    conditions.push('#status <> :completed');
    names['#failure'] = 'failure';
    names['#cancel'] = 'cancel_reason';
    remove = ' REMOVE #failure, #cancel';
  } else {
    // Every later write: only while this attempt runs (a recorded failure or a cancellation stops it).
    values[':running'] = 'in_progress';
    conditions.push('#status = :running');
  }
  let n = 0;
  for (const [field, value] of Object.entries(write.step ?? {})) {
    names[`#s${n}`] = field;
    values[`:s${n}`] = value;
    sets.push(`${at}.#s${n} = :s${n}`);
    n++;
  }
  if (write.sends && Object.keys(write.sends).length > 0) {
    names['#sends'] = 'sends';
    for (const [label, send] of Object.entries(write.sends)) {
      names[`#l${n}`] = label;
      values[`:l${n}`] = send;
      sets.push(`${at}.#sends.#l${n} = :l${n}`);
      conditions.push(`attribute_not_exists(${at}.#sends.#l${n})`);
      n++;
    }
  }
  if (write.replaceSend) {
    names['#sends'] = 'sends';
    names[`#l${n}`] = write.replaceSend.label;
    names['#txh'] = 'tx_hash';
    values[`:l${n}`] = write.replaceSend.send;
    values[`:cur${n}`] = write.replaceSend.current;
    sets.push(`${at}.#sends.#l${n} = :l${n}`);
    conditions.push(`${at}.#sends.#l${n}.#txh = :cur${n}`);
    n++;
  }
  for (const field of write.absent ?? []) {
    // A dotted field names a nested attribute (`sends.platform_fee`).
    const path = field.split('.').map((part, k) => {
      names[`#a${n}_${k}`] = part;
      return `#a${n}_${k}`;
    });
    conditions.push(`attribute_not_exists(${at}.${path.join('.')})`);
    n++;
  }
  if (write.stepStatusIn?.length) {
    const options = write.stepStatusIn.map((status, i) => {
      values[`:ss${i}`] = status;
      return `:ss${i}`;
    });
    conditions.push(`${at}.#status IN (${options.join(', ')})`);
  }
  for (const [field, value] of Object.entries(write.task ?? {})) {
    if (field === 'current_step') continue;
    names[`#t${n}`] = field;
    values[`:t${n}`] = value;
    sets.push(`#t${n} = :t${n}`);
    n++;
  }
  // The events this write reports, in the same write (shared/events/outbox.ts): a step's status
  // change, and the task's completion with its last step. Sends, intents and checkpoints are not events.
  const events: EventType[] = [];
  if (write.step?.status !== undefined) events.push('task.step_updated');
  if (write.task?.status === 'completed') events.push('task.completed');
  events.push(...(write.events ?? []));
  appendOutbox({ sets, names, values }, events, write.now);
  try {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: keys.task(write.ref.app_id, write.ref.app_user_id, write.ref.task_id),
        UpdateExpression: `SET ${sets.join(', ')}${remove}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/**
 * Records a final failure of this attempt: the step (when given) and the task, once. Allowed
 * while the attempt matches and no failure is recorded; never on a completed task.
 */
export async function recordFailure(
  table: Table,
  ref: TaskRef,
  attempt: number,
  failure: { readonly step: number; readonly code: string; readonly message: string },
  now: string,
  stepTry?: number,
): Promise<boolean> {
  const names: Record<string, string> = {
    '#attempt': 'attempt',
    '#status': 'status',
    '#failure': 'failure',
    '#updated': 'updated_at',
    '#current': 'current_step',
  };
  const values: Record<string, unknown> = {
    ':attempt': attempt,
    ':completed': 'completed',
    ':failed': 'failed',
    ':failure': failure,
    ':now': now,
    ':current': failure.step,
  };
  const sets = ['#status = :failed', '#failure = :failure', '#updated = :now', '#current = :current'];
  // Once per attempt: a failure already recorded on a failed task stays (settle is idempotent);
  // a resumed attempt's first step clears the previous one (writeStep `starting`).
  const conditions = ['#attempt = :attempt', '#status <> :completed', '(#status <> :failed OR attribute_not_exists(#failure))'];
  if (stepTry !== undefined) {
    names['#steps'] = 'steps';
    names['#error'] = 'error';
    names['#try'] = 'try';
    values[':error'] = { code: failure.code, message: failure.message };
    values[':try'] = stepTry;
    values[':stepCompleted'] = 'completed';
    const at = `#steps[${failure.step}]`;
    sets.push(`${at}.#status = :failed`, `${at}.#error = :error`);
    conditions.push(`${at}.#try = :try`, `${at}.#status <> :stepCompleted`);
  }
  appendOutbox({ sets, names, values }, stepTry !== undefined ? ['task.step_updated', 'task.failed'] : ['task.failed'], now);
  try {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: keys.task(ref.app_id, ref.app_user_id, ref.task_id),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}
