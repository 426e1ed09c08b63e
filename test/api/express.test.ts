import { describe, expect, it } from 'vitest';
import { appOne, appTwo, call, expectErrorShape } from './support/client.ts';

describe('GET /v1/identity/provider', () => {
  it('returns the identity provider of the app whose secret key is given', async () => {
    for (const app of [appOne, appTwo]) {
      const response = await call('express', 'GET', '/v1/identity/provider', { headers: { 'X-SERVICE-SECRET-KEY': app.secret_key } });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ success: true, provider_id: app.provider_id, issuer: app.issuer, audience: app.audience });
    }
  });

  it('401 without the header or with an unknown key, never naming another app', async () => {
    const missing = await call('express', 'GET', '/v1/identity/provider');
    expect(missing.status).toBe(401);
    expect(expectErrorShape(missing.body).code).toBe('MISSING_SECRET_KEY');
    const unknown = await call('express', 'GET', '/v1/identity/provider', { headers: { 'X-SERVICE-SECRET-KEY': `${appOne.secret_key}x` } });
    expect(unknown.status).toBe(401);
    expect(JSON.stringify(unknown.body)).not.toContain(appOne.provider_id);
  });

  it('does not accept the API key in place of the secret key', async () => {
    const response = await call('express', 'GET', '/v1/identity/provider', { headers: { 'X-SERVICE-SECRET-KEY': appOne.api_key } });
    expect(response.status).toBe(401);
  });
});
