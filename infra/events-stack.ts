import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { DELIVERY_BATCH_SIZE, EVENT_FUNCTIONS, type EventFunction, type EventFunctionKind, WEBHOOK_POST_TIMEOUT_SECONDS } from '../functions/events.ts';
import { OUTBOX_ATTRIBUTE } from '../shared/events/outbox.ts';
import { importStrongly, type SharedNeedsResources } from './api-stack.ts';
import { functionRolePath } from './constructs/key-use.ts';
import { type NeedsResources, ServiceFunction } from './constructs/service-function.ts';

/**
 * The deliverer's timeout: a batch is delivered one message after the other (a FIFO group's order,
 * functions/events/deliver.ts), each POST waiting at most WEBHOOK_POST_TIMEOUT_SECONDS, plus 30 s
 * for the table and KMS calls around them.
 */
export const DELIVERER_TIMEOUT = Duration.seconds(DELIVERY_BATCH_SIZE * WEBHOOK_POST_TIMEOUT_SECONDS + 30);

/** Lambda's advice for an SQS event source: the queue's visibility timeout at least 6 times the function's. */
export const DELIVERY_VISIBILITY_TIMEOUT = Duration.seconds(6 * DELIVERER_TIMEOUT.toSeconds());

/**
 * The publisher's timeout: each stream record is a few conditional writes and one SendMessageBatch
 * (tens of milliseconds); a minute leaves room for a full batch under throttling retries.
 */
export const PUBLISHER_TIMEOUT = Duration.seconds(60);

/** Stream records per publisher invocation. */
export const PUBLISH_BATCH_SIZE = 50;

/**
 * Receives beyond which SQS moves a delivery to the dead-letter queue. The deliverer retries a
 * failing delivery about 12 times in its 3-day window and then drops it itself (shared/events/
 * deliver.ts); messages held behind a failing one of their FIFO group are received (and reported
 * failed, unattempted) about as often. 30 leaves that room, so the DLQ catches only messages the
 * deliverer keeps failing on before it can decide (a crash, a timeout, the table or KMS down).
 */
export const DELIVERY_MAX_RECEIVE_COUNT = 30;

/** The deliverer's concurrency cap: bounds the table, KMS and outgoing connections a delivery storm can use. */
export const DELIVERER_MAX_CONCURRENCY = 10;

/** The stream mapping's IteratorAge alarm: the newest record handed to the publisher is older than this. */
export const ITERATOR_AGE_ALARM_MS = 5 * 60 * 1000;

/**
 * Only records whose new image holds an outbox reach the publisher: INSERT and MODIFY (a REMOVE has
 * no new image; TTL deletions of log items are REMOVEs), of items with an `outbox` list whose
 * entries have an `id` string. Lambda's `exists` matches leaf values only, so the pattern names the
 * DynamoDB JSON down to a leaf (`outbox.L[].M.id.S`); a list's elements match if any one does.
 * Everything else (the log's own items, placements, leases, accounts, …) is dropped by the
 * mapping, free of charge, instead of invoking the publisher.
 */
export const PUBLISHER_FILTER = {
  eventName: FilterRule.or('INSERT', 'MODIFY'),
  dynamodb: { NewImage: { [OUTBOX_ATTRIBUTE]: { L: { M: { id: { S: FilterRule.exists() } } } } } },
};

export interface EventsStackProps extends StackProps {
  readonly resources: SharedNeedsResources;
  /** The table whose stream drives the publisher (stream: NEW_IMAGE, infra/stateful-stack.ts). */
  readonly table: ITable;
  /** @default EVENT_FUNCTIONS */
  readonly functions?: readonly EventFunction[];
}

/**
 * Events and webhooks (issue 24): the webhook delivery queue (SQS FIFO) with its dead-letter queue,
 * the publisher on the table's stream, the deliverer on the queue, and their alarms.
 *
 * The queues live here, not in the stateful stack: what they hold is transient and can be rebuilt
 * (every event stays in the table's log for EVENT_RETENTION_DAYS and can be queued again by the
 * replay route), they belong with the two functions that use them, and the stateful stack keeps
 * only what must outlive every deploy. Order: Stateful <- Events <- Account (the replay route
 * sends to the queue), no cycle. About 20 resources (CloudFormation's limit is 500 per stack).
 */
export class EventsStack extends Stack {
  readonly deliveryQueue: Queue;
  readonly deadLetterQueue: Queue;
  readonly functions: ReadonlyMap<EventFunctionKind, ServiceFunction>;
  readonly dlqAlarm: Alarm;
  readonly iteratorAgeAlarm: Alarm;

