import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConflictError, DomainError, NotFoundError, UnauthorizedError, ValidationError } from '../../shared/errors.ts';
import { toErrorResponse } from '../../shared/http/error-handler.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { setLogLevel } from '../../shared/logger.ts';

beforeAll(() => setLogLevel('silent'));
afterAll(() => setLogLevel('info'));

function bodyOf(response: ReturnType<typeof toErrorResponse>) {
  return JSON.parse(response.body!) as unknown;
}

describe('toErrorResponse', () => {
  it.each([
    [new ValidationError('body.network: is required'), 400, 'INVALID_REQUEST'],
    [new UnauthorizedError('INVALID_TOKEN', 'JWT rejected: token has expired'), 401, 'INVALID_TOKEN'],
    [new NotFoundError('WALLET_NOT_FOUND', 'no such wallet'), 404, 'WALLET_NOT_FOUND'],
    [new ConflictError('ACCOUNT_EXISTS', 'account exists'), 409, 'ACCOUNT_EXISTS'],
  ])('maps %o to its status and code', (error, status, code) => {
    const response = toErrorResponse(error);
    expect(response.statusCode).toBe(status);
    expect(response.headers).toMatchObject({ 'content-type': 'application/json' });
    expect(bodyOf(response)).toEqual({ success: false, error: { code, message: (error as DomainError).message } });
  });

  it('sets Retry-After (whole seconds, at least 1) from an error that says when to retry, and no such header otherwise', () => {
    const busy = toErrorResponse(new ConflictError('WITHDRAWAL_IN_PROGRESS', 'still in progress', { retryAfterSeconds: 29.2 }));
    expect(busy.statusCode).toBe(409);
    expect(busy.headers).toMatchObject({ 'retry-after': '30' });
    expect(toErrorResponse(new ConflictError('X', 'y', { retryAfterSeconds: 0.001 })).headers).toMatchObject({ 'retry-after': '1' });
    expect(toErrorResponse(new ConflictError('ACCOUNT_EXISTS', 'account exists')).headers).not.toHaveProperty('retry-after');
  });

  it('maps a DomainError subclass declared elsewhere by instanceof', () => {
    class TeapotError extends DomainError {
      constructor() {
        super(418, 'TEAPOT', 'short and stout');
      }
    }
    const response = toErrorResponse(new TeapotError());
    expect(response.statusCode).toBe(418);
    expect(bodyOf(response)).toEqual({ success: false, error: { code: 'TEAPOT', message: 'short and stout' } });
  });

  it('maps the middy JSON body parser 422 to 400 INVALID_JSON', () => {
    const parserError = Object.assign(new Error('Invalid or malformed JSON was provided'), {
      statusCode: 422,
      cause: { package: '@middy/http-json-body-parser', data: 'Unexpected token' },
    });
    const response = toErrorResponse(parserError);
    expect(response.statusCode).toBe(400);
    expect(bodyOf(response)).toEqual({ success: false, error: { code: 'INVALID_JSON', message: 'The request body is not valid JSON' } });
  });

  it('maps a plain body-parser error object (not an Error) too', () => {
    const response = toErrorResponse({ statusCode: 422, cause: { package: '@middy/http-json-body-parser' } });
    expect(response.statusCode).toBe(400);
    expect(bodyOf(response)).toMatchObject({ error: { code: 'INVALID_JSON' } });
  });

  it('maps the body parser 415 to 415 UNSUPPORTED_MEDIA_TYPE', () => {
    const response = toErrorResponse({ statusCode: 415, cause: { package: '@middy/http-json-body-parser' } });
    expect(response.statusCode).toBe(415);
    expect(bodyOf(response)).toEqual({
      success: false,
      error: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' },
    });
  });

  it('turns an unknown Error into a bare 500 that leaks nothing', () => {
    const response = toErrorResponse(new Error('connect ECONNREFUSED 10.1.2.3:8000 table perp-wallet-secret'));
    expect(response.statusCode).toBe(500);
    expect(bodyOf(response)).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
    expect(response.body).not.toContain('ECONNREFUSED');
    expect(response.body).not.toContain('perp-wallet-secret');
  });

  it('names the request id in a 500 body, so a user can quote it', () => {
    const response = toErrorResponse(new Error('boom'), 'req-0123456789');
    expect(bodyOf(response)).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error', request_id: 'req-0123456789' } });
  });

  it('does not trust a status on an error that is not from the body parser', () => {
    const response = toErrorResponse(Object.assign(new Error('upstream said 404'), { statusCode: 404, code: 'NOT_FOUND' }));
    expect(response.statusCode).toBe(500);
    expect(bodyOf(response)).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
  });

  it.each([undefined, null, 'a string', 42])('turns a thrown non-error %o into a 500', (thrown) => {
    const response = toErrorResponse(thrown);
    expect(response.statusCode).toBe(500);
    expect(bodyOf(response)).toMatchObject({ error: { code: 'INTERNAL_ERROR' } });
  });
});

