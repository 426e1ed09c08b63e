import { randomInt } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import { describe, expect, it } from 'vitest';
import { ASL_VERDICTS_FOLDER, loadLocalDefinition, stateNames, UnsupportedDefinitionError } from '../../infra/local/step-functions/definition.ts';
import { type ExecutionOutcome, FunctionNotFoundError, type LocalLambda, type RunCounts, runLocalExecution } from '../../infra/local/step-functions/runner.ts';
import {
  readTransferMachine,
  TRANSFER_MACHINE_TIMEOUT_SECONDS,
  TRANSFER_SETTLE_LAMBDA_TIMEOUT_SECONDS,
  TRANSFER_SETTLE_TASK_TIMEOUT_SECONDS,
  TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS,
  TRANSFER_STEP_TASK_TIMEOUT_SECONDS,
} from '../../infra/transfer-definition.ts';
import { type ExecutionInput, STEP_FAILED_ERROR, STEP_RETRYABLE_ERROR, type StepInvocation } from '../../shared/transfers/task.ts';

/**
 * statemachines/transfer.asl.json run by the local interpreter through our adapter, with FAKE step
 * handlers (the real steps are tested with the sandbox): the machine's semantics, its transition
 * count per step, retries, the Catch → settle path, the A.3 guard and the timeouts.
 */
const task = { app_id: 'app', app_user_id: 'user-1', task_id: '0190a000-0000-7000-8000-000000000001' };

function inputOf(actions: ExecutionInput['steps'][number]['action'][], firstWait = 30): ExecutionInput {
  return {
    task,
    attempt: 0,
    steps: actions.map((action, index) => ({ index, action, function: `Fake${action}`, first_wait_seconds: firstWait })),
    settle_function: 'FakeSettle',
  };
}

class NamedError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

interface Call {
  readonly fn: string;
  readonly payload: Record<string, unknown>;
}

/** Fake functions by name; every call is recorded. */
function fakes(behaviour: Record<string, (payload: StepInvocation & Record<string, unknown>, calls: Call[]) => unknown>) {
  const calls: Call[] = [];
  const resolver = async (name: string): Promise<LocalLambda> => {
    const run = behaviour[name];
    if (!run) throw new FunctionNotFoundError(name);
    return async (payload) => {
      calls.push({ fn: name, payload: payload as Record<string, unknown> });
      return run(payload as StepInvocation & Record<string, unknown>, calls);
    };
  };
  return { calls, resolver };
}

/** submit → {settled:false}, first poll → settled. */
const onePoll = () => (payload: StepInvocation) => (payload.phase === 'submit' ? { settled: false, wait_seconds: 5 } : { settled: true, wait_seconds: 0 });

const definition = () => loadLocalDefinition(readTransferMachine());

async function run(
  input: ExecutionInput,
  resolver: (name: string) => Promise<LocalLambda>,
  options: { definition?: StateMachineDefinition; waitMs?: number | null } = {},
) {
  const started = performance.now();
  const execution = runLocalExecution({
    definition: options.definition ?? definition(),
    input,
    name: `${task.task_id}-a0`,
    executionArn: `arn:aws:states:us-east-1:000000000000:execution:transfer:${task.task_id}-a0`,
    functions: resolver,
    waitMs: options.waitMs === undefined ? 0 : options.waitMs,
    retryMs: 1,
  });
  const outcome: ExecutionOutcome = await execution.outcome;
  return { outcome, counts: execution.counts() as RunCounts, ms: performance.now() - started, execution };
}

const settle = () => ({ settled: true });

