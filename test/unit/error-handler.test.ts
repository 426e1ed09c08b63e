import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, DomainError, NotFoundError, UnauthorizedError, ValidationError } from '../../shared/errors.ts';
import { toErrorResponse } from '../../shared/http/error-handler.ts';
import { httpHandler } from '../../shared/http/handler.ts';

beforeEach(() => {
  process.env.LOG_LEVEL = 'silent';
});

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
    ({ version: '2.0', rawPath: '/task', headers, body, isBase64Encoded: false, requestContext: { http: { method: 'POST' } } }) as unknown as APIGatewayProxyEventV2;

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
