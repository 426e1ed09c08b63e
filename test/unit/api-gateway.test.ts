import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  gatewayRequestId,
  installInvokeStore,
  invokeWithinLimits,
  LAMBDA_MAX_PAYLOAD_BYTES,
  lambdaContext,
  lambdaErrorResult,
  requestTarget,
  runInvocation,
  toEvent,
} from '../../infra/local/api-gateway.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { logger } from '../../shared/logger.ts';
import { withServiceName } from '../../shared/observability/service-name.ts';
import { captureJsonLines } from './support/capture-output.ts';

/** The parts of an IncomingMessage that toEvent reads. */
function request(options: { method?: string; url: string; rawHeaders?: string[] }): IncomingMessage {
  return {
    method: options.method ?? 'GET',
    url: options.url,
    rawHeaders: options.rawHeaders ?? [],
    httpVersion: '1.1',
    socket: { remoteAddress: '10.0.0.7' },
  } as unknown as IncomingMessage;
}

const ROOT = { resource: '/', pathParameters: {} };

describe('toEvent (REST API proxy event, payload format 1.0)', () => {
  it('builds the event with resource, path, method and path parameters; absent parts are null', () => {
    const event = toEvent(request({ url: '/task/abc' }), Buffer.alloc(0), { resource: '/task/{task_id}', pathParameters: { task_id: 'abc' } }, 'gw-fixed-id');
    expect(event).toMatchObject({
      resource: '/task/{task_id}',
      path: '/task/abc',
      httpMethod: 'GET',
      pathParameters: { task_id: 'abc' },
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      stageVariables: null,
      body: null,
      isBase64Encoded: false,
      requestContext: {
        resourcePath: '/task/{task_id}',
        httpMethod: 'GET',
        path: '/task/abc',
        stage: 'local',
        requestId: 'gw-fixed-id',
        identity: { sourceIp: '10.0.0.7' },
      },
    });
    expect(event.requestContext.requestTime).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
  });

  it.each(['//', '//x/account', '/x/../account'])('keeps %s as the path (and does not throw)', (url) => {
    const event = toEvent(request({ url: `${url}?q=1` }), Buffer.alloc(0), ROOT);
    expect(event.path).toBe(url);
    expect(event.requestContext.path).toBe(url);
    expect(event.queryStringParameters).toEqual({ q: '1' });
  });

  it('decodes query values; a repeated parameter is its last value, and all of them in multiValueQueryStringParameters', () => {
    const event = toEvent(request({ url: '/task?limit=10&name=two%20words&tag=a&tag=b' }), Buffer.alloc(0), ROOT);
    expect(event.queryStringParameters).toEqual({ limit: '10', name: 'two words', tag: 'b' });
    expect(event.multiValueQueryStringParameters).toEqual({ limit: ['10'], name: ['two words'], tag: ['a', 'b'] });
    expect(event.pathParameters).toBeNull();
  });

  it('keeps header names as sent; a repeated header is its last value, and all of them in multiValueHeaders', () => {
    const rawHeaders = ['X-Service-Secret-Key', 'sk_123', 'Authorization', 'Bearer t', 'x-multi', 'a', 'x-multi', 'b'];
    const event = toEvent(request({ url: '/', rawHeaders }), Buffer.alloc(0), ROOT);
    expect(event.headers).toEqual({ 'X-Service-Secret-Key': 'sk_123', Authorization: 'Bearer t', 'x-multi': 'b' });
    expect(event.multiValueHeaders).toEqual({ 'X-Service-Secret-Key': ['sk_123'], Authorization: ['Bearer t'], 'x-multi': ['a', 'b'] });
  });

  it('passes every body as UTF-8 text (no binary media types are configured)', () => {
    const event = toEvent(request({ method: 'POST', url: '/task', rawHeaders: ['Content-Type', 'application/json'] }), Buffer.from('{"a":1}'), ROOT);
    expect(event).toMatchObject({ body: '{"a":1}', isBase64Encoded: false, httpMethod: 'POST' });
  });

  it('gives each request a UUID, as REST APIs do', () => {
    const ids = new Set(Array.from({ length: 100 }, gatewayRequestId));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('requestTarget splits path and query without resolving anything', () => {
    expect(requestTarget('//x/account?a=1')).toEqual({ path: '//x/account', query: 'a=1' });
    expect(requestTarget('//')).toEqual({ path: '//', query: '' });
    expect(requestTarget('/a/../account')).toEqual({ path: '/a/../account', query: '' });
    expect(requestTarget('/account?')).toEqual({ path: '/account', query: '' });
    expect(requestTarget(undefined)).toEqual({ path: '/', query: '' });
  });
});

describe('concurrent invocations in one process (the local runtime)', () => {
  it('keep their own request id and Lambda context in every log line (one service, one logger)', async () => {
    await installInvokeStore();
    process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
    const handler = httpHandler(async (event: { path: string }) => {
      // Interleave: the first request logs after the second has started and logged.
      await new Promise((done) => setTimeout(done, event.path === '/slow' ? 30 : 5));
      logger.info('inside', { path: event.path });
      return jsonResponse(200, {});
    });
    const invoke = (service: string, path: string, requestId: string) => {
      const event = toEvent(request({ url: path }), Buffer.alloc(0), { resource: path, pathParameters: {} }, requestId);
      const context = lambdaContext(`Fn${path.slice(1)}`, 1000);
      return withServiceName(service, () => runInvocation(context, () => handler(event as never, context))).then(() => context.awsRequestId);
    };
    let lambdaIds: string[] = [];
    const lines = await captureJsonLines(async () => {
      lambdaIds = await Promise.all([invoke('account', '/slow', 'gw-slow-0001'), invoke('account', '/fast', 'gw-fast-0002')]);
    });
    const inside = lines.filter((line) => line.message === 'inside');
    expect(inside).toHaveLength(2);
    expect(inside.find((line) => line.path === '/slow')).toMatchObject({
      request_id: 'gw-slow-0001',
      service: 'account',
      function_name: 'Fnslow',
      function_request_id: lambdaIds[0],
    });
    expect(inside.find((line) => line.path === '/fast')).toMatchObject({
      request_id: 'gw-fast-0002',
      service: 'account',
      function_name: 'Fnfast',
      function_request_id: lambdaIds[1],
    });
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
          return withServiceName(service, () =>
            runInvocation(context, () => handler(toEvent(request({ url: '/x' }), Buffer.alloc(0), { resource: '/x', pathParameters: {} }) as never, context)),
          );
        }),
      ),
    );
    expect(
      lines
        .filter((line) => line.message === 'inside')
        .map((line) => line.service)
        .sort(),
    ).toEqual(['enclave', 'express']);
  });
});

