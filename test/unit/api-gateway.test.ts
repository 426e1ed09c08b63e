import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { compileRoute, gatewayRequestId, installInvokeStore, lambdaContext, matchRoute, requestTarget, runInvocation, toEvent } from '../../infra/local/api-gateway.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { logger } from '../../shared/logger.ts';
import { withServiceName } from '../../shared/observability/service-name.ts';
import { captureJsonLines } from './support/capture-output.ts';

const routes = ['GET /health', 'GET /task/{task_id}', 'POST /task', 'GET /v2/api/wallet/{wallet_id}/key/{key_id}', '$default'].map(compileRoute);

/** The parts of an IncomingMessage that toEvent reads. */
function request(options: { method?: string; url: string; headers?: IncomingHttpHeaders }): IncomingMessage {
  return {
    method: options.method ?? 'GET',
    url: options.url,
    headers: options.headers ?? {},
    httpVersion: '1.1',
    socket: { remoteAddress: '10.0.0.7' },
  } as unknown as IncomingMessage;
}

describe('compileRoute / matchRoute', () => {
  it('extracts a path parameter', () => {
    const matched = matchRoute(routes, 'GET', '/task/0190c1a2-task');
    expect(matched?.route.routeKey).toBe('GET /task/{task_id}');
    expect(matched?.pathParameters).toEqual({ task_id: '0190c1a2-task' });
  });

  it('extracts several path parameters, URL-decoded', () => {
    const matched = matchRoute(routes, 'GET', '/v2/api/wallet/w%201/key/k%2F2');
    expect(matched?.route.routeKey).toBe('GET /v2/api/wallet/{wallet_id}/key/{key_id}');
    expect(matched?.pathParameters).toEqual({ wallet_id: 'w 1', key_id: 'k/2' });
  });

  it('matches a static route with no parameters', () => {
    expect(matchRoute(routes, 'GET', '/health')).toEqual({ route: routes[0], pathParameters: {} });
  });

  it('falls to $default when the method does not match', () => {
    const matched = matchRoute(routes, 'DELETE', '/task/abc');
    expect(matched?.route.routeKey).toBe('$default');
    expect(matched?.pathParameters).toEqual({});
  });

  it('falls to $default when no path matches', () => {
    expect(matchRoute(routes, 'GET', '/task/abc/extra')?.route.routeKey).toBe('$default');
    expect(matchRoute(routes, 'GET', '/task/')?.route.routeKey).toBe('$default');
    expect(matchRoute(routes, 'GET', '/healthz')?.route.routeKey).toBe('$default');
  });

  it('prefers an exact route even when $default is listed first', () => {
    const reordered = ['$default', 'POST /task'].map(compileRoute);
    expect(matchRoute(reordered, 'POST', '/task')?.route.routeKey).toBe('POST /task');
  });

  it('returns undefined when nothing matches and there is no $default', () => {
    expect(matchRoute([compileRoute('GET /health')], 'GET', '/nope')).toBeUndefined();
  });

  it('treats regex metacharacters in a route path literally', () => {
    const dotted = [compileRoute('GET /.well-known/jwks.json')];
    expect(matchRoute(dotted, 'GET', '/.well-known/jwks.json')?.route.routeKey).toBe('GET /.well-known/jwks.json');
    expect(matchRoute(dotted, 'GET', '/.well-known/jwksXjson')).toBeUndefined();
  });
});

describe('paths are matched exactly as sent (API Gateway does not collapse slashes)', () => {
  const account = [compileRoute('GET /account'), compileRoute('$default')];

  it('requestTarget splits path and query without resolving anything', () => {
    expect(requestTarget('//x/account?a=1')).toEqual({ path: '//x/account', query: 'a=1' });
    expect(requestTarget('//')).toEqual({ path: '//', query: '' });
    expect(requestTarget('/a/../account')).toEqual({ path: '/a/../account', query: '' });
    expect(requestTarget('/account?')).toEqual({ path: '/account', query: '' });
    expect(requestTarget(undefined)).toEqual({ path: '/', query: '' });
  });

  it.each(['//x/account', '//account', '/account/', '/x/../account', '/./account', '//', '*'])('%s is not /account', (path) => {
    expect(matchRoute(account, 'GET', requestTarget(path).path)?.route.routeKey).toBe('$default');
  });

  it.each(['//', '//x/account', '/x/../account'])('toEvent keeps %s as rawPath and http.path (and does not throw)', (url) => {
    const event = toEvent(request({ url: `${url}?q=1` }), Buffer.alloc(0), '$default', {});
    expect(event.rawPath).toBe(url);
    expect(event.requestContext.http.path).toBe(url);
    expect(event.rawQueryString).toBe('q=1');
    expect(event.queryStringParameters).toEqual({ q: '1' });
  });
});

