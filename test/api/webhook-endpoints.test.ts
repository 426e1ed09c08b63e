import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { LocalKeyWrapper } from '../../shared/crypto/local-key-wrapper.ts';
import { getEndpoint, listEndpoints, markFailing, recordDelivery, signingSecrets, subscribes } from '../../shared/events/endpoints.ts';
import { MAX_ENDPOINTS_PER_APP } from '../../shared/events/types.ts';
import { accountHeaders, appOne, appTwo, call, expectErrorShape, sandbox, uniqueUser, webhooksApp } from './support/client.ts';
import { scanItems, tableReadable } from './support/table.ts';

/**
 * Webhook endpoints (issue 24, the management part): POST/GET /webhook-endpoints, DELETE
 * /webhook-endpoints/{id}, POST /webhook-endpoints/{id}/rotate-secret on the account service,
 * authorised by the app's secret key alone. Endpoints are per app: these tests use webhooksApp,
 * which no other file touches, and fill it to the limit.
 */

const secret = { 'x-service-secret-key': webhooksApp.secret_key };
/** The sandbox (WEBHOOK_URLS=sandbox) takes http to loopback; these never receive anything here. */
const RECEIVER = 'http://127.0.0.1:9/hooks';

function create(body: unknown, headers: Record<string, string> = secret) {
  return call('account', 'POST', '/webhook-endpoints', { headers, json: body });
}
function list(headers: Record<string, string> = secret) {
  return call('account', 'GET', '/webhook-endpoints', { headers });
}
function remove(id: string, headers: Record<string, string> = secret) {
  return call('account', 'DELETE', `/webhook-endpoints/${id}`, { headers });
}
function rotate(id: string, headers: Record<string, string> = secret) {
  return call('account', 'POST', `/webhook-endpoints/${id}/rotate-secret`, { headers });
}

async function created(body: unknown) {
  const response = await create(body);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body as { id: string; secret: string; url: string; events: string[] | null };
}

async function ids(headers: Record<string, string> = secret): Promise<string[]> {
  const response = await list(headers);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return (response.body.endpoints as { id: string }[]).map((endpoint) => endpoint.id);
}

async function deleteAll() {
  for (const id of await ids()) expect((await remove(id)).status).toBe(200);
}

/** A Standard Webhooks secret: whsec_ + base64 of 32 bytes, which the standardwebhooks package signs and verifies with. */
function expectUsableSecret(value: string) {
  expect(value).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(Buffer.from(value.slice('whsec_'.length), 'base64')).toHaveLength(32);
  const webhook = new Webhook(value);
  const at = new Date();
  const signature = webhook.sign('evt_1', at, '{"a":1}');
  expect(
    webhook.verify('{"a":1}', { 'webhook-id': 'evt_1', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature }),
  ).toEqual({ a: 1 });
}

