import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { Webhook } from 'standardwebhooks';
import type { WireEvent } from '../../../shared/events/types.ts';

/**
 * A webhook receiver for the fault tests (issue 24, part 4): an HTTP server on 127.0.0.1:0 that
 * records every request (headers, raw body, its answer) and verifies each with the standardwebhooks
 * package, as docs/guide/webhooks.md tells a receiver to, against the secret POST
 * /webhook-endpoints returned. A share of the verified requests, drawn with the caller's PRNG (so a
 * test's SEED replays the draws), is answered 500 to make the deliverer retry; the rest 204.
 */
export interface ReceivedDelivery {
  /** Arrival order, from 0. */
  readonly index: number;
  readonly headers: IncomingHttpHeaders;
  /** The raw body, as signed. */
  readonly body: string;
  /** What the receiver answered: 204, 500 (a drawn failure) or 400 (the signature did not verify). */
  readonly status: number;
  /** The verification's error when it threw (the receiver answered 400). */
  readonly invalid?: string;
  /** The verified event (the parsed body), when it verified. */
  readonly event?: DeliveredEvent;
}

/** An event as a webhook delivers it (docs/guide/webhooks.md "The event"). */
export type DeliveredEvent = WireEvent;

export interface WebhookReceiver {
  /** Where to register the endpoint (`http://127.0.0.1:<port>/hooks`). */
  readonly url: string;
  /** Every request answered so far, in arrival order. */
  readonly deliveries: readonly ReceivedDelivery[];
  /** Requests answered 503 before `trust` gave the secret (the deliverer retries them). */
  readonly beforeSecret: number;
  /** The endpoint's secret (`whsec_…`): requests are verified with it from now on. */
  trust(secret: string): void;
  close(): Promise<void>;
}

export interface WebhookReceiverOptions {
  /** The share of verified requests answered 500 (0 = always 2xx). */
  readonly failureRate?: number;
  /** The draw for each verified request, in [0, 1): the test's seeded PRNG. */
  readonly random?: () => number;
}

