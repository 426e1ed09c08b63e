import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, call, uniqueUser } from './support/client.ts';

/** Every response carries X-Request-Id: the caller's well-formed one, else the gateway's. */
describe('X-Request-Id', () => {
  it.each([
    ['account', 'GET', '/health'],
    ['enclave', 'GET', '/health'],
    ['express', 'GET', '/no/such/route'],
  ] as const)('%s %s %s echoes a well-formed incoming id', async (service, method, path) => {
    const id = `trace:${crypto.randomUUID()}`;
    const response = await call(service, method, path, { headers: { 'x-request-id': id } });
    expect(response.headers.get('x-request-id')).toBe(id);
  });

  it('gives a fresh id to each request that sends none or a malformed one', async () => {
    const ids = new Set<string>();
    for (const incoming of [undefined, 'bad id with spaces', 'short', 'x'.repeat(129)]) {
      const response = await call('account', 'GET', '/health', { headers: incoming ? { 'x-request-id': incoming } : {} });
      const id = response.headers.get('x-request-id');
      expect(id).toBeTruthy();
      expect(id).not.toBe(incoming);
      ids.add(id!);
    }
    expect(ids.size).toBe(4);
  });

  it('is on error responses too (401, 400 from the body parser)', async () => {
    const unauthenticated = await call('account', 'GET', '/account', { headers: { 'x-request-id': 'client-req-401-0001' } });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('x-request-id')).toBe('client-req-401-0001');
    const headers = await accountHeaders(appOne, uniqueUser('reqid'));
    const badJson = await call('account', 'POST', '/wallet/sign', {
      headers: { ...headers, 'content-type': 'application/json', 'x-request-id': 'client-req-400-0002' },
      rawBody: '{',
    });
    expect(badJson.status).toBe(400);
    expect(badJson.headers.get('x-request-id')).toBe('client-req-400-0002');
  });
});
