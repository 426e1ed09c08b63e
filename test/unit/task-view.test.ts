import { describe, expect, it } from 'vitest';
import type { Task } from '../../infra/local/cli/task-api.ts';
import { changes, failureLine, progressLine, stepNumber, taskTable } from '../../infra/local/cli/task-view.ts';

const META: Task['metadata'] = { route: {}, attempt: 0, execution_name: 'e-a0', checkpoints: [] };

/** How `npm run task:watch` and `npm run tasks` show a task (infra/local/cli/task-view.ts). */
function task(overrides: Partial<Task> & { steps?: Task['progress']['steps']; current?: number } = {}): Task {
  const steps = overrides.steps ?? [
    { action: 'withdrawal', status: 'pending', dex: 'venue_b', tx_hashes: [] },
    { action: 'bridge', status: 'pending', tx_hashes: [] },
    { action: 'deposit', status: 'pending', dex: 'venue_d', tx_hashes: [] },
  ];
  return {
    task_id: '01a2041a-3c98-7207-9402-d73825ee5d64',
    user_id: 'u',
    source: 'venue_b',
    destination: 'venue_d',
    amount: '10',
    chain: 'ARB',
    token: 'USDC',
    status: 'pending',
    created_at: '2026-11-22T16:19:06.123Z',
    updated_at: '2026-11-22T16:19:06.123Z',
    metadata: META,
    ...overrides,
    progress: { current_step: overrides.current ?? 0, total_steps: steps.length, steps },
  };
}

const HASH_A = `0x${'a'.repeat(64)}`;
const HASH_B = `0x${'b'.repeat(64)}`;

describe('task view', () => {
  it('the first poll shows every step and the status; later polls only what changed, each new tx hash once', () => {
    const first = task();
    expect(changes(undefined, first)).toEqual([
      'step 1/3 withdrawal (venue_b): pending',
      'step 2/3 bridge: pending',
      'step 3/3 deposit (venue_d): pending',
      'task pending (step 1 of 3)',
    ]);
    const second = task({
      status: 'in_progress',
      current: 1,
      steps: [
        { action: 'withdrawal', status: 'completed', dex: 'venue_b', tx_hashes: [HASH_A] },
        { action: 'bridge', status: 'submitted', tx_hashes: [HASH_B] },
        { action: 'deposit', status: 'pending', dex: 'venue_d', tx_hashes: [] },
      ],
    });
    expect(changes(first, second)).toEqual([
      'step 1/3 withdrawal (venue_b): completed',
      `step 1/3 withdrawal (venue_b): tx ${HASH_A}`,
      'step 2/3 bridge: submitted',
      `step 2/3 bridge: tx ${HASH_B}`,
      'task in_progress (step 2 of 3)',
    ]);
    expect(changes(second, second)).toEqual([]);
  });

  it('the live line: a bar of the steps done (a submitted one counts half), step n of m, the step, the status, the time', () => {
    const running = task({
      status: 'in_progress',
      current: 1,
      steps: [
        { action: 'withdrawal', status: 'completed', dex: 'venue_b', tx_hashes: [] },
        { action: 'bridge', status: 'submitted', tx_hashes: [] },
        { action: 'deposit', status: 'pending', dex: 'venue_d', tx_hashes: [] },
      ],
    });
    expect(progressLine(running, 3456, 12)).toBe('[██████░░░░░░] step 2 of 3 · bridge · submitted · in_progress · 3.5 s');
  });

  it('a failed task names its step (from the failure, not current_step), code and message', () => {
    const failed = task({
      status: 'failed',
      current: 2,
      metadata: { ...META, failure: { step: 1, code: 'BRIDGE_REFUNDED', message: 'the bridge refunded the deposit' } },
    });
    expect(stepNumber(failed)).toBe(2);
    expect(failureLine(failed)).toBe('task failed at step 2 of 3, bridge: BRIDGE_REFUNDED: the bridge refunded the deposit');
    expect(failureLine(task({ status: 'cancelled', metadata: { ...META, cancel_reason: 'stopped by an operator' } }))).toBe(
      'task cancelled: stopped by an operator',
    );
  });

  it('the tasks table: one row per task, columns aligned, time to the second', () => {
    const done = task({ status: 'completed', current: 3 });
    const other = task({ task_id: 'short-id', source: 'self', destination: 'venue_b', amount: '12.5' });
    expect(taskTable([done, other]).split('\n')).toEqual([
      'TASK ID                               CREATED (UTC)        STATUS     ROUTE                              STEP',
      '01a2041a-3c98-7207-9402-d73825ee5d64  2026-11-22 16:19:06  completed  venue_b → venue_d: 10 USDC on ARB  3/3',
      'short-id                              2026-11-22 16:19:06  pending    self → venue_b: 12.5 USDC on ARB   1/3',
    ]);
  });
});
