import { SQSClient } from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import { ConfigError } from '../config.ts';
import type { Table } from '../db/client.ts';
import type { DelivererDeps, DeliveryEndpoints } from '../events/deliver.ts';
import { SqsDeliveryQueue } from '../events/delivery-queue.ts';
import { getEndpoint, listEndpoints, markFailing, recordDelivery, signingSecrets, subscribes } from '../events/endpoints.ts';
import type { PublisherDeps, Subscribers } from '../events/publisher.ts';
import { createWebhookPost } from '../events/webhook-http.ts';
import { isPublicAddress, loadWebhookUrlMode } from '../events/webhook-url.ts';
import { accountKeyWrapperFromEnv } from './clients.ts';
import { systemClock, tableFromEnv } from './table.ts';

/**
 * The events functions' dependencies (issue 24), built once per container from the environment:
 * DELIVERY_QUEUE_URL (the FIFO delivery queue), SQS_ENDPOINT (the sandbox's SQS; absent in AWS),
 * WEBHOOK_URLS (public-https in AWS: deliveries connect to public addresses only), and
 * WEBHOOK_BACKOFF_SCALE (the sandbox's test speed: multiplies the retry backoff; 1 in AWS).
 */
let sqs: SQSClient | undefined;
const sqsClient = (env: NodeJS.ProcessEnv) => (sqs ??= new SQSClient(env.SQS_ENDPOINT ? { endpoint: env.SQS_ENDPOINT } : {}));

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
  const endpoints: DeliveryEndpoints = {
    get: (appId, endpointId) => getEndpoint({ table }, appId, endpointId),
    secrets: (endpoint, now) => signingSecrets({ keyWrapper }, endpoint, now),
    record: (appId, endpointId, outcome) => recordDelivery({ table }, appId, endpointId, outcome),
    markFailing: (appId, endpointId, since) => markFailing({ table }, appId, endpointId, since),
  };
  return {
    table,
    endpoints,
    post: createWebhookPost({ publicOnly: loadWebhookUrlMode(env) === 'public-https', isPublicAddress, timeoutMs: 15_000 }),
    now: systemClock,
    backoffScale: loadEventsEnv(env).WEBHOOK_BACKOFF_SCALE,
    retryLater: (receiptHandle, seconds) => queue.retryLater(receiptHandle, seconds),
  };
}
