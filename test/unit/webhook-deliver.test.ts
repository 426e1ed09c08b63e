import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Table } from '../../shared/db/client.ts';
import { type DelivererDeps, deliver, nextBackoffSeconds, RETRY_SCHEDULE_SECONDS } from '../../shared/events/deliver.ts';
import { cachedDeliveryEndpoints, ENDPOINT_TTL_MS, RECORD_MS, SECRET_TTL_MS } from '../../shared/events/delivery-cache.ts';
import type { DeliveryOutcome, WebhookEndpoint } from '../../shared/events/endpoints.ts';
import { appendEvent } from '../../shared/events/log.ts';
import { DELIVERY_RETRY_WINDOW_MS } from '../../shared/events/types.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

const APP = 'app-deliver';
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const endpoint = { id: 'we_1', app_id: APP, url: 'https://hooks.example/x', status: 'enabled' } as WebhookEndpoint;

describe('the deliverer (shared/events/deliver.ts)', () => {
  let table: Table;
  let stop: () => Promise<void>;
  let seq: number;
  beforeAll(async () => {
    ({ table, stop } = await startDynaliteTable('deliver'));
    seq = await appendEvent(
      table,
      {
        app_id: APP,
        id: 'evt_a',
        type: 'task.completed',
        occurred_at: '2026-11-28T00:00:00.000Z',
        app_user_id: 'alice',
        resource: { type: 'task', id: 't1' },
        data: { status: 'completed' },
      },
      new Date(),
      undefined,
    ).then((event) => event.seq);
  });
  afterAll(() => stop());

  function harness(answer: number | Error, now = new Date()) {
    const posts: { url: string; headers: Record<string, string>; body: string }[] = [];
    const outcomes: DeliveryOutcome[] = [];
    const failing: Date[] = [];
    const deps: DelivererDeps = {
      table,
      now: () => now,
      backoffScale: 1,
      random: () => 0.5,
      endpoints: {
        get: async (_app, id) => (id === endpoint.id ? endpoint : undefined),
        secrets: async () => [SECRET, OLD_SECRET],
        record: async (_app, _id, outcome) => void outcomes.push(outcome),
        markFailing: async (_app, _id, since) => void failing.push(since),
      },
      post: async (url, headers, body) => {
        posts.push({ url, headers, body });
        if (answer instanceof Error) throw answer;
        return { status: answer };
      },
    };
    return { deps, posts, outcomes, failing };
  }
  const message = () => ({ app_id: APP, endpoint_id: 'we_1', event_id: 'evt_a', seq });

  it('a 2xx delivers: signed by both secrets of a rotation, verifiable with standardwebhooks by either', async () => {
    const { deps, posts, outcomes } = harness(204);
    expect(await deliver(deps, message(), { number: 1, queuedAtMs: Date.now() })).toEqual({ kind: 'delivered', status: 204 });
    const [post] = posts;
    expect(post!.headers['webhook-id']).toBe('evt_a');
    expect(post!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [SECRET, OLD_SECRET]) expect(new Webhook(secret).verify(post!.body, post!.headers)).toMatchObject({ id: 'evt_a', seq });
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(post!.body, post!.headers)).toThrow();
    expect(outcomes).toMatchObject([{ ok: true, status: 204 }]);
  });

  it('anything else is retried on the schedule, by time since queued; after 3 days the endpoint is failing and the delivery dropped', async () => {
    const queued = Date.now();
    for (const [answer, afterMs, backoff] of [
      [500, 0, 5],
      [new Error('connect ECONNREFUSED'), 10_000, 300],
      [302, 400_000, 1800],
      [429, 30 * 3600_000, 43_200],
    ] as const) {
      const { deps, failing } = harness(answer, new Date(queued + afterMs));
      const result = await deliver(deps, message(), { number: 9, queuedAtMs: queued });
      expect(result, String(answer)).toMatchObject({ kind: 'retry', afterSeconds: backoff });
      expect(failing).toEqual([]);
    }
    const late = harness(500, new Date(queued + DELIVERY_RETRY_WINDOW_MS));
    expect(await deliver(late.deps, message(), { number: 12, queuedAtMs: queued })).toMatchObject({ kind: 'dropped' });
    expect(late.failing).toEqual([new Date(queued)]);
  });

  it('410 Gone marks the endpoint failing at once; a deleted endpoint or an event gone from the log drops the delivery unsent', async () => {
    const gone = harness(410);
    expect(await deliver(gone.deps, message(), { number: 1, queuedAtMs: Date.now() })).toMatchObject({ kind: 'dropped' });
    expect(gone.failing).toHaveLength(1);
    const deleted = harness(204);
    expect(await deliver(deleted.deps, { ...message(), endpoint_id: 'we_gone' }, { number: 1, queuedAtMs: Date.now() })).toMatchObject({ kind: 'dropped' });
    expect(await deliver(deleted.deps, { ...message(), seq: seq + 100 }, { number: 1, queuedAtMs: Date.now() })).toMatchObject({ kind: 'dropped' });
    expect(deleted.posts).toEqual([]);
  });

  it('nextBackoffSeconds walks the schedule by elapsed time, scaled, and stays at its last entry', () => {
    expect(nextBackoffSeconds(0, 1)).toBe(RETRY_SCHEDULE_SECONDS[0]);
    expect(nextBackoffSeconds(5_001, 1)).toBe(RETRY_SCHEDULE_SECONDS[1]);
    expect(nextBackoffSeconds(10 * 86_400_000, 1)).toBe(43_200);
    expect(nextBackoffSeconds(6, 0.001)).toBe(RETRY_SCHEDULE_SECONDS[1]);
  });

  it('a warm deliverer reads an endpoint once per 5 s, opens its secrets once (again after a rotation or 5 minutes), and records an outcome when it changes or once a minute', async () => {
    let opened = 0;
    let reads = 0;
    const recorded: DeliveryOutcome[] = [];
    let clock = 1_000_000;
    let current = { ...endpoint, secret: { sealed: { wrapped_key: 'k1', secrets: {} }, created_at: '' } } as WebhookEndpoint;
    const cache = cachedDeliveryEndpoints(
      {
        get: async () => {
          reads++;
          return current;
        },
        secrets: async () => [`secret-${++opened}`],
        record: async (_app, _id, outcome) => void recorded.push(outcome),
        markFailing: async () => undefined,
      },
      () => clock,
    );
    const now = new Date();
    const ok = { at: now, ok: true, status: 204 };
    const failed = { at: now, ok: false, status: 500 };
    const once = async () => {
      const found = (await cache.get(APP, 'we_1'))!;
      return cache.secrets(found, now);
    };
    expect(await once()).toEqual(['secret-1']);
    expect(await once()).toEqual(['secret-1']);
    expect(reads).toBe(1);
    await cache.record(APP, 'we_1', ok);
    await cache.record(APP, 'we_1', ok);
    expect(recorded).toHaveLength(1); // then not again within a minute
    await cache.record(APP, 'we_1', failed);
    await cache.record(APP, 'we_1', failed); // the same again within a minute: not written
    await cache.record(APP, 'we_1', ok); // a success after a failure: recorded
    expect(recorded.map((o) => o.ok)).toEqual([true, false, true]);
    current = { ...current, secret: { sealed: { wrapped_key: 'k2', secrets: {} }, created_at: '' } } as WebhookEndpoint; // rotated
    expect(await once()).toEqual(['secret-1']); // the endpoint item as read less than 5 s ago
    clock += ENDPOINT_TTL_MS;
    expect(await once()).toEqual(['secret-2']);
    expect(reads).toBe(2);
    clock += SECRET_TTL_MS;
    expect(await once()).toEqual(['secret-3']);
    clock += RECORD_MS;
    await cache.record(APP, 'we_1', ok);
    expect(recorded).toHaveLength(4);
  });
});
