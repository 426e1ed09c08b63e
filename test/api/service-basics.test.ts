import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, call, expectErrorShape, sandbox, uniqueUser } from './support/client.ts';

describe('every service', () => {
  it.each(['account', 'enclave', 'express'] as const)('%s answers GET /health with 200 {"status":"ok"}', async (service) => {
    const response = await call(service, 'GET', '/health');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok' });
  });

  it.each(['account', 'enclave', 'express'] as const)('%s answers an unknown route with a JSON 404', async (service) => {
    const response = await call(service, 'GET', '/no/such/route');
    expect(response.status).toBe(404);
    expect(expectErrorShape(response.body).code).toBe('ROUTE_NOT_FOUND');
  });

  it('answers a path of another service with a 404 naming that service (and, in the sandbox, its URL)', async () => {
    // The local runtime's stage variables carry the URLs; a deployment names the service only.
    const where = (service: 'account' | 'express') => (sandbox.appsFile !== undefined ? `at ${sandbox.urls[service]}` : "'s URL");
    const onExpress = await call('express', 'POST', '/account');
    expect(onExpress.status).toBe(404);
    expect(expectErrorShape(onExpress.body)).toEqual({
      code: 'ROUTE_NOT_FOUND',
      message:
        `No route for POST /account on the express wallet service: /account is an account-service route (GET, HEAD, POST); send it to the account service ${where('account')}`.replace(
          " 's URL",
          "'s URL",
        ),
    });
    const onAccount = await call('account', 'POST', '/v2/wallet', { json: {} });
    expect(onAccount.status).toBe(404);
    expect(expectErrorShape(onAccount.body).message).toBe(
      `No route for POST /v2/wallet on the account service: /v2/wallet is an express-service route (POST); send it to the express wallet service ${where('express')}`.replace(
        " 's URL",
        "'s URL",
      ),
    );
  });

  it('answers a wrong method on a known path with 405 and Allow', async () => {
    const response = await call('account', 'DELETE', '/account');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD, POST');
    expect(expectErrorShape(response.body).code).toBe('METHOD_NOT_ALLOWED');
    const express = await call('express', 'GET', '/v1/wallet/sign/data');
    expect(express.status).toBe(405);
    expect(express.headers.get('allow')).toBe('POST');
  });

  it.each([
    ['enclave', '/v2/api'],
    ['enclave', '/v2/api/wallet/sign_data/extra'],
    ['express', '/v1/wallet/sign/data/extra'],
    ['account', '/'],
  ] as const)('%s answers %s (a path prefix, or a known path with more segments) with a JSON 404', async (service, path) => {
    const response = await call(service, 'POST', path, { json: {} });
    expect(response.status).toBe(404);
    expect(expectErrorShape(response.body).code).toBe('ROUTE_NOT_FOUND');
  });
});