describe('httpHandler with the real middy body parser', () => {
  const handler = httpHandler(async () => ({ statusCode: 200, body: 'ok' }), { jsonBody: true });
  const context = {} as Context;
  const event = (headers: Record<string, string>, body: string) =>
    ({
      version: '2.0',
      rawPath: '/task',
      headers,
      body,
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST' } },
    }) as unknown as APIGatewayProxyEventV2;

  it('answers malformed JSON with 400 INVALID_JSON', async () => {
    const response = (await handler(event({ 'content-type': 'application/json' }, '{"a":'), context)) as ReturnType<typeof toErrorResponse>;
    expect(response.statusCode).toBe(400);
    expect(bodyOf(response)).toMatchObject({ success: false, error: { code: 'INVALID_JSON' } });
  });

  it('answers a non-JSON content type with 415', async () => {
    const response = (await handler(event({ 'content-type': 'text/plain' }, '{}'), context)) as ReturnType<typeof toErrorResponse>;
    expect(response.statusCode).toBe(415);
    expect(bodyOf(response)).toMatchObject({ success: false, error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
  });

  it('lets well-formed JSON through to the adapter', async () => {
    const response = (await handler(event({ 'content-type': 'application/json' }, '{"a":1}'), context)) as ReturnType<typeof toErrorResponse>;
    expect(response).toMatchObject({ statusCode: 200, body: 'ok' });
  });
});

describe('httpHandler X-Request-Id', () => {
  const context = { functionName: 'Thing', awsRequestId: 'lambda-req-1' } as Context;
  const event = (headers: Record<string, string>, requestId?: string) =>
    ({
      version: '2.0',
      routeKey: 'GET /thing',
      rawPath: '/thing',
      headers,
      requestContext: { http: { method: 'GET' }, ...(requestId ? { requestId } : {}) },
    }) as unknown as APIGatewayProxyEventV2;
  const ok = httpHandler(async () => ({ statusCode: 200, body: 'ok' }));
  const failing = httpHandler(async () => {
    throw new Error('database on fire at https://internal.example/secret');
  });
  const refusing = httpHandler(async () => {
    throw new NotFoundError('THING_NOT_FOUND', 'no such thing');
  });
  type Result = ReturnType<typeof toErrorResponse>;

  it('echoes a well-formed incoming id', async () => {
    const response = (await ok(event({ 'x-request-id': 'client:trace-0001.a_b' }, 'gw-id-1'), context)) as Result;
    expect(response.headers?.['x-request-id']).toBe('client:trace-0001.a_b');
  });

  it.each(['short', 'has space in it', 'x'.repeat(129), 'semi;colon1234', ''])("replaces a malformed incoming id %j by API Gateway's", async (incoming) => {
    const response = (await ok(event({ 'x-request-id': incoming }, 'gw-id-2'), context)) as Result;
    expect(response.headers?.['x-request-id']).toBe('gw-id-2');
  });

  it("falls back to Lambda's request id without an API Gateway one", async () => {
    const response = (await ok(event({}), context)) as Result;
    expect(response.headers?.['x-request-id']).toBe('lambda-req-1');
  });

  it('puts the same id in the header and the body of a 500, and on a 4xx', async () => {
    const response = (await failing(event({}, 'gw-id-3'), context)) as Result;
    expect(response.statusCode).toBe(500);
    expect(response.headers?.['x-request-id']).toBe('gw-id-3');
    expect(bodyOf(response)).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error', request_id: 'gw-id-3' } });
    const refused = (await refusing(event({ 'x-request-id': 'client-id-0042' }, 'gw-id-4'), context)) as Result;
    expect(refused.statusCode).toBe(404);
    expect(refused.headers?.['x-request-id']).toBe('client-id-0042');
  });

  it('keeps the id when the body parser refuses the request before the adapter runs', async () => {
    const parsing = httpHandler(async () => ({ statusCode: 200, body: 'ok' }), { jsonBody: true });
    const response = (await parsing(
      { ...event({ 'content-type': 'text/plain' }, 'gw-id-5'), body: 'x', requestContext: { http: { method: 'POST' }, requestId: 'gw-id-5' } } as never,
      context,
    )) as Result;
    expect(response.statusCode).toBe(415);
    expect(response.headers?.['x-request-id']).toBe('gw-id-5');
  });
});
