import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The transfer state machine's definition (statemachines/transfer.asl.json): the one file CDK
 * deploys (infra/constructs/transfer-machine.ts) and the local sandbox runs
 * (infra/local/step-functions/), and the one check both apply to it. Everything a deployer needs
 * besides the file:
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

/** The optimised Lambda integration: the only Task resource the machine's role may use and the local runner serves. */
export const LAMBDA_INVOKE = 'arn:aws:states:::lambda:invoke';

const JSONATA_FIELDS = ['Arguments', 'Output', 'Assign'] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type States = Record<string, Record<string, Json>>;

export interface DefinitionRules {
  /**
   * Every Task's TimeoutSeconds must be at least this: a Task that timed out while its Lambda
   * still ran would be retried or caught while the first invocation may still be broadcasting.
   * The deployment passes the step Lambdas' timeout; the local interpreter's own tests shorten
   * Tasks on purpose. @default 0
   */
  readonly minTaskTimeoutSeconds?: number;
}

/**
 * What the deployment and the local interpreter (aws-local-stepfunctions 3.0.0, no JSONata) both
 * rely on, as one list of problems naming the state (`Map/Inner: …`):
 * - JSONPath only: the interpreter accepts JSONata fields and silently ignores them;
 * - a machine TimeoutSeconds, and at least one Task;
 * - every Task (nested in Map/Parallel too) a plain `lambda:invoke` (the machine's role may only
 *   invoke the step functions, and the local runner serves only those; `.waitForTaskToken` has no
 *   local token) with a TimeoutSeconds (cut at 60 s locally, unlimited on AWS) of at least
 *   `minTaskTimeoutSeconds`.
 * Whether the ASL is valid as such is asl-validator's job (loadLocalDefinition runs it).
 */
export function definitionProblems(definition: unknown, rules: DefinitionRules = {}): string[] {
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) return ['the definition is not a JSON object'];
  const top = definition as Record<string, Json>;
  const problems: string[] = [];
  const minTimeout = rules.minTaskTimeoutSeconds ?? 0;
  let tasks = 0;
  const visit = (states: States | undefined, prefix: string) => {
    for (const [name, state] of Object.entries(states ?? {})) {
      const where = `${prefix}${name}`;
      if ('QueryLanguage' in state && state.QueryLanguage !== 'JSONPath')
        problems.push(`${where}: QueryLanguage ${JSON.stringify(state.QueryLanguage)}: JSONPath only`);
      for (const field of JSONATA_FIELDS) if (field in state) problems.push(`${where}: ${field} is JSONata`);
      if (JSON.stringify(state).includes('{%')) problems.push(`${where}: a {% %} JSONata expression`);
      if (state.Type === 'Task') {
        tasks++;
        if (typeof state.Resource === 'string' && state.Resource.endsWith('.waitForTaskToken'))
          problems.push(`${where}: .waitForTaskToken has no local task token`);
        else if (state.Resource !== LAMBDA_INVOKE)
          problems.push(`${where}: Resource ${JSON.stringify(state.Resource)}: only ${LAMBDA_INVOKE} Tasks (the role invokes the step functions only)`);
        if (typeof state.TimeoutSeconds !== 'number') problems.push(`${where}: a Task without TimeoutSeconds (cut at 60 s locally, unlimited on AWS)`);
        else if (state.TimeoutSeconds < minTimeout)
          problems.push(`${where}: TimeoutSeconds ${state.TimeoutSeconds} < the step functions' ${minTimeout} s timeout`);
      }
      for (const nested of [state.ItemProcessor, state.Iterator])
        if (nested && typeof nested === 'object' && !Array.isArray(nested)) visit(nested.States as States, `${where}/`);
      if (Array.isArray(state.Branches))
        for (const branch of state.Branches) if (branch && typeof branch === 'object' && !Array.isArray(branch)) visit(branch.States as States, `${where}/`);
    }
  };
  if ('QueryLanguage' in top && top.QueryLanguage !== 'JSONPath') problems.push(`QueryLanguage ${JSON.stringify(top.QueryLanguage)}: JSONPath only`);
  if (typeof top.TimeoutSeconds !== 'number') problems.push('the machine has no TimeoutSeconds');
  visit(top.States as States | undefined, '');
  if (tasks === 0) problems.push('no Task state');
  return problems;
}

/** The deployment's check (CDK synth): throws naming the file and every problem, with the step Lambdas' timeout as the Tasks' minimum. */
export function checkTransferDefinition(definition: string, minTaskTimeoutSeconds: number = TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS): void {
  const problems = definitionProblems(JSON.parse(definition), { minTaskTimeoutSeconds });
  if (problems.length) throw new Error(`statemachines/transfer.asl.json: ${problems.join('; ')}`);
}
