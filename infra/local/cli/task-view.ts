import type { Task, TaskStep } from './task-api.ts';

/**
 * How the task CLIs show a transfer task: plain functions from task resources to text, so the
 * live watcher and its tests share them. Transaction hashes are public and printed in full.
 */
export const TERMINAL_STATUSES: ReadonlySet<Task['status']> = new Set(['completed', 'failed', 'cancelled']);

/** `self → venue_b: 10 USDC on ARB`. */
export function routeSummary(task: Pick<Task, 'source' | 'destination' | 'amount' | 'token' | 'chain'>): string {
  return `${task.source} → ${task.destination}: ${task.amount} ${task.token} on ${task.chain}`;
}

/** The step being run (1-based) for "step n of m": the last one once all are done. */
export function stepNumber(task: Task): number {
  const total = task.progress.total_steps;
  if (task.status === 'completed') return total;
  if (task.metadata.failure) return Math.min(task.metadata.failure.step + 1, total);
  return Math.min(task.progress.current_step + 1, total);
}

/** `deposit (venue_b)`, `bridge`. */
export function stepName(step: Pick<TaskStep, 'action' | 'dex'>): string {
  return step.dex ? `${step.action} (${step.dex})` : step.action;
}

/** The lines that say what changed between two polls (all of it for the first poll). */
export function changes(previous: Task | undefined, next: Task): string[] {
  const lines: string[] = [];
  const total = next.progress.total_steps;
  next.progress.steps.forEach((step, index) => {
    const before = previous?.progress.steps[index];
    const label = `step ${index + 1}/${total} ${stepName(step)}`;
    if (!before || before.status !== step.status) {
      // A pending step is news only on the first poll of a task that has not begun.
      if (step.status !== 'pending' || !previous) lines.push(`${label}: ${step.status}`);
    }
    for (const hash of step.tx_hashes) {
      if (!before?.tx_hashes.includes(hash)) lines.push(`${label}: tx ${hash}`);
    }
  });
  if (previous?.status !== next.status)
    lines.push(`task ${next.status}${next.status === 'in_progress' || next.status === 'pending' ? ` (step ${stepNumber(next)} of ${total})` : ''}`);
  return lines;
}

/** The live line: `[█████░░░░░] step 1 of 2 · deposit (venue_b) · submitted · 3.4 s`. */
export function progressLine(task: Task, elapsedMs: number, width = 20): string {
  const total = Math.max(task.progress.total_steps, 1);
  const steps = task.progress.steps;
  const done = steps.filter((step) => step.status === 'completed').length + steps.filter((step) => step.status === 'submitted').length / 2;
  const filled = Math.round((done / total) * width);
  const n = stepNumber(task);
  const step = steps[n - 1];
  const detail = step ? `${stepName(step)} · ${step.status}` : task.status;
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] step ${n} of ${task.progress.total_steps} · ${detail} · ${task.status} · ${(elapsedMs / 1000).toFixed(1)} s`;
}

/** One row per task for `npm run tasks`. */
export function taskTable(tasks: readonly Task[]): string {
  const header = ['TASK ID', 'CREATED (UTC)', 'STATUS', 'ROUTE', 'STEP'];
  const rows = tasks.map((task) => [
    task.task_id,
    task.created_at.replace('T', ' ').replace(/\.\d+Z$|Z$/, ''),
    task.status,
    routeSummary(task),
    `${stepNumber(task)}/${task.progress.total_steps}`,
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  return [header, ...rows].map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')).join('\n');
}

/** Why a task ended without completing: the step, its code and message (or the cancel reason). */
export function failureLine(task: Task): string {
  const failure = task.metadata.failure;
  if (failure) {
    const step = task.progress.steps[failure.step];
    return `task ${task.status} at step ${failure.step + 1} of ${task.progress.total_steps}${step ? `, ${stepName(step)}` : ''}: ${failure.code}: ${failure.message}`;
  }
  return `task ${task.status}${task.metadata.cancel_reason ? `: ${task.metadata.cancel_reason}` : ''}`;
}
