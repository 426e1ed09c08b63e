import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DELIVERY_BATCH_SIZE, WEBHOOK_POST_TIMEOUT_SECONDS } from '../../functions/events.ts';
import { loadLocalLambda } from './api-gateway.ts';
import { startStreamEventSource } from './dynamodb-stream/event-source.ts';
import type { LocalDynamoDbStream } from './dynamodb-stream/stream.ts';
import type { SandboxIam } from './iam/enforcer.ts';
import { runAsFunction } from './iam/principal.ts';
import { startSqsEventSource } from './sqs/event-source.ts';
import { type LocalSqs, type LocalSqsOptions, startLocalSqs } from './sqs/server.ts';

/**
 * Events in the sandbox (issue 24), the same machinery as in AWS (infra/ events stack):
 * - the table's stream (the sandbox's DynamoDB Streams, infra/local/dynamodb-stream/) drives the
 *   publisher Lambda (functions/events/publish.ts) through an event source mapping with the same
 *   filter (records whose new image has an outbox);
 * - the FIFO delivery queue and its dead-letter queue (the sandbox's SQS, infra/local/sqs/, under
 *   DATA_DIR/sqs) drive the deliverer Lambda (functions/events/deliver.ts).
 * The handlers are the Lambda modules themselves, imported once the handlers' environment is set,
 * each invocation in its own Lambda context.
 *
 * After `kill -9`: queued deliveries are on disk (the queue's journal); a write whose stream
 * record was lost with the process is found by `reconcile`, which replays every item holding an
 * outbox through the publisher at start (idempotent: it logs and queues what was not).
 */
export const DELIVERY_QUEUE = 'webhook-deliveries.fifo';
export const DELIVERY_DLQ = 'webhook-deliveries-dlq.fifo';
/**
 * As the AWS queue (infra/events-stack.ts): 6 × the deliverer's timeout (a batch of 10 POSTs of at
 * most 15 s each, and a margin), so a slow batch is never handed out twice while it runs. A
 * delivery caught in flight by `kill -9` goes out again after it.
 */
const VISIBILITY_SECONDS = 1080;
/** The deliverer's Lambda timeout in AWS (infra/events-stack.ts DELIVERER_TIMEOUT): a batch of POSTs and a margin; the publisher's is shorter. */
const HANDLER_TIMEOUT_MS = (DELIVERY_BATCH_SIZE * WEBHOOK_POST_TIMEOUT_SECONDS + 30) * 1000;

export async function startLocalQueues(dataDir: string, host: string, authorize?: LocalSqsOptions['authorize']): Promise<LocalSqs> {
  return startLocalSqs({
    dataDir,
    host,
    port: 0,
    ...(authorize ? { authorize } : {}),
    queues: [
      { name: DELIVERY_DLQ, visibilityTimeoutSeconds: VISIBILITY_SECONDS, messageRetentionSeconds: 14 * 86_400 },
      {
        name: DELIVERY_QUEUE,
        visibilityTimeoutSeconds: VISIBILITY_SECONDS,
        messageRetentionSeconds: 4 * 86_400,
        redrive: { deadLetterQueue: DELIVERY_DLQ, maxReceiveCount: 30 },
      },
    ],
  });
}

/** The stream records the publisher takes: an insert or change of an item that holds an outbox (the AWS mapping's filter). */
export const hasOutbox = (record: DynamoDBRecord) => record.eventName !== 'REMOVE' && record.dynamodb?.NewImage?.outbox !== undefined;

/** What a DynamoDB stream event source mapping calls with the function's role (Lambda: "Working with DynamoDB streams", execution role). */
const STREAM_READS = ['dynamodb:DescribeStream', 'dynamodb:GetShardIterator', 'dynamodb:GetRecords', 'dynamodb:ListStreams'];

export interface LocalEvents {
  stop(): Promise<void>;
}

/** Starts the publisher and deliverer mappings (call once the handlers' environment is set), then replays unpublished outboxes. */
export async function startLocalEvents(options: {
  readonly stream: LocalDynamoDbStream;
  readonly sqs: LocalSqs;
  readonly tableName: string;
  /**
   * The mappings read as their functions, as Lambda's event source mappings use the function's
   * execution role: the stream's reads (a batch is handed over only if the publisher's role may read
   * the stream; else the batch fails and is retried, as a mapping without the grant does) and the
   * queue's polls (authorised by the local SQS as the deliverer).
   */
  readonly iam?: { readonly iam: SandboxIam; readonly streamArn: string };
}): Promise<LocalEvents> {
  const publish = await loadLocalLambda<DynamoDBStreamEvent, DynamoDBBatchResponse>('functions/events/publish.ts', 'EventsPublish', HANDLER_TIMEOUT_MS);
  const deliver = await loadLocalLambda<SQSEvent, SQSBatchResponse>('functions/events/deliver.ts', 'EventsDeliver', HANDLER_TIMEOUT_MS);
  const reads = options.iam;
  const handler = reads
    ? (event: DynamoDBStreamEvent) => {
        const requests = STREAM_READS.map((action) => ({ action, resource: reads.streamArn, context: {} }));
        const refusal = runAsFunction('EventsPublish', () => reads.iam.authorize(requests));
        if (refusal) throw new Error(`the event source mapping cannot read the table's stream: ${refusal.message}`);
        return publish(event);
      }
    : publish;
  const published = startStreamEventSource({ stream: options.stream, table: options.tableName, handler, batchSize: 10, filter: hasOutbox });
  const delivered = startSqsEventSource({
    sqs: options.sqs,
    queue: DELIVERY_QUEUE,
    handler: deliver,
    batchSize: 10,
    maxConcurrency: 4,
    ...(reads ? { functionId: 'EventsDeliver' } : {}),
  });
  await options.stream.reconcile({ table: options.tableName, filterExpression: 'attribute_exists(outbox)' });
  return {
    stop: async () => {
      await delivered.stop();
      await published.stop();
    },
  };
}
