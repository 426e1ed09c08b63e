import { SQSClient } from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import { ConfigError } from '../config.ts';
import type { Table } from '../db/client.ts';
import type { DelivererDeps, DeliveryEndpoints } from '../events/deliver.ts';
import { cachedDeliveryEndpoints } from '../events/delivery-cache.ts';
import { SqsDeliveryQueue } from '../events/delivery-queue.ts';
import { getEndpoint, listEndpoints, markFailing, recordDelivery, signingSecrets, subscribes } from '../events/endpoints.ts';
import type { PublisherDeps, Subscribers } from '../events/publisher.ts';
import { WEBHOOK_POST_TIMEOUT_MS } from '../events/types.ts';
import { createWebhookPost } from '../events/webhook-http.ts';
import { isPublicAddress, loadWebhookUrlMode } from '../events/webhook-url.ts';
import { accountKeyWrapperFromEnv } from './clients.ts';
import { clientEndpoint } from './local-endpoints.ts';
import { systemClock, tableFromEnv } from './table.ts';

/**
 * The composition roots of the event publisher and the webhook deliverer (issue 24,
 * functions/events/*.ts; needs in functions/events.ts), and of the replay route. Each reads only
 * its function's variables:
 *
 * | variable              | who             | what                                                       |
 * |-----------------------|-----------------|------------------------------------------------------------|
 * | TABLE_NAME            | all             | the table (DYNAMODB_ENDPOINT locally)                      |
 * | DELIVERY_QUEUE_URL    | all             | the SQS FIFO delivery queue (infra/events-stack.ts)        |
 * | SQS_ENDPOINT          | all, optional   | a local SQS (the sandbox); unset in AWS                    |
 * | KEY_PROVIDER, ACCOUNT_KMS_KEY_ID | deliverer | opens signing secrets (purpose `webhook-secret`)     |
 * | WEBHOOK_URLS          | deliverer, optional | `public-https` (default: public addresses only) or `sandbox` |
 * | WEBHOOK_BACKOFF_SCALE | deliverer, optional | multiplies retry backoffs (the sandbox's test speed); 1 |
 */
let sqs: SQSClient | undefined;
const sqsClient = (env: NodeJS.ProcessEnv) => (sqs ??= new SQSClient(clientEndpoint(env.SQS_ENDPOINT)));

const EventsEnv = v.object({
  DELIVERY_QUEUE_URL: v.pipe(v.string(), v.url()),
  SQS_ENDPOINT: v.optional(v.pipe(v.string(), v.url())),
  WEBHOOK_BACKOFF_SCALE: v.optional(v.pipe(v.string(), v.regex(/^(0|1|0?\.[0-9]{1,6})$/), v.transform(Number)), '1'),
});

function loadEventsEnv(env: NodeJS.ProcessEnv) {
  const result = v.safeParse(EventsEnv, env);
  if (!result.success) throw new ConfigError(`Invalid configuration: ${result.issues.map((issue) => `${v.getDotPath(issue)}: ${issue.message}`).join('; ')}`);
  return result.output;
}

/** Need `deliveryQueue` (SendMessage): the queue the publisher and replay put deliveries on. */
export function deliveryQueueFromEnv(env = process.env): SqsDeliveryQueue {
  return new SqsDeliveryQueue(sqsClient(env), loadEventsEnv(env).DELIVERY_QUEUE_URL);
}

/** The app's endpoints that take an event type, read from the table. */
export function endpointSubscribers(table: Table): Subscribers {
  return {
    subscribers: async (appId, type) =>
      (await listEndpoints({ table }, appId)).filter((endpoint) => subscribes(endpoint, type)).map((endpoint) => ({ endpoint_id: endpoint.id })),
  };
}

export function publisherDepsFromEnv(env = process.env): PublisherDeps {
  const table = tableFromEnv();
  return { table, subscribers: endpointSubscribers(table), deliveries: deliveryQueueFromEnv(env), now: systemClock };
}

export function delivererDepsFromEnv(env = process.env): DelivererDeps & { retryLater(receiptHandle: string, seconds: number): Promise<void> } {
  const table = tableFromEnv();
  const keyWrapper = accountKeyWrapperFromEnv();
  const queue = deliveryQueueFromEnv(env);
  const endpoints: DeliveryEndpoints = cachedDeliveryEndpoints({
    get: (appId, endpointId) => getEndpoint({ table }, appId, endpointId),
    secrets: (endpoint, now) => signingSecrets({ keyWrapper }, endpoint, now),
    record: (appId, endpointId, outcome) => recordDelivery({ table }, appId, endpointId, outcome),
    markFailing: (appId, endpointId, since) => markFailing({ table }, appId, endpointId, since),
  });
  return {
    table,
    endpoints,
    post: createWebhookPost({ publicOnly: loadWebhookUrlMode(env) === 'public-https', isPublicAddress, timeoutMs: WEBHOOK_POST_TIMEOUT_MS }),
    now: systemClock,
    backoffScale: loadEventsEnv(env).WEBHOOK_BACKOFF_SCALE,
    retryLater: (receiptHandle, seconds) => queue.retryLater(receiptHandle, seconds),
  };
}
