import { type Address, erc20Abi, getAddress, parseUnits } from 'viem';
import { describe, expect, it } from 'vitest';
import type { VenueDriver } from '../../shared/venues/driver.ts';
import { VENUE_A_SANDBOX_PROFILE } from '../../shared/venues/venue-a/api.ts';
import { VenueADriver } from '../../shared/venues/venue-a/driver.ts';
import { VenueCDriver } from '../../shared/venues/venue-c/driver.ts';
import { VenueDDriver } from '../../shared/venues/venue-d/driver.ts';
import { VenueEDriver } from '../../shared/venues/venue-e/driver.ts';
import { accountWallet } from './support/account-wallet.ts';
import { chainBalance, chainInfo, evmClient, faucet, newAccount, sandboxChains } from './support/chains.ts';
import { appOne, call, expectErrorShape, uniqueUser } from './support/client.ts';
import { POLL_TICKS, ticks } from './support/sandbox-clock.ts';
import { scanItems, tableReadable } from './support/table.ts';

/**
 * Each sandbox venue from a fresh account through funded trading setup, through the account
 * service: requirements, init-perp-dex, a deposit made with the venue's own mechanism from the
 * user's wallet (the driver's deposit plan, each transaction signed through POST /wallet/sign and
 * credited by the venue only once it sees it on chain), init-perp-dex-trading and its one-time key.
 * venue_b's own test (venue-b-onboarding.test.ts) also covers the refusals and force_reinit.
 * Needs the sandbox (chains, faucet, venues): skipped against a deployed stack.
 */
const isSandbox = (await sandboxChains()) !== undefined;

interface VenueCase {
  readonly dex: 'venue_a' | 'venue_c' | 'venue_d' | 'venue_e';
  readonly chain: string;
  readonly token: string;
  readonly deposit: string;
  readonly stored: readonly string[];
  readonly oneTimeKey: string;
  /** The one-time value's shape (hex private keys; venue_e's CLOB secret is base64). */
  readonly keyPattern?: RegExp;
  readonly gasToken?: string;
  readonly metadata?: Record<string, string>;
  driver(baseUrl: string): VenueDriver | Promise<VenueDriver>;
}

const CASES: readonly VenueCase[] = [
  {
    dex: 'venue_a',
    chain: 'ARB',
    token: 'USDC',
    deposit: '10',
    stored: ['account_id', 'vault', 'stark_public_key', 'api_key'],
    oneTimeKey: 'stark_private_key',
    driver: (baseUrl) => new VenueADriver({ baseUrl, ...VENUE_A_SANDBOX_PROFILE }),
  },
  {
    dex: 'venue_c',
    chain: 'ETH',
    token: 'USDC',
    deposit: '10',
    stored: ['l2_address', 'l2_public_key'],
    oneTimeKey: 'subkey_private_key',
    metadata: { name: 'desk' },
    driver: (baseUrl) => new VenueCDriver({ baseUrl }),
  },
  {
    dex: 'venue_d',
    chain: 'INK',
    token: 'USDC',
    deposit: '10',
    stored: ['account_address'],
    oneTimeKey: 'linked_signer_private_key',
    metadata: { name: 'desk' },
    // The sandbox's INK USDC stands in for Nado's USDT0 collateral.
    driver: async (baseUrl) =>
      new VenueDDriver({
        baseUrl,
        collateral: (await chainInfo('INK')).tokens.find((t) => t.token === 'USDC')!.address as Address,
        // Onboarding and balances only: no withdrawal, so no payout is looked for.
        payouts: { head: () => Promise.reject(new Error('no payouts here')), transfers: () => Promise.reject(new Error('no payouts here')) },
      }),
  },
  {
    dex: 'venue_e',
    chain: 'POL',
    token: 'USDC.E',
    gasToken: 'POL',
    deposit: '10',
    stored: ['proxy_wallet_address', 'service_wallet_address'],
    oneTimeKey: 'clob_secret',
    keyPattern: /^[A-Za-z0-9_=-]{20,}$/,
    // The sandbox serves the CLOB and the Bridge API on one URL.
    driver: async (baseUrl) => {
      const pol = await evmClient('POL');
      return new VenueEDriver({
        baseUrl,
        bridgeUrl: baseUrl,
        polygonBalanceOf: (token, owner) => pol.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] }),
      });
    },
  },
];

