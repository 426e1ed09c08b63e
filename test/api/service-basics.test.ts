import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, call, expectErrorShape, uniqueUser } from './support/client.ts';

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

  it('treats a wrong method as an unknown route', async () => {
    const response = await call('account', 'DELETE', '/account');
    expect(response.status).toBe(404);
    expectErrorShape(response.body);
  });
});

describe('request bodies', () => {
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

  it('refuses a __proto__ key as invalid JSON rather than polluting objects', async () => {
    const response = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': appOne.secret_key, 'content-type': 'application/json' },
      rawBody: '{"__proto__": {"polluted": true}, "auth_jwt": "x", "network": "ETH", "wallet_group_id": "g"}',
    });
    expect(response.status).toBe(400);
    expectErrorShape(response.body);
  });
});
