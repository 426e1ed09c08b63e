import { DescribeExecutionCommand, ExecutionAlreadyExists, ExecutionDoesNotExist, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import * as v from 'valibot';
import { ConfigError } from '../config.ts';
import { clientEndpoint } from '../deps/local-endpoints.ts';
import type { ExecutionInput, StepRecord } from './task.ts';

/**
 * The port the transfer routes start and inspect executions through (issue 11 §3, §4). One
 * execution per task attempt, named `executionName(task_id, attempt)`: starting a name that
 * exists already is the same execution (never a second one).
 */
export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED' | 'PENDING_REDRIVE';

export interface StepFunctions {
  readonly withdrawal: string;
  readonly bridge: string;
  readonly deposit: string;
  readonly settle: string;
}

export interface TransferExecutor {
  /** The step Lambdas' names or ARNs, for the ExecutionInput. */
  functions(): StepFunctions;
  /** Starts the named execution; an execution of that name already there counts as started. */
  start(name: string, input: ExecutionInput): Promise<void>;
  /** The execution's status, or undefined when there is none of that name. */
  describe(name: string): Promise<ExecutionStatus | undefined>;
}

/** Builds the execution input for the steps still to run (not completed). */
export function executionInput(
  task: {
    readonly app_id: string;
    readonly app_user_id: string;
    readonly task_id: string;
    readonly attempt: number;
    readonly steps: readonly Pick<StepRecord, 'index' | 'action' | 'status'>[];
  },
  functions: StepFunctions,
): ExecutionInput {
  return {
    task: { app_id: task.app_id, app_user_id: task.app_user_id, task_id: task.task_id },
    attempt: task.attempt,
    steps: task.steps
      .filter((step) => step.status !== 'completed')
      .map((step) => ({ index: step.index, action: step.action, function: functions[step.action], first_wait_seconds: FIRST_WAIT_SECONDS[step.action] })),
    settle_function: functions.settle,
  };
}

/** First Wait before polling a submitted step: a venue payout or a bridge fill takes a few seconds, a deposit's inclusion about one. */
export const FIRST_WAIT_SECONDS: Readonly<Record<StepRecord['action'], number>> = { withdrawal: 2, bridge: 2, deposit: 1 };

const FunctionsSchema = v.object({
  withdrawal: v.pipe(v.string(), v.minLength(1)),
  bridge: v.pipe(v.string(), v.minLength(1)),
  deposit: v.pipe(v.string(), v.minLength(1)),
  settle: v.pipe(v.string(), v.minLength(1)),
});

export interface TransfersConfig {
  readonly stateMachineArn: string;
  readonly functions: StepFunctions;
  /** SFN_ENDPOINT: the local Step Functions endpoint (absent in AWS). */
  readonly endpoint?: string;
}

/** Need `transfers`: TRANSFER_STATE_MACHINE_ARN, TRANSFER_STEP_FUNCTIONS (JSON {withdrawal, bridge, deposit, settle}), SFN_ENDPOINT locally. */
export function loadTransfersConfig(env = process.env): TransfersConfig {
  const stateMachineArn = env.TRANSFER_STATE_MACHINE_ARN;
  if (!stateMachineArn || !/^arn:[\w-]+:states:[\w-]*:\d*:stateMachine:[\w-]{1,80}$/.test(stateMachineArn)) {
    throw new ConfigError('Invalid configuration: TRANSFER_STATE_MACHINE_ARN: must be a state machine ARN');
  }
  let json: unknown;
  try {
    json = JSON.parse(env.TRANSFER_STEP_FUNCTIONS ?? '');
  } catch {
    throw new ConfigError('Invalid configuration: TRANSFER_STEP_FUNCTIONS: must be JSON {withdrawal, bridge, deposit, settle}');
  }
  const functions = v.safeParse(FunctionsSchema, json);
  if (!functions.success) throw new ConfigError('Invalid configuration: TRANSFER_STEP_FUNCTIONS: must name withdrawal, bridge, deposit and settle');
  return { stateMachineArn, functions: functions.output, ...(env.SFN_ENDPOINT ? { endpoint: env.SFN_ENDPOINT } : {}) };
}

/**
 * The executor over AWS Step Functions (@aws-sdk/client-sfn); locally the same calls go to the
 * local endpoint (SFN_ENDPOINT).
 */
export class SfnTransferExecutor implements TransferExecutor {
  readonly #config: TransfersConfig;
  readonly #client: SFNClient;

  constructor(config: TransfersConfig, client: SFNClient = new SFNClient(clientEndpoint(config.endpoint))) {
    this.#config = config;
    this.#client = client;
  }

  #get() {
    return { config: this.#config, client: this.#client };
  }

  functions(): StepFunctions {
    return this.#get().config.functions;
  }

  async start(name: string, input: ExecutionInput): Promise<void> {
    const { config, client } = this.#get();
    try {
      await client.send(new StartExecutionCommand({ stateMachineArn: config.stateMachineArn, name, input: JSON.stringify(input) }));
    } catch (error) {
      // Same name, other input (or a closed execution of that name): the attempt was started before.
      if (error instanceof ExecutionAlreadyExists) {
        await this.describe(name);
        return;
      }
      throw error;
    }
  }

  async describe(name: string): Promise<ExecutionStatus | undefined> {
    const { config, client } = this.#get();
    try {
      const out = await client.send(new DescribeExecutionCommand({ executionArn: executionArn(config.stateMachineArn, name) }));
      return out.status as ExecutionStatus | undefined;
    } catch (error) {
      if (error instanceof ExecutionDoesNotExist) return undefined;
      throw error;
    }
  }
}

/** `arn:…:stateMachine:<machine>` → `arn:…:execution:<machine>:<name>`. */
export function executionArn(stateMachineArn: string, name: string): string {
  return `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
}