describe('toEvent', () => {
  it('builds a payload 2.0 event with route key, path and path parameters', () => {
    const event = toEvent(request({ url: '/task/abc' }), Buffer.alloc(0), 'GET /task/{task_id}', { task_id: 'abc' });
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'GET /task/{task_id}',
      rawPath: '/task/abc',
      rawQueryString: '',
      pathParameters: { task_id: 'abc' },
      isBase64Encoded: false,
      requestContext: { routeKey: 'GET /task/{task_id}', stage: '$default', http: { method: 'GET', path: '/task/abc', sourceIp: '10.0.0.7' } },
    });
    expect(event.queryStringParameters).toBeUndefined();
    expect(event.body).toBeUndefined();
  });

  it('parses the query string, decoding values and joining repeats with commas', () => {
    const event = toEvent(request({ url: '/task?limit=10&name=two%20words&tag=a&tag=b' }), Buffer.alloc(0), '$default', {});
    expect(event.rawQueryString).toBe('limit=10&name=two%20words&tag=a&tag=b');
    expect(event.queryStringParameters).toEqual({ limit: '10', name: 'two words', tag: 'a,b' });
    expect(event.pathParameters).toBeUndefined();
  });

  it('lower-cases header names and joins multi-valued headers', () => {
    const headers = { 'X-Service-Secret-Key': 'sk_123', Authorization: 'Bearer t', 'x-multi': ['a', 'b'] } as unknown as IncomingHttpHeaders;
    const event = toEvent(request({ url: '/', headers }), Buffer.alloc(0), '$default', {});
    expect(event.headers).toEqual({ 'x-service-secret-key': 'sk_123', authorization: 'Bearer t', 'x-multi': 'a,b' });
  });

  it('passes a JSON body as text and a binary body as base64', () => {
    const json = toEvent(
      request({ method: 'POST', url: '/task', headers: { 'content-type': 'application/json; charset=utf-8' } }),
      Buffer.from('{"a":1}'),
      'POST /task',
      {},
    );
    expect(json).toMatchObject({ body: '{"a":1}', isBase64Encoded: false });

    const bytes = Buffer.from([0, 255, 1, 2]);
    const binary = toEvent(
      request({ method: 'POST', url: '/task', headers: { 'content-type': 'application/octet-stream' } }),
      bytes,
      'POST /task',
      {},
    );
    expect(binary).toMatchObject({ body: bytes.toString('base64'), isBase64Encoded: true });
  });
});

describe('request ids', () => {
  it('puts the gateway request id it is given into the event, and makes ids shaped like API Gateway\'s', () => {
    const event = toEvent(request({ url: '/health' }), Buffer.alloc(0), 'GET /health', {}, 'gw-fixed-id');
    expect(event.requestContext.requestId).toBe('gw-fixed-id');
    const ids = new Set(Array.from({ length: 100 }, gatewayRequestId));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9+/]{14}==$/);
  });
});

describe('concurrent invocations in one process (the local runtime)', () => {
  it('keep their own request id and Lambda context in every log line (one service, one logger)', async () => {
    await installInvokeStore();
    process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
    const handler = httpHandler(async (event: { rawPath: string }) => {
      // Interleave: the first request logs after the second has started and logged.
      await new Promise((done) => setTimeout(done, event.rawPath === '/slow' ? 30 : 5));
      logger.info('inside', { path: event.rawPath });
      return jsonResponse(200, {});
    });
    const invoke = (service: string, path: string, requestId: string) => {
      const event = toEvent(request({ url: path }), Buffer.alloc(0), `GET ${path}`, {}, requestId);
      const context = lambdaContext(`Fn${path.slice(1)}`, 1000);
      return withServiceName(service, () => runInvocation(context, () => handler(event as never, context))).then(() => context.awsRequestId);
    };
    let lambdaIds: string[] = [];
    const lines = await captureJsonLines(async () => {
      lambdaIds = await Promise.all([invoke('account', '/slow', 'gw-slow-0001'), invoke('account', '/fast', 'gw-fast-0002')]);
    });
    const inside = lines.filter((line) => line.message === 'inside');
    expect(inside).toHaveLength(2);
    expect(inside.find((line) => line.path === '/slow')).toMatchObject({ request_id: 'gw-slow-0001', service: 'account', function_name: 'Fnslow', function_request_id: lambdaIds[0] });
    expect(inside.find((line) => line.path === '/fast')).toMatchObject({ request_id: 'gw-fast-0002', service: 'account', function_name: 'Fnfast', function_request_id: lambdaIds[1] });
    // The first invocation of a service is its cold start, the other is not.
    expect(inside.map((line) => line.cold_start).sort()).toEqual([false, true]);
  });

  it('name the service each was served by', async () => {
    const handler = httpHandler(async () => {
      logger.info('inside');
      return jsonResponse(200, {});
    });
    const lines = await captureJsonLines(() =>
      Promise.all(
        ['express', 'enclave'].map((service) => {
          const context = lambdaContext('Fn', 1000);
          return withServiceName(service, () => runInvocation(context, () => handler(toEvent(request({ url: '/x' }), Buffer.alloc(0), 'GET /x', {}) as never, context)));
        }),
      ),
    );
    expect(lines.filter((line) => line.message === 'inside').map((line) => line.service).sort()).toEqual(['enclave', 'express']);
  });
});
