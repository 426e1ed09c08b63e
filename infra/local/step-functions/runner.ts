import { ExecutionError, ExecutionTimeoutError, StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { LAMBDA_INVOKE } from '../../transfer-definition.ts';
import { stateNames } from './definition.ts';

/**
 * Runs one execution of a (loadLocalDefinition-checked) definition with aws-local-stepfunctions,
 * closing the gaps between that interpreter and AWS Step Functions (aws-local-stepfunctions 3.0.0, as probed: Lambda Task resources only, no JSONata, no Assign, no execution-name idempotency):
 *
 * - Every `arn:aws:states:::lambda:invoke` Task goes through one adapter: `FunctionName` picks an
 *   in-process handler, the JSON `Payload` goes in and `{ExecutedVersion, StatusCode: 200,
 *   Payload}` comes out; a function error is rethrown as AWS reports it (Error = errorType, Cause =
 *   `{"errorType","errorMessage","trace"}`).
 * - The context carries `Execution.Name` and `Execution.Id` (the execution ARN).
 * - The Map does not stop after an iteration fails (A.3): the adapter refuses to invoke a step whose
 *   predecessor in `input.steps` has not settled in this run, and anything once the run failed,
 *   timed out or was stopped. The refused iterations' states are not counted.
 * - Waits and retry pauses are shortened (`waitMs`, `retryMs`).
 * - Transitions (StateEntered + StateRetried, what AWS bills) and Lambda invocations are counted.
 */
export type LocalLambda = (payload: unknown) => Promise<unknown>;

/** Finds the handler of a function name (or ARN); throws FunctionNotFoundError when there is none. */
export type FunctionResolver = (functionName: string) => Promise<LocalLambda>;

export class FunctionNotFoundError extends Error {
  override readonly name = 'FunctionNotFoundError';
}

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface ExecutionOutcome {
  readonly status: Exclude<ExecutionStatus, 'RUNNING'>;
  readonly output?: string;
  readonly error?: string;
  readonly cause?: string;
}

export interface RunCounts {
  /** StateEntered + StateRetried: the state transitions AWS bills. */
  readonly transitions: number;
  readonly state_entered: number;
  readonly state_retried: number;
  /** Handler invocations (a retry is one more). */
  readonly lambda_invocations: number;
  /** Invocations refused because the run had already failed or a previous step had not settled (A.3). */
  readonly refused_invocations: number;
}

export interface RunOptions {
  readonly definition: StateMachineDefinition;
  readonly input: unknown;
  readonly name: string;
  readonly executionArn: string;
  readonly functions: FunctionResolver;
  /** The machine's timeout for this run (a re-driven run gets what is left); the definition's by default. */
  readonly timeoutSeconds?: number;
  /** How long every Wait state takes, in ms (default 200); null keeps the definition's own waits. */
  readonly waitMs?: number | null;
  /** The pause before every retry, in ms (default 100). */
  readonly retryMs?: number;
}

export interface LocalRun {
  /** Live counts of this run. */
  counts(): RunCounts;
  readonly outcome: Promise<ExecutionOutcome>;
  /** StopExecution: the run ends ABORTED; a handler already running finishes in the background. */
  stop(): void;
}

/** Thrown by the adapter for a refused invocation: matches no Retry, and the Map has already failed. */
export class ExecutionStoppedError extends Error {
  override readonly name = 'Local.ExecutionStopped';
}

interface CountedEvent {
  readonly type: 'StateEntered' | 'StateRetried';
  readonly index?: number;
}

export function runLocalExecution(options: RunOptions): LocalRun {
  const { definition } = options;
  const steps = (options.input as { steps?: { index?: unknown }[] } | null)?.steps;
  const positionOf = (index: unknown) => (Array.isArray(steps) ? steps.findIndex((step) => step?.index === index) : -1);
  const settled = new Set<number>();
  const refused = new Set<number>();
  const counted: CountedEvent[] = [];
  let invocations = 0;
  let refusedInvocations = 0;
  /** An iteration failed: no further step may run (the settle Lambda still may). */
  let failed = false;
  /** The run ended (any status) or was stopped: nothing may run. */
  let closed = false;
  let aborted = false;

  const refuse = (position: number | undefined, why: string): never => {
    refusedInvocations++;
    if (position !== undefined && position >= 0) refused.add(position);
    throw new ExecutionStoppedError(why);
  };

  const invoke = async (parameters: unknown) => {
    const { FunctionName, Payload } = (parameters ?? {}) as { FunctionName?: unknown; Payload?: unknown };
    const step = Payload as { phase?: unknown; index?: unknown } | undefined;
    const position = step && typeof step.phase === 'string' ? positionOf(step.index) : undefined;
    if (closed) refuse(position, 'the execution has ended or been stopped');
    if (failed && position !== undefined) refuse(position, 'a step of this execution has failed');
    if (position !== undefined && position > 0) {
      for (let earlier = 0; earlier < position; earlier++) if (!settled.has(earlier)) refuse(position, `step ${earlier} of this execution has not settled`);
    }
    if (typeof FunctionName !== 'string') throw named('States.Runtime', 'FunctionName is not a string');
    let handler: LocalLambda;
    try {
      handler = await options.functions(FunctionName);
    } catch (error) {
      if (error instanceof FunctionNotFoundError) throw named('Lambda.ResourceNotFoundException', `Function not found: ${FunctionName}`);
      // A module that fails to load: what the Node.js Lambda runtime reports for an init failure.
      throw functionError(named('Runtime.ImportModuleError', error instanceof Error ? error.message : String(error)));
    }
    invocations++;
    let result: unknown;
    try {
      result = await handler(JSON.parse(JSON.stringify(Payload ?? null)));
    } catch (error) {
      throw functionError(error);
    }
    const payload = result === undefined ? null : JSON.parse(JSON.stringify(result));
    if (position !== undefined && position >= 0)
      checkWaits(step?.phase === 'poll' ? payload : undefined, (steps as { first_wait_seconds?: unknown }[])[position]?.first_wait_seconds);
    if (position !== undefined && position >= 0 && step?.phase === 'poll' && payload?.settled === true) settled.add(position);
    return { ExecutedVersion: '$LATEST', StatusCode: 200, Payload: payload };
  };

  const taskNames = stateNames(definition, (state) => state.Type === 'Task' && state.Resource === LAMBDA_INVOKE);
  const retryNames = stateNames(definition, (state) => Array.isArray(state.Retry));
  const waitNames = stateNames(definition, (state) => state.Type === 'Wait');
  const timeoutSeconds = options.timeoutSeconds ?? definition.TimeoutSeconds;
  const machine = new StateMachine(
    { ...definition, ...(timeoutSeconds === undefined ? {} : { TimeoutSeconds: timeoutSeconds }) },
    { validationOptions: { noValidate: true } },
  );
  const execution = machine.run(options.input as never, {
    noThrowOnAbort: true,
    context: { Execution: { Name: options.name, Id: options.executionArn } },
    overrides: {
      taskResourceLocalHandlers: Object.fromEntries(taskNames.map((name) => [name, invoke as never])),
      waitTimeOverrides: options.waitMs === null ? {} : Object.fromEntries(waitNames.map((name) => [name, options.waitMs ?? 200])),
      retryIntervalOverrides: Object.fromEntries(retryNames.map((name) => [name, options.retryMs ?? 100])),
    },
  });

  const drained = (async () => {
    for await (const event of execution.eventLogs) {
      if (event.type === 'MapIterationFailed') failed = true;
      if (event.type === 'StateEntered' || event.type === 'StateRetried') counted.push({ type: event.type, index: event.index });
    }
  })();

  const outcome = (async (): Promise<ExecutionOutcome> => {
    try {
      const output = await execution.result;
      if (aborted) return { status: 'ABORTED' };
      return { status: 'SUCCEEDED', output: JSON.stringify(output) };
    } catch (error) {
      if (error instanceof ExecutionTimeoutError)
        return { status: 'TIMED_OUT', error: 'States.Timeout', cause: "The execution ran longer than the machine's TimeoutSeconds" };
      if (error instanceof ExecutionError && error.cause instanceof Error) return { status: 'FAILED', error: error.cause.name, cause: error.cause.message };
      return { status: 'FAILED', error: 'States.Runtime', cause: error instanceof Error ? error.message : String(error) };
    } finally {
      closed = true;
      await drained;
    }
  })();

  return {
    counts: () => {
      const live = counted.filter((event) => event.index === undefined || !refused.has(event.index));
      const entered = live.filter((event) => event.type === 'StateEntered').length;
      return {
        transitions: live.length,
        state_entered: entered,
        state_retried: live.length - entered,
        lambda_invocations: invocations,
        refused_invocations: refusedInvocations,
      };
    },
    outcome,
    stop: () => {
      aborted = true;
      closed = true;
      execution.abort();
    },
  };
}

const isWaitSeconds = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Locally the Waits are shortened, so the interpreter never reads the seconds a Wait would use; on
 * AWS a missing or non-integer value there is a States.Runtime failure of the whole execution. The
 * adapter checks them instead (first_wait_seconds of the step, and each poll's StepResult, which the
 * machine reads; a submit's result is discarded), so a bad value fails the sandbox run too.
 */
function checkWaits(poll: { settled?: unknown; wait_seconds?: unknown } | null | undefined, firstWaitSeconds: unknown) {
  if (!isWaitSeconds(firstWaitSeconds))
    throw named('States.Runtime', `first_wait_seconds ${JSON.stringify(firstWaitSeconds)} is not an integer >= 0 (the Wait's SecondsPath)`);
  if (poll !== undefined && (typeof poll?.settled !== 'boolean' || !isWaitSeconds(poll.wait_seconds))) {
    throw named('States.Runtime', `a poll returned ${JSON.stringify(poll)}: a StepResult needs settled (boolean) and wait_seconds (integer >= 0)`);
  }
}

function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/**
 * A function error as Step Functions reports it for lambda:invoke: Error = the errorType (the
 * thrown error's name), Cause = the JSON the Lambda runtime returns. An error named `Lambda.*` is
 * a local stand-in for the Lambda service's own errors (throttling, service exceptions) and passes
 * through unchanged, as those carry no function payload on AWS.
 */
function functionError(error: unknown): Error {
  if (error instanceof Error && error.name.startsWith('Lambda.')) return error;
  const errorType = error instanceof Error ? error.name : 'Error';
  const errorMessage = error instanceof Error ? error.message : String(error);
  const trace = error instanceof Error ? (error.stack ?? '').split('\n') : [];
  return named(errorType, JSON.stringify({ errorType, errorMessage, trace }));
}
