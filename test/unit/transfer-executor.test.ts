import { DescribeExecutionCommand, ExecutionAlreadyExists, ExecutionDoesNotExist, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config.ts';
import { executionArn, executionInput, loadTransfersConfig, SfnTransferExecutor } from '../../shared/transfers/executor.ts';
import type { ExecutionInput, StepRecord } from '../../shared/transfers/task.ts';

/** SfnTransferExecutor against a mocked SFN client: the calls it makes and how it reads the answers. */
const sfn = mockClient(SFNClient);
const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Transfer';
const FUNCTIONS = { withdrawal: 'fn-w', bridge: 'fn-b', deposit: 'fn-d', settle: 'fn-s' };
const config = { stateMachineArn: ARN, functions: FUNCTIONS };
const input: ExecutionInput = { task: { app_id: 'a', app_user_id: 'u', task_id: 't' }, attempt: 0, steps: [], settle_function: 'fn-s' };

beforeEach(() => sfn.reset());

describe('SfnTransferExecutor', () => {
  it('starts the named execution of the configured machine with the input as JSON', async () => {
    sfn.on(StartExecutionCommand).resolves({ executionArn: executionArn(ARN, 't-a0'), startDate: new Date() });
    await new SfnTransferExecutor(config, new SFNClient({ region: 'us-east-1' })).start('t-a0', input);
    expect(sfn).toReceiveCommandTimes(StartExecutionCommand, 1);
    expect(sfn).toReceiveCommandWith(StartExecutionCommand, { stateMachineArn: ARN, name: 't-a0', input: JSON.stringify(input) });
  });

  it('treats ExecutionAlreadyExists as started (the same attempt), after describing it', async () => {
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'Execution Already Exists', $metadata: {} }));
    sfn.on(DescribeExecutionCommand).resolves({ status: 'RUNNING' });
    await expect(new SfnTransferExecutor(config, new SFNClient({ region: 'us-east-1' })).start('t-a0', input)).resolves.toBeUndefined();
    expect(sfn.commandCalls(DescribeExecutionCommand).map((c) => c.args[0].input)).toEqual([
      { executionArn: 'arn:aws:states:us-east-1:123456789012:execution:Transfer:t-a0' },
    ]);
  });

  it('passes other start failures on', async () => {
    sfn.on(StartExecutionCommand).rejects(new Error('throttled'));
    await expect(new SfnTransferExecutor(config, new SFNClient({ region: 'us-east-1' })).start('t-a0', input)).rejects.toThrow('throttled');
  });

  it('describes an execution by name; none of that name is undefined', async () => {
    const executor = new SfnTransferExecutor(config, new SFNClient({ region: 'us-east-1' }));
    sfn
      .on(DescribeExecutionCommand)
      .resolvesOnce({ status: 'ABORTED' })
      .rejectsOnce(new ExecutionDoesNotExist({ message: 'no', $metadata: {} }));
    expect(await executor.describe('t-a1')).toBe('ABORTED');
    expect(await executor.describe('t-a2')).toBeUndefined();
  });

  it('builds the input of the steps not completed, each naming its function', () => {
    const step = (index: number, action: StepRecord['action'], status: StepRecord['status']) => ({ index, action, status });
    const built = executionInput(
      {
        app_id: 'a',
        app_user_id: 'u',
        task_id: 't',
        attempt: 2,
        steps: [step(0, 'withdrawal', 'completed'), step(1, 'bridge', 'failed'), step(2, 'deposit', 'pending')],
      },
      FUNCTIONS,
    );
    expect(built).toEqual({
      task: { app_id: 'a', app_user_id: 'u', task_id: 't' },
      attempt: 2,
      steps: [
        { index: 1, action: 'bridge', function: 'fn-b', first_wait_seconds: 2 },
        { index: 2, action: 'deposit', function: 'fn-d', first_wait_seconds: 1 },
      ],
      settle_function: 'fn-s',
    });
  });

  it('reads its configuration from TRANSFER_STATE_MACHINE_ARN, TRANSFER_STEP_FUNCTIONS and SFN_ENDPOINT', () => {
    const env = { TRANSFER_STATE_MACHINE_ARN: ARN, TRANSFER_STEP_FUNCTIONS: JSON.stringify(FUNCTIONS), SFN_ENDPOINT: 'http://127.0.0.1:8083' };
    expect(loadTransfersConfig(env)).toEqual({ stateMachineArn: ARN, functions: FUNCTIONS, endpoint: 'http://127.0.0.1:8083' });
    expect(() => loadTransfersConfig({ ...env, TRANSFER_STATE_MACHINE_ARN: 'Transfer' })).toThrow(ConfigError);
    expect(() => loadTransfersConfig({ ...env, TRANSFER_STEP_FUNCTIONS: '{"withdrawal":"w"}' })).toThrow(/TRANSFER_STEP_FUNCTIONS/);
    expect(() => loadTransfersConfig({ ...env, TRANSFER_STEP_FUNCTIONS: 'nope' })).toThrow(/TRANSFER_STEP_FUNCTIONS/);
  });
});
