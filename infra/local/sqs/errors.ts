import { randomUUID } from 'node:crypto';

/**
 * SQS's errors as its AWS JSON 1.0 endpoint sends them
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html):
 * the body's `__type` names the Smithy shape, and `x-amzn-query-error: <query code>;Sender` carries the
 * legacy query code. @aws-sdk/client-sqs is query-compatible: it reads the header's code first and maps
 * it back to its modelled class (`AWS.SimpleQueueService.NonExistentQueue` -> QueueDoesNotExist), so both
 * must be right. Errors common to every AWS API (InvalidParameterValue, MissingParameter, the
 * CommonErrors page) are not modelled by the client: it raises them by their query code, and AWS names
 * their shape in the `com.amazon.coral.service` namespace.
 */
export class SqsError extends Error {
  readonly shape: string;
  readonly code: string;
  readonly status: number;
  readonly fault: 'Sender' | 'Receiver';
  constructor(shape: string, code: string, message: string, status = 400, fault: 'Sender' | 'Receiver' = 'Sender') {
    super(message);
    this.shape = shape;
    this.code = code;
    this.status = status;
    this.fault = fault;
  }
}

const COMMON = 'com.amazon.coral.service';
const SQS = 'com.amazonaws.sqs';

export const invalidParameter = (message: string) => new SqsError(`${COMMON}#InvalidParameterValueException`, 'InvalidParameterValue', message);
export const invalidValue = (name: string, value: unknown, reason: string) =>
  invalidParameter(`Value ${String(value)} for parameter ${name} is invalid. Reason: ${reason}`);
export const missingParameter = (name: string) =>
  new SqsError(`${COMMON}#MissingParameterException`, 'MissingParameter', `The request must contain the parameter ${name}.`);
export const unknownOperation = (target: string) =>
  new SqsError(`${COMMON}#UnknownOperationException`, 'InvalidAction', `The action or operation requested is invalid: ${target}`);
export const serializationError = (message: string) => new SqsError(`${COMMON}#SerializationException`, 'MalformedInput', message);
export const internalError = () => new SqsError(`${COMMON}#InternalFailure`, 'InternalFailure', 'Internal failure', 500, 'Receiver');

export const queueDoesNotExist = () =>
  new SqsError(`${SQS}#QueueDoesNotExist`, 'AWS.SimpleQueueService.NonExistentQueue', 'The specified queue does not exist.');
export const receiptHandleIsInvalid = (handle: string) =>
  new SqsError(`${SQS}#ReceiptHandleIsInvalid`, 'ReceiptHandleIsInvalid', `The input receipt handle "${handle}" is not a valid receipt handle.`, 404);
export const messageNotInflight = () =>
  new SqsError(`${SQS}#MessageNotInflight`, 'AWS.SimpleQueueService.MessageNotInflight', 'The message referred to is not in flight.');
export const invalidAttributeName = (name: string) => new SqsError(`${SQS}#InvalidAttributeName`, 'InvalidAttributeName', `Unknown Attribute ${name}.`);
export const invalidMessageContents = () =>
  new SqsError(
    `${SQS}#InvalidMessageContents`,
    'InvalidMessageContents',
    'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF',
  );
export const emptyBatchRequest = () =>
  new SqsError(`${SQS}#EmptyBatchRequest`, 'AWS.SimpleQueueService.EmptyBatchRequest', 'There should be at least one entry in the request.');
export const tooManyEntriesInBatchRequest = (count: number) =>
  new SqsError(
    `${SQS}#TooManyEntriesInBatchRequest`,
    'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
    `Maximum number of entries per request are 10. You have sent ${count}.`,
  );
export const batchEntryIdsNotDistinct = (id: string) =>
  new SqsError(`${SQS}#BatchEntryIdsNotDistinct`, 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct', `Id ${id} repeated.`);
export const invalidBatchEntryId = () =>
  new SqsError(
    `${SQS}#InvalidBatchEntryId`,
    'AWS.SimpleQueueService.InvalidBatchEntryId',
    'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
  );
export const batchRequestTooLong = (limit: number) =>
  new SqsError(`${SQS}#BatchRequestTooLong`, 'AWS.SimpleQueueService.BatchRequestTooLong', `Batch requests cannot be longer than ${limit} bytes.`);

/** The error as the SQS JSON protocol answers it (status, the query-compatible error header, `__type`). */
export function sqsErrorResponse(error: SqsError): { status: number; headers: Record<string, string>; body: Buffer } {
  return {
    status: error.status,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-query-error': `${error.code};${error.fault}`,
      'x-amzn-requestid': randomUUID(),
    },
    body: Buffer.from(JSON.stringify({ __type: error.shape, message: error.message })),
  };
}
