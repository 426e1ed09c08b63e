import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { appendEvent, getPlacement, listEvents } from '../../shared/events/log.ts';
import { type Delivery, deliveryGroup, publishImage, type Subscription } from '../../shared/events/publisher.ts';
import type { EventType, WireEvent } from '../../shared/events/types.ts';
import { writeStep } from '../../shared/transfers/steps/store.ts';
import type { TaskRecord } from '../../shared/transfers/task.ts';
import { putTask, settleClosed } from '../../shared/transfers/task-store.ts';
import { DYNAMO_ENGINES, startEngineTable } from './support/dynamodb-engines.ts';

const APP = 'app-events';
const now = () => new Date();

/** The publisher's dependencies on `table`, with `subscribersOf(type)` subscribed to each event type, and the deliveries it queued. */
function publisher(table: Table, subscribersOf: (type: EventType) => Subscription[]) {
  const queued: Delivery[] = [];
  const deps = {
    table,
    subscribers: { subscribers: async (_app: string, type: EventType) => subscribersOf(type) },
    deliveries: { enqueue: async (d: readonly Delivery[]) => void queued.push(...d) },
    now,
  };
  return { queued, deps };
}

function wire(id: string, type: EventType = 'task.created'): Omit<WireEvent, 'seq'> & { app_id: string } {
  return { app_id: APP, id, type, occurred_at: now().toISOString(), app_user_id: 'alice', resource: { type: 'task', id: 'task-1' }, data: {} };
}

function task(appUserId: string): TaskRecord {
  const task_id = uuidv7();
  const at = now().toISOString();
  return {
    entity: 'task',
    task_id,
    user_id: uuidv7(),
    app_id: APP,
    app_user_id: appUserId,
    iss: 'https://issuer.example',
    source: 'self',
    destination: 'venue_b',
    amount: '5',
    chain: 'ARB',
    token: 'USDC',
    gas_sponsored: false,
    status: 'pending',
    created_at: at,
    updated_at: at,
    attempt: 0,
    execution_name: `${task_id}-a0`,
    route: {},
    steps: [{ action: 'deposit', venue: 'venue_b', holding: { chain: 'ARB', token: 'USDC' }, gas_policy: 'user', index: 0, status: 'pending', try: 0 }],
    current_step: 0,
  };
}

