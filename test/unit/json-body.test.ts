import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse, type HttpResult } from '../../shared/http/response.ts';

/** The JSON body parser every route with a body goes through (shared/http/json-body.ts). */
const echo = httpHandler(async (event: { body: unknown }) => jsonResponse(200, { received: event.body }), { jsonBody: true });
const context = { awsRequestId: 'r', getRemainingTimeInMillis: () => 1000 } as unknown as Context;

async function post(body: string | undefined, headers: Record<string, string> = { 'content-type': 'application/json' }, isBase64Encoded = false) {
  const event = { headers, body, isBase64Encoded, rawPath: '/x', requestContext: { http: { method: 'POST', path: '/x' } } } as unknown as APIGatewayProxyEventV2;
  const result = (await echo(event, context)) as HttpResult;
  return { status: result.statusCode, body: JSON.parse(result.body as string) };
}

describe('jsonBodyParser', () => {
  it('parses JSON bodies, base64-encoded ones too, under any JSON content type', async () => {
    expect(await post('{"a":1}')).toEqual({ status: 200, body: { received: { a: 1 } } });
    expect(await post(Buffer.from('{"b":[2]}').toString('base64'), { 'content-type': 'application/json' }, true)).toEqual({ status: 200, body: { received: { b: [2] } } });
    expect((await post('{"c":3}', { 'content-type': 'application/merge-patch+json; charset=utf-8' })).status).toBe(200);
  });

  it('answers 415 for a non-JSON content type and 400 for a missing, malformed or prototype-polluting body', async () => {
    expect(await post('{"a":1}', { 'content-type': 'text/plain' })).toMatchObject({ status: 415, body: { success: false, error: { code: 'UNSUPPORTED_MEDIA_TYPE' } } });
    expect(await post('{"a":1}', {})).toMatchObject({ status: 415 });
    for (const body of [undefined, '{"a":', '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}}}']) {
      expect(await post(body)).toMatchObject({ status: 400, body: { success: false, error: { code: 'INVALID_JSON' } } });
    }
  });
});
