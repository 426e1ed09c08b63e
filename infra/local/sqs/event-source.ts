import { DeleteMessageBatchCommand, type Message, type MessageAttributeValue, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import { clientEndpoint } from '../../../shared/deps/local-endpoints.ts';
import { runAsFunction } from '../iam/principal.ts';
import type { LocalSqs } from './server.ts';

/**
 * Lambda's SQS event source mapping for the sandbox, with `FunctionResponseTypes:
 * ["ReportBatchItemFailures"]`, through the real @aws-sdk/client-sqs against the local SQS (so the
 * handler sees what AWS would give it). As the Lambda Developer Guide documents it ("Using Lambda
 * with Amazon SQS", "Handling errors for an SQS event source"):
 * - pollers long-poll (20 s) and invoke the handler with up to `batchSize` records;
 * - the messages the handler does not report in `batchItemFailures` are deleted; the reported ones
 *   stay and come back when their visibility timeout (perhaps changed by the handler) ends;
 * - a throw, an invalid response, or an itemIdentifier that is empty or not in the batch fails the
 *   whole batch; an empty or null response is a full success;
 * - FIFO: a batch holds messages in group order, and once one fails, every later message of its group
 *   in the batch counts as failed too, so a group never skips ahead.
 * Not modelled: batching windows and batches above 10 (one ReceiveMessage each), scaling of pollers.
 */
export interface SqsEventSourceOptions {
  readonly sqs: LocalSqs;
  readonly queue: string;
  // biome-ignore lint/suspicious/noConfusingVoidType: aws-lambda's SQSHandler returns this, so a Lambda handler passes as it is
  readonly handler: (event: SQSEvent) => Promise<SQSBatchResponse | void>;
  /** Records per invocation, 1-10 (default 1). */
  readonly batchSize?: number;
  /** Batches in progress at once (default 2, Lambda's minimum MaximumConcurrency for SQS). */
  readonly maxConcurrency?: number;
  /** A failed invocation or an SQS call the source could not make (default: one line on stderr, name and message only). */
  readonly onError?: (error: unknown) => void;
  /**
   * The function whose role the mapping polls with (as Lambda's event source mapping uses the
   * function's execution role): its SQS calls are authorised as that function (infra/local/iam/).
   */
  readonly functionId?: string;
}

export interface SqsEventSource {
  /**
   * Resolves once the source has nothing to do now: no batch in progress, nothing receivable in the
   * queue by its clock, and every message the queue handed out was seen by the source (so this assumes
   * the source is the queue's only consumer). For tests.
   */
  idle(): Promise<void>;
  /** Stops polling and waits for the batches in progress. */
  stop(): Promise<void>;
}

const WAIT_TIME_SECONDS = 20;
const RETRY_AFTER_ERROR_MS = 1000;

export function startSqsEventSource(options: SqsEventSourceOptions): SqsEventSource {
  const { sqs, queue, handler } = options;
  const batchSize = options.batchSize ?? 1;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10) throw new Error('batchSize: 1-10 for the local SQS event source');
  const concurrency = options.maxConcurrency ?? 2;
  const queueUrl = sqs.queueUrl(queue);
  const eventSourceARN = sqs.queueArn(queue);
  const fifo = queue.endsWith('.fifo');
  const onError = options.onError ?? ((error: unknown) => console.error(`sqs event source ${queue}: ${describe(error)}`));
  const client = new SQSClient({ ...clientEndpoint(sqs.endpoint), region: sqs.region, credentials: { accessKeyId: 'sandbox', secretAccessKey: 'sandbox' } });
  const abort = new AbortController();
  const baseline = sqs.stats(queue).delivered;
  let stopped = false;
  let seen = 0;
  let active = 0;

  const toRecord = (message: Message): SQSRecord => ({
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: (message.Attributes ?? {}) as unknown as SQSRecordAttributes,
    messageAttributes: lambdaAttributes(message.MessageAttributes),
    md5OfBody: message.MD5OfBody!,
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN,
    awsRegion: sqs.region,
  });

  const runBatch = async (messages: readonly Message[]) => {
    const records = messages.map(toRecord);
    let failed: Set<string>;
    try {
      failed = failuresOf(await handler({ Records: records }), records);
    } catch (error) {
      onError(error);
      failed = new Set(records.map((record) => record.messageId));
    }
    if (fifo && failed.size > 0) {
      const failedGroups = new Set<string>();
      for (const record of records) {
        const group = record.attributes.MessageGroupId!;
        if (failed.has(record.messageId)) failedGroups.add(group);
        else if (failedGroups.has(group)) failed.add(record.messageId);
      }
    }
    const done = records.filter((record) => !failed.has(record.messageId));
    if (done.length === 0) return;
    const deleted = await client.send(
      new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: done.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })) }),
    );
    // A handler slower than the visibility timeout finds its handle expired: the message comes back, as on Lambda.
    for (const failure of deleted.Failed ?? []) onError(new Error(`DeleteMessage ${failure.Code}: ${failure.Message}`));
  };

  const poll = async () => {
    while (!stopped) {
      let messages: Message[];
      try {
        const received = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: batchSize,
            WaitTimeSeconds: WAIT_TIME_SECONDS,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: abort.signal },
        );
        messages = received.Messages ?? [];
      } catch (error) {
        if (stopped) return;
        onError(error);
        await sleep(RETRY_AFTER_ERROR_MS, abort.signal); // a down endpoint must not turn into a busy loop
        continue;
      }
      if (messages.length === 0) continue;
      seen += messages.length;
      active += 1;
      try {
        await runBatch(messages);
      } catch (error) {
        onError(error);
      } finally {
        active -= 1;
      }
    }
  };

  const pollers = Array.from({ length: concurrency }, () => (options.functionId ? runAsFunction(options.functionId, poll) : poll()));

  return {
    idle: async () => {
      for (;;) {
        sqs.wake(queue);
        const stats = sqs.stats(queue);
        if (active === 0 && stats.receivable === 0 && stats.delivered - baseline === seen) return;
        await sleep(5);
      }
    },
    stop: async () => {
      stopped = true;
      abort.abort();
      await Promise.all(pollers);
      client.destroy();
    },
  };
}

/** Lambda's reading of a ReportBatchItemFailures response: the ids to leave in the queue. */
function failuresOf(response: unknown, records: readonly SQSRecord[]): Set<string> {
  const all = new Set(records.map((record) => record.messageId));
  if (response === undefined || response === null) return new Set();
  if (typeof response !== 'object' || Array.isArray(response)) return all;
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return all;
  const failed = new Set<string>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || !all.has(id)) return all;
    failed.add(id);
  }
  return failed;
}

function lambdaAttributes(attributes: Record<string, MessageAttributeValue> | undefined): SQSMessageAttributes {
  const out: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(attributes ?? {})) {
    out[name] = {
      dataType: value.DataType!,
      ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
      ...(value.BinaryValue === undefined ? {} : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
      stringListValues: [],
      binaryListValues: [],
    };
  }
  return out;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : 'non-Error thrown';
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        done();
      },
      { once: true },
    );
  });
}
