import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { publisherDepsFromEnv } from '../../shared/deps/events.ts';
import { type PublisherDeps, publishImage } from '../../shared/events/publisher.ts';
import { logger } from '../../shared/logger.ts';
import { stepHandler } from '../../shared/transfers/steps/lambda.ts';

/**
 * The table stream's consumer (issue 24): each record's new outbox entries become logged events
 * and queued deliveries (shared/events/publisher.ts). Records are handled in order; the first
 * that fails is reported (ReportBatchItemFailures) and the stream hands it and every later record
 * of its shard back, so no event is skipped and a resource's events keep their order.
 * Needs: table (tasks read, events and placements written, webhooks read), the delivery queue.
 */
export const makePublish =
  (deps: PublisherDeps) =>
  async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    for (const record of event.Records) {
      const image = record.dynamodb?.NewImage;
      if (!image) continue; // a REMOVE: nothing to publish
      try {
        const previous = record.dynamodb?.OldImage;
        await publishImage(
          deps,
          unmarshall(image as Record<string, AttributeValue>),
          previous ? unmarshall(previous as Record<string, AttributeValue>) : undefined,
        );
      } catch (error) {
        logger.warn('publishing a stream record failed; the stream retries it', { error, sequence_number: record.dynamodb?.SequenceNumber });
        return { batchItemFailures: [{ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' }] };
      }
    }
    return { batchItemFailures: [] };
  };

export const handler = stepHandler(makePublish(publisherDepsFromEnv()));
