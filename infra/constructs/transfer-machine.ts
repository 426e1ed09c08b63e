import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ArnFormat, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { TransferStepFunction, TransferStepKind } from '../../functions/transfer-steps.ts';
import { checkTransferDefinition, TRANSFER_SETTLE_LAMBDA_TIMEOUT_SECONDS, TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS } from '../transfer-definition.ts';
import { functionRolePath } from './key-use.ts';
import { type NeedsResources, REPO_ROOT, ServiceFunction, STAR_RESOURCE_REASON } from './service-function.ts';

/** The transfer state machine's definition (JSONPath), the same file the local interpreter runs. */
export const TRANSFER_ASL_FILE = 'statemachines/transfer.asl.json';

/**
 * Each step Lambda's timeout. A step does one submit or one poll per invocation (an enclave
 * signature, a broadcast, a few table writes, one venue/bridge/chain read; each HTTP call has its
 * own shorter timeout), so a minute is ample, and it is not the API functions' 27 s (those answer
 * API Gateway; these answer Step Functions, which waits as long as the Task's TimeoutSeconds).
 * Every Task of the definition must allow at least this long (checked at synth): a Task that
 * timed out while its Lambda still ran would be retried or caught while the first invocation may
 * still be broadcasting.
 */
export const STEP_FUNCTION_TIMEOUT = Duration.seconds(TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS);

/** The settle Lambda's timeout: one conditional update of the task item (infra/transfer-definition.ts, statemachines/README.md). */
export const SETTLE_FUNCTION_TIMEOUT = Duration.seconds(TRANSFER_SETTLE_LAMBDA_TIMEOUT_SECONDS);

/** The timeout of a step kind's Lambda. */
export const stepFunctionTimeout = (kind: TransferStepKind): Duration => (kind === 'settle' ? SETTLE_FUNCTION_TIMEOUT : STEP_FUNCTION_TIMEOUT);

export interface TransferMachineProps {
  /** The step Lambdas (functions/transfer-steps.ts): one per kind. */
  readonly steps: readonly TransferStepFunction[];
  /** What the steps' `needs` refer to (the transfers stack's resources). */
  readonly resources: NeedsResources;
  /** ASL file relative to the repository root. @default TRANSFER_ASL_FILE */
  readonly definitionFile?: string;
}

/**
 * The AWS side of transfers: one Lambda per step kind (functions/transfer-steps.ts, each granted
 * exactly its `needs`, not behind API Gateway) and the Standard state machine of
 * statemachines/transfer.asl.json. The definition picks each step's Lambda from the execution
 * input (`"FunctionName.$"`), so the machine's role is granted lambda:InvokeFunction on exactly
 * these functions (and their versions and aliases), nothing else; the API functions that start
 * executions pass the ARNs from TRANSFER_STEP_FUNCTIONS (`stepFunctionArns`).
 * Logging: ALL events to its own log group, without execution data (inputs and outputs are task
 * references, not secrets, but the task's history lives in the table); X-Ray tracing on.
 */
export class TransferMachine extends Construct {
  readonly stateMachine: StateMachine;
  readonly role: Role;
  readonly logGroup: LogGroup;
  readonly stepFunctions: ReadonlyMap<TransferStepKind, ServiceFunction>;
  /** `arn:…:states:<region>:<account>:execution:<machine name>:*`: the executions of this machine only. */
  readonly executionsArn: string;

  constructor(scope: Construct, id: string, props: TransferMachineProps) {
    super(scope, id);
    const definition = readFileSync(path.join(REPO_ROOT, props.definitionFile ?? TRANSFER_ASL_FILE), 'utf8');
    checkTransferDefinition(definition, STEP_FUNCTION_TIMEOUT.toSeconds());

    const kinds = props.steps.map((step) => step.kind);
    if (new Set(kinds).size !== kinds.length) throw new Error(`transfer steps: one function per kind, got ${kinds.join(', ')}`);
    const stepFunctions = new Map<TransferStepKind, ServiceFunction>();
    for (const step of props.steps) {
      if (step.needs.transfers) throw new Error(`${step.id}: a step function cannot start transfers`);
      const fn = new ServiceFunction(scope, step.id, {
        entry: step.entry,
        service: 'account',
        description: `account: transfer step ${step.kind} (Step Functions)`,
        timeout: stepFunctionTimeout(step.kind),
        rolePath: functionRolePath(Stack.of(props.resources.table).stackName, step.id),
      }).bindNeeds(step.needs, props.resources);
      stepFunctions.set(step.kind, fn);
    }
    this.stepFunctions = stepFunctions;

    this.logGroup = new LogGroup(this, 'Logs', {
      // Step Functions' vended-logs prefix: the log-delivery resource policy then covers it with one entry.
      logGroupName: `/aws/vendedlogs/states/${Stack.of(this).stackName}-Transfers`,
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('states.amazonaws.com'),
      description: 'Transfer state machine: invoke the transfer step functions',
    });
    // The unqualified ARNs only: the execution input names them so (TRANSFER_STEP_FUNCTIONS), and
    // no version or alias is ever invoked, so no `<arn>:*`.
    this.role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [...stepFunctions.values()].map((fn) => fn.lambda.functionArn) }),
    );

    this.stateMachine = new StateMachine(this, 'Machine', {
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: DefinitionBody.fromString(definition),
      role: this.role,
      logs: { destination: this.logGroup, level: LogLevel.ALL, includeExecutionData: false },
      tracingEnabled: true,
      comment: 'Transfers: one Lambda per withdrawal, bridge or deposit step (statemachines/transfer.asl.json)',
    });
    // Logging and tracing add the log-delivery and X-Ray actions, which take Resource "*" only.
    Validations.of(this.role).acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason: STAR_RESOURCE_REASON });

    this.executionsArn = `${Stack.of(this).formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: this.stateMachine.stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    })}:*`;
  }

  /** TRANSFER_STEP_FUNCTIONS: `{ "withdrawal": <function ARN>, "bridge": …, "deposit": …, "settle": … }`. */
  stepFunctionArns(): string {
    return Stack.of(this).toJsonString(Object.fromEntries([...this.stepFunctions].map(([kind, fn]) => [kind, fn.lambda.functionArn])));
  }
}