describe("Lambda's limits on a synchronous invocation (the function's timeout, 6 MB each way)", () => {
  it('a function still running at its timeout: Task timed out, and API Gateway answers 502 through its DEFAULT_5XX response', async () => {
    const outcome = await invokeWithinLimits(() => new Promise(() => undefined), 50, 'req-1');
    expect(outcome).toMatchObject({ kind: 'timed-out', log: expect.stringMatching(/ req-1 Task timed out after 0\.05 seconds$/) });
    expect(lambdaErrorResult('gw-1')).toMatchObject({
      statusCode: 502,
      body: JSON.stringify({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error', request_id: 'gw-1' } }),
    });
  });

  it('a result over 6 MB is an invocation error; one under it, and one in time, is the result', async () => {
    const big = { statusCode: 200, body: 'x'.repeat(LAMBDA_MAX_PAYLOAD_BYTES) };
    expect(await invokeWithinLimits(async () => big, 1_000, 'req-2')).toMatchObject({
      kind: 'payload-too-large',
      log: 'req-2 Response payload size exceeded maximum allowed payload size (6291556 bytes).',
    });
    const small = { statusCode: 200, body: 'ok' };
    expect(await invokeWithinLimits(async () => small, 1_000, 'req-3')).toEqual({ kind: 'result', result: small });
  });

  it('a failure inside the timeout is the function error it always was', async () => {
    await expect(invokeWithinLimits(async () => Promise.reject(new Error('boom')), 1_000, 'req-4')).rejects.toThrow('boom');
  });
});