describe('statemachines/transfer.asl.json', () => {
  it('is valid ASL, JSONPath only, and passes the local guard', () => {
    const asl = readTransferMachine();
    expect(() => loadLocalDefinition(asl)).not.toThrow();
    expect(asl).toEqual(readTransferMachine()); // validating does not change it
    expect(JSON.stringify(asl)).not.toMatch(/QueryLanguage|"Arguments"|"Output"|"Assign"|\{%|waitForTaskToken/);
  });

  it('has TimeoutSeconds on the machine and on every Task, larger than the Lambdas’ own timeouts', () => {
    const asl = definition();
    expect(asl.TimeoutSeconds).toBe(TRANSFER_MACHINE_TIMEOUT_SECONDS);
    const tasks = stateNames(asl, (state) => state.Type === 'Task');
    expect(tasks.sort()).toEqual(['Poll', 'Settle', 'Submit']);
    const steps = (asl.States.Steps as { ItemProcessor: { States: Record<string, { TimeoutSeconds?: number; Retry?: { ErrorEquals: string[] }[] }> } })
      .ItemProcessor.States;
    expect(steps.Submit!.TimeoutSeconds).toBe(TRANSFER_STEP_TASK_TIMEOUT_SECONDS);
    expect(steps.Poll!.TimeoutSeconds).toBe(TRANSFER_STEP_TASK_TIMEOUT_SECONDS);
    expect((asl.States.Settle as { TimeoutSeconds: number }).TimeoutSeconds).toBe(TRANSFER_SETTLE_TASK_TIMEOUT_SECONDS);
    expect(TRANSFER_STEP_TASK_TIMEOUT_SECONDS).toBeGreaterThan(TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS);
    expect(TRANSFER_SETTLE_TASK_TIMEOUT_SECONDS).toBeGreaterThan(TRANSFER_SETTLE_LAMBDA_TIMEOUT_SECONDS);
    // No retrier matches a step's final failure, nor a wildcard that would.
    for (const state of [steps.Submit!, steps.Poll!, asl.States.Settle as { Retry?: { ErrorEquals: string[] }[] }]) {
      const retried = state.Retry!.flatMap((retrier) => retrier.ErrorEquals);
      expect(retried).toEqual(expect.arrayContaining(['Lambda.ServiceException', 'Lambda.TooManyRequestsException', STEP_RETRYABLE_ERROR]));
      expect(retried).not.toContain(STEP_FAILED_ERROR);
      expect(retried.filter((name) => name.startsWith('States.'))).toEqual([]);
    }
  });
});

describe('the local guard refuses what runs differently locally', () => {
  const base = () => structuredClone(readTransferMachine()) as Record<string, any>;
  const refuses = (mutate: (asl: Record<string, any>) => void, reason: RegExp) => {
    const asl = base();
    mutate(asl);
    expect(() => loadLocalDefinition(asl)).toThrow(UnsupportedDefinitionError);
    expect(() => loadLocalDefinition(asl)).toThrow(reason);
  };
  it('JSONata', () => {
    refuses((asl) => (asl.QueryLanguage = 'JSONata'), /QueryLanguage/);
    refuses((asl) => (asl.States.Settle.Arguments = { x: 1 }), /Settle: Arguments is JSONata/);
    refuses((asl) => (asl.States.Steps.ItemProcessor.States.Poll.Output = '{% $states.result %}'), /Steps\/Poll: Output is JSONata/);
    refuses((asl) => (asl.States.Steps.ItemProcessor.States.Poll.Assign = { a: 1 }), /Assign/);
    refuses((asl) => (asl.States.Steps.ItemProcessor.States.Poll.QueryLanguage = 'JSONata'), /Steps\/Poll: QueryLanguage "JSONata"/);
    refuses((asl) => (asl.States.Settle.Parameters.Payload.note = '{% 1 + 1 %}'), /\{% %\}/);
  });
  it('.waitForTaskToken, other resources, Tasks or a machine without TimeoutSeconds', () => {
    refuses((asl) => (asl.States.Settle.Resource = 'arn:aws:states:::lambda:invoke.waitForTaskToken'), /waitForTaskToken/);
    refuses((asl) => (asl.States.Settle.Resource = 'arn:aws:lambda:us-east-1:000000000000:function:x'), /only arn:aws:states:::lambda:invoke/);
    refuses((asl) => delete asl.States.Steps.ItemProcessor.States.Submit.TimeoutSeconds, /Steps\/Submit: a Task without TimeoutSeconds/);
    refuses((asl) => delete asl.TimeoutSeconds, /the machine has no TimeoutSeconds/);
  });
  it('invalid ASL (asl-validator)', () => {
    const asl = base();
    asl.States.Settle.Next = 'Nowhere';
    expect(() => loadLocalDefinition(asl)).toThrow(/invalid/);
  });
  it('a pass of asl-validator is kept for the next process (a file named by the versions and the text); a refusal is not', () => {
    const entries = () => (existsSync(ASL_VERDICTS_FOLDER) ? readdirSync(ASL_VERDICTS_FOLDER) : []);
    // A text no process has validated before.
    const asl = base();
    asl.TimeoutSeconds = 100_000 + randomInt(1_000_000);
    const before = new Set(entries());
    loadLocalDefinition(asl);
    const added = entries().filter((name) => !before.has(name));
    expect(added).toHaveLength(1);
    expect(added[0]).toMatch(/^[0-9a-f]{64}$/);
    try {
      asl.States.Settle.Next = 'Nowhere';
      expect(() => loadLocalDefinition(asl)).toThrow(/invalid/);
      expect(entries().filter((name) => !before.has(name))).toEqual(added);
    } finally {
      rmSync(join(ASL_VERDICTS_FOLDER, added[0]!), { force: true });
    }
  });
});

describe('the transfer machine with fake step handlers', () => {
  it('one step, one poll: submit then poll with the StepInvocation payload, 6 transitions', async () => {
    const { calls, resolver } = fakes({ Fakedeposit: onePoll(), FakeSettle: settle });
    const { outcome, counts } = await run(inputOf(['deposit']), resolver);
    expect(outcome.status).toBe('SUCCEEDED');
    expect(calls.map((call) => call.payload)).toEqual([
      { task, attempt: 0, index: 0, phase: 'submit' },
      { task, attempt: 0, index: 0, phase: 'poll' },
    ]);
    expect(counts).toMatchObject({ transitions: 6, state_retried: 0, lambda_invocations: 2, refused_invocations: 0 });
  });

  it('three steps in order, each picking its own function: 16 transitions (5.33 per step)', async () => {
    const { calls, resolver } = fakes({ Fakewithdrawal: onePoll(), Fakebridge: onePoll(), Fakedeposit: onePoll(), FakeSettle: settle });
    const { outcome, counts, ms } = await run(inputOf(['withdrawal', 'bridge', 'deposit']), resolver);
    expect(outcome.status).toBe('SUCCEEDED');
    expect(calls.map((call) => `${call.fn}:${call.payload.index}:${call.payload.phase}`)).toEqual([
      'Fakewithdrawal:0:submit',
      'Fakewithdrawal:0:poll',
      'Fakebridge:1:submit',
      'Fakebridge:1:poll',
      'Fakedeposit:2:submit',
      'Fakedeposit:2:poll',
    ]);
    expect(counts.transitions).toBe(16);
    expect(counts.transitions / 3).toBeLessThanOrEqual(6);
    expect(counts.lambda_invocations).toBe(6);
    console.log(`3-step machine, zero waits: ${ms.toFixed(1)} ms, ${(ms / counts.transitions).toFixed(2)} ms per transition`);
  });

  it('polls again after wait_seconds while not settled: 3 more transitions per extra poll', async () => {
    let polls = 0;
    const { resolver } = fakes({
      Fakedeposit: (payload) => (payload.phase === 'submit' ? { settled: false, wait_seconds: 1 } : { settled: ++polls >= 3, wait_seconds: 0 }),
      FakeSettle: settle,
    });
    const { outcome, counts } = await run(inputOf(['deposit']), resolver);
    expect(outcome.status).toBe('SUCCEEDED');
    expect(counts).toMatchObject({ transitions: 12, lambda_invocations: 4 });
  });

  it('waits first_wait_seconds before the first poll and then each poll’s wait_seconds (real waits)', async () => {
    const times: number[] = [];
    let polls = 0;
    const { resolver } = fakes({
      Fakedeposit: (payload) => {
        times.push(performance.now());
        return payload.phase === 'submit' ? { settled: false, wait_seconds: 0 } : { settled: ++polls >= 2, wait_seconds: 1 };
      },
      FakeSettle: settle,
    });
    const { outcome } = await run(inputOf(['deposit'], 1), resolver, { waitMs: null });
    expect(outcome.status).toBe('SUCCEEDED');
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(990); // first_wait_seconds = 1
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(990); // the poll's wait_seconds = 1
  });

  it('retries TransferStepRetryable and Lambda.ServiceException, each retry a billed transition', async () => {
    let failures = [STEP_RETRYABLE_ERROR, 'Lambda.ServiceException', 'Lambda.TooManyRequestsException'];
    const { calls, resolver } = fakes({
      Fakedeposit: (payload) => {
        const next = failures[0];
        if (payload.phase === 'submit' && next) {
          failures = failures.slice(1);
          throw new NamedError(next, 'transient');
        }
        return onePoll()(payload);
      },
      FakeSettle: settle,
    });
    const { outcome, counts } = await run(inputOf(['deposit']), resolver);
    expect(outcome.status).toBe('SUCCEEDED');
    expect(calls.filter((call) => call.payload.phase === 'submit')).toHaveLength(4);
    expect(counts).toMatchObject({ transitions: 6 + 3, state_retried: 3, lambda_invocations: 5 });
  });

  it('never retries TransferStepFailed: settle gets the error as AWS reports it, later steps never run', async () => {
    const { calls, resolver } = fakes({
      Fakewithdrawal: onePoll(),
      Fakebridge: (payload) => {
        if (payload.phase === 'poll') throw new NamedError(STEP_FAILED_ERROR, 'bridge refunded');
        return { settled: false, wait_seconds: 1 };
      },
      Fakedeposit: onePoll(),
      FakeSettle: settle,
    });
    const { outcome, counts, execution } = await run(inputOf(['withdrawal', 'bridge', 'deposit']), resolver);
    await new Promise((done) => setTimeout(done, 100)); // the interpreter's queued iteration (A.3) had its chance
    expect(outcome).toMatchObject({ status: 'FAILED', error: STEP_FAILED_ERROR });
    expect(calls.filter((call) => call.fn === 'Fakebridge' && call.payload.phase === 'poll')).toHaveLength(1);
    expect(calls.some((call) => call.fn === 'Fakedeposit')).toBe(false);
    const settled = calls.filter((call) => call.fn === 'FakeSettle');
    expect(settled).toHaveLength(1);
    const { error, ...rest } = settled[0]!.payload as { error: { Error: string; Cause: string } };
    expect(rest).toEqual({ task, attempt: 0 });
    expect(error.Error).toBe(STEP_FAILED_ERROR);
    expect(JSON.parse(error.Cause)).toMatchObject({ errorType: STEP_FAILED_ERROR, errorMessage: 'bridge refunded', trace: expect.any(Array) });
    // The interpreter did start the deposit iteration (A.3); the adapter refused it and it is not billed.
    expect(execution.counts().refused_invocations).toBeGreaterThanOrEqual(1);
    expect(counts.lambda_invocations).toBe(5);
    // Steps (1) + withdrawal 5 + bridge Submit, Wait, Poll (3) + Settle + TransferFailed.
    expect(counts.transitions).toBe(11);
  });

  it('fails a step whose StepResult or first_wait_seconds a Wait could not use (as AWS would)', async () => {
    const bad = fakes({
      Fakedeposit: (payload) => (payload.phase === 'submit' ? { settled: false, wait_seconds: 1 } : { settled: true, wait_seconds: 1.5 }),
      FakeSettle: settle,
    });
    expect((await run(inputOf(['deposit']), bad.resolver)).outcome).toMatchObject({ status: 'FAILED', error: 'States.Runtime' });
    const badFirstWait = fakes({ Fakedeposit: onePoll(), FakeSettle: settle });
    expect(
      (await run({ ...inputOf(['deposit']), steps: [{ ...inputOf(['deposit']).steps[0]!, first_wait_seconds: -1 }] }, badFirstWait.resolver)).outcome,
    ).toMatchObject({ status: 'FAILED', error: 'States.Runtime' });
  });

  it('an unknown function fails the step (Lambda.ResourceNotFoundException) and settles', async () => {
    const { calls, resolver } = fakes({ FakeSettle: settle });
    const { outcome } = await run(inputOf(['deposit']), resolver);
    expect(outcome).toMatchObject({ status: 'FAILED', error: 'Lambda.ResourceNotFoundException' });
    expect(calls.map((call) => call.fn)).toEqual(['FakeSettle']);
  });

  it('a step module that fails to load fails the step as Runtime.ImportModuleError', async () => {
    const { calls, resolver } = fakes({ FakeSettle: settle });
    const failingImport = async (name: string) =>
      name === 'Fakedeposit' ? Promise.reject(new Error('Cannot find module functions/transfers/deposit-step.ts')) : resolver(name);
    const { outcome } = await run(inputOf(['deposit']), failingImport);
    expect(outcome).toMatchObject({ status: 'FAILED', error: 'Runtime.ImportModuleError' });
    expect(JSON.parse((calls[0]!.payload.error as { Cause: string }).Cause)).toMatchObject({
      errorType: 'Runtime.ImportModuleError',
      errorMessage: expect.stringContaining('Cannot find module'),
    });
  });

  it('a Task past its TimeoutSeconds fails with States.Timeout into settle', async () => {
    const asl = structuredClone(readTransferMachine()) as Record<string, any>;
    asl.States.Steps.ItemProcessor.States.Submit.TimeoutSeconds = 1;
    const { calls, resolver } = fakes({
      Fakedeposit: () => new Promise((done) => setTimeout(() => done({ settled: false, wait_seconds: 0 }), 1_500)),
      FakeSettle: settle,
    });
    const { outcome } = await run(inputOf(['deposit']), resolver, { definition: loadLocalDefinition(asl) });
    expect(outcome).toMatchObject({ status: 'FAILED', error: 'States.Timeout' });
    expect((calls.find((call) => call.fn === 'FakeSettle')!.payload.error as { Error: string }).Error).toBe('States.Timeout');
  });

  it('the machine’s TimeoutSeconds ends the execution TIMED_OUT; nothing is invoked afterwards', async () => {
    const asl = structuredClone(readTransferMachine()) as Record<string, any>;
    asl.TimeoutSeconds = 1;
    const { calls, resolver } = fakes({ Fakedeposit: () => ({ settled: false, wait_seconds: 0 }), FakeSettle: settle });
    const { outcome, ms } = await run(inputOf(['deposit']), resolver, { definition: loadLocalDefinition(asl), waitMs: 20 });
    expect(outcome.status).toBe('TIMED_OUT');
    expect(ms).toBeGreaterThanOrEqual(990);
    const after = calls.length;
    await new Promise((done) => setTimeout(done, 100));
    expect(calls.length).toBe(after);
    expect(calls.some((call) => call.fn === 'FakeSettle')).toBe(false);
  });

  it('stop() ends the run ABORTED mid-Wait', async () => {
    const { calls, resolver } = fakes({ Fakedeposit: onePoll(), FakeSettle: settle });
    const execution = runLocalExecution({
      definition: definition(),
      input: inputOf(['deposit']),
      name: 'n',
      executionArn: 'arn:aws:states:us-east-1:000000000000:execution:transfer:n',
      functions: resolver,
      waitMs: 5_000,
    });
    await new Promise((done) => setTimeout(done, 50));
    execution.stop();
    expect((await execution.outcome).status).toBe('ABORTED');
    expect(calls.map((call) => call.payload.phase)).toEqual(['submit']);
  });
});
