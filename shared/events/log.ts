import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { TABLE_TTL_ATTRIBUTE } from '../db/table-definition.ts';
import { EVENT_RETENTION_DAYS, type EventType, type WireEvent } from './types.ts';

/**
 * The app's event log (`GET /events`): one item per event under `EVENTS#<app_id>`, sk = its seq
 * zero-padded, so a Query reads it in order from any cursor.
 *
 * Gap-free: a seq is taken by a conditional Put of the log item at (highest seq) + 1; of two
 * publishers racing for a seq one wins and the other reads again. Nothing else gives out seqs,
 * so 1, 2, 3, … has no hole (TTL removes the oldest after EVENT_RETENTION_DAYS; `HEAD` keeps the
 * highest seq so a log emptied by TTL never gives one out twice).
 *
 * Once: the event's PLACEMENT (`EVENTID#<app_id>#<event_id>`) records the seq it was given, written
 * before the log item. A redelivered stream record finds it, and the log item it names, and
 * appends nothing; a placement whose log item lost the race (or was never written: a crash in
 * between) is placed again.
 */
const SEQ_DIGITS = 12;
const MAX_SEQ = '9'.repeat(SEQ_DIGITS);
const pad = (seq: number) => String(seq).padStart(SEQ_DIGITS, '0');

export interface Placement {
  readonly seq: number;
  /** The deliveries of this event were queued (shared/events/publisher.ts): a redelivered record queues them no more. */
  readonly queued?: boolean;
}

export async function getPlacement(table: Table, appId: string, eventId: string): Promise<Placement | undefined> {
  const out = await table.doc.send(new GetCommand({ TableName: table.name, Key: keys.eventPlacement(appId, eventId), ConsistentRead: true }));
  return out.Item ? { seq: out.Item.seq as number, ...(out.Item.queued ? { queued: true } : {}) } : undefined;
}

export async function markQueued(table: Table, appId: string, eventId: string): Promise<void> {
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: keys.eventPlacement(appId, eventId),
      UpdateExpression: 'SET queued = :true',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':true': true },
    }),
  );
}

/** The event at `seq`, if the log still holds it. */
export async function getLoggedEvent(table: Table, appId: string, seq: number): Promise<WireEvent | undefined> {
  const out = await table.doc.send(new GetCommand({ TableName: table.name, Key: keys.event(appId, seq), ConsistentRead: true }));
  return out.Item ? toWire(out.Item) : undefined;
}

/**
 * Gives `event` its seq in the app's log, once: returns the event as logged. When its placement,
 * read by the caller, and the log item it names say it was logged already, that is the logged
 * one, with its seq and its data as of then (a later image of the item may differ).
 */
export async function appendEvent(
  table: Table,
  event: Omit<WireEvent, 'seq'> & { readonly app_id: string },
  now: Date,
  placed: Placement | undefined,
): Promise<WireEvent> {
  const logged = placed && (await getLoggedEvent(table, event.app_id, placed.seq));
  if (logged && logged.id === event.id) return logged;
  const seq = await serially(`${table.name}\n${event.app_id}`, () => place(table, event, now));
  const { app_id: _app, ...wire } = event;
  return { ...wire, seq };
}

/**
 * The last seq this process gave in each app's log (by table and app): the next append tries the
 * one after without reading the log. It is never ahead of the log (seqs are only ever added), so
 * it cannot make a gap (a stale guess, another process having appended since, only costs a refused
 * conditional Put and a read). Appends of one app in this process run one after another, so they
 * do not race each other for a seq (shards of the stream run side by side; in AWS one Lambda
 * instance handles one batch at a time anyway).
 */
const lastGiven = new Map<string, number>();
const appendsOf = new Map<string, Promise<unknown>>();

function serially<T>(appId: string, work: () => Promise<T>): Promise<T> {
  const run = (appendsOf.get(appId) ?? Promise.resolve()).then(work);
  const settled = run.catch(() => undefined);
  appendsOf.set(appId, settled);
  void settled.then(() => {
    if (appendsOf.get(appId) === settled) appendsOf.delete(appId);
  });
  return run;
}

