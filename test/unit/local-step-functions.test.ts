import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  InvalidArn,
  InvalidName,
  ListExecutionsCommand,
  SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FunctionNotFoundError, type LocalLambda } from '../../infra/local/step-functions/runner.ts';
import { type LocalStepFunctions, startLocalStepFunctions } from '../../infra/local/step-functions/server.ts';
import { localStepFunctionNames, sandboxPlatformFee, transferStepResolver } from '../../infra/local/step-functions/transfer-functions.ts';
import { readDurableDocument, replaceDurableDocument } from '../../infra/local/venues/durable-state.ts';
import { readTransferMachine } from '../../infra/transfer-definition.ts';
import { loadPlatformFee } from '../../shared/transfers/platform-fee.ts';
import { type ExecutionInput, executionName, STEP_FAILED_ERROR, type StepInvocation } from '../../shared/transfers/task.ts';

/**
 * The local Step Functions endpoint through the REAL @aws-sdk/client-sfn (AWS JSON 1.0): Standard
 * start idempotency, describe, stop, list, AWS's error classes, and a restart that re-drives an
 * execution the previous process left RUNNING. The step functions are fakes.
 */
const task = { app_id: 'app', app_user_id: 'user-1', task_id: '0190a000-0000-7000-8000-0000000000aa' };
const inputOf = (taskId = task.task_id): ExecutionInput => ({
  task: { ...task, task_id: taskId },
  attempt: 0,
  steps: [{ index: 0, action: 'deposit', function: 'FakeDeposit', first_wait_seconds: 5 }],
  settle_function: 'FakeSettle',
});

/** A fake deposit whose polls stay unsettled while `hold` is true; a task id containing "fail" fails for good. */
function fakeFunctions() {
  const state = { hold: false, calls: [] as StepInvocation[] };
  const functions: Record<string, LocalLambda> = {
    FakeDeposit: async (payload) => {
      const step = payload as StepInvocation;
      state.calls.push(step);
      if (step.task.task_id.includes('fail') && step.phase === 'poll')
        throw Object.assign(new Error('venue rejected the deposit'), { name: STEP_FAILED_ERROR });
      return step.phase === 'submit' ? { settled: false, wait_seconds: 1 } : { settled: !state.hold, wait_seconds: 0 };
    },
    FakeSettle: async () => ({ recorded: true }),
  };
  const resolver = async (name: string) => {
    const fn = functions[name];
    if (!fn) throw new FunctionNotFoundError(name);
    return fn;
  };
  return { state, resolver };
}

let dataDir: string;
let sfn: LocalStepFunctions | undefined;
let client: SFNClient;
let fake: ReturnType<typeof fakeFunctions>;

