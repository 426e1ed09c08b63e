import { Webhook } from 'standardwebhooks';
import type { Table } from '../db/client.ts';
import type { DeliveryMessage } from './delivery-queue.ts';
import type { DeliveryOutcome, WebhookEndpoint } from './endpoints.ts';
import { getLoggedEvent } from './log.ts';
import { DELIVERY_RETRY_WINDOW_MS } from './types.ts';

/**
 * One webhook delivery (issue 24), as Standard Webhooks defines it: the event as JSON, with
 * `webhook-id` (the event id: the same on every retry and replay, the receiver's idempotency key),
 * `webhook-timestamp` (unix seconds of this attempt) and `webhook-signature` (`v1,<base64>` per
 * signing secret, space-separated: during a rotation the old and the new secret both sign), signed
 * by the `standardwebhooks` package over `id.timestamp.body`.
 *
 * Outcome by status (Standard Webhooks, "retry"): 2xx delivered; 410 Gone: the endpoint is
 * marked failing and the delivery dropped (the receiver said it is gone); anything else, a
 * timeout or a refused connection: retried after the next backoff of RETRY_SCHEDULE_SECONDS,
 * until DELIVERY_RETRY_WINDOW_MS (3 days) from the first attempt, then the endpoint is marked
 * failing and the delivery dropped (the event stays in the log: `GET /events`, replay).
 */
/** What the deliverer needs of the endpoint store (shared/events/endpoints.ts). */
export interface DeliveryEndpoints {
  get(appId: string, endpointId: string): Promise<WebhookEndpoint | undefined>;
  /** The endpoint's signing secrets (`whsec_…`), current first. */
  secrets(endpoint: WebhookEndpoint, now: Date): Promise<string[]>;
  record(appId: string, endpointId: string, outcome: DeliveryOutcome): Promise<unknown>;
  /** Marks it failing: deliveries first attempted at `since` never got a 2xx. */
  markFailing(appId: string, endpointId: string, since: Date): Promise<unknown>;
}

export interface WebhookResponse {
  readonly status: number;
}

/** POSTs `body` to `url` (shared/events/webhook-http.ts): the status, or a throw for no answer (refused, timed out, address not allowed). */
export type WebhookPost = (url: string, headers: Record<string, string>, body: string) => Promise<WebhookResponse>;

export interface DelivererDeps {
  readonly table: Table;
  readonly endpoints: DeliveryEndpoints;
  readonly post: WebhookPost;
  readonly now: () => Date;
  /** Multiplies the backoff (the sandbox's test speed; 1 in AWS). */
  readonly backoffScale: number;
  readonly random?: () => number;
}

/**
 * The waits between attempts, in order (the last one from then on; nextBackoffSeconds picks by time):
 * Standard Webhooks' example schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 12 h, SQS's
 * longest visibility timeout), with ±10 % jitter so a recovering receiver is not hit all at once.
 */
export const RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18_000, 36_000, 43_200] as const;

/**
 * The backoff after a failure `elapsedMs` after the delivery was queued: the first entry of
 * RETRY_SCHEDULE_SECONDS whose running total (scaled) lies beyond the time elapsed. By time, not
 * by SQS's receive count: a message held back behind its group's failing one is received (and
 * counted) without an attempt of its own, and must not start on a later, longer backoff.
 */
export function nextBackoffSeconds(elapsedMs: number, scale: number): number {
  let total = 0;
  for (const seconds of RETRY_SCHEDULE_SECONDS) {
    total += seconds * scale * 1000;
    if (total > elapsedMs) return seconds;
  }
  return RETRY_SCHEDULE_SECONDS[RETRY_SCHEDULE_SECONDS.length - 1] ?? 43_200;
}

export type DeliveryResult =
  | { readonly kind: 'delivered'; readonly status: number }
  | { readonly kind: 'retry'; readonly afterSeconds: number; readonly reason: string }
  | { readonly kind: 'dropped'; readonly reason: string };

export interface Attempt {
  /** SQS ApproximateReceiveCount (logs only: the backoff goes by time, nextBackoffSeconds). */
  readonly number: number;
  /** When the delivery was queued (SQS SentTimestamp, ms): the retry window counts from it. */
  readonly queuedAtMs: number;
}

export async function deliver(deps: DelivererDeps, message: DeliveryMessage, attempt: Attempt): Promise<DeliveryResult> {
  const endpoint = await deps.endpoints.get(message.app_id, message.endpoint_id);
  if (!endpoint) return { kind: 'dropped', reason: 'the endpoint was deleted' };
  // The event as logged rides in the message (shared/events/delivery-queue.ts); one queued without it is read from the log.
  const event = message.event ?? (await getLoggedEvent(deps.table, message.app_id, message.seq));
  if (!event || event.id !== message.event_id || event.seq !== message.seq)
    return { kind: 'dropped', reason: 'the event is no longer in the log (past its retention)' };
  const now = deps.now();
  const body = JSON.stringify(event);
  const signatures = (await deps.endpoints.secrets(endpoint, now)).map((secret) => new Webhook(secret).sign(event.id, now, body));
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'perp-wallet-webhooks/1',
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
  let failure: { status?: number; message: string };
  try {
    const response = await deps.post(endpoint.url, headers, body);
    if (response.status >= 200 && response.status < 300) {
      await deps.endpoints.record(message.app_id, endpoint.id, { at: now, ok: true, status: response.status });
      return { kind: 'delivered', status: response.status };
    }
    failure = { status: response.status, message: `answered ${response.status}` };
    if (response.status === 410) {
      await deps.endpoints.record(message.app_id, endpoint.id, { at: now, ok: false, ...failure });
      await deps.endpoints.markFailing(message.app_id, endpoint.id, new Date(attempt.queuedAtMs));
      return { kind: 'dropped', reason: 'the endpoint answered 410 Gone' };
    }
  } catch (error) {
    failure = { message: error instanceof Error ? error.message : 'no answer' };
  }
  await deps.endpoints.record(message.app_id, endpoint.id, { at: now, ok: false, ...failure });
  if (now.getTime() - attempt.queuedAtMs >= DELIVERY_RETRY_WINDOW_MS) {
    await deps.endpoints.markFailing(message.app_id, endpoint.id, new Date(attempt.queuedAtMs));
    return { kind: 'dropped', reason: `no 2xx in ${DELIVERY_RETRY_WINDOW_MS / 3_600_000} hours of retries (${failure.message})` };
  }
  const base = nextBackoffSeconds(now.getTime() - attempt.queuedAtMs, deps.backoffScale);
  const jitter = 0.9 + 0.2 * (deps.random ?? Math.random)();
  return { kind: 'retry', afterSeconds: Math.min(43_200, Math.round(base * jitter * deps.backoffScale)), reason: failure.message };
}
