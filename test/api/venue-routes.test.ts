import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, call, expectErrorShape, uniqueUser } from './support/client.ts';

/**
 * The five venue routes through the running service (local runtime or a deployment): routed (no
 * more 404 ROUTE_NOT_FOUND), authenticated, `dex` validated, and the answers that hold before any
 * venue is reached. Whether a venue is configured depends on the target's VENUE_URLS: where an
 * answer depends on it, both outcomes are checked for their exact shape. Onboarding against the
 * sandbox venues is covered by the venue API tests.
 */
const VENUES = ['venue_a', 'venue_b', 'venue_c', 'venue_d', 'venue_e'] as const;

describe('venue routes', () => {
  it('validate `dex` (400 naming it) and answer 404 ACCOUNT_NOT_FOUND before the account exists', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('venue-none'));
    for (const path of ['/account/check-perp-dex-requirements', '/account/init-perp-dex', '/account/init-perp-dex-trading']) {
      const missing = await call('account', 'POST', path, { headers, json: {} });
      expect(missing.status, path).toBe(400);
      expect(expectErrorShape(missing.body).message).toBe('body.dex: is required');
      const unknown = await call('account', 'POST', path, { headers, json: { dex: 'venue_z' } });
      expect(expectErrorShape(unknown.body).message, path).toBe('body.dex: must be one of venue_a, venue_b, venue_c, venue_d, venue_e');
      const noAccount = await call('account', 'POST', path, { headers, json: { dex: 'venue_b' } });
      expect(noAccount.status, path).toBe(404);
      expect(expectErrorShape(noAccount.body).code).toBe('ACCOUNT_NOT_FOUND');
    }
    for (const path of ['/account/perp', '/account/perp-credentials']) {
      const missing = await call('account', 'GET', path, { headers });
      expect(missing.status, path).toBe(400);
      expect(expectErrorShape(missing.body).message).toBe('query.dex: is required');
      expect((await call('account', 'GET', `${path}?dex=venue_b`, { headers })).status, path).toBe(404);
    }
  });

  it('report every venue of a new account as not initialized, and refuse trading setup before init-perp-dex', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('venue-new'));
    expect((await call('account', 'POST', '/account', { headers })).status).toBe(200);
    for (const dex of VENUES) {
      const assets = await call('account', 'GET', `/account/perp?dex=${dex}`, { headers });
      expect(assets).toMatchObject({ status: 200, body: { dex, initialized: false, assets: null, transfer_rules: null, error: null } });
      const credentials = await call('account', 'GET', `/account/perp-credentials?dex=${dex}`, { headers });
      expect(credentials).toMatchObject({ status: 200, body: { dex, initialized: false, trade_initialized: false, error: null } });
      expect(JSON.stringify(credentials.body)).not.toMatch(/private_key/);
      const trading = await call('account', 'POST', '/account/init-perp-dex-trading', { headers, json: { dex } });
      expect(trading.status, dex).toBe(409);
      expect(expectErrorShape(trading.body).code).toBe('DEX_NOT_INITIALIZED');
    }
    expect((await call('account', 'GET', '/account/perp-credentials?dex=venue_b', { headers })).body).toEqual({
      dex: 'venue_b',
      initialized: false,
      trade_initialized: false,
      error: null,
      account_address: null,
      agent_name: null,
      agent_address: null,
      builder_address: null,
      max_builder_fee_rate: null,
    });
  });

  it('check the requirements of an empty wallet (or say the venue is not configured), and refuse to initialize it', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('venue-empty'));
    expect((await call('account', 'POST', '/account', { headers })).status).toBe(200);
    for (const dex of VENUES) {
      const check = await call('account', 'POST', '/account/check-perp-dex-requirements', { headers, json: { dex } });
      const init = await call('account', 'POST', '/account/init-perp-dex', { headers, json: { dex } });
      if (check.status === 503) {
        expect(expectErrorShape(check.body)).toEqual({ code: 'VENUE_NOT_CONFIGURED', message: `${dex} is not configured on this deployment` });
        expect(init.status, dex).toBe(503);
        continue;
      }
      expect(check.status, dex).toBe(200);
      expect(check.body).toMatchObject({
        success: true,
        dex,
        requirements_met: false,
        requirements: { usdc_available: '0', usdc_sufficient: false, eth_available: '0', eth_sufficient: false },
      });
      expect(check.body.message).toMatch(/^Requirements not met/);
      expect(init.status, dex).toBe(422);
      expect(expectErrorShape(init.body).code).toBe('REQUIREMENTS_NOT_MET');
    }
    const account = await call('account', 'GET', '/account', { headers });
    for (const dex of VENUES) expect(account.body.perp_dex_status[dex].initialized, dex).toBe(false);
  });
});