async function start(definition?: unknown) {
  sfn = await startLocalStepFunctions({ dataDir, functions: fake.resolver, waitMs: 5, retryMs: 1, ...(definition ? { definition } : {}) });
  client = new SFNClient({ endpoint: sfn.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'sandbox', secretAccessKey: 'sandbox' } });
  return sfn;
}

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'local-sfn-'));
  fake = fakeFunctions();
});
afterEach(async () => {
  client?.destroy();
  await sfn?.stop();
  sfn = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

const startExecution = (name: string, input: unknown, arn = sfn!.stateMachineArn) =>
  client.send(new StartExecutionCommand({ stateMachineArn: arn, name, input: JSON.stringify(input) }));

describe('local Step Functions through @aws-sdk/client-sfn', () => {
  it('starts, runs the transfer machine and describes the closed execution', async () => {
    await start();
    const name = executionName(task.task_id, 0);
    const started = await startExecution(name, inputOf());
    expect(started.executionArn).toBe(`arn:aws:states:us-east-1:000000000000:execution:transfer:${name}`);
    expect(started.startDate).toBeInstanceOf(Date);
    await sfn!.closed(name);
    const described = await client.send(new DescribeExecutionCommand({ executionArn: started.executionArn }));
    expect(described).toMatchObject({ status: 'SUCCEEDED', name, stateMachineArn: sfn!.stateMachineArn, input: JSON.stringify(inputOf()) });
    expect(described.stopDate!.getTime()).toBeGreaterThanOrEqual(described.startDate!.getTime());
    expect(JSON.parse(described.output!)).toEqual(inputOf());
    // The bench's read: transitions and invocations (sandbox only).
    const counts = await (await fetch(`${sfn!.endpoint}/executions/${name}`)).json();
    expect(counts).toMatchObject({ status: 'SUCCEEDED', counts: { transitions: 6, lambda_invocations: 2 }, runs: 1 });
    const listed = await client.send(new ListExecutionsCommand({ stateMachineArn: sfn!.stateMachineArn }));
    expect(listed.executions?.map((execution) => [execution.name, execution.status])).toEqual([[name, 'SUCCEEDED']]);
  });

  it('is idempotent as Standard: same name and input while RUNNING; ExecutionAlreadyExists once closed or with another input', async () => {
    await start();
    fake.state.hold = true;
    const name = executionName(task.task_id, 0);
    const first = await startExecution(name, inputOf());
    const again = await startExecution(name, inputOf());
    expect(again).toMatchObject({ executionArn: first.executionArn, startDate: first.startDate });
    await expect(startExecution(name, { ...inputOf(), attempt: 1 })).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    // 50 concurrent starts of the same execution: one run.
    await Promise.all(Array.from({ length: 50 }, () => startExecution('concurrent', inputOf())));
    fake.state.hold = false;
    await sfn!.closed(name);
    await sfn!.closed('concurrent');
    expect(fake.state.calls.filter((call) => call.phase === 'submit')).toHaveLength(2);
    const closedAgain = startExecution(name, inputOf());
    await expect(closedAgain).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    await expect(closedAgain).rejects.toMatchObject({ $metadata: { httpStatusCode: 400 } });
  });

  it('answers with AWS’s exception classes', async () => {
    await start();
    await expect(
      client.send(new DescribeExecutionCommand({ executionArn: `arn:aws:states:us-east-1:000000000000:execution:transfer:nope` })),
    ).rejects.toBeInstanceOf(ExecutionDoesNotExist);
    await expect(client.send(new DescribeExecutionCommand({ executionArn: 'not-an-arn' }))).rejects.toBeInstanceOf(InvalidArn);
    await expect(startExecution('has space', inputOf())).rejects.toBeInstanceOf(InvalidName);
    await expect(startExecution('x'.repeat(81), inputOf())).rejects.toBeInstanceOf(InvalidName);
    await expect(startExecution('ok', inputOf(), 'arn:aws:states:us-east-1:000000000000:stateMachine:other')).rejects.toBeInstanceOf(StateMachineDoesNotExist);
  });

  it('describes a failed execution with the step’s error, and stops a running one (ABORTED)', async () => {
    await start();
    const failing = executionName(`${task.task_id}-fail`, 0);
    await startExecution(failing, inputOf(`${task.task_id}-fail`));
    await sfn!.closed(failing);
    const failed = await client.send(new DescribeExecutionCommand({ executionArn: `arn:aws:states:us-east-1:000000000000:execution:transfer:${failing}` }));
    expect(failed).toMatchObject({ status: 'FAILED', error: STEP_FAILED_ERROR, cause: expect.stringContaining('the task records which step') });

    fake.state.hold = true;
    const { executionArn } = await startExecution('to-stop', inputOf());
    const stopped = await client.send(new StopExecutionCommand({ executionArn, error: 'Operator', cause: 'stopped by a test' }));
    expect(stopped.stopDate).toBeInstanceOf(Date);
    const described = await client.send(new DescribeExecutionCommand({ executionArn }));
    expect(described).toMatchObject({ status: 'ABORTED', error: 'Operator', cause: 'stopped by a test' });
    const calls = fake.state.calls.length;
    await new Promise((done) => setTimeout(done, 50));
    expect(fake.state.calls.length).toBe(calls); // no poll after the stop
    await expect(startExecution('to-stop', inputOf())).rejects.toBeInstanceOf(ExecutionAlreadyExists);
  });

  it('after a restart, re-drives an execution the previous process left RUNNING, with the same input', async () => {
    await start();
    fake.state.hold = true;
    const name = executionName(task.task_id, 0);
    await startExecution(name, inputOf());
    await new Promise((done) => setTimeout(done, 30));
    // What kill -9 leaves: the record RUNNING on disk (stop() does not record the runs closed).
    await sfn!.stop();
    const onDisk = await readDurableDocument(join(dataDir, 'stepfunctions', 'executions.json'));
    expect(onDisk.executions[name].status).toBe('RUNNING');
    fake = fakeFunctions();
    await start();
    expect((await client.send(new DescribeExecutionCommand({ executionArn: `arn:aws:states:us-east-1:000000000000:execution:transfer:${name}` }))).status).toBe(
      'RUNNING',
    );
    expect(await sfn!.redriveRunning()).toEqual([name]);
    const closed = await sfn!.closed(name);
    expect(closed).toMatchObject({ status: 'SUCCEEDED', runs: 2 });
    expect(fake.state.calls.map((call) => call.phase)).toEqual(['submit', 'poll']);
    expect(fake.state.calls[0]).toEqual({ task, attempt: 0, index: 0, phase: 'submit' });
  });

  it('a re-driven execution keeps its start: past the machine timeout it ends TIMED_OUT without running', async () => {
    const asl = { ...readTransferMachine(), TimeoutSeconds: 60 };
    await start(asl);
    await sfn!.stop();
    const path = join(dataDir, 'stepfunctions', 'executions.json');
    const state = await readDurableDocument(path);
    state.executions.old = {
      name: 'old',
      input: JSON.stringify(inputOf()),
      status: 'RUNNING',
      start_ms: Date.now() - 120_000,
      counts: { transitions: 0, state_entered: 0, state_retried: 0, lambda_invocations: 0, refused_invocations: 0 },
      runs: 1,
    };
    await replaceDurableDocument(path, state);
    await start(asl);
    await sfn!.redriveRunning();
    expect(await sfn!.closed('old')).toMatchObject({ status: 'TIMED_OUT' });
    expect(fake.state.calls).toEqual([]);
  });
});

describe('the sandbox wiring of the real step functions', () => {
  it('names each step kind’s function and resolves names and ARNs lazily', async () => {
    expect(localStepFunctionNames()).toEqual({
      withdrawal: 'TransferWithdrawalStep',
      bridge: 'TransferBridgeStep',
      deposit: 'TransferDepositStep',
      settle: 'TransferSettle',
    });
    const resolve = transferStepResolver([{ id: 'Missing', kind: 'deposit', entry: 'functions/transfers/does-not-exist.ts', needs: {} }]);
    await expect(resolve('Unknown')).rejects.toBeInstanceOf(FunctionNotFoundError);
    await expect(resolve('arn:aws:lambda:us-east-1:000000000000:function:Missing')).rejects.toThrow(/Cannot find module|does-not-exist/);
  });

  it('generates the platform fee recipients once and keeps them', async () => {
    const fee = await sandboxPlatformFee(dataDir);
    expect(loadPlatformFee({ PLATFORM_FEE: fee })).toMatchObject({
      bps: 10n,
      fixed: 0n,
      recipients: { EVM: expect.stringMatching(/^0x/), SOL: expect.any(String) },
    });
    expect(await sandboxPlatformFee(dataDir)).toBe(fee);
  });
});
