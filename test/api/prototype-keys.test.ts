import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { describe, expect, it } from 'vitest';
import { ROUTES, type ServiceName } from '../../functions/routes.ts';
import { accountHeaders, appOne, call, expectErrorShape, expressHeaders, mintToken, sandbox, uniqueUser } from './support/client.ts';

/**
 * Keys named after `Object.prototype` members (issue 20 §4): `?__proto__=x` once answered 500.
 * Every such name goes to every route of the route table (functions/routes.ts), the unknown-path
 * fallback of each service and the sandbox routes: as a query parameter, as a header, as a JSON
 * body key at the top level (an object value and a plain one) and inside each object the route's
 * body carries, and as the value of each path parameter. Each request otherwise carries what the
 * route needs (credentials of a user with an account and wallets, a well-formed body), so the
 * name reaches the handler's own parsing. Never a 5xx; a 4xx has the error shape; a 2xx never
 * carries the marker the injected objects hold (nothing copied them into an answer).
 */
const NAMES = [...new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype'])].sort();
const MARKER = 'polluted-by-prototype-keys-test';
/** An object value for an injected key: `prototype` inside it too, the shape middy's parser refuses under `constructor`. */
const OBJECT_VALUE = `{"marker":"${MARKER}","prototype":{"marker":"${MARKER}"}}`;

const local = sandbox.appsFile !== undefined;
const RECIPIENT = '0x1111111111111111111111111111111111111111';
const HASH = `0x${'ab'.repeat(32)}`;
const USER = uniqueUser('prototype-keys');

const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 4 });

interface Target {
  readonly service: ServiceName;
  readonly method: string;
  /** With `{param}` placeholders still in it. */
  readonly template: string;
}

interface Probe {
  readonly service: ServiceName;
  readonly method: string;
  readonly target: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  /** `GET /demo/wallet/balance × __proto__ as query`, for the failure list. */
  readonly label: string;
}

