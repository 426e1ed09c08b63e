import { WEBHOOK_POST_TIMEOUT_MS } from '../shared/events/types.ts';
import type { RouteNeeds } from './routes.ts';

/**
 * The Lambdas of events and webhooks (issue 24). Not behind API Gateway: the table's stream
 * invokes the publisher, the delivery queue the deliverer (CDK: infra/events-stack.ts, each
 * granted exactly its `needs`; locally the sandbox's stream and queue call the same modules).
 */
export type EventFunctionKind = 'publish' | 'deliver';

export interface EventFunction {
  /** Stable id, used for the Lambda's construct id (PascalCase) and its role's path (key-use.ts). */
  readonly id: string;
  readonly kind: EventFunctionKind;
  /** Handler module, relative to the repository root; it exports `handler`. */
  readonly entry: string;
  readonly needs: RouteNeeds;
}

export const EVENT_FUNCTIONS: readonly EventFunction[] = [
  /**
   * Stream records -> the app's event log and queued deliveries (shared/events/publisher.ts): reads
   * the task the image holds (TASKS#, read only: the outbox entry is already in it) and the app's
   * endpoints (WEBHOOKS#); writes the log (EVENTS#) and each entry's placement (EVENTID#); sends
   * the deliveries (SendMessageBatch). No KMS: it never opens a signing secret.
   */
  {
    id: 'EventsPublish',
    kind: 'publish',
    entry: 'functions/events/publish.ts',
    needs: { table: { reads: ['webhooks'], writes: ['events', 'eventPlacement'] }, deliveryQueue: ['SendMessage'] },
  },
  /**
   * One signed POST per queued delivery (shared/events/deliver.ts): reads the logged event (EVENTS#)
   * and the endpoint (WEBHOOKS#), opens its signing secrets (Decrypt, purpose `webhook-secret`),
   * records the outcome on the endpoint (WEBHOOKS# write) and, on failure, holds the message back
   * for its backoff (ChangeMessageVisibility). Receive, delete and queue attributes come with the
   * event source mapping (infra/events-stack.ts), not from here.
   */
  {
    id: 'EventsDeliver',
    kind: 'deliver',
    entry: 'functions/events/deliver.ts',
    needs: {
      table: { reads: ['events'], writes: ['webhooks'] },
      webhookSecretKey: ['Decrypt'],
      deliveryQueue: ['ChangeMessageVisibility'],
    },
  },
];

/** Standard Webhooks suggests a 15-30 s timeout per delivery attempt; the deliverer waits 15 s (shared/deps/events.ts). */
export const WEBHOOK_POST_TIMEOUT_SECONDS = WEBHOOK_POST_TIMEOUT_MS / 1000;

/** Deliveries per deliverer invocation (the SQS event source's batch size; 10 is the FIFO maximum). */
export const DELIVERY_BATCH_SIZE = 10;