describe('POST, GET and DELETE /webhook-endpoints', () => {
  it('creates an endpoint and shows its signing secret once; GET lists it with nothing of the secret; DELETE removes it', async () => {
    await deleteAll();
    const endpoint = await created({ url: RECEIVER, events: ['task.completed', 'task.failed', 'task.completed'], description: 'ops alerts' });
    expect(endpoint).toMatchObject({
      success: true,
      url: RECEIVER,
      events: ['task.completed', 'task.failed'],
      description: 'ops alerts',
      status: 'enabled',
    });
    expect(endpoint.id).toMatch(/^we_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expectUsableSecret(endpoint.secret);

    const everything = await created({ url: 'https://hooks.example.com/in' });
    expect(everything).toMatchObject({ events: null, description: null, url: 'https://hooks.example.com/in' });
    expect(everything.secret).not.toBe(endpoint.secret);

    const listed = await list();
    expect(listed.body.success).toBe(true);
    expect(listed.body.limit).toBe(MAX_ENDPOINTS_PER_APP);
    expect(listed.body.endpoints).toEqual([
      {
        id: endpoint.id,
        url: RECEIVER,
        events: ['task.completed', 'task.failed'],
        description: 'ops alerts',
        created_at: expect.any(String),
        status: 'enabled',
      },
      { id: everything.id, url: 'https://hooks.example.com/in', events: null, description: null, created_at: expect.any(String), status: 'enabled' },
    ]);
    const text = JSON.stringify(listed.body);
    for (const shown of [endpoint.secret, everything.secret]) expect(text).not.toContain(shown.slice('whsec_'.length, 20));
    expect(text).not.toMatch(/secret|sealed|wrapped/);

    expect(await remove(endpoint.id)).toMatchObject({ status: 200, body: { success: true, id: endpoint.id } });
    expect(await ids()).toEqual([everything.id]);
    const again = await remove(endpoint.id);
    expect(again.status).toBe(404);
    expect(expectErrorShape(again.body).code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
    await remove(everything.id);
  });

  it('stores the signing secret sealed, never in the clear (DynamoDB Local)', async () => {
    if (!tableReadable) return;
    const endpoint = await created({ url: RECEIVER });
    const items = await scanItems(endpoint.id);
    expect(items.length).toBeGreaterThan(0);
    const base64 = endpoint.secret.slice('whsec_'.length);
    const hex = Buffer.from(base64, 'base64').toString('hex');
    for (const item of items) {
      expect(item).not.toContain(base64);
      expect(item).not.toContain(hex);
    }
    expect(items.some((item) => item.includes('wrapped_key'))).toBe(true);
    await remove(endpoint.id);
  });

  it('rotate-secret: a new secret shown once, the previous one kept 24 hours; GET still shows neither', async () => {
    const endpoint = await created({ url: RECEIVER });
    const before = Date.now();
    const rotated = await rotate(endpoint.id);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(rotated.body).toMatchObject({ success: true, id: endpoint.id });
    expectUsableSecret(rotated.body.secret);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    const expires = Date.parse(rotated.body.previous_secret_expires_at);
    expect(expires - before).toBeGreaterThanOrEqual(24 * 3600 * 1000 - 1000);
    expect(expires - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000);

    const text = JSON.stringify((await list()).body);
    expect(text).not.toContain(rotated.body.secret.slice('whsec_'.length, 20));
    expect(text).not.toMatch(/secret/);

    const unknown = await rotate('we_0199a3c4-5b6e-7f80-9a1b-2c3d4e5f6a7b');
    expect(unknown.status).toBe(404);
    expect(expectErrorShape(unknown.body).code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
    await remove(endpoint.id);
  });

  it("another app neither sees nor deletes nor rotates an app's endpoints (404)", async () => {
    const endpoint = await created({ url: RECEIVER });
    for (const other of [appOne, appTwo]) {
      const headers = { 'x-service-secret-key': other.secret_key };
      expect(await ids(headers)).not.toContain(endpoint.id);
      for (const response of [await remove(endpoint.id, headers), await rotate(endpoint.id, headers)]) {
        expect(response.status).toBe(404);
        expect(expectErrorShape(response.body).code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
      }
    }
    expect(await ids()).toContain(endpoint.id);
    await remove(endpoint.id);
  });

  it('401 without the app secret key: missing, wrong, the API key, or a user JWT alone', async () => {
    const endpoint = await created({ url: RECEIVER });
    const jwtOnly = { authorization: (await accountHeaders(webhooksApp, uniqueUser('webhooks'))).authorization as string };
    for (const headers of [{}, { 'x-service-secret-key': 'sk_not_a_key' }, { 'x-service-secret-key': webhooksApp.api_key }, jwtOnly] as Record<
      string,
      string
    >[]) {
      for (const response of [
        await create({ url: RECEIVER }, headers),
        await list(headers),
        await remove(endpoint.id, headers),
        await rotate(endpoint.id, headers),
      ]) {
        expect(response.status, JSON.stringify(headers)).toBe(401);
        expect(expectErrorShape(response.body).code).toMatch(/^(MISSING|INVALID)_SECRET_KEY$/);
      }
    }
    expect(await ids()).toEqual([endpoint.id]);
    await remove(endpoint.id);
  });
});

describe('what POST /webhook-endpoints refuses (4xx, nothing stored)', () => {
  it('URL rules in the sandbox: loopback over http is taken, private, link-local and other addresses are 422', async () => {
    await deleteAll();
    for (const url of ['http://127.0.0.1:4000/hook', 'http://localhost:4000/hook', 'http://[::1]:4000/hook']) {
      const endpoint = await created({ url });
      expect(endpoint.url).toBe(url);
      await remove(endpoint.id);
    }
    for (const url of [
      'http://10.0.0.1/hook',
      'https://10.0.0.1/hook',
      'https://192.168.1.10/hook',
      'https://169.254.169.254/latest/meta-data',
      'http://hooks.example.com/in',
      'https://printer.local/hook',
      'https://user:pw@hooks.example.com/in',
      'ftp://hooks.example.com/hook',
    ]) {
      const response = await create({ url });
      expect(response.status, url).toBe(422);
      const error = expectErrorShape(response.body);
      expect(error.code, url).toBe('WEBHOOK_URL_NOT_ALLOWED');
      expect(error.message).toContain('body.url');
      expect(error.message).not.toContain(new URL(url).hostname);
    }
    const notUrl = await create({ url: 'not a url' });
    expect(notUrl.status).toBe(422);
    expect(expectErrorShape(notUrl.body).code).toBe('WEBHOOK_URL_INVALID');
    expect(await ids()).toEqual([]);
  });

  it('an unknown event type is 422 naming it; malformed bodies are 400 naming the field', async () => {
    const unknown = await create({ url: RECEIVER, events: ['task.completed', 'task.exploded'] });
    expect(unknown.status).toBe(422);
    expect(expectErrorShape(unknown.body)).toMatchObject({ code: 'UNKNOWN_EVENT_TYPE', message: expect.stringContaining("body.events[1]: 'task.exploded'") });

    const cases: [unknown, string][] = [
      [{}, 'body.url'],
      [{ url: 42 }, 'body.url'],
      [{ url: RECEIVER, events: [] }, 'body.events'],
      [{ url: RECEIVER, events: 'task.completed' }, 'body.events'],
      [{ url: RECEIVER, events: [7] }, 'body.events.0'],
      [{ url: RECEIVER, description: 'x'.repeat(257) }, 'body.description'],
      [{ url: RECEIVER, description: 'line\nbreak' }, 'body.description'],
      [{ url: RECEIVER, secret: 'whsec_mine' }, 'body.secret'],
      [{ url: `http://127.0.0.1/${'a'.repeat(2048)}` }, 'body.url'],
      [[{ url: RECEIVER }], 'body'],
    ];
    for (const [body, field] of cases) {
      const response = await create(body);
      expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(expectErrorShape(response.body).message).toContain(field);
    }
    const notJson = await call('account', 'POST', '/webhook-endpoints', { headers: { ...secret, 'content-type': 'application/json' }, rawBody: '{"url":' });
    expect(notJson.status).toBe(400);
    const badId = await remove('not-an-id');
    expect(badId.status).toBe(400);
    expect(expectErrorShape(badId.body).message).toContain('path.id');
    expect(await ids()).toEqual([]);
  });
});

describe('at most MAX_ENDPOINTS_PER_APP endpoints per app', () => {
  it('the limit holds, also for two concurrent creates at its edge; deleting one frees a place', async () => {
    await deleteAll();
    for (let i = 0; i < MAX_ENDPOINTS_PER_APP - 1; i++) await created({ url: `${RECEIVER}/${i}` });
    const edge = await Promise.all([create({ url: `${RECEIVER}/a` }), create({ url: `${RECEIVER}/b` })]);
    expect(edge.map((response) => response.status).sort()).toEqual([200, 409]);
    const refused = edge.find((response) => response.status === 409)!;
    expect(expectErrorShape(refused.body).code).toBe('ENDPOINT_LIMIT');
    expect(refused.body.error.message).toContain(String(MAX_ENDPOINTS_PER_APP));
    expect(await ids()).toHaveLength(MAX_ENDPOINTS_PER_APP);

    const beyond = await create({ url: `${RECEIVER}/c` });
    expect(beyond.status).toBe(409);
    expect(await ids()).toHaveLength(MAX_ENDPOINTS_PER_APP);

    const [first] = await ids();
    await remove(first!);
    await created({ url: `${RECEIVER}/d` });
    expect(await ids()).toHaveLength(MAX_ENDPOINTS_PER_APP);
    await deleteAll();
    // Another app's limit is its own.
    const elsewhere = await create({ url: RECEIVER }, { 'x-service-secret-key': appTwo.secret_key });
    expect(elsewhere.status).toBe(200);
    await remove(elsewhere.body.id, { 'x-service-secret-key': appTwo.secret_key });
  });
});

/**
 * What the deliverer (another module) reads and writes through shared/events/endpoints.ts, run
 * against the sandbox's own table and key file (DynamoDB Local only: dynalite lives inside the
 * runtime), and observed through GET /webhook-endpoints.
 */
describe.skipIf(!tableReadable)("the deliverer's view of an endpoint (DynamoDB Local)", () => {
  const table = () => ({
    doc: DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: sandbox.dynamodbEndpoint,
        region: process.env.AWS_REGION ?? 'us-east-1',
        credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'sandbox', secretAccessKey: 'sandbox' },
      }),
      { marshallOptions: { removeUndefinedValues: true } },
    ),
    name: 'perp-wallet',
  });

  it('signingSecrets: the shown secret; after a rotation the new one first, then the previous one until it expires', async () => {
    // The runtime's DATA_DIR (global-setup.ts): its account key file sealed the secrets.
    const deps = { table: table(), keyWrapper: new LocalKeyWrapper(join(sandbox.dataDir, 'runtime'), 'account') };
    const endpoint = await created({ url: RECEIVER, events: ['task.completed'] });
    const stored = (await getEndpoint(deps, webhooksApp.app_id, endpoint.id))!;
    expect(subscribes(stored, 'task.completed')).toBe(true);
    expect(subscribes(stored, 'task.failed')).toBe(false);
    expect(await signingSecrets(deps, stored, new Date())).toEqual([endpoint.secret]);

    const rotated = (await rotate(endpoint.id)).body as { secret: string; previous_secret_expires_at: string };
    const after = (await getEndpoint(deps, webhooksApp.app_id, endpoint.id))!;
    expect(await signingSecrets(deps, after, new Date())).toEqual([rotated.secret, endpoint.secret]);
    expect(await signingSecrets(deps, after, new Date(Date.parse(rotated.previous_secret_expires_at) + 1))).toEqual([rotated.secret]);
    // Another app's endpoint id under this app: nothing.
    expect(await getEndpoint(deps, appOne.app_id, endpoint.id)).toBeUndefined();
    expect((await listEndpoints(deps, webhooksApp.app_id)).map((item) => item.id)).toContain(endpoint.id);
    await remove(endpoint.id);
  });

  it('recordDelivery and markFailing show in GET; a success clears failing; stale outcomes are dropped', async () => {
    const deps = { table: table() };
    const endpoint = await created({ url: RECEIVER });
    const shown = async () => ((await list()).body.endpoints as { id: string; status: string }[]).find((item) => item.id === endpoint.id);
    const t0 = Date.now();
    const at = (ms: number) => new Date(t0 + ms);

    expect(await recordDelivery(deps, webhooksApp.app_id, endpoint.id, { at: at(1000), ok: false, status: 503, message: 'HTTP 503' })).toBe(true);
    expect(await recordDelivery(deps, webhooksApp.app_id, endpoint.id, { at: at(500), ok: true, status: 200 })).toBe(false);
    expect(await markFailing(deps, webhooksApp.app_id, endpoint.id, at(0))).toBe(true);
    expect(await markFailing(deps, webhooksApp.app_id, endpoint.id, at(800))).toBe(true);
    expect(await shown()).toMatchObject({
      status: 'failing',
      failing_since: at(0).toISOString(),
      last_delivery: { at: at(1000).toISOString(), ok: false, status: 503, message: 'HTTP 503' },
    });

    expect(await recordDelivery(deps, webhooksApp.app_id, endpoint.id, { at: at(2000), ok: true, status: 204 })).toBe(true);
    const healthy = await shown();
    expect(healthy).toMatchObject({ status: 'enabled', last_delivery: { at: at(2000).toISOString(), ok: true, status: 204 } });
    expect(healthy).not.toHaveProperty('failing_since');
    // A delivery first tried before that success cannot mark the endpoint failing any more.
    expect(await markFailing(deps, webhooksApp.app_id, endpoint.id, at(1500))).toBe(false);
    expect((await shown())?.status).toBe('enabled');

    await remove(endpoint.id);
    expect(await recordDelivery(deps, webhooksApp.app_id, endpoint.id, { at: at(3000), ok: true })).toBe(false);
    expect(await markFailing(deps, webhooksApp.app_id, endpoint.id, at(3000))).toBe(false);
    expect(await getEndpoint(deps, webhooksApp.app_id, endpoint.id)).toBeUndefined();
  });
});
