import type { Table } from '../db/client.ts';
import type { logger } from '../logger.ts';
import { toTaskResource } from '../transfers/task.ts';
import { parseTaskItem } from '../transfers/task-record.ts';
import { appendEvent, getPlacement, markQueued } from './log.ts';
import { OUTBOX_ATTRIBUTE } from './outbox.ts';
import type { EventType, OutboxEntry, ResourceType, WireEvent } from './types.ts';

/**
 * The publisher (issue 24): turns the new outbox entries of one item image into logged events and
 * queued deliveries. Driven by the table's stream (functions/events/publish.ts; in the sandbox the
 * same handler on the sandbox's stream of the same records), one item's records in write order, so
 * a resource's events are logged and queued in the order they were written.
 *
 * Idempotent, so a stream record handled twice (Lambda retries a batch; the sandbox replays items
 * after a crash) logs and queues nothing twice: each entry's placement says whether it was logged
 * (shared/events/log.ts) and whether its deliveries were queued.
 */
export interface Subscription {
  readonly endpoint_id: string;
}

/** The app's endpoints that take an event type (shared/events/endpoints.ts). */
export interface Subscribers {
  subscribers(appId: string, type: EventType): Promise<readonly Subscription[]>;
}

/** One webhook delivery to queue: the event (by app and seq) to one endpoint. */
export interface Delivery {
  readonly app_id: string;
  readonly endpoint_id: string;
  readonly event_id: string;
  readonly seq: number;
  /** Deliveries of one group go out one at a time, in order: one endpoint and one resource. */
  readonly group: string;
  /** Set by a replay: the same event queued again, not deduplicated against its first delivery. */
  readonly replay?: string;
}

export interface DeliveryQueue {
  enqueue(deliveries: readonly Delivery[]): Promise<void>;
}

export interface PublisherDeps {
  readonly table: Table;
  readonly subscribers: Subscribers;
  readonly deliveries: DeliveryQueue;
  readonly now: () => Date;
  readonly logger?: Pick<typeof logger, 'warn'>;
}

/** What an item is an event about, and the resource as the API returns it in this image. */
interface Subject {
  readonly app_id: string;
  readonly app_user_id: string;
  readonly resource: { readonly type: ResourceType; readonly id: string };
  readonly data: Record<string, unknown>;
}

/** The resource an item holds, by its key; undefined for items that carry no events. */
export function subjectOf(image: Readonly<Record<string, unknown>>): Subject | undefined {
  const pk = typeof image.pk === 'string' ? image.pk : '';
  const sk = typeof image.sk === 'string' ? image.sk : '';
  if (pk.startsWith('TASKS#') && sk.startsWith('TASK#')) {
    const task = parseTaskItem(image);
    return { app_id: task.app_id, app_user_id: task.app_user_id, resource: { type: 'task', id: task.task_id }, data: toTaskResource(task) };
  }
  return undefined;
}

export const deliveryGroup = (endpointId: string, resource: Subject['resource']) => `${endpointId}:${resource.type}:${resource.id}`;

/**
 * Publishes the entries of `image`'s outbox that `previous` (the image before the write, when the
 * stream has it) did not hold, in order.
 */
export async function publishImage(
  deps: PublisherDeps,
  image: Readonly<Record<string, unknown>>,
  previous?: Readonly<Record<string, unknown>>,
): Promise<number> {
  const entries = outboxOf(image);
  if (entries.length === 0) return 0;
  const before = new Set(outboxOf(previous).map((entry) => entry.id));
  const fresh = entries.filter((entry) => !before.has(entry.id));
  if (fresh.length === 0) return 0;
  const subject = subjectOf(image);
  if (!subject) {
    deps.logger?.warn('outbox entries on an item that is no event subject', { pk: image.pk, sk: image.sk });
    return 0;
  }
  // Entries are published in order, so when the newest is queued every earlier one is: an image
  // replayed without its previous image (the sandbox after a crash) costs one read.
  const newest = fresh.at(-1)?.id ?? '';
  if ((await getPlacement(deps.table, subject.app_id, newest))?.queued) return 0;
  let published = 0;
  for (const entry of fresh) {
    const placed = await getPlacement(deps.table, subject.app_id, entry.id);
    if (placed?.queued) continue;
    const event: Omit<WireEvent, 'seq'> = {
      id: entry.id,
      type: entry.type,
      occurred_at: entry.occurred_at,
      app_user_id: subject.app_user_id,
      resource: subject.resource,
      data: subject.data,
    };
    const seq = await appendEvent(deps.table, { ...event, app_id: subject.app_id }, deps.now(), placed);
    const targets = await deps.subscribers.subscribers(subject.app_id, entry.type);
    await deps.deliveries.enqueue(
      targets.map((target) => ({
        app_id: subject.app_id,
        endpoint_id: target.endpoint_id,
        event_id: entry.id,
        seq,
        group: deliveryGroup(target.endpoint_id, subject.resource),
      })),
    );
    await markQueued(deps.table, subject.app_id, entry.id);
    published++;
  }
  return published;
}

function outboxOf(image: Readonly<Record<string, unknown>> | undefined): OutboxEntry[] {
  const list = image?.[OUTBOX_ATTRIBUTE];
  return Array.isArray(list) ? (list as OutboxEntry[]) : [];
}
