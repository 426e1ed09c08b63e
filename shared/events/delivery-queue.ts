import { ChangeMessageVisibilityCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import type { Delivery, DeliveryQueue } from './publisher.ts';
import { EventResource } from './schemas.ts';

/**
 * Webhook deliveries on an SQS FIFO queue (issue 24): one message per event and endpoint.
 * - MessageGroupId = endpoint + resource: SQS hands out a group's messages one at a time and in
 *   order, and holds the rest of the group while one is in flight or waiting out its backoff
 *   (its visibility timeout), so a resource's events reach an endpoint in `seq` order.
 * - MessageDeduplicationId = endpoint + event (+ the replay): a publisher retry within SQS's
 *   5-minute window queues nothing twice; a replay is a new delivery of the same event (same
 *   `webhook-id`, so the receiver can tell).
 * - The message carries the event as logged (the body the deliverer signs), so a delivery reads
 *   nothing from the log; one whose event would make it longer than MAX_EVENT_MESSAGE_BYTES goes
 *   without it (the deliverer reads it from the log), keeping a batch of 10 under SQS's 256 KiB.
 * In AWS the queue's URL comes from DELIVERY_QUEUE_URL; in the sandbox the same client talks to
 * the sandbox's SQS (infra/local/sqs/) at SQS_ENDPOINT.
 */
export const DeliveryMessageSchema = v.object({
  app_id: v.string(),
  endpoint_id: v.string(),
  event_id: v.string(),
  seq: v.pipe(v.number(), v.integer(), v.minValue(1)),
  replay: v.optional(v.string()),
  event: v.optional(EventResource),
});
export const MAX_EVENT_MESSAGE_BYTES = 24 * 1024;
export type DeliveryMessage = v.InferOutput<typeof DeliveryMessageSchema>;

/** SendMessageBatch takes at most 10 entries. */
const BATCH = 10;

export class SqsDeliveryQueue implements DeliveryQueue {
  private readonly sqs: SQSClient;
  private readonly queueUrl: string;

  constructor(sqs: SQSClient, queueUrl: string) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
  }

  async enqueue(deliveries: readonly Delivery[]): Promise<void> {
    for (let start = 0; start < deliveries.length; start += BATCH) {
      const batch = deliveries.slice(start, start + BATCH);
      const out = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((delivery, index) => {
            const message: DeliveryMessage = {
              app_id: delivery.app_id,
              endpoint_id: delivery.endpoint_id,
              event_id: delivery.event_id,
              seq: delivery.seq,
              ...(delivery.replay ? { replay: delivery.replay } : {}),
            };
            const full = delivery.event ? JSON.stringify({ ...message, event: delivery.event }) : undefined;
            return {
              Id: String(index),
              MessageBody: full && Buffer.byteLength(full) <= MAX_EVENT_MESSAGE_BYTES ? full : JSON.stringify(message),
              MessageGroupId: delivery.group,
              MessageDeduplicationId: `${delivery.endpoint_id}:${delivery.event_id}${delivery.replay ? `:${delivery.replay}` : ''}`,
            };
          }),
        }),
      );
      // A batch can succeed in part: whatever failed is an error of this call, so the stream record is retried.
      if (out.Failed?.length) throw new Error(`SQS refused ${out.Failed.length} of ${batch.length} deliveries: ${out.Failed[0]?.Code}`);
    }
  }

  /** Holds a message back `seconds` (its retry backoff): SQS hands it out again when they have passed. */
  async retryLater(receiptHandle: string, seconds: number): Promise<void> {
    await this.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
  }
}
