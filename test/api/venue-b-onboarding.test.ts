import { type Address, getAddress, parseUnits } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { chainBalance, faucet, newAccount, sandboxChains } from './support/chains.ts';
import { appOne, call, expectErrorShape, uniqueUser } from './support/client.ts';
import { POLL_TICKS, ticks } from './support/sandbox-clock.ts';

/**
 * venue_b (Hyperliquid's rules) from a fresh account through funded trading setup, through the
 * account service against the sandbox venue: requirements from the chains, the venue account,
 * a deposit the venue credits only once it sees it on chain (sent here with POST /withdraw to the
 * venue's bridge address: a plain USDC transfer, as on the real venue), the agent approval and its
 * one-time key. Needs the sandbox (chains, faucet, venues): skipped against a deployed stack.
 */
const isSandbox = (await sandboxChains()) !== undefined;

async function venueListing(): Promise<{ url: string; deposit_address: Address }> {
  const response = await call('account', 'GET', '/sandbox/venues');
  const venue = (response.body.venues as { dex: string; url: string; deposit_address: Address }[]).find((v) => v.dex === 'venue_b');
  if (!venue) throw new Error('venue_b is not running');
  return venue;
}

async function venueInfo(body: unknown): Promise<any> {
  const { url } = await venueListing();
  const response = await fetch(`${url}/info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return response.json();
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await ticks(POLL_TICKS);
  }
}

describe.runIf(isSandbox)('venue_b onboarding through the account service', () => {
  it('goes from a fresh account to a funded trading setup; the one-time key is returned once', async () => {
    const { headers, evm } = await newAccount(appOne, uniqueUser('venue-b'));
    const post = (path: string, json: unknown) => call('account', 'POST', path, { headers, json });

    // Not enough USDC yet: the requirements say so, and init-perp-dex stores nothing.
    const before = await post('/account/check-perp-dex-requirements', { dex: 'venue_b' });
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({
      success: true,
      dex: 'venue_b',
      requirements_met: false,
      requirements: { usdc_required: '5', usdc_available: '0', usdc_sufficient: false },
    });
    const refused = await post('/account/init-perp-dex', { dex: 'venue_b' });
    expect(refused.status).toBe(422);
    expect(expectErrorShape(refused.body).code).toBe('REQUIREMENTS_NOT_MET');
    expect((await call('account', 'GET', '/account', { headers })).body.perp_dex_status.venue_b).toMatchObject({ initialized: false, account_address: null });

    // Funded on Arbitrum (USDC and gas): requirements met, the venue account is the user's address.
    await faucet('ARB', evm, 'USDC', '20');
    await faucet('ARB', evm, 'ETH', '0.01');
    const met = await post('/account/check-perp-dex-requirements', { dex: 'venue_b' });
    expect(met.body).toMatchObject({ requirements_met: true, requirements: { usdc_available: '20', usdc_sufficient: true, eth_sufficient: true } });
    const init = await post('/account/init-perp-dex', { dex: 'venue_b' });
    expect(init.status).toBe(200);
    expect(init.body).toMatchObject({ success: true, dex: 'venue_b', status: { initialized: true, account_address: getAddress(evm) } });
    // Again without force_reinit: the stored status, nothing changed.
    expect((await post('/account/init-perp-dex', { dex: 'venue_b' })).body.status).toEqual(init.body.status);

    // Trading setup needs funds at the venue.
    const unfunded = await post('/account/init-perp-dex-trading', { dex: 'venue_b', metadata: { agent_name: 'desk' } });
    expect(unfunded.status).toBe(409);
    expect(expectErrorShape(unfunded.body).code).toBe('DEX_NOT_FUNDED');

    // Deposit: 10 USDC from the user's wallet to the venue's bridge; credited once seen on chain.
    const { deposit_address } = await venueListing();
    const sent = await call('account', 'POST', '/withdraw', {
      headers: { ...headers, 'idempotency-key': crypto.randomUUID() },
      json: { chain: 'ARB', token: 'USDC', amount: '10', to_address: deposit_address },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await chainBalance('ARB', evm, 'USDC')).toBe(parseUnits('10', 6));
    const perp = await until(
      () => call('account', 'GET', '/account/perp?dex=venue_b', { headers }),
      (response) => response.body.assets?.balance === '10',
    );
    expect(perp.status).toBe(200);
    expect(perp.body).toMatchObject({
      dex: 'venue_b',
      initialized: true,
      error: null,
      assets: { balance: '10', account_value: '10', available_for_withdrawal: '10' },
      transfer_rules: {
        chain: 'ARB',
        token: 'USDC',
        deposit: { supported: true, minimum_amount: '5' },
        withdrawal: { supported: true, fee: { amount: '1', token: 'USDC' } },
      },
    });

    // Trading setup: an agent approved at the venue; its key returned once.
    const trading = await post('/account/init-perp-dex-trading', { dex: 'venue_b', metadata: { agent_name: 'desk' } });
    expect(trading.status, JSON.stringify(trading.body)).toBe(200);
    const status = trading.body.status as Record<string, string>;
    expect(status).toMatchObject({ trade_initialized: true, agent_name: 'desk', builder_address: null, max_builder_fee_rate: null });
    expect(status.agent_private_key).toMatch(/^0x[0-9a-f]{64}$/);
    expect(privateKeyToAddress(status.agent_private_key as `0x${string}`)).toBe(getAddress(status.agent_address!));
    const agents = await venueInfo({ type: 'extraAgents', user: evm });
    expect(agents.map((agent: { name: string; address: string }) => [agent.name, getAddress(agent.address)])).toEqual([
      ['desk', getAddress(status.agent_address!)],
    ]);

    // Never again: not in the credentials, the account, or a repeated call (refused without force_reinit).
    const credentials = await call('account', 'GET', '/account/perp-credentials?dex=venue_b', { headers });
    expect(credentials.body).toMatchObject({
      dex: 'venue_b',
      initialized: true,
      trade_initialized: true,
      error: null,
      agent_name: 'desk',
      agent_address: status.agent_address,
    });
    const account = await call('account', 'GET', '/account', { headers });
    for (const later of [credentials.body, account.body]) expect(JSON.stringify(later)).not.toContain(status.agent_private_key!.slice(2));
    const again = await post('/account/init-perp-dex-trading', { dex: 'venue_b', metadata: { agent_name: 'desk' } });
    expect(again.status).toBe(409);
    expect(expectErrorShape(again.body).code).toBe('TRADING_ALREADY_INITIALIZED');

    // force_reinit: a new agent under the same name replaces the old one at the venue.
    const replaced = await post('/account/init-perp-dex-trading', { dex: 'venue_b', force_reinit: true, metadata: { agent_name: 'desk' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.status.agent_private_key).not.toBe(status.agent_private_key);
    const after = await venueInfo({ type: 'extraAgents', user: evm });
    expect(after.map((agent: { address: string }) => getAddress(agent.address))).toEqual([getAddress(replaced.body.status.agent_address)]);
  });
});
