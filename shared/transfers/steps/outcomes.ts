import { STEP_FAILED_ERROR, STEP_RETRYABLE_ERROR } from '../task.ts';

/** A final business failure of the step: recorded on the step and the task, then thrown as STEP_FAILED_ERROR. */
export class StepFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** Transient trouble (an upstream 5xx, a lease held): submit throws STEP_RETRYABLE_ERROR, poll answers `settled: false`. */
export class StepTransient extends Error {}

/** What the Lambda throws after the failure is recorded (or when the task is closed): the ASL does not retry it. */
export function stepFailedError(message: string): Error {
  const error = new Error(message);
  error.name = STEP_FAILED_ERROR;
  return error;
}

export function stepRetryableError(message: string): Error {
  const error = new Error(message);
  error.name = STEP_RETRYABLE_ERROR;
  return error;
}