/** node:http with the target and header names exactly as given (fetch may normalise either). */
function rawRequest(probe: Probe): Promise<{ status: number; text: string }> {
  const base = new URL(sandbox.urls[probe.service]);
  const send = base.protocol === 'https:' ? (httpsRequest as typeof request) : request;
  const headers = probe.body === undefined ? probe.headers : { ...probe.headers, 'content-length': String(Buffer.byteLength(probe.body)) };
  return new Promise((done, fail) => {
    const req = send(
      {
        host: base.hostname,
        port: base.port,
        method: probe.method,
        path: `${base.pathname.replace(/\/$/, '')}${probe.target}`,
        headers,
        agent: base.protocol === 'https:' ? httpsAgent : agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', fail);
    req.end(probe.body);
  });
}

function targets(): Target[] {
  const fromTable = ROUTES.map((route): Target => {
    if (route.routeKey === '$default') return { service: route.service, method: 'GET', template: '/no/such/route' };
    const [method, template] = route.routeKey.split(' ') as [string, string];
    return { service: route.service, method, template };
  });
  // The sandbox's own routes (account port, local runtime only).
  const sandboxRoutes: Target[] = local
    ? [
        ...['info', 'chains', 'venues', 'bridge', 'prices'].map((name) => ({ service: 'account' as const, method: 'GET', template: `/sandbox/${name}` })),
        { service: 'account', method: 'POST', template: '/sandbox/faucet' },
        { service: 'account', method: 'POST', template: '/sandbox/faults' },
        { service: 'account', method: 'POST', template: '/sandbox/prices' },
      ]
    : [];
  return [...fromTable, ...sandboxRoutes];
}

const PATH_DEFAULTS: Record<string, string> = { task_id: '0190a6c4-5f8e-7000-8000-000000000000', operation: 'message' };

/** The query each GET route reads, well-formed. */
function validQuery(template: string): string {
  if (template === '/demo/wallet/balance') return 'chain=POL';
  if (template === '/account/perp' || template === '/account/perp-credentials') return 'dex=venue_a';
  if (template === '/tasks') return 'limit=5';
  return '';
}

interface Wallets {
  v2: { wallet_id: string; access_key: string };
}

/** A well-formed body for each POST route (most of them then reach their use case). */
async function validBody(template: string, path: string, wallets: Wallets): Promise<Record<string, unknown> | undefined> {
  const evmTx = { chainId: 1, nonce: 0, to: RECIPIENT, value: '1', gas: '21000', maxFeePerGas: '1', maxPriorityFeePerGas: '1', type: 'eip1559' };
  switch (template) {
    case '/account':
      return {};
    case '/wallet/sign':
      return { message: 'prototype keys', encoding: 'utf8' };
    case '/withdraw':
      return { to_address: RECIPIENT, amount: '1', chain: 'POL', token: 'USDC' };
    case '/account/check-perp-dex-requirements':
      return { dex: 'venue_a' };
    case '/account/init-perp-dex':
      return { dex: 'venue_a', metadata: { note: 'x' } };
    case '/account/init-perp-dex-trading':
      return { dex: 'venue_c', metadata: { name: 'proto' } };
    case '/transfer/estimate-transfer-cost':
    case '/transfer':
      return { source: 'self', destination: 'venue_a', amount: '1', chain: 'ARB', token: 'USDC' };
    case '/task/{task_id}/resume':
      return {};
    case '/v2/api/wallet':
      return { auth_jwt: await mintToken(appOne, USER), network: 'ETH', wallet_group_id: 'default' };
    case '/v1/api/wallet':
      return { encryption_context: 'prototype-keys-context', network: 'ETH', wallet_group_id: 'default' };
    case '/v2/wallet':
    case '/v1/wallet':
      return {};
    case '/sandbox/faucet':
      return { chain: 'POL', address: RECIPIENT, token: 'USDC', amount: '1' };
    case '/sandbox/faults':
      // Well-formed but for the target: a real fault would disturb tests running alongside.
      return { target: 'nowhere', operation: 'deposit', mode: 'clear' };
    case '/sandbox/prices':
      // Well-formed but naming no coin (400): a real price change would disturb other files' estimates.
      return {};
  }
  const auth = template.startsWith('/v1/api')
    ? { encryption_context: 'prototype-keys-context', access_key: wallets.v2.access_key, wallet_id: wallets.v2.wallet_id }
    : template.startsWith('/v2/api')
      ? { op_jwt: await mintToken(appOne, USER, { ttlSeconds: 120 }), access_key: wallets.v2.access_key, wallet_id: wallets.v2.wallet_id }
      : {};
  if (path.endsWith('sign_data') || path.endsWith('sign/data')) return { ...auth, raw_data_hash: HASH };
  if (path.endsWith('sign_message') || path.endsWith('sign/message')) return { ...auth, message: 'prototype keys', encoding: 'utf8' };
  if (path.endsWith('sign_transaction') || path.endsWith('sign/transaction')) return { ...auth, transaction: evmTx };
  if (path.endsWith('sign_authorization')) return { ...auth, address: RECIPIENT, chain_id: 1, nonce: 0 };
  return {};
}

async function headersFor(service: ServiceName, template: string): Promise<Record<string, string>> {
  if (service === 'account') return accountHeaders(appOne, USER);
  if (template === '/v1/identity/provider') return { 'x-service-secret-key': appOne.secret_key };
  if (service === 'express') return expressHeaders(appOne, USER, 'ETH');
  return { 'x-service-secret-key': appOne.secret_key };
}

/** `{"a":1}` with `"name":value` added inside it (JSON.stringify would not write a `__proto__` key from a literal). */
function withKey(json: string, name: string, value: string): string {
  const inner = json.slice(1, -1);
  return `{${inner}${inner ? ',' : ''}${JSON.stringify(name)}:${value}}`;
}

/** Every request the test sends for one route: the name in each place the route reads. */
async function probesFor(t: Target, wallets: Wallets): Promise<Probe[]> {
  const path = t.template.replace(/\{(\w+)\}/g, (_, param: string) => PATH_DEFAULTS[param]!);
  const query = validQuery(t.template);
  const headers = await headersFor(t.service, t.template);
  const post = t.method === 'POST';
  const shape = post ? await validBody(t.template, path, wallets) : undefined;
  const json = shape === undefined ? undefined : JSON.stringify(shape);
  if (json !== undefined) headers['content-type'] = 'application/json';
  const route = `${t.method} ${t.service}${t.template}`;
  const probes: Probe[] = [];
  const probe = (name: string, where: string, target: string, extra: Partial<Probe> = {}) =>
    probes.push({ service: t.service, method: t.method, target, headers, body: json, label: `${route} × ${name} as ${where}`, ...extra });
  for (const name of NAMES) {
    const key = encodeURIComponent(name);
    probe(name, 'query', `${path}?${query ? `${query}&` : ''}${key}=x`);
    probe(name, 'repeated query', `${path}?${key}=x&${query ? `${query}&` : ''}${key}=y`);
    probe(name, 'header', `${path}${query ? `?${query}` : ''}`, { headers: { ...headers, [name]: 'x' } });
    for (const param of t.template.match(/\{\w+\}/g) ?? []) {
      probe(name, `path ${param}`, `${t.template.replace(param, key).replace(/\{(\w+)\}/g, (_, p: string) => PATH_DEFAULTS[p]!)}${query ? `?${query}` : ''}`);
    }
    if (json === undefined) continue;
    probe(name, 'body key (object value)', path, { body: withKey(json, name, OBJECT_VALUE) });
    probe(name, 'body key (string value)', path, { body: withKey(json, name, '"x"') });
    for (const [field, value] of Object.entries(shape!)) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
      const nested = withKey(JSON.stringify(value), name, OBJECT_VALUE);
      probe(name, `body.${field} key`, path, { body: withKey(JSON.stringify({ ...shape, [field]: undefined }), field, nested) });
    }
  }
  return probes;
}

/** Runs `work` over `items`, `width` at a time. */
async function pool<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

describe('keys named after Object.prototype members', () => {
  it('every route answers each such key in the query, headers, body and path with a 4xx in the error shape or a 2xx, never a 5xx', {
    timeout: 300_000,
  }, async () => {
    // The user has an account (so account routes get past "no account") and an enclave wallet.
    expect((await call('account', 'POST', '/account', { headers: await accountHeaders(appOne, USER) })).status).toBe(200);
    const created = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': appOne.secret_key },
      json: { auth_jwt: await mintToken(appOne, USER), network: 'ETH', wallet_group_id: 'default' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const wallets: Wallets = { v2: created.body };

    const all = targets();
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    const started = Date.now();
    // Per route, so the tokens (five minutes) stay fresh however long the run takes.
    for (const t of all) {
      const probes = await probesFor(t, wallets);
      await pool(probes, 4, async (probe) => {
        const response = await rawRequest(probe);
        sent += 1;
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const seen = `${probe.label} -> ${response.status} ${response.text.slice(0, 200)}`;
        if (response.status >= 500) return void failures.push(seen);
        if (response.status >= 400) {
          let code: string | undefined;
          try {
            code = expectErrorShape(JSON.parse(response.text)).code;
          } catch {
            failures.push(`not the error shape: ${seen}`);
          }
          // Every body sent is valid JSON: a refused key is named (INVALID_REQUEST), not called malformed.
          if (code === 'INVALID_JSON') failures.push(`valid JSON called invalid: ${seen}`);
        } else if (response.text.includes(MARKER)) {
          failures.push(`the injected object came back: ${seen}`);
        }
      });
    }
    const byStatus = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}x${count}`)
      .join(' ');
    process.stdout.write(
      `prototype keys: ${all.length} routes × ${NAMES.length} names, ${sent} requests, ${((Date.now() - started) / 1000).toFixed(1)} s, statuses ${byStatus}\n`,
    );
    // One example per route and place (the names of one place usually fail alike), then the count.
    const examples = new Map<string, string>();
    for (const failure of failures) examples.set(failure.replace(/ × \S+ as /, ' × * as ').replace(/ -> .*/, ''), failure);
    expect([...examples.values()].slice(0, 60), `${failures.length} of ${sent} requests failed`).toEqual([]);
    expect(all.length).toBe(ROUTES.length + (local ? 8 : 0));
  });
});
