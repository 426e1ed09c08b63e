import type { AccessRequest } from './dynamodb.ts';

/**
 * What AWS authorises for an SQS or Step Functions request of the JSON protocol (the operation
 * from `X-Amz-Target`, the body as sent), from each service's "Actions, resources, and condition
 * keys" page: an SQS action on the queue's ARN (a batch is its single action:
 * SendMessageBatch is `sqs:SendMessage`); a Step Functions action on the state machine
 * (StartExecution) or the execution (DescribeExecution, StopExecution) it names.
 */
const SQS_BATCHES: Readonly<Record<string, string>> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

export function sqsAccessRequests(operation: string, body: { readonly QueueUrl?: string }, queueArn: (name: string) => string): AccessRequest[] {
  const name = body.QueueUrl ? new URL(body.QueueUrl).pathname.split('/').at(-1) : undefined;
  return [{ action: `sqs:${SQS_BATCHES[operation] ?? operation}`, resource: name ? queueArn(name) : '*', context: {} }];
}

export function stepFunctionsAccessRequests(operation: string, body: { readonly stateMachineArn?: string; readonly executionArn?: string }): AccessRequest[] {
  return [{ action: `states:${operation}`, resource: body.stateMachineArn ?? body.executionArn ?? '*', context: {} }];
}