/** HEAD wherever GET is: GET's status and headers, no body; elsewhere 405 with Allow (issue 12). */
describe('HEAD', () => {
  /** Headers that differ between any two responses (or with framing), left out of the comparison. */
  const PER_RESPONSE = new Set([
    'date',
    'x-request-id',
    'x-amzn-requestid',
    'x-amz-apigw-id',
    'x-amzn-trace-id',
    'content-length',
    'transfer-encoding',
    'connection',
    'keep-alive',
    'via',
    'x-cache',
    'x-amz-cf-id',
    'x-amz-cf-pop',
  ]);
  const comparable = (headers: Headers) => Object.fromEntries([...headers].filter(([name]) => !PER_RESPONSE.has(name)));

  async function both(service: 'account' | 'enclave' | 'express', path: string, headers: Record<string, string> = {}) {
    const get = await fetch(`${sandbox.urls[service]}${path}`, { headers });
    const head = await fetch(`${sandbox.urls[service]}${path}`, { method: 'HEAD', headers });
    return { get, getBody: await get.text(), head, headBody: await head.text() };
  }

  it.each(['account', 'enclave', 'express'] as const)('%s answers HEAD /health as GET, without the body', async (service) => {
    const { get, getBody, head, headBody } = await both(service, '/health');
    expect(get.status).toBe(200);
    expect(getBody).toBe('{"status":"ok"}');
    expect(head.status).toBe(200);
    expect(headBody).toBe('');
    expect(comparable(head.headers)).toEqual(comparable(get.headers));
    expect(head.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('answers HEAD on an authenticated GET route with its status and headers: 200 with credentials, 401 without', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('head'));
    expect((await call('account', 'POST', '/account', { headers })).status).toBe(200);
    const authorised = await both('account', '/account', headers);
    expect([authorised.get.status, authorised.head.status]).toEqual([200, 200]);
    expect(authorised.headBody).toBe('');
    expect(comparable(authorised.head.headers)).toEqual(comparable(authorised.get.headers));
    const refused = await both('account', '/account');
    expect([refused.get.status, refused.head.status]).toEqual([401, 401]);
    expect(refused.headBody).toBe('');
  });

  it.runIf(Boolean(sandbox.dataDir))("answers HEAD on the sandbox's own GET routes too (local runtime)", async () => {
    const { get, head, headBody } = await both('account', '/sandbox/chains');
    expect([get.status, head.status]).toEqual([200, 200]);
    expect(headBody).toBe('');
    expect(comparable(head.headers)).toEqual(comparable(get.headers));
  });

  it('is 405 with Allow on a path without GET', async () => {
    const head = await fetch(`${sandbox.urls.account}/withdraw`, { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('POST');
    expect(await head.text()).toBe('');
    const enclave = await fetch(`${sandbox.urls.enclave}/v2/api/wallet/sign_data`, { method: 'HEAD' });
    expect(enclave.status).toBe(405);
    expect(enclave.headers.get('allow')).toBe('POST');
  });
});

describe('request headers', () => {
  it('are matched whatever the case of their names (REST APIs pass them as sent)', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('headercase'));
    const url = new URL(`${sandbox.urls.account}/account`);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const shouting = { AUTHORIZATION: headers.authorization!, 'X-Service-Secret-Key': headers['x-service-secret-key']!, 'CONTENT-TYPE': 'application/json' };
    const status = await new Promise<number>((done, fail) => {
      // node:http sends header names exactly as given (fetch lower-cases them).
      const req = request(url, { method: 'POST', headers: shouting }, (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
      });
      req.on('error', fail);
      req.end('{}');
    });
    expect(status).toBe(200);
  });
});

describe('request bodies', () => {
  it('refuses a body over 256 KiB with 413 PAYLOAD_TOO_LARGE, and over 10 MB at the gateway', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('bigbody'));
    for (const size of [300 * 1024, 11 * 1024 * 1024]) {
      const response = await call('account', 'POST', '/wallet/sign', {
        headers: { ...headers, 'content-type': 'application/json' },
        rawBody: JSON.stringify({ message: 'x'.repeat(size) }),
      });
      expect(response.status).toBe(413);
      expect(expectErrorShape(response.body).code).toBe('PAYLOAD_TOO_LARGE');
    }
  });

  it('rejects invalid JSON with 400 INVALID_JSON', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('badjson'));
    const response = await call('account', 'POST', '/wallet/sign', {
      headers: { ...headers, 'content-type': 'application/json' },
      rawBody: '{"message": ',
    });
    expect(response.status).toBe(400);
    expect(expectErrorShape(response.body).code).toBe('INVALID_JSON');
  });

  it('rejects a body that is not declared as JSON with 415', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('mediatype'));
    const response = await call('account', 'POST', '/wallet/sign', { headers: { ...headers, 'content-type': 'text/plain' }, rawBody: '{}' });
    expect(response.status).toBe(415);
    expect(expectErrorShape(response.body).code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('names the offending field in a validation error', async () => {
    const response = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': appOne.secret_key },
      json: { auth_jwt: 'x', network: 'DOGE', wallet_group_id: 'g' },
    });
    expect(response.status).toBe(400);
    const error = expectErrorShape(response.body);
    expect(error.code).toBe('INVALID_REQUEST');
    expect(error.message).toContain('body.network');
  });

  it('refuses a __proto__ key with a 400 naming it rather than polluting objects', async () => {
    const response = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': appOne.secret_key, 'content-type': 'application/json' },
      rawBody: '{"__proto__": {"polluted": true}, "auth_jwt": "x", "network": "ETH", "wallet_group_id": "g"}',
    });
    expect(response.status).toBe(400);
    expect(expectErrorShape(response.body)).toEqual({ code: 'INVALID_REQUEST', message: 'body: a key named "__proto__" is not allowed (at any depth)' });
  });
});