describe.each(DYNAMO_ENGINES)('event log and publisher (%s)', (engine) => {
  let table: Table;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ table, stop } = await startEngineTable(engine, 'events'));
  });
  afterAll(() => stop());

  /** Step 0 starts (submitted) and the task is in progress: the write a deposit step's first call makes. */
  const submitStep = (ref: { app_id: string; app_user_id: string; task_id: string }, at: string) =>
    writeStep(table, {
      ref,
      attempt: 0,
      index: 0,
      tryNumber: 0,
      starting: true,
      stepStatusIn: ['pending'],
      step: { status: 'submitted', sends: {} },
      task: { status: 'in_progress' },
      now: at,
    });

  const image = async (t: TaskRecord) =>
    (await table.doc.send(new GetCommand({ TableName: table.name, Key: keys.task(APP, t.app_user_id, t.task_id), ConsistentRead: true }))).Item!;

  it('gives 40 concurrent events the seqs 1..40: no gap, no seq twice', async () => {
    const seqs = await Promise.all(Array.from({ length: 40 }, (_, i) => appendEvent(table, wire(`evt_c${i}`), now(), undefined).then((event) => event.seq)));
    expect([...seqs].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const page = await listEvents(table, APP, { after: 0, limit: 100 }, now());
    expect(page.events.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(page.next).toBe('40');
  });

  it('an event appended again keeps its seq; a placement whose log item another event took is placed anew', async () => {
    const { seq: first } = await appendEvent(table, wire('evt_again'), now(), undefined);
    // Appended again from a later image (other data): the event as logged the first time.
    const again = await appendEvent(table, { ...wire('evt_again'), data: { status: 'later' } }, now(), await getPlacement(table, APP, 'evt_again'));
    expect(again).toEqual({ ...(await listEvents(table, APP, { after: first - 1, limit: 1 }, now())).events[0], seq: first });
    expect(again.data).not.toEqual({ status: 'later' });
    // A crash between the placement and the log item, and another event took that seq meanwhile.
    const taken = first + 1;
    await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.eventPlacement(APP, 'evt_lost'), seq: taken } }));
    expect((await appendEvent(table, wire('evt_other'), now(), undefined)).seq).toBe(taken);
    const placed = await appendEvent(table, wire('evt_lost'), now(), await getPlacement(table, APP, 'evt_lost'));
    expect(placed.seq).toBe(taken + 1);
    const page = await listEvents(table, APP, { after: first - 1, limit: 10 }, now());
    expect(page.events.map((e) => e.id)).toEqual(['evt_again', 'evt_other', 'evt_lost']);
  });

  it('pages by cursor and filters by type; a short filtered page reads on', async () => {
    const base = Number((await listEvents(table, APP, { after: 0, limit: 1000 }, now())).next);
    for (let i = 0; i < 6; i++) await appendEvent(table, wire(`evt_p${i}`, i % 3 === 0 ? 'task.failed' : 'task.step_updated'), now(), undefined);
    const one = await listEvents(table, APP, { after: base, limit: 4 }, now());
    expect(one.events.map((e) => e.id)).toEqual(['evt_p0', 'evt_p1', 'evt_p2', 'evt_p3']);
    const two = await listEvents(table, APP, { after: Number(one.next), limit: 4 }, now());
    expect(two.events.map((e) => e.id)).toEqual(['evt_p4', 'evt_p5']);
    const failed = await listEvents(table, APP, { after: base, limit: 2, types: ['task.failed'] }, now());
    expect(failed.events.map((e) => e.id)).toEqual(['evt_p0', 'evt_p3']);
    const empty = await listEvents(table, APP, { after: Number(two.next), limit: 4 }, now());
    expect(empty).toEqual({ events: [], next: two.next });
  });

  it('publishes what a task write recorded, in write order, with the task as the API returns it; a record handled twice adds nothing', async () => {
    const { queued, deps } = publisher(table, (type) => (type === 'task.failed' ? [] : [{ endpoint_id: 'we_1' }]));
    const t = task('bob');
    await putTask(table, t);
    const created = await image(t);
    const ref = { app_id: APP, app_user_id: 'bob', task_id: t.task_id };
    const at = now().toISOString();
    expect(await submitStep(ref, at)).toBe(true);
    // A write that records a send only: no event.
    expect(
      await writeStep(table, { ref, attempt: 0, index: 0, tryNumber: 0, sends: { deposit_0: { chain: 'ARB', tx_hash: '0xabc', raw: '0x01' } }, now: at }),
    ).toBe(true);
    const submitted = await image(t);
    expect(
      await writeStep(table, {
        ref,
        attempt: 0,
        index: 0,
        tryNumber: 0,
        step: { status: 'completed' },
        task: { current_step: 1, status: 'completed' },
        now: at,
      }),
    ).toBe(true);
    const completed = await image(t);
    // A condition that fails writes no event.
    expect(await settleClosed(table, ref, 0, { status: 'failed', failure: { step: 0, code: 'X', message: 'x' } }, now())).toBe(false);
    expect((await image(t)).outbox).toEqual(completed.outbox);

    expect(await publishImage(deps, created)).toBe(1);
    expect(await publishImage(deps, submitted, created)).toBe(1);
    expect(await publishImage(deps, completed, submitted)).toBe(2);
    expect(await publishImage(deps, completed)).toBe(0); // the sandbox replaying the item after a crash
    expect(await publishImage(deps, completed, submitted)).toBe(0); // the stream handing the record back

    const types = (completed.outbox as { type: string }[]).map((entry) => entry.type);
    expect(types).toEqual(['task.created', 'task.step_updated', 'task.step_updated', 'task.completed']);
    const logged = (await listEvents(table, APP, { after: 0, limit: 1000 }, now())).events.filter((e) => e.resource.id === t.task_id);
    expect(logged.map((e) => e.type)).toEqual(types);
    expect(logged.map((e) => e.seq)).toEqual([...logged.map((e) => e.seq)].sort((a, b) => a - b));
    expect(logged[0]!.data).toMatchObject({ task_id: t.task_id, status: 'pending' });
    expect(logged[3]!.data).toMatchObject({ task_id: t.task_id, status: 'completed' });
    expect(JSON.stringify(logged)).not.toContain('"raw"');
    expect(queued.map((d) => [d.event_id, d.seq, d.group])).toEqual(
      logged.map((e) => [e.id, e.seq, deliveryGroup('we_1', 'bob', { type: 'task', id: t.task_id })]),
    );
    expect(new Set(queued.map((d) => d.group)).size).toBe(1);
    // Each delivery carries its event as logged: the deliverer reads nothing from the log.
    expect(queued.map((d) => d.event)).toEqual(logged);
    expect(deliveryGroup('we_1', 'bob', { type: 'task', id: t.task_id })).toMatch(/^we_1:[A-Za-z0-9_-]{32}$/);
  });

  it('a crash after an event was logged and before its deliveries were queued: republished from a later image, the delivery carries the event as logged', async () => {
    const { queued, deps } = publisher(table, () => [{ endpoint_id: 'we_3' }]);
    const t = task('dave');
    await putTask(table, t);
    const created = await image(t);
    const [entry] = created.outbox as { id: string; type: EventType; occurred_at: string }[];
    // The first publisher logged task.created (the task pending) and died before queueing it.
    const loggedFirst = await appendEvent(
      table,
      {
        app_id: APP,
        id: entry!.id,
        type: entry!.type,
        occurred_at: entry!.occurred_at,
        app_user_id: 'dave',
        resource: { type: 'task', id: t.task_id },
        data: { status: 'pending' },
      },
      now(),
      undefined,
    );
    const ref = { app_id: APP, app_user_id: 'dave', task_id: t.task_id };
    const at = now().toISOString();
    expect(await submitStep(ref, at)).toBe(true);
    expect(await publishImage(deps, await image(t))).toBe(2);
    expect(queued[0]!.event).toEqual(loggedFirst);
    expect(queued[0]!.event!.data).toEqual({ status: 'pending' });
    expect(queued[1]!.event!.data).toMatchObject({ status: 'in_progress' });
  });

  it('publishes a venue event of an account item with the venue as GET /account/perp-credentials shows it, never a secret field', async () => {
    const { queued, deps } = publisher(table, () => [{ endpoint_id: 'we_2' }]);
    const account = {
      pk: 'ACCOUNT#app-events#carol',
      sk: 'ACCOUNT',
      app_id: APP,
      app_user_id: 'carol',
      perp_dex_status: { venue_b: { initialized: true, trade_initialized: true, account_address: '0xabc', agent_private_key: 'must-not-leak' } },
      outbox: [{ id: 'evt_venue1', type: 'venue.trading_initialized', occurred_at: now().toISOString(), resource_id: 'venue_b' }],
    };
    expect(await publishImage(deps, account)).toBe(1);
    const [event] = (await listEvents(table, APP, { after: 0, limit: 1000, types: ['venue.trading_initialized'] }, now())).events;
    expect(event).toMatchObject({ id: 'evt_venue1', app_user_id: 'carol', resource: { type: 'venue', id: 'venue_b' } });
    expect(event?.data).toMatchObject({ dex: 'venue_b', initialized: true, trade_initialized: true, account_address: '0xabc' });
    expect(JSON.stringify(event)).not.toContain('must-not-leak');
    expect(queued).toHaveLength(1);
  });
});