  constructor(scope: Construct, id: string, props: EventsStackProps) {
    super(scope, id, props);
    importStrongly(this);

    // The DLQ keeps what it catches for SQS's longest retention, for the operator (docs/deploy.md).
    this.deadLetterQueue = new Queue(this, 'DeliveryDeadLetterQueue', {
      fifo: true,
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    // FIFO: a group (endpoint + resource) is handed out one message at a time, in order. No
    // content-based deduplication: the publisher sets MessageDeduplicationId (endpoint + event),
    // so a retried publish queues nothing twice and a replay (new id) is not swallowed.
    // SQS-managed encryption: no KMS key, so no kms: grant for the publisher or the deliverer.
    this.deliveryQueue = new Queue(this, 'DeliveryQueue', {
      fifo: true,
      contentBasedDeduplication: false,
      visibilityTimeout: DELIVERY_VISIBILITY_TIMEOUT,
      // Above the deliverer's 3-day retry window (DELIVERY_RETRY_WINDOW_MS).
      retentionPeriod: Duration.days(4),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: DELIVERY_MAX_RECEIVE_COUNT },
    });

    const stream = props.table.tableStreamArn;
    if (!stream) throw new Error(`${id}: the table has no stream (infra/stateful-stack.ts: stream NEW_IMAGE)`);
    const resources: NeedsResources = {
      ...props.resources,
      // No event function calls the enclave (checked below): no URL to give.
      enclaveUrl: '',
      deliveryQueue: this.deliveryQueue,
    };
    const functions = new Map<EventFunctionKind, ServiceFunction>();
    for (const fn of props.functions ?? EVENT_FUNCTIONS) {
      if (fn.needs.enclaveUrl || fn.needs.transfers) throw new Error(`${fn.id}: an event function calls neither the enclave nor the transfer machine`);
      functions.set(
        fn.kind,
        new ServiceFunction(this, fn.id, {
          entry: fn.entry,
          service: 'account',
          description: `account: events ${fn.kind} (${fn.kind === 'publish' ? 'table stream' : 'SQS delivery queue'})`,
          timeout: fn.kind === 'publish' ? PUBLISHER_TIMEOUT : DELIVERER_TIMEOUT,
          rolePath: functionRolePath(Stack.of(props.resources.table).stackName, fn.id),
        }).bindNeeds(fn.needs, resources),
      );
    }
    this.functions = functions;
    const publisher = functions.get('publish');
    const deliverer = functions.get('deliver');
    if (!publisher || !deliverer) throw new Error(`${id}: one publish and one deliver function, got ${[...functions.keys()].join(', ')}`);

    // The stream mapping: from the oldest record kept (TRIM_HORIZON), one failed record reported at a
    // time (ReportBatchItemFailures; the handler stops at the first failure), no bisecting (the
    // handler already names the failed record), retried until the record leaves the stream (24 h:
    // MaximumRetryAttempts -1, MaximumRecordAgeInSeconds left at its default -1). A record is never
    // skipped while it can still be read, so a resource's events keep their order; a stuck shard
    // shows in the IteratorAge alarm within minutes, hours before its records expire.
    publisher.lambda.addEventSourceMapping('TableStream', {
      eventSourceArn: stream,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: PUBLISH_BATCH_SIZE,
      bisectBatchOnError: false,
      reportBatchItemFailures: true,
      retryAttempts: -1,
      filters: [FilterCriteria.filter(PUBLISHER_FILTER)],
    });
    // What the mapping's poller needs, on this table's streams only (DynamoEventSource would add
    // dynamodb:ListStreams on "*"; the DynamoDB guide scopes all four to `<table>/stream/*`).
    publisher.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'],
        resources: [stream],
      }),
    );

    // The queue mapping: 10 deliveries a batch, failures reported per message (the deliverer has
    // already moved each failed one's visibility to its backoff), at most DELIVERER_MAX_CONCURRENCY at once.
    deliverer.lambda.addEventSourceMapping('DeliveryQueue', {
      eventSourceArn: this.deliveryQueue.queueArn,
      batchSize: DELIVERY_BATCH_SIZE,
      reportBatchItemFailures: true,
      maxConcurrency: DELIVERER_MAX_CONCURRENCY,
    });
    // What the mapping's poller needs (Lambda's SQS execution role permissions); the deliverer's own
    // ChangeMessageVisibility comes from its needs. Not grantConsumeMessages: that adds GetQueueUrl
    // and ChangeMessageVisibility to every consumer whether it holds messages back or not.
    deliverer.role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'], resources: [this.deliveryQueue.queueArn] }),
    );

    // Anything in the DLQ is a delivery the deliverer could not finish or drop itself: look at it
    // (docs/deploy.md, "Events and webhooks"). Missing data is no message, not a breach.
    this.dlqAlarm = new Alarm(this, 'DeadLetterQueueNotEmpty', {
      alarmDescription: 'Webhook deliveries reached the dead-letter queue (docs/deploy.md, "Events and webhooks")',
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    // The publisher is behind: the stream's records wait (a failing record blocks its shard until fixed or expired, 24 h).
    this.iteratorAgeAlarm = new Alarm(this, 'PublisherIteratorAge', {
      alarmDescription: 'The event publisher is more than 5 minutes behind the table stream (docs/deploy.md, "Events and webhooks")',
      metric: publisher.lambda.metric('IteratorAge', { period: Duration.minutes(1), statistic: 'Maximum' }),
      threshold: ITERATOR_AGE_ALARM_MS,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    new CfnOutput(this, 'DeliveryQueueUrl', { value: this.deliveryQueue.queueUrl, description: 'Webhook delivery queue (SQS FIFO)' });
    new CfnOutput(this, 'DeliveryDeadLetterQueueUrl', {
      value: this.deadLetterQueue.queueUrl,
      description: 'Webhook deliveries the deliverer could not finish (docs/deploy.md, "Events and webhooks")',
    });
  }
}
