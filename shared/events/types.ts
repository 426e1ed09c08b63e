import * as v from 'valibot';

/**
 * Events (issue 24): what the service pushes to an app's webhook endpoints and keeps in its
 * replayable log (`GET /events`). The contract, in one module:
 *
 * - An event is born as an OUTBOX ENTRY: `{ id, type, occurred_at }` appended to the `outbox` list
 *   of the very item whose state it reports, in the same conditional write as that change
 *   (shared/events/outbox.ts). A write that fails its condition writes no event; a write that
 *   lands cannot lose one. Entries are appended in write order, so an item's outbox is its
 *   resource's event order.
 * - The PUBLISHER (functions/events/publish.ts; DynamoDB Streams in AWS, the sandbox's stream of
 *   the same records) reads each new entry from the item image of that write, gives it the app's
 *   next `seq` in the event log (gap-free per app) with `data` = the resource as the API returns
 *   it in that image, and queues one delivery per subscribed endpoint.
 * - The DELIVERER (functions/events/deliver.ts) signs each delivery as Standard Webhooks defines
 *   it and POSTs it, retrying with backoff for three days.
 */
export const EVENT_TYPES = [
  'task.created',
  'task.step_updated',
  'task.completed',
  'task.failed',
  'task.cancelled',
  'task.resumed',
  'task.stuck',
  'withdrawal.sent',
  'withdrawal.confirmed',
  'withdrawal.failed',
  'venue.initialized',
  'venue.trading_initialized',
  'policy.denied',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const EventTypeSchema = v.picklist(EVENT_TYPES);

/** What an event is about: `task` (task_id), `withdrawal` (its id), `venue` (`<venue>` of the user), `policy_decision`. */
export type ResourceType = 'task' | 'withdrawal' | 'venue' | 'policy_decision';

/** One entry of an item's `outbox` list: written with the state change, never changed after. */
export interface OutboxEntry {
  /** `evt_<UUIDv7>`: the event's id everywhere (log, `webhook-id` header, duplicates). */
  readonly id: string;
  readonly type: EventType;
  /** ISO 8601, the time of the write that recorded the change. */
  readonly occurred_at: string;
  /** Which resource of the item, when an item holds several (an account's venues: `venue_b`). */
  readonly resource_id?: string;
}

/** The event as the API returns it (`GET /events`) and a webhook delivers it (the body). */
export interface WireEvent {
  readonly id: string;
  readonly type: EventType;
  /** Its place in the app's log: 1, 2, 3, … with no gap. */
  readonly seq: number;
  readonly occurred_at: string;
  readonly app_user_id: string;
  readonly resource: { readonly type: ResourceType; readonly id: string };
  /** The resource as the API returns it, as of the write that recorded the event; never a secret. */
  readonly data: Record<string, unknown>;
}

/** How long the log keeps an event in AWS (DynamoDB TTL on the log item): 30 days. */
export const EVENT_RETENTION_DAYS = 30;

/** At most this many webhook endpoints per app (POST /webhook-endpoints answers 409 ENDPOINT_LIMIT beyond). */
export const MAX_ENDPOINTS_PER_APP = 10;

/** How long a failing delivery is retried, from its first attempt: three days (Standard Webhooks' example schedule is about 75 h). */
export const DELIVERY_RETRY_WINDOW_MS = 3 * 24 * 3600 * 1000;

/** How long the deliverer waits for a receiver's answer (Standard Webhooks suggests 15-30 s). */
export const WEBHOOK_POST_TIMEOUT_MS = 15_000;
