import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { IRestApi } from 'aws-cdk-lib/aws-apigateway';
import type { Construct } from 'constructs';
import type { TransferStepFunction } from '../functions/transfer-steps.ts';
import { importStrongly, type SharedNeedsResources, stageUrl } from './api-stack.ts';
import type { NeedsResources, TransferResources } from './constructs/service-function.ts';
import { TransferMachine } from './constructs/transfer-machine.ts';

export interface TransfersStackProps extends StackProps {
  /** The step Lambdas (functions/transfer-steps.ts): one per kind. */
  readonly steps: readonly TransferStepFunction[];
  readonly resources: SharedNeedsResources;
  /** The enclave's REST API: the signing steps call it (TEE_URL). */
  readonly enclaveApi: IRestApi;
}

/**
 * Transfers: the Standard state machine of statemachines/transfer.asl.json and its step Lambdas
 * (infra/constructs/transfer-machine.ts), behind no API. The account service's transfer routes
 * start and describe its executions (`transfers`: TransfersStack.transferResources).
 */
export class TransfersStack extends Stack {
  readonly transfers: TransferMachine;
  /** What a `needs` may refer to in this stack. */
  readonly needsResources: NeedsResources;
  /** What the `transfers` need binds: the machine, its executions' ARN, the step functions by kind. */
  readonly transferResources: TransferResources;

  constructor(scope: Construct, id: string, props: TransfersStackProps) {
    super(scope, id, props);
    importStrongly(this);
    this.needsResources = { ...props.resources, enclaveUrl: stageUrl(props.enclaveApi, this) };
    this.transfers = new TransferMachine(this, 'Transfers', { steps: props.steps, resources: this.needsResources });
    this.transferResources = {
      stateMachine: this.transfers.stateMachine,
      executionsArn: this.transfers.executionsArn,
      stepFunctionArns: this.transfers.stepFunctionArns(),
    };
    new CfnOutput(this, 'TransferStateMachineArn', {
      value: this.transfers.stateMachine.stateMachineArn,
      description: 'Transfer state machine (redrive, stop: docs/deploy.md)',
    });
  }
}
