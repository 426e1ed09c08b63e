import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { faucet, newAccount, sandboxChains } from './support/chains.ts';
import { call, eventsApp, expectErrorShape, uniqueUser } from './support/client.ts';
import { POLL_TICKS, ticks } from './support/sandbox-clock.ts';

/**
 * Events (issue 24) end to end on the sandbox: a receiver on 127.0.0.1 registered as the app's
 * webhook endpoint; a self → venue_b transfer; every delivery verified with the standardwebhooks
 * package against the secret POST /webhook-endpoints returned once; GET /events lists the same
 * events in the same order. The sandbox runs AWS's machinery: the table's stream drives the
 * publisher, the FIFO queue the deliverer.
 */
const isSandbox = (await sandboxChains()) !== undefined;
const secretKey = { 'x-service-secret-key': eventsApp.secret_key };

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

describe.runIf(isSandbox)('events and webhooks', () => {
  let receiver: Server;
  let url: string;
  const received: Received[] = [];
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  });
  afterAll(() => new Promise<void>((done) => receiver.close(() => done())));

  it('a self → venue_b transfer: task.created, step updates and task.completed delivered, each verified; GET /events lists the same ids in order', {
    timeout: 120_000,
  }, async () => {
    const endpoint = await call('account', 'POST', '/webhook-endpoints', { headers: secretKey, json: { url, description: 'events.test.ts' } });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(200);
    const { id: endpointId, secret } = endpoint.body as { id: string; secret: string };
    try {
      const user = await newAccount(eventsApp, uniqueUser('events'));
      await faucet('ARB', user.evm, 'USDC', '20');
      await faucet('ARB', user.evm, 'ETH', '0.05');
      const init = await call('account', 'POST', '/account/init-perp-dex', { headers: user.headers, json: { dex: 'venue_b' } });
      expect(init.status, JSON.stringify(init.body)).toBe(200);
      const created = await call('account', 'POST', '/transfer', {
        headers: user.headers,
        json: { source: 'self', destination: 'venue_b', amount: '10', chain: 'ARB', token: 'USDC' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(202);
      const taskId = created.body.task_id as string;

      // Until task.completed arrives (the task completes first: its event is written with that change).
      const deadline = Date.now() + 90_000;
      const ofTask = () => received.map((delivery) => ({ delivery, event: JSON.parse(delivery.body) })).filter(({ event }) => event.resource?.id === taskId);
      while (!ofTask().some(({ event }) => event.type === 'task.completed') && Date.now() < deadline) await ticks(POLL_TICKS);
      const deliveries = ofTask();

      const webhook = new Webhook(secret);
      for (const { delivery } of deliveries) {
        const verified = webhook.verify(delivery.body, {
          'webhook-id': String(delivery.headers['webhook-id']),
          'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
          'webhook-signature': String(delivery.headers['webhook-signature']),
        });
        expect(verified).toEqual(JSON.parse(delivery.body));
        expect(delivery.headers['webhook-id']).toBe(JSON.parse(delivery.body).id);
      }
      // A forged body fails verification.
      const [first] = deliveries;
      expect(() =>
        webhook.verify(first!.delivery.body.replace('"task.created"', '"task.failed"'), {
          'webhook-id': String(first!.delivery.headers['webhook-id']),
          'webhook-timestamp': String(first!.delivery.headers['webhook-timestamp']),
          'webhook-signature': String(first!.delivery.headers['webhook-signature']),
        }),
      ).toThrow();

      const events = deliveries.map(({ event }) => event);
      const types = events.map((event) => event.type);
      console.info(`events: ${types.join(', ')} (seq ${events.map((event) => event.seq).join(', ')})`);
      expect(types[0]).toBe('task.created');
      expect(types.at(-1)).toBe('task.completed');
      expect(types).toContain('task.step_updated');
      expect(new Set(events.map((event) => event.id)).size).toBe(events.length); // the receiver answered 2xx: each once
      // In seq order, and the data is the task as GET /task/{id} returns it.
      expect(events.map((event) => event.seq)).toEqual([...events.map((event) => event.seq)].sort((a, b) => a - b));
      const task = await call('account', 'GET', `/task/${taskId}`, { headers: user.headers });
      expect(events.at(-1).data).toEqual(task.body);
      expect(events[0].app_user_id).toBe(events.at(-1).app_user_id);

      // The log holds the same events, in the same order.
      const log = await call('account', 'GET', '/events?after=0&limit=500', { headers: secretKey });
      expect(log.status, JSON.stringify(log.body)).toBe(200);
      const logged = (log.body.events as { id: string; resource: { id: string } }[]).filter((event) => event.resource.id === taskId);
      expect(logged.map((event) => event.id)).toEqual(events.map((event) => event.id));
      // The venue's onboarding is an event too. It is the account item's, published from that item's
      // stream records: ordered with that item's other events, not with the task's (a retried
      // publish may log it after them), so it is waited for.
      const venueLogged = async () => {
        const all = await call('account', 'GET', '/events?after=0&limit=500', { headers: secretKey });
        return (all.body.events as { type: string; resource: { id: string } }[]).some((e) => e.type === 'venue.initialized' && e.resource.id === 'venue_b');
      };
      const venueDeadline = Date.now() + 30_000;
      while (!(await venueLogged()) && Date.now() < venueDeadline) await ticks(POLL_TICKS);
      expect(await venueLogged()).toBe(true);
      // Paging by cursor reads the same log.
      const firstPage = await call('account', 'GET', '/events?after=0&limit=1', { headers: secretKey });
      const nextPage = await call('account', 'GET', `/events?after=${firstPage.body.next}&limit=1`, { headers: secretKey });
      expect([...firstPage.body.events, ...nextPage.body.events].map((e: { seq: number }) => e.seq)).toEqual(
        (log.body.events as { seq: number }[]).slice(0, 2).map((e) => e.seq),
      );

      // A withdrawal to an external address: withdrawal.sent, then withdrawal.confirmed, with its tx hash.
      const to = privateKeyToAddress(generatePrivateKey());
      const sent = await call('account', 'POST', '/withdraw', {
        headers: { ...user.headers, 'idempotency-key': `events-${crypto.randomUUID()}` },
        json: { to_address: to, amount: '1', token: 'USDC', chain: 'ARB' },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      const withdrawalEvents = () =>
        received
          .map((delivery) => JSON.parse(delivery.body))
          .filter((event) => event.resource?.type === 'withdrawal' && event.data.tx_hash === sent.body.tx_hash);
      const withdrawalDeadline = Date.now() + 30_000;
      while (!withdrawalEvents().some((event) => event.type === 'withdrawal.confirmed') && Date.now() < withdrawalDeadline) await ticks(POLL_TICKS);
      expect(withdrawalEvents().map((event) => event.type)).toEqual(['withdrawal.sent', 'withdrawal.confirmed']);
      expect(withdrawalEvents()[1].data).toMatchObject({ status: 'confirmed', chain: 'ARB', token: 'USDC', amount: '1', to_address: to, gas_sponsored: false });
      expect(JSON.stringify(withdrawalEvents())).not.toContain('"raw"');

      // Replay from the start: the same events again, same ids, in log order.
      const before = received.length;
      const replay = await call('account', 'POST', `/webhook-endpoints/${endpointId}/replay`, { headers: secretKey, json: { after: 0 } });
      expect(replay.status, JSON.stringify(replay.body)).toBe(200);
      const everything = await call('account', 'GET', '/events?after=0&limit=500', { headers: secretKey });
      expect(replay.body).toMatchObject({ success: true, id: endpointId, queued: everything.body.events.length, more: false });
      const replayDeadline = Date.now() + 30_000;
      const replayed = () => received.slice(before).map((delivery) => JSON.parse(delivery.body) as { id: string; resource: { id: string } });
      while (replayed().length < replay.body.queued && Date.now() < replayDeadline) await ticks(POLL_TICKS);
      expect(
        replayed()
          .filter((event) => event.resource.id === taskId)
          .map((event) => event.id),
      ).toEqual(events.map((event) => event.id));
      const unknown = await call('account', 'POST', '/webhook-endpoints/we_0199a3c4-5b6e-7f80-9a1b-2c3d4e5f6a7b/replay', {
        headers: secretKey,
        json: { after: 0 },
      });
      expect(unknown.status).toBe(404);
      const badCursor = await call('account', 'POST', `/webhook-endpoints/${endpointId}/replay`, { headers: secretKey, json: { after: -1 } });
      expect(badCursor.status).toBe(400);
    } finally {
      await call('account', 'DELETE', `/webhook-endpoints/${endpointId}`, { headers: secretKey });
    }
  });

  it('GET /events refuses a bad cursor, an unknown type, a bad limit and a missing secret key with the error shape', async () => {
    for (const query of ['after=-1', 'after=abc', 'types=task.nope', 'limit=0', 'limit=501']) {
      const bad = await call('account', 'GET', `/events?${query}`, { headers: secretKey });
      expect(bad.status, query).toBe(400);
      expectErrorShape(bad.body);
    }
    const anonymous = await call('account', 'GET', '/events', {});
    expect(anonymous.status).toBe(401);
    const typed = await call('account', 'GET', '/events?types=task.completed,task.failed&limit=5', { headers: secretKey });
    expect(typed.status).toBe(200);
    expect((typed.body.events as { type: string }[]).every((event) => ['task.completed', 'task.failed'].includes(event.type))).toBe(true);
  });
});
