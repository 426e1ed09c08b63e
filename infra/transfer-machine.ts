import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The transfer state machine (statemachines/transfer.asl.json): the one file CDK deploys and the
 * local sandbox runs (infra/local/step-functions/). Everything a deployer needs besides the file:
 *
 * - DefinitionSubstitutions: NONE. Each step's Lambda comes from the execution input
 *   (`steps[].function`, `settle_function`: ExecutionInput in shared/transfers/task.ts, filled from
 *   TRANSFER_STEP_FUNCTIONS), so the ASL is deployed verbatim. The machine's role needs
 *   `lambda:InvokeFunction` on exactly the four functions of functions/transfer-steps.ts.
 * - Timeouts (statemachines/README.md says why): each step Lambda's own timeout is
 *   TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS and the Submit/Poll Tasks' TimeoutSeconds is larger, so a
 *   slow invocation ends as the Lambda's error first; settle likewise.
 */
export const TRANSFER_MACHINE_ASL = resolve(import.meta.dirname, '../statemachines/transfer.asl.json');

export const TRANSFER_MACHINE_SUBSTITUTIONS: Readonly<Record<string, string>> = {};

/** Timeout of the withdrawal, bridge and deposit step Lambdas (one submit or one poll). */
export const TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS = 60;
/** The Submit and Poll Tasks' TimeoutSeconds in the ASL. */
export const TRANSFER_STEP_TASK_TIMEOUT_SECONDS = 90;
/** Timeout of the settle Lambda (one conditional update of the task). */
export const TRANSFER_SETTLE_LAMBDA_TIMEOUT_SECONDS = 30;
/** The Settle Task's TimeoutSeconds in the ASL. */
export const TRANSFER_SETTLE_TASK_TIMEOUT_SECONDS = 60;
/** The machine's TimeoutSeconds: a day (a timed-out execution leaves its task `cancelled`). */
export const TRANSFER_MACHINE_TIMEOUT_SECONDS = 86_400;

/** The definition as text (what CDK's `DefinitionBody.fromFile` reads) parsed. */
export function readTransferMachine(): Record<string, unknown> {
  return JSON.parse(readFileSync(TRANSFER_MACHINE_ASL, 'utf8')) as Record<string, unknown>;
}