export async function startWebhookReceiver(options: WebhookReceiverOptions = {}): Promise<WebhookReceiver> {
  const failureRate = options.failureRate ?? 0;
  const random = options.random ?? Math.random;
  const deliveries: ReceivedDelivery[] = [];
  let webhook: Webhook | undefined;
  let beforeSecret = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      // The endpoint exists before its secret reaches the test: a request in between is not
      // verifiable, so it is refused like any failure and comes again.
      if (!webhook) {
        beforeSecret++;
        res.writeHead(503).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = req.headers;
      let event: DeliveredEvent | undefined;
      let invalid: string | undefined;
      try {
        event = webhook.verify(body, {
          'webhook-id': String(headers['webhook-id']),
          'webhook-timestamp': String(headers['webhook-timestamp']),
          'webhook-signature': String(headers['webhook-signature']),
        }) as DeliveredEvent;
      } catch (error) {
        invalid = error instanceof Error ? error.message : String(error);
      }
      const status = invalid !== undefined ? 400 : random() < failureRate ? 500 : 204;
      deliveries.push({ index: deliveries.length, headers, body, status, ...(invalid !== undefined ? { invalid } : { event }) });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    deliveries,
    get beforeSecret() {
      return beforeSecret;
    },
    trust: (secret) => {
      webhook = new Webhook(secret);
    },
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/**
 * The app's event log (`GET /events`), read from the start and kept: each `read()` fetches only
 * what is newer than the last cursor (the log is append-only and gap-free, docs/guide/webhooks.md).
 */
export class EventLogReader {
  readonly events: DeliveredEvent[] = [];
  private next = '0';
  private readonly accountUrl: () => string;
  private readonly secretKey: string;

  /** `accountUrl` is read on every call: a restarted runtime has another port. */
  constructor(accountUrl: () => string, secretKey: string) {
    this.accountUrl = accountUrl;
    this.secretKey = secretKey;
  }

  async read(): Promise<readonly DeliveredEvent[]> {
    for (;;) {
      const response = await fetch(`${this.accountUrl()}/events?after=${this.next}&limit=500`, { headers: { 'x-service-secret-key': this.secretKey } });
      const page = (await response.json()) as { events?: DeliveredEvent[]; next?: string };
      if (response.status !== 200 || !page.events || page.next === undefined)
        throw new Error(`GET /events?after=${this.next}: ${response.status} ${JSON.stringify(page)}`);
      this.events.push(...page.events);
      if (page.events.length === 0 || page.next === this.next) return this.events;
      this.next = page.next;
    }
  }
}

const delivered = (delivery: ReceivedDelivery) => delivery.status >= 200 && delivery.status < 300;

/**
 * Polls until `settled` holds (by default: every event of the log has reached the receiver with a
 * 2xx; `missing` are those that have not), or the deadline passes; the caller's assertions then
 * say what is missing.
 */
export async function waitForDeliveries(
  receiver: WebhookReceiver,
  log: EventLogReader,
  timeoutMs: number,
  settled: (events: readonly DeliveredEvent[], missing: readonly DeliveredEvent[]) => boolean | Promise<boolean> = (_, missing) => missing.length === 0,
): Promise<{ readonly waitedMs: number }> {
  const started = performance.now();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await log.read();
    const acknowledged = new Set(receiver.deliveries.filter(delivered).map((delivery) => delivery.event?.id));
    if (
      (await settled(
        events,
        events.filter((event) => !acknowledged.has(event.id)),
      )) ||
      Date.now() > deadline
    )
      return { waitedMs: Math.round(performance.now() - started) };
    await new Promise((wake) => setTimeout(wake, 100)); // a poll interval, not a wait for something
  }
}

export interface DeliveryCounts {
  /** Events in the log. */
  readonly events: number;
  /** Requests the receiver answered. */
  readonly deliveries: number;
  /** Requests answered other than 2xx: each one is retried. */
  readonly retries: number;
  /** Requests beyond the first of their event id (retries, and redeliveries of a 2xx'd one). */
  readonly duplicates: number;
  /** 2xx answers beyond the first of their event id (a delivery that reached the receiver but whose answer was lost). */
  readonly redelivered: number;
}

/**
 * What the contract (docs/guide/webhooks.md, "Order, retries and duplicates") promises the
 * receiver, checked against the log: every request verified and named its event in `webhook-id`;
 * the log is gap-free from seq 1; every event of the log came with a 2xx and nothing came that
 * the log does not hold (each delivered body is the logged event); the requests of one id carry
 * the same body; per resource, a request for seq s arrives only once every earlier seq of that
 * resource got its 2xx (SQS FIFO: a group's next message waits for the one before). `pending`:
 * ids the caller found still queued for delivery, not yet owed. Returns the breaches (empty when
 * the contract holds) and the counts.
 */
export function checkDeliveries(
  log: readonly DeliveredEvent[],
  deliveries: readonly ReceivedDelivery[],
  pending: ReadonlySet<string> = new Set(),
): { problems: string[]; counts: DeliveryCounts } {
  const problems: string[] = [];
  log.forEach((event, index) => {
    if (event.seq !== index + 1) problems.push(`log: seq ${event.seq} at place ${index + 1} (a gap or a repeat)`);
  });
  const logged = new Map(log.map((event) => [event.id, event]));
  const bodies = new Map<string, string>();
  const resourceOf = (event: DeliveredEvent) => `${event.app_user_id} ${event.resource.type} ${event.resource.id}`;
  const seqsOf = new Map<string, number[]>();
  for (const event of log) seqsOf.set(resourceOf(event), [...(seqsOf.get(resourceOf(event)) ?? []), event.seq]);
  const acknowledged = new Set<number>();
  let retries = 0;
  let redelivered = 0;
  for (const delivery of deliveries) {
    const where = `delivery #${delivery.index} (${delivery.headers['webhook-id']})`;
    if (!delivery.event) {
      problems.push(`${where}: did not verify: ${delivery.invalid}`);
      continue;
    }
    const { event } = delivery;
    if (delivery.headers['webhook-id'] !== event.id) problems.push(`${where}: webhook-id is not the body's id ${event.id}`);
    const first = bodies.get(event.id);
    if (first === undefined) bodies.set(event.id, delivery.body);
    else if (first !== delivery.body) problems.push(`${where}: another body than the first delivery of ${event.id}`);
    const inLog = logged.get(event.id);
    if (!inLog) problems.push(`${where}: ${event.type} seq ${event.seq} is not in the log`);
    else if (!isDeepStrictEqual(JSON.parse(delivery.body), inLog)) problems.push(`${where}: the body is not the logged event seq ${inLog.seq}`);
    const earlier = (seqsOf.get(resourceOf(event)) ?? []).filter((seq) => seq < event.seq && !acknowledged.has(seq));
    if (earlier.length > 0) problems.push(`${where}: seq ${event.seq} of ${resourceOf(event)} arrived before seq ${earlier.join(', ')} got a 2xx`);
    if (!delivered(delivery)) retries++;
    else if (acknowledged.has(event.seq)) redelivered++;
    else acknowledged.add(event.seq);
  }
  for (const event of log) {
    if (acknowledged.has(event.seq) || pending.has(event.id)) continue;
    const attempts = deliveries.filter((delivery) => delivery.event?.id === event.id).map((delivery) => `#${delivery.index} ${delivery.status}`);
    problems.push(`log: ${event.type} seq ${event.seq} (${event.id}) never received with a 2xx (attempts: ${attempts.join(', ') || 'none'})`);
  }
  return {
    problems,
    counts: { events: log.length, deliveries: deliveries.length, retries, duplicates: deliveries.length - bodies.size, redelivered },
  };
}
