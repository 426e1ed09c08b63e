import { createHash } from 'node:crypto';
import type { Table } from '../db/client.ts';
import type { logger } from '../logger.ts';
import { toDecisionResource } from '../policies/decision-record.ts';
import { toTaskResource } from '../transfers/task.ts';
import { parseTaskItem } from '../transfers/task-record.ts';
import { venueCredentialsView } from '../venues/credentials-view.ts';
import { VENUE_IDS, type VenueId, type VenueStatus } from '../venues/default-status.ts';
import { toWithdrawalResource } from '../withdrawals/withdrawal-record.ts';
import { appendEvent, getPlacement, markQueued, type Placement } from './log.ts';
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
  /** The event as logged: the delivery carries it (shared/events/delivery-queue.ts). */
  readonly event?: WireEvent;
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

/**
 * What an outbox entry of `image` is about, by the item's key: a task item holds one task; an
 * account item holds the user's venues (the entry names which). Undefined for any other item.
 */
export function subjectOf(image: Readonly<Record<string, unknown>>, entry: OutboxEntry): Subject | undefined {
  const pk = typeof image.pk === 'string' ? image.pk : '';
  const sk = typeof image.sk === 'string' ? image.sk : '';
  if (pk.startsWith('TASKS#') && sk.startsWith('TASK#')) {
    const task = parseTaskItem(image);
    return { app_id: task.app_id, app_user_id: task.app_user_id, resource: { type: 'task', id: task.task_id }, data: toTaskResource(task) };
  }
  if (pk.startsWith('ACCOUNT#') && sk === 'ACCOUNT' && isVenue(entry.resource_id)) {
    const statuses = image.perp_dex_status as Record<VenueId, VenueStatus> | undefined;
    return {
      app_id: String(image.app_id),
      app_user_id: String(image.app_user_id),
      resource: { type: 'venue', id: entry.resource_id },
      data: venueCredentialsView(entry.resource_id, statuses?.[entry.resource_id]),
    };
  }
  if (pk.startsWith('WITHDRAWALS#') && sk.startsWith('WD#') && typeof image.app_id === 'string') {
    return {
      app_id: image.app_id,
      app_user_id: String(image.app_user_id),
      resource: { type: 'withdrawal', id: String(image.withdrawal_id) },
      data: toWithdrawalResource(image),
    };
  }
  if (pk.startsWith('POLICYLOG#') && typeof image.app_id === 'string') {
    // A denied signature (shared/enclave/policy-log.ts): the decision as GET /v2/api/policies/decisions lists it.
    const decision = toDecisionResource(image);
    return { app_id: image.app_id, app_user_id: decision.sub ?? '', resource: { type: 'policy_decision', id: sk }, data: { ...decision } };
  }
  return undefined;
}

const isVenue = (value: string | undefined): value is VenueId => (VENUE_IDS as readonly (string | undefined)[]).includes(value);

/**
 * The FIFO group of a delivery: one endpoint and one resource of one user (a venue id alone is
 * shared by every user). Hashed: SQS takes at most 128 characters and app user ids can be longer.
 */
export const deliveryGroup = (endpointId: string, appUserId: string, resource: Subject['resource']) =>
  `${endpointId}:${createHash('sha256').update(`${appUserId}\n${resource.type}\n${resource.id}`).digest('base64url').slice(0, 32)}`;

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
  const appId = typeof image.app_id === 'string' ? image.app_id : '';
  // Entries are published in order, so once one is queued every earlier one is: placements are
  // read from the newest back to the first queued one, and only what follows it is published. The
  // table's stream carries new images only (NEW_IMAGE), so `fresh` is the whole outbox. An entry
  // this process queued (or saw queued) is known without a read: in a warm publisher a write that
  // added no event costs no read, one that added an event one, however long the outbox.
  const queued = queuedIn(deps.table);
  const pending: { readonly entry: OutboxEntry; readonly placed: Placement | undefined }[] = [];
  for (const entry of [...fresh].reverse()) {
    if (queued.has(`${appId}\n${entry.id}`)) break;
    const placed = await getPlacement(deps.table, appId, entry.id);
    if (placed?.queued) {
      remember(queued, `${appId}\n${entry.id}`);
      break;
    }
    pending.unshift({ entry, placed });
  }
  let published = 0;
  const subscribers = new Map<EventType, Promise<readonly Subscription[]>>();
  for (const { entry, placed } of pending) {
    const subject = subjectOf(image, entry);
    if (!subject) {
      deps.logger?.warn('an outbox entry of an item that is no event subject: skipped', { event_id: entry.id, type: entry.type });
      continue;
    }
    const event: Omit<WireEvent, 'seq'> = {
      id: entry.id,
      type: entry.type,
      occurred_at: entry.occurred_at,
      app_user_id: subject.app_user_id,
      resource: subject.resource,
      data: subject.data,
    };
    const logged = await appendEvent(deps.table, { ...event, app_id: subject.app_id }, deps.now(), placed);
    const targets = subscribers.get(entry.type) ?? deps.subscribers.subscribers(subject.app_id, entry.type);
    subscribers.set(entry.type, targets);
    await deps.deliveries.enqueue(
      (await targets).map((target) => ({
        app_id: subject.app_id,
        endpoint_id: target.endpoint_id,
        event_id: entry.id,
        seq: logged.seq,
        group: deliveryGroup(target.endpoint_id, subject.app_user_id, subject.resource),
        event: logged,
      })),
    );
    await markQueued(deps.table, subject.app_id, entry.id);
    remember(queued, `${appId}\n${entry.id}`);
    published++;
  }
  return published;
}

/**
 * Events whose deliveries this process queued or saw queued (app and event id, per table), newest
 * last: what a warm publisher knows without reading placements. Only ever true (a placement is
 * never un-queued), so a forgotten entry costs a read, never a second delivery. Bounded: the
 * oldest are forgotten first.
 */
const queuedByTable = new WeakMap<Table['doc'], Map<string, Set<string>>>();
const QUEUED_REMEMBERED = 10_000;

function queuedIn(table: Table): Set<string> {
  const byName = queuedByTable.get(table.doc) ?? new Map<string, Set<string>>();
  queuedByTable.set(table.doc, byName);
  const queued = byName.get(table.name) ?? new Set<string>();
  byName.set(table.name, queued);
  return queued;
}

function remember(queued: Set<string>, key: string) {
  queued.add(key);
  if (queued.size > QUEUED_REMEMBERED) queued.delete(queued.values().next().value as string);
}

function outboxOf(image: Readonly<Record<string, unknown>> | undefined): OutboxEntry[] {
  const list = image?.[OUTBOX_ATTRIBUTE];
  return Array.isArray(list) ? (list as OutboxEntry[]) : [];
}
