import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { createPublicClient, HttpRequestError, http } from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpHandler } from '../../shared/http/handler.ts';
import { logger, logLevelFromEnv, serviceLogger, setLogLevel } from '../../shared/logger.ts';
import { describeError, redactText } from '../../shared/observability/redact.ts';
import { captureJsonLines as capture } from './support/capture-output.ts';

const API_KEY = 'alch_3f9c2b7e1d4a8c6b5e0f9a7d';
let rpc: Server;
let rpcUrl = '';

beforeAll(async () => {
  // An RPC endpoint that fails every call, so viem throws a real HttpRequestError for it.
  rpc = createServer((_req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('upstream down'));
  await new Promise<void>((done) => rpc.listen(0, '127.0.0.1', done));
  rpcUrl = `http://user:pass@127.0.0.1:${(rpc.address() as AddressInfo).port}/v2/${API_KEY}?apikey=${API_KEY}`;
});
afterAll(() => new Promise<void>((done) => rpc.close(() => done())));
afterEach(() => setLogLevel('info'));

async function viemError(): Promise<HttpRequestError> {
  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) });
  const error = await client.getBalance({ address: '0x000000000000000000000000000000000000dEaD' }).catch((e: unknown) => e);
  const found = (error as { walk?: (fn: (e: unknown) => boolean) => unknown }).walk?.((e) => e instanceof HttpRequestError);
  expect(found).toBeInstanceOf(HttpRequestError);
  return found as HttpRequestError;
}

describe('logger redaction', () => {
  it('logs a real viem HttpRequestError by name and short message: no RPC key, no URL path, no request body', async () => {
    const error = await viemError();
    // The error itself carries all of it: that is what must not reach the log.
    expect(error.message).toContain(API_KEY);
    expect(error.message).toContain('eth_getBalance');

    const lines = await capture(() => logger.error('balance read failed', { chain: 'ARB', error, note: `calling ${rpcUrl}` }));
    expect(lines).toHaveLength(1);
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain('user:pass');
    expect(text).not.toContain('eth_getBalance');
    expect(text).not.toContain('/v2/');
    expect(lines[0]).toMatchObject({
      level: 'ERROR',
      message: 'balance read failed',
      chain: 'ARB',
      error: { name: 'HttpRequestError', message: 'HTTP request failed.' },
    });
    expect(lines[0]!.note).toMatch(/^calling http:\/\/127\.0\.0\.1:\d+\/…$/);
  });

  it('logs the error when it is the whole cause chain (a viem error inside another error)', async () => {
    const error = new Error(`withdraw failed`, { cause: await viemError() });
    const [line] = await capture(() => logger.warn('wrapped', { error }));
    expect(JSON.stringify(line)).not.toContain(API_KEY);
    expect(line!.error).toEqual({ name: 'Error', message: 'withdraw failed', cause: { name: 'HttpRequestError', message: 'HTTP request failed.' } });
  });

  it('redacts a URL inside any string, keeping its origin', () => {
    expect(redactText('fetch https://k:s@arb.example.com:8443/v2/KEY?x=1#f failed')).toBe('fetch https://arb.example.com:8443/… failed');
    expect(redactText('"wss://node.example/ws/abcd"')).toBe('"wss://node.example/…"');
    expect(redactText('see http://127.0.0.1:3000 and http://127.0.0.1:3000/')).toBe('see http://127.0.0.1:3000 and http://127.0.0.1:3000');
    expect(describeError('a string with https://x.example/secret').message).toBe('a string with https://x.example/…');
  });

  it('never logs the event, its headers or body, for a handled request', async () => {
    const handler = httpHandler(async () => ({ statusCode: 200, body: '{}' }), { jsonBody: true });
    const event = {
      routeKey: 'POST /thing',
      rawPath: '/thing',
      headers: { 'content-type': 'application/json', 'x-service-secret-key': 'sk_header_value_123456' },
      body: '{"access_key":"body_value_123456789"}',
      requestContext: { requestId: 'gw-req-00001', http: { method: 'POST' } },
    };
    const lines = await capture(() => handler(event as never, { functionName: 'Thing', awsRequestId: 'lambda-1' } as Context));
    const text = lines.map((line) => JSON.stringify(line)).join('\n');
    expect(lines.some((line) => line.message === 'request handled')).toBe(true);
    expect(text).not.toContain('sk_header_value_123456');
    expect(text).not.toContain('body_value_123456789');
  });
});

describe('LOG_LEVEL', () => {
  it.each([
    ['debug', ['DEBUG', 'INFO', 'WARN', 'ERROR']],
    ['info', ['INFO', 'WARN', 'ERROR']],
    ['WARN', ['WARN', 'ERROR']],
    ['error', ['ERROR']],
    ['silent', []],
  ])('%s prints exactly %o', async (level, expected) => {
    setLogLevel(level);
    const lines = await capture(() => {
      logger.debug('d');
      logger.info('i');
      logger.warn('w');
      logger.error('e');
    });
    expect(lines.map((line) => line.level)).toEqual(expected);
  });

  it('applies to loggers made after it is set, and falls back to info when unknown', async () => {
    expect(logLevelFromEnv('Debug')).toBe('DEBUG');
    expect(logLevelFromEnv('verbose')).toBe('INFO');
    expect(logLevelFromEnv(undefined)).toBe('INFO');
    setLogLevel('error');
    const lines = await capture(() => serviceLogger('made-later').warn('hidden'));
    expect(lines).toEqual([]);
  });

  it('names the service from POWERTOOLS_SERVICE_NAME', async () => {
    const [line] = await capture(() => logger.info('hello'));
    expect(line).toMatchObject({ level: 'INFO', message: 'hello', service: process.env.POWERTOOLS_SERVICE_NAME || 'perp-wallet' });
  });
});
