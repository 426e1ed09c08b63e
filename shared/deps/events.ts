import { SQSClient } from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import { WEBHOOK_POST_TIMEOUT_SECONDS } from '../../functions/events.ts';
import { ConfigError } from '../config.ts';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import type { Table } from '../db/client.ts';
import type { DelivererDeps, DeliveryEndpoints } from '../events/deliver.ts';
import { SqsDeliveryQueue } from '../events/delivery-queue.ts';
import type { PublisherDeps, Subscribers } from '../events/publisher.ts';
import { createWebhookPost } from '../events/webhook-http.ts';
import { accountKeyWrapperFromEnv } from './clients.ts';
import { systemClock, tableFromEnv } from './table.ts';

/**
 * The composition roots of the event publisher and the webhook deliverer (issue 24,
 * functions/events/*.ts; needs in functions/events.ts). Each reads only its function's variables:
 *
 * | variable              | who             | what                                                       |
 * |-----------------------|-----------------|------------------------------------------------------------|
 * | TABLE_NAME            | both            | the table (DYNAMODB_ENDPOINT locally)                      |
 * | DELIVERY_QUEUE_URL    | both            | the SQS FIFO delivery queue (infra/events-stack.ts)        |
 * | SQS_ENDPOINT          | both, optional  | a local SQS (the sandbox); unset in AWS                    |
 * | KEY_PROVIDER, ACCOUNT_KMS_KEY_ID | deliverer | opens signing secrets (purpose `webhook-secret`)     |
 * | WEBHOOK_URLS          | deliverer, optional | `public-https` (default: public addresses only) or `sandbox` |
 * | WEBHOOK_BACKOFF_SCALE | deliverer, optional | multiplies retry backoffs (the sandbox's test speed); 1 |
 */
const QueueEnv = v.object({
  DELIVERY_QUEUE_URL: v.pipe(v.string(), v.url()),
  SQS_ENDPOINT: v.optional(v.pipe(v.string(), v.url())),
});

const DelivererEnv = v.object({
  WEBHOOK_URLS: v.optional(v.picklist(['public-https', 'sandbox']), 'public-https'),
  WEBHOOK_BACKOFF_SCALE: v.optional(v.pipe(v.string(), v.transform(Number), v.number(), v.minValue(0), v.maxValue(1)), '1'),
});

function parse<S extends v.GenericSchema>(schema: S, env: Record<string, string | undefined>): v.InferOutput<S> {
  const result = v.safeParse(schema, env);
  if (!result.success) {
    throw new ConfigError(`Invalid configuration: ${result.issues.map((issue) => `${v.getDotPath(issue) ?? '(env)'}: ${issue.message}`).join('; ')}`);
  }
  return result.output;
}

/** The delivery queue from DELIVERY_QUEUE_URL (and SQS_ENDPOINT locally): one SQS client per container. */
export function deliveryQueueFromEnv(env = process.env): SqsDeliveryQueue {
  const config = parse(QueueEnv, env);
  return new SqsDeliveryQueue(new SQSClient(config.SQS_ENDPOINT ? { endpoint: config.SQS_ENDPOINT } : {}), config.DELIVERY_QUEUE_URL);
}

/**
 * What the publisher and the deliverer need of the webhook endpoint store and the URL rules
 * (shared/events/endpoints.ts and webhook-url.ts, written beside the /webhook-endpoints routes and
 * not in this tree yet). Wire them here, once, by replacing ENDPOINT_STORE_NOT_WIRED:
 * - `subscribers`: the app's endpoints that take an event type (listEndpoints + subscribes);
 * - `deliveryEndpoints`: get, the signing secrets (opened with `keyWrapper`, context
 *   `{ purpose: 'webhook-secret', app_id, endpoint_id }`), recordOutcome (recordDelivery, markFailing);
 * - `isPublicAddress`: the address rule the deliverer's connections are held to in AWS.
 */
export interface EndpointStoreWiring {
  subscribers(table: Table): Subscribers;
  deliveryEndpoints(deps: { readonly table: Table; readonly keyWrapper: KeyWrapper }): DeliveryEndpoints;
  isPublicAddress(address: string): boolean;
}

const notWired = async (): Promise<never> => {
  throw new Error('webhook endpoint store not wired yet (shared/deps/events.ts, EndpointStoreWiring)');
};

/**
 * Until the endpoint store is wired: every publish and delivery fails (the stream and the queue keep
 * the work and retry it; nothing is dropped or delivered unsigned) and no address counts as public.
 * It still cold-starts, so the bundles and their environment are tested as deployed.
 */
export const ENDPOINT_STORE_NOT_WIRED: EndpointStoreWiring = {
  subscribers: () => ({ subscribers: notWired }),
  deliveryEndpoints: () => ({ get: notWired, secrets: notWired, recordOutcome: notWired }),
  isPublicAddress: () => false,
};

/** The table stream's consumer (needs: table, deliveryQueue SendMessage). */
export function publisherDepsFromEnv(wiring: EndpointStoreWiring = ENDPOINT_STORE_NOT_WIRED): PublisherDeps {
  const table = tableFromEnv();
  return { table, subscribers: wiring.subscribers(table), deliveries: deliveryQueueFromEnv(), now: systemClock };
}

/** The delivery queue's consumer (needs: table, webhookSecretKey Decrypt, deliveryQueue ChangeMessageVisibility). */
export function delivererDepsFromEnv(
  wiring: EndpointStoreWiring = ENDPOINT_STORE_NOT_WIRED,
): DelivererDeps & { retryLater(receiptHandle: string, seconds: number): Promise<void> } {
  const table = tableFromEnv();
  const queue = deliveryQueueFromEnv();
  // The account key under purpose `webhook-secret` (ACCOUNT_KMS_KEY_ID; infra/constructs/key-use.ts).
  const keyWrapper = accountKeyWrapperFromEnv();
  const config = parse(DelivererEnv, process.env);
  return {
    table,
    endpoints: wiring.deliveryEndpoints({ table, keyWrapper }),
    post: createWebhookPost({
      publicOnly: config.WEBHOOK_URLS === 'public-https',
      isPublicAddress: (address) => wiring.isPublicAddress(address),
      timeoutMs: WEBHOOK_POST_TIMEOUT_SECONDS * 1000,
    }),
    now: systemClock,
    backoffScale: config.WEBHOOK_BACKOFF_SCALE,
    retryLater: (receiptHandle, seconds) => queue.retryLater(receiptHandle, seconds),
  };
}
