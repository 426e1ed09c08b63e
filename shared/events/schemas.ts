import * as v from 'valibot';
import { LimitQuery } from '../http/schemas.ts';
import { EVENT_TYPES, type EventType } from './types.ts';

/** Wire schemas of the events routes (GET /events, POST /webhook-endpoints/{id}/replay), and so of their OpenAPI documents. */
export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 500;

/** A cursor: the seq of the last event read (`next` of the previous page); `0` reads from the oldest event kept. */
export const Cursor = v.pipe(
  v.string('must be a string'),
  v.regex(/^(0|[1-9][0-9]{0,11})$/, 'must be a cursor: the `next` of an earlier page, or 0 for the oldest event kept'),
  v.transform(Number),
);

/** `types=task.completed,task.failed`: a comma-separated list of event types. */
const TypeList = v.pipe(
  v.string('must be a string'),
  v.transform((value) => value.split(',').map((type) => type.trim())),
  v.check(
    (types) => types.every((type) => (EVENT_TYPES as readonly string[]).includes(type)),
    `must list event types, comma-separated, of: ${EVENT_TYPES.join(', ')}`,
  ),
  v.transform((types) => [...new Set(types)] as EventType[]),
);

export const EventsQuery = v.object({
  after: v.optional(v.pipe(Cursor, v.description('Events after this cursor, oldest first. Default 0: from the oldest event kept (30 days in AWS).'))),
  types: v.optional(v.pipe(TypeList, v.description('Only these event types, comma-separated.'))),
  ...LimitQuery(EVENTS_DEFAULT_LIMIT, EVENTS_MAX_LIMIT, ' (our choice)').entries,
});

export const EventResource = v.object({
  id: v.pipe(v.string(), v.description('`evt_<UUIDv7>`: the same in the log, in `webhook-id` and on every retry or replay of a delivery.')),
  type: v.picklist(EVENT_TYPES),
  seq: v.pipe(v.number(), v.description("The event's place in the app's log: 1, 2, 3, … with no gap.")),
  occurred_at: v.string(),
  app_user_id: v.string(),
  resource: v.object({ type: v.picklist(['task', 'withdrawal', 'venue', 'policy_decision']), id: v.string() }),
  data: v.pipe(
    v.record(v.string(), v.unknown()),
    v.description('The resource as the API returns it, as of the change the event reports (a task as GET /task/{id} returns it).'),
  ),
});

export const EventsPage = v.object({
  success: v.literal(true),
  events: v.array(EventResource),
  next: v.pipe(v.string(), v.description('Pass as `after` to read on; the same cursor when there is nothing newer yet.')),
});

/** The body is JSON, so `after` is a number here (a string cursor is taken too). */
export const ReplayRequest = v.object({
  after: v.pipe(
    v.union([
      v.pipe(v.number('must be a cursor'), v.safeInteger('must be a cursor'), v.minValue(0, 'must be a cursor'), v.transform(String)),
      v.string('must be a cursor'),
    ]),
    Cursor,
    v.description('Redeliver the events after this cursor (0: from the oldest kept) that the endpoint subscribes to.'),
  ),
});

export const ReplayResponse = v.object({
  success: v.literal(true),
  id: v.string(),
  replay_id: v.pipe(v.string(), v.description('`rp_<UUIDv7>`: names this replay in logs.')),
  queued: v.pipe(v.number(), v.description('Deliveries queued by this call.')),
  next: v.pipe(v.string(), v.description('The cursor of the last event looked at.')),
  more: v.pipe(v.boolean(), v.description('True when this call stopped at its maximum (1000 events): call again with `after` = `next`.')),
});