async function place(table: Table, event: Omit<WireEvent, 'seq'> & { readonly app_id: string }, now: Date): Promise<number> {
  const ttl = Math.floor(now.getTime() / 1000) + EVENT_RETENTION_DAYS * 24 * 3600;
  const log = `${table.name}\n${event.app_id}`;
  let guess = lastGiven.get(log);
  for (let tries = 0; tries < 50; tries++) {
    const seq = (guess ?? (await highestSeq(table, event.app_id))) + 1;
    guess = undefined; // after a refused guess, read the log
    await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.eventPlacement(event.app_id, event.id), seq, [TABLE_TTL_ATTRIBUTE]: ttl } }));
    const { app_id, ...wire } = event;
    try {
      await table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: { ...keys.event(app_id, seq), ...wire, seq, [TABLE_TTL_ATTRIBUTE]: ttl },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if (isConditionalCheckFailed(error)) continue; // another event took this seq: read the head again
      throw error;
    }
    await raiseHead(table, app_id, seq);
    lastGiven.set(log, seq);
    return seq;
  }
  throw new Error(`event log of app ${event.app_id}: no free seq after 50 tries`);
}

/** The highest seq given so far: the newest log item, or HEAD when TTL has removed every item. */
async function highestSeq(table: Table, appId: string): Promise<number> {
  const [newest, head] = await Promise.all([
    table.doc.send(
      new QueryCommand({
        TableName: table.name,
        KeyConditionExpression: 'pk = :pk AND sk <= :max',
        ExpressionAttributeValues: { ':pk': keys.eventsOf(appId), ':max': MAX_SEQ },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    ),
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.eventHead(appId), ConsistentRead: true })),
  ]);
  return Math.max((newest.Items?.[0]?.seq as number | undefined) ?? 0, (head.Item?.seq as number | undefined) ?? 0);
}

async function raiseHead(table: Table, appId: string, seq: number): Promise<void> {
  try {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: keys.eventHead(appId),
        UpdateExpression: 'SET seq = :seq',
        ConditionExpression: 'attribute_not_exists(seq) OR seq < :seq',
        ExpressionAttributeValues: { ':seq': seq },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error; // a later event raised it already
  }
}

export interface EventPage {
  readonly events: WireEvent[];
  /** The cursor to pass as `after` for the next page: the last seq read (the same cursor when nothing is newer). */
  readonly next: string;
}

/**
 * The app's events after `after` (a seq; 0 = from the oldest kept), oldest first, at most `limit`,
 * only `types` when given. Expired events (past the retention, not yet removed by TTL) are left out.
 */
export async function listEvents(
  table: Table,
  appId: string,
  query: { readonly after: number; readonly limit: number; readonly types?: readonly EventType[] },
  now: Date,
): Promise<EventPage> {
  const events: WireEvent[] = [];
  let last = query.after;
  let start: Record<string, unknown> | undefined;
  const filters = ['(attribute_not_exists(#ttl) OR #ttl > :now)'];
  const names: Record<string, string> = { '#ttl': TABLE_TTL_ATTRIBUTE };
  const values: Record<string, unknown> = {
    ':pk': keys.eventsOf(appId),
    ':from': pad(query.after + 1),
    ':max': MAX_SEQ,
    ':now': Math.floor(now.getTime() / 1000),
  };
  if (query.types?.length) {
    names['#type'] = 'type';
    filters.push(`#type IN (${query.types.map((_, i) => `:type${i}`).join(', ')})`);
    query.types.forEach((type, i) => {
      values[`:type${i}`] = type;
    });
  }
  // A filter can leave a page short: read on until `limit` events or the end of the log.
  do {
    const out = await table.doc.send(
      new QueryCommand({
        TableName: table.name,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :max',
        FilterExpression: filters.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        Limit: query.limit - events.length,
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    for (const item of out.Items ?? []) events.push(toWire(item));
    start = out.LastEvaluatedKey;
    if (start) last = Number(start.sk);
  } while (start && events.length < query.limit);
  last = Math.max(last, events.at(-1)?.seq ?? 0);
  return { events, next: String(last) };
}

function toWire(item: Record<string, unknown>): WireEvent {
  return {
    id: item.id as string,
    type: item.type as EventType,
    seq: item.seq as number,
    occurred_at: item.occurred_at as string,
    app_user_id: item.app_user_id as string,
    resource: item.resource as WireEvent['resource'],
    data: item.data as Record<string, unknown>,
  };
}