async function venueUrl(dex: string): Promise<string> {
  const response = await call('account', 'GET', '/sandbox/venues');
  const venue = (response.body.venues as { dex: string; url: string }[]).find((v) => v.dex === dex);
  if (!venue) throw new Error(`${dex} is not running`);
  return venue.url;
}

describe.runIf(isSandbox).each(CASES)('$dex onboarding through the account service', (venue) => {
  it('goes from a fresh account to a funded trading setup; the one-time key is returned once', async () => {
    const { headers, evm } = await newAccount(appOne, uniqueUser(venue.dex));
    const post = (path: string, json: unknown) => call('account', 'POST', path, { headers, json });

    await faucet(venue.chain, evm, venue.token, '20');
    await faucet(venue.chain, evm, venue.gasToken ?? 'ETH', '0.05');
    const requirements = await post('/account/check-perp-dex-requirements', { dex: venue.dex });
    expect(requirements.body, JSON.stringify(requirements.body)).toMatchObject({
      success: true,
      dex: venue.dex,
      requirements_met: true,
      requirements: { usdc_available: '20' },
    });

    const init = await post('/account/init-perp-dex', { dex: venue.dex });
    expect(init.status, JSON.stringify(init.body)).toBe(200);
    expect(init.body.status.initialized).toBe(true);
    for (const field of venue.stored) expect(init.body.status[field], field).not.toBeNull();
    const stored = (await call('account', 'GET', '/account', { headers })).body.perp_dex_status[venue.dex];
    expect(stored).toEqual(init.body.status);

    const unfunded = await post('/account/init-perp-dex-trading', { dex: venue.dex, metadata: venue.metadata });
    expect(unfunded.status).toBe(409);
    expect(expectErrorShape(unfunded.body).code).toBe('DEX_NOT_FUNDED');

    // The venue's own deposit mechanism, from the user's wallet.
    const wallet = accountWallet(headers, getAddress(evm) as Address);
    const driver = await venue.driver(await venueUrl(venue.dex));
    const amount = parseUnits(venue.deposit, 6);
    const plan = await driver.prepareDeposit(wallet, init.body.status, amount);
    expect(plan.chain).toBe(venue.chain);
    for (const step of plan.calls) await wallet.send(plan.chain, step);
    expect(await chainBalance(venue.chain, evm, venue.token)).toBe(parseUnits('20', 6) - amount);

    const deadline = Date.now() + 15_000;
    let perp = await call('account', 'GET', `/account/perp?dex=${venue.dex}`, { headers });
    while (perp.body.assets?.balance === '0' && Date.now() < deadline) {
      await ticks(POLL_TICKS);
      perp = await call('account', 'GET', `/account/perp?dex=${venue.dex}`, { headers });
    }
    expect(perp.body, JSON.stringify(perp.body)).toMatchObject({
      dex: venue.dex,
      initialized: true,
      error: null,
      transfer_rules: { chain: venue.chain, token: venue.token },
    });
    // Credited to the base unit: the deposit minus the venue's deposit fee, as the plan said.
    expect(parseUnits(perp.body.assets.balance, 6)).toBe(plan.expectedCredit);

    const trading = await post('/account/init-perp-dex-trading', { dex: venue.dex, metadata: venue.metadata });
    expect(trading.status, JSON.stringify(trading.body)).toBe(200);
    const key = trading.body.status[venue.oneTimeKey] as string;
    expect(key).toMatch(venue.keyPattern ?? /^0x[0-9a-f]+$/);
    expect(trading.body.status.trade_initialized).toBe(true);

    const credentials = await call('account', 'GET', `/account/perp-credentials?dex=${venue.dex}`, { headers });
    expect(credentials.body).toMatchObject({ dex: venue.dex, initialized: true, trade_initialized: true, error: null });
    const account = await call('account', 'GET', '/account', { headers });
    for (const later of [credentials.body, account.body, (await call('account', 'GET', `/account/perp?dex=${venue.dex}`, { headers })).body]) {
      expect(JSON.stringify(later)).not.toContain(key.replace(/^0x/, ''));
    }
    // Nor in any item of the table (where the tests can read it: the DynamoDB Local project), in any form.
    if (tableReadable) {
      for (const form of [key, key.replace(/^0x/, ''), key.replace(/^0x/, '').toUpperCase()]) expect(await scanItems(form), form).toEqual([]);
      expect((await scanItems(evm.toLowerCase().slice(2))).length + (await scanItems(getAddress(evm).slice(2))).length).toBeGreaterThan(0);
    }
  });
});
