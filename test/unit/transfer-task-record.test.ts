import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { loadTask } from '../../shared/transfers/steps/store.ts';
import { MalformedTaskError, parseTaskItem } from '../../shared/transfers/task-record.ts';
import { getTask, listTasks } from '../../shared/transfers/task-store.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

/**
 * The task item as read from the table (shared/transfers/task-record.ts): parsed, never cast. Each
 * step is one kind with its own fields; an item that does not parse is an internal error naming
 * the task and the bad fields, never a value found there.
 */
const APP_ID = 'app-task-record';
const RAW = `0x02f8${'ab'.repeat(60)}`;
const KEY = '01a2041a-3c98-7207-9402-d73825ee5d64';

function item(taskId: string, steps: unknown[]): Record<string, unknown> {
  return {
    entity: 'task',
    task_id: taskId,
    user_id: 'u',
    app_id: APP_ID,
    app_user_id: 'user-1',
    iss: 'https://issuer.example',
    source: 'venue_b',
    destination: 'venue_d',
    amount: '10',
    chain: 'ARB',
    token: 'USDC',
    gas_sponsored: false,
    status: 'in_progress',
    created_at: '2026-11-24T10:00:00.000Z',
    updated_at: '2026-11-24T10:00:01.000Z',
    attempt: 1,
    execution_name: `${taskId}-a1`,
    route: { route_id: 'venue_b>ARB.USDC>INK.USDC>venue_d' },
    steps,
    current_step: 1,
  };
}

const ARB_USDC = { chain: 'ARB', token: 'USDC' };
const INK_USDC = { chain: 'INK', token: 'USDC' };
const WITHDRAWAL = {
  index: 0,
  action: 'withdrawal',
  venue: 'venue_b',
  holding: ARB_USDC,
  gas_policy: 'venue',
  status: 'completed',
  try: 1,
  amount_in: '10000000',
  amount_out: '8990000',
  platform_fee: '10000',
  idempotency_key: KEY,
  baseline: '20000000',
  reference: 'w-1',
  sends: { platform_fee: { chain: 'ARB', tx_hash: `0x${'1'.repeat(64)}`, raw: RAW, effect: { token: 'USDC', amount: '10000', from: '0xabc', to: '0xdef' } } },
  result_tx_hashes: { payout: `0x${'2'.repeat(64)}` },
  previous_tries: [{ try: 0, idempotency_key: uuidv7(), baseline: '20000000', error: { code: 'VENUE_WITHDRAWAL_FAILED', message: 'refused' } }],
};
const BRIDGE = {
  index: 1,
  action: 'bridge',
  from: ARB_USDC,
  to: INK_USDC,
  gas_policy: 'user',
  status: 'submitted',
  try: 0,
  amount_in: '8990000',
  reference: 'q-1',
  sends: {},
};
const DEPOSIT = { index: 2, action: 'deposit', venue: 'venue_d', holding: INK_USDC, gas_policy: 'sponsored', status: 'pending', try: 0 };

describe('parseTaskItem', () => {
  it('reads each step as its kind, with its own fields, and leaves the keys out', () => {
    const taskId = uuidv7();
    const task = parseTaskItem({ pk: `TASKS#${APP_ID}#user-1`, sk: `TASK#${taskId}`, ...item(taskId, [WITHDRAWAL, BRIDGE, DEPOSIT]) });
    expect(task).toEqual(item(taskId, [WITHDRAWAL, BRIDGE, DEPOSIT]));
    expect(task).not.toHaveProperty('pk');
    expect(task.steps.map((step) => step.action)).toEqual(['withdrawal', 'bridge', 'deposit']);
  });

  it('refuses a malformed item with MalformedTaskError naming the task and each bad field, never a value found there', () => {
    const taskId = uuidv7();
    const broken = item(taskId, [
      { ...WITHDRAWAL, holding: undefined, sends: { platform_fee: { ...WITHDRAWAL.sends.platform_fee, chain: 'ZZZ' } } },
      { ...BRIDGE, action: 'teleport' },
      { ...DEPOSIT, gas_policy: 'venue' },
    ]);
    const error = (() => {
      try {
        parseTaskItem(broken);
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(MalformedTaskError);
    const message = (error as Error).message;
    expect(message).toContain(`The stored transfer task ${taskId} is malformed`);
    expect(message).toContain('steps.0.holding: is missing');
    expect(message).toMatch(/steps\.0\.sends\.platform_fee\.chain: expected .*"ARB"/);
    expect(message).toMatch(/steps\.1\.action: expected .*"bridge"/);
    expect(message).toMatch(/steps\.2\.gas_policy: expected .*"sponsored"/);
    for (const secret of [RAW, KEY, 'ZZZ', 'teleport']) expect(message).not.toContain(secret);
  });

  it('refuses an item that is not a task at all', () => {
    expect(() => parseTaskItem({ pk: 'X', sk: 'Y' })).toThrow(/The stored transfer task \(no task_id\) is malformed: entity: is missing/);
  });
});

describe('every read of the task item parses it', () => {
  let table: Table;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ table, stop } = await startDynaliteTable('transfer-task-record'));
  });
  afterAll(() => stop?.());

  const put = (record: Record<string, unknown>) =>
    table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.task(APP_ID, 'user-1', String(record.task_id)), ...record } }));

  it('getTask, listTasks and the steps’ loadTask return the parsed task, or throw MalformedTaskError', async () => {
    const good = uuidv7();
    await put(item(good, [WITHDRAWAL, BRIDGE, DEPOSIT]));
    const ref = { app_id: APP_ID, app_user_id: 'user-1', task_id: good };
    expect(await getTask(table, APP_ID, 'user-1', good)).toEqual(item(good, [WITHDRAWAL, BRIDGE, DEPOSIT]));
    expect(await loadTask(table, ref)).toEqual(item(good, [WITHDRAWAL, BRIDGE, DEPOSIT]));
    expect(await listTasks(table, APP_ID, 'user-1', 5)).toEqual([item(good, [WITHDRAWAL, BRIDGE, DEPOSIT])]);
    const bad = uuidv7();
    await put(item(bad, [{ ...DEPOSIT, venue: 'venue_z' }]));
    await expect(getTask(table, APP_ID, 'user-1', bad)).rejects.toBeInstanceOf(MalformedTaskError);
    await expect(loadTask(table, { ...ref, task_id: bad })).rejects.toThrow(`The stored transfer task ${bad} is malformed: steps.0.venue: expected`);
    await expect(listTasks(table, APP_ID, 'user-1', 5)).rejects.toBeInstanceOf(MalformedTaskError);
    expect(await getTask(table, APP_ID, 'user-1', uuidv7())).toBeUndefined();
  });
});
