import type { IncomingMessage } from 'node:http';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toEvent } from '../../infra/local/api-gateway.ts';
import { toErrorResponse } from '../../shared/http/error-handler.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { setLogLevel } from '../../shared/logger.ts';

/**
 * Keys named after Object.prototype members (issue 20 §4) where the request becomes objects: the
 * local API Gateway's event (query and headers), middy's header normaliser and JSON body parser,
 * and parseInput. test/api/prototype-keys.test.ts sends the same names to every route.
 */
const NAMES = [...new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype'])].sort();
const MARKER = 'polluted-by-prototype-keys-test';

beforeAll(() => setLogLevel('silent'));
afterAll(() => {
  setLogLevel('info');
  // Nothing above wrote to Object.prototype.
  expect(Object.hasOwn(Object.prototype, 'marker')).toBe(false);
  expect(({} as Record<string, unknown>).marker).toBeUndefined();
});

function request(url: string, rawHeaders: string[]): IncomingMessage {
  return { url, rawHeaders, method: 'POST', httpVersion: '1.1', socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
}

const eventOf = (url: string, rawHeaders: string[] = [], body = '') =>
  toEvent(request(url, rawHeaders), Buffer.from(body), { resource: '/thing', pathParameters: {} }, 'req-1');

/** What the JSON.parse of a Lambda event gives: ordinary objects, the names as own properties. */
function ownEntries(object: object | null | undefined): [string, unknown][] {
  expect(object).not.toBeNull();
  expect(Object.getPrototypeOf(object)).toBe(Object.prototype);
  return Object.getOwnPropertyNames(object).map((name) => [name, (object as Record<string, unknown>)[name]]);
}

describe('the local API Gateway event (infra/local/api-gateway.ts)', () => {
  it.each(NAMES)('keeps %s as a query parameter, single and repeated, as an own property', (name) => {
    const key = encodeURIComponent(name);
    const event = eventOf(`/thing?chain=ETH&${key}=x&${key}=y`);
    expect(ownEntries(event.queryStringParameters)).toEqual([
      ['chain', 'ETH'],
      [name, 'y'],
    ]);
    expect(ownEntries(event.multiValueQueryStringParameters)).toEqual([
      ['chain', ['ETH']],
      [name, ['x', 'y']],
    ]);
    // The same objects a Lambda gets from the JSON of this event.
    const lambda = JSON.parse(JSON.stringify(event)) as APIGatewayProxyEvent;
    expect(ownEntries(lambda.multiValueQueryStringParameters)).toEqual(ownEntries(event.multiValueQueryStringParameters));
  });

  it.each(NAMES)('keeps %s as a header, single and repeated, as an own property', (name) => {
    const event = eventOf('/thing', ['Host', 'localhost', name, 'x', name, 'y']);
    expect(ownEntries(event.headers)).toEqual([
      ['Host', 'localhost'],
      [name, 'y'],
    ]);
    expect(ownEntries(event.multiValueHeaders)).toEqual([
      ['Host', ['localhost']],
      [name, ['x', 'y']],
    ]);
  });
});

describe('httpHandler with such keys in headers, query and JSON body', () => {
  const Body = v.object({ message: v.string(), nested: v.optional(v.looseObject({ a: v.optional(v.number()) })) });
  const Query = v.object({ chain: v.optional(v.string()) });
  const seen: { body: unknown; query: unknown; headers: unknown }[] = [];
  const handler = httpHandler(
    async (event: APIGatewayProxyEvent & { body: unknown }) => {
      const body = parseInput(Body, event.body, 'body');
      const query = parseInput(Query, event.queryStringParameters ?? {}, 'query');
      seen.push({ body, query, headers: event.headers });
      return jsonResponse(200, { success: true, body, query });
    },
    { jsonBody: true },
  );
  const context = { functionName: 'Thing', awsRequestId: 'lambda-req-1' } as Context;
  const invoke = async (name: string, body: string) => {
    const key = encodeURIComponent(name);
    const event = eventOf(`/thing?${key}=x&chain=ETH`, ['Content-Type', 'application/json', name, 'x'], body);
    // As Lambda hands it over: the event's JSON, parsed.
    return (await handler(JSON.parse(JSON.stringify(event)), context)) as { statusCode: number; body: string };
  };
  const objectValue = `{"marker":"${MARKER}","prototype":{"marker":"${MARKER}"}}`;

  it.each(NAMES)('%s: a 2xx whose parsed input holds no such key, or a 400 naming it', async (name) => {
    const key = JSON.stringify(name);
    for (const body of [`{"message":"hi",${key}:${objectValue}}`, `{"message":"hi",${key}:"x"}`, `{"message":"hi","nested":{"a":1,${key}:${objectValue}}}`]) {
      seen.length = 0;
      const response = await invoke(name, body);
      const parsed = JSON.parse(response.body) as { success: boolean; error?: { code: string; message: string } };
      const refused = name === '__proto__' || (name === 'constructor' && body.includes(`${key}:{`));
      if (refused) {
        expect(response.statusCode, body).toBe(400);
        expect(parsed.error).toEqual({ code: 'INVALID_REQUEST', message: expect.stringContaining(`a key named "${name}"`) });
        continue;
      }
      expect(response.statusCode, `${body} -> ${response.body}`).toBe(200);
      const [{ body: input, query, headers }] = seen as [(typeof seen)[number]];
      // Valibot's output: plain prototypes, the declared keys; the loose object keeps another own
      // key as data (`prototype` and `constructor` it drops), never as its prototype.
      const nested = (input as { nested?: Record<string, unknown> }).nested ?? {};
      for (const object of [input, query, nested]) {
        expect(Object.getPrototypeOf(object)).toBe(Object.prototype);
        expect((object as Record<string, unknown>).marker).toBeUndefined();
      }
      expect(Object.keys(input as object).sort()).toEqual(body.includes('nested') ? ['message', 'nested'] : ['message']);
      if (body.includes('nested')) expect(Object.keys(nested)).toEqual(name === 'prototype' || name === 'constructor' ? ['a'] : ['a', name]);
      expect(query).toEqual({ chain: 'ETH' });
      // middy's header normaliser: lower-cased names on a null-prototype object, the caller's as own.
      expect(Object.getPrototypeOf(headers)).toBeNull();
      expect((headers as Record<string, string>)[name.toLowerCase()]).toBe('x');
    }
  });
});

describe('the error answer for a key the body parser refuses', () => {
  const parser = '@middy/http-json-body-parser';

  it.each([
    ['__proto__', 'body: a key named "__proto__" is not allowed (at any depth)'],
    ['constructor', 'body: a key named "constructor" holding an object with a "prototype" key is not allowed (at any depth)'],
  ])('%s is a 400 INVALID_REQUEST naming it', (key, message) => {
    const response = toErrorResponse({ statusCode: 422, message: 'Forbidden key in JSON body', cause: { package: parser, data: key } });
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message } });
  });

  it('a body that is not JSON stays INVALID_JSON, even one spelling such a key', () => {
    for (const data of ['__proto__', 'constructor', '{"a":']) {
      const response = toErrorResponse({ statusCode: 422, cause: { package: parser, data, message: 'Unexpected token' } });
      expect(JSON.parse(response.body)).toEqual({ success: false, error: { code: 'INVALID_JSON', message: 'The request body is not valid JSON' } });
    }
  });
});

describe('parseInput and a strict object', () => {
  const Strict = v.strictObject({ a: v.optional(v.string()) });

  it.each(NAMES)('names %s in the 400', (name) => {
    const input = JSON.parse(`{${JSON.stringify(name)}:"x"}`) as unknown;
    expect(() => parseInput(Strict, input, 'body')).toThrow(`body.${name}: is not allowed`);
  });
});
