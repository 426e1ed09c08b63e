import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as v from 'valibot';
import { delivererDepsFromEnv } from '../../shared/deps/events.ts';
import { type DelivererDeps, deliver } from '../../shared/events/deliver.ts';
import { DeliveryMessageSchema } from '../../shared/events/delivery-queue.ts';
import { logger } from '../../shared/logger.ts';
import { stepHandler } from '../../shared/transfers/steps/lambda.ts';

/**
 * The delivery queue's consumer (issue 24): one signed POST per message (shared/events/deliver.ts).
 * A failed attempt sets the message's visibility timeout to its backoff and reports it failed
 * (ReportBatchItemFailures): SQS hands it out again when the backoff has passed, and, the queue
 * being FIFO, holds the later events of the same endpoint and resource until then. Once one
 * message of a group fails, the later ones of that group in the batch are reported failed
 * unattempted, as Lambda requires for FIFO queues.
 * Needs: table (events and webhooks read, webhooks written), KMS Decrypt (sealed secrets), the queue.
 */
export interface DeliverHandlerDeps extends DelivererDeps {
  retryLater(receiptHandle: string, seconds: number): Promise<void>;
}

export const makeDeliver =
  (deps: DeliverHandlerDeps) =>
  async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const failures: { itemIdentifier: string }[] = [];
    const blockedGroups = new Set<string>();
    for (const record of event.Records) {
      const group = record.attributes.MessageGroupId ?? '';
      if (blockedGroups.has(group)) {
        // Released at once: it stays behind its group's failed message, which is in flight for its
        // backoff, so it goes out right after that one's retry. Left as received, it would wait
        // the queue's whole visibility timeout (90 s in the sandbox) after that retry succeeded.
        // Best effort: if the release fails, the visibility timeout brings it back as before.
        await deps.retryLater(record.receiptHandle, 0).catch(() => undefined);
        failures.push({ itemIdentifier: record.messageId });
        continue;
      }
      let message: v.InferOutput<typeof DeliveryMessageSchema>;
      try {
        message = v.parse(DeliveryMessageSchema, JSON.parse(record.body));
      } catch {
        logger.error('undeliverable message on the delivery queue: dropped', { message_id: record.messageId });
        continue; // not ours to retry: a retry would fail the same way
      }
      try {
        const result = await deliver(deps, message, {
          number: Number(record.attributes.ApproximateReceiveCount ?? '1'),
          queuedAtMs: Number(record.attributes.SentTimestamp ?? Date.now()),
        });
        if (result.kind === 'retry') {
          await deps.retryLater(record.receiptHandle, result.afterSeconds);
          failures.push({ itemIdentifier: record.messageId });
          blockedGroups.add(group);
          logger.info('webhook delivery failed; retried later', {
            endpoint_id: message.endpoint_id,
            event_id: message.event_id,
            after_seconds: result.afterSeconds,
            reason: result.reason,
          });
        } else if (result.kind === 'dropped') {
          logger.warn('webhook delivery dropped', { endpoint_id: message.endpoint_id, event_id: message.event_id, reason: result.reason });
        }
      } catch (error) {
        // Our own trouble (the table, KMS): the queue's visibility timeout retries it.
        logger.warn('webhook delivery could not be attempted', { error, endpoint_id: message.endpoint_id, event_id: message.event_id });
        failures.push({ itemIdentifier: record.messageId });
        blockedGroups.add(group);
      }
    }
    return { batchItemFailures: failures };
  };

export const handler = stepHandler(makeDeliver(delivererDepsFromEnv()));
