import { type Address, createWalletClient, defineChain, encodeFunctionData, erc20Abi, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { chainInfo, evmClient, faucet, sandboxChains } from './support/chains.ts';
import { call, expectErrorShape } from './support/client.ts';

/**
 * The sandbox venues through `npm start`'s runtime: `GET /sandbox/venues` lists each running
 * venue (venue_b this session) with its URL, chain, token, deposit address and rules, and
 * `POST /sandbox/faults` validates its input like every other endpoint (400 and the error shape).
 */
const isSandbox = (await sandboxChains()) !== undefined;

interface VenueListing {
  dex: string;
  url: string;
  chain: string;
  token: string;
  deposit_address: Address;
  rules: { first_deposit_minimum: string; deposit: { minimum_amount: string; fee: { amount: string } }; withdrawal: { minimum_amount: string; fee: { amount: string; fee_type: string } }; sources: Record<string, string> };
}

async function venueB(): Promise<VenueListing> {
  const response = await call('account', 'GET', '/sandbox/venues');
  expect(response.status).toBe(200);
  const venue = (response.body.venues as VenueListing[]).find((v) => v.dex === 'venue_b');
  expect(venue).toBeDefined();
  return venue!;
}

async function faults(json: unknown) {
  return call('account', 'POST', '/sandbox/faults', { json });
}

describe.runIf(isSandbox)('GET /sandbox/venues', () => {
  it('lists venue_b: its own URL, ARB USDC, the bridge as deposit address, rules as decimal strings with sources', async () => {
    const venue = await venueB();
    expect(venue).toMatchObject({ chain: 'ARB', token: 'USDC', deposit_address: '0x2df1c51e09aecf9cacb7bc98cb1742757f163df7' });
    expect(venue.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(venue.rules).toMatchObject({
      first_deposit_minimum: '5',
      deposit: { minimum_amount: '5', fee: { amount: '0' } },
      withdrawal: { minimum_amount: '1.000001', fee: { amount: '1', fee_type: 'fixed' } },
    });
    expect(venue.rules.sources['deposit.minimum']).toContain('[O] H1');
  });

  it('lists venue_a: ARB USDC, its bridge as deposit address, the quote fee', async () => {
    const response = await call('account', 'GET', '/sandbox/venues');
    const venue = (response.body.venues as VenueListing[]).find((v) => v.dex === 'venue_a');
    expect(venue).toMatchObject({ chain: 'ARB', token: 'USDC', deposit_address: '0x00000000000000000000000000000000000A0a01' });
    expect(venue!.rules).toMatchObject({ first_deposit_minimum: '1', deposit: { minimum_amount: '1', fee: { amount: '0.01' } } });
    expect(venue!.rules.sources['bridge.address']).toContain('sandbox choice');
  });

  it("a USDC transfer to the deposit address on the sandbox ARB chain is credited to the sender at the venue's own API", async () => {
    const venue = await venueB();
    const account = privateKeyToAccount(generatePrivateKey());
    await faucet('ARB', account.address, 'ETH', '1');
    await faucet('ARB', account.address, 'USDC', '12.5');
    const arb = await chainInfo('ARB');
    const usdc = arb.tokens.find((t) => t.token === 'USDC')!.address as Address;
    const chain = defineChain({ id: arb.chain_id!, name: 'ARB', nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [arb.rpc_url] } } });
    const wallet = createWalletClient({ chain, account, transport: http(arb.rpc_url) });
    const hash = await wallet.sendTransaction({ to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [venue.deposit_address, 12_500_000n] }) });
    expect((await (await evmClient('ARB')).waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success');

    const deadline = Date.now() + 10_000;
    let state: { withdrawable: string } = { withdrawable: '' };
    while (Date.now() < deadline) {
      const response = await fetch(`${venue.url}/info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'clearinghouseState', user: account.address }) });
      state = (await response.json()) as { withdrawable: string };
      if (state.withdrawable !== '0.0') break;
      await new Promise((wake) => setTimeout(wake, 100));
    }
    expect(state.withdrawable).toBe('12.5');
  });
});

describe.runIf(isSandbox)('POST /sandbox/faults', () => {
  it.each([
    ['unknown target', { target: 'venue_z', operation: 'deposit', mode: 'fail', count: 1 }, 'INVALID_REQUEST'],
    ['unknown operation', { target: 'venue_b', operation: 'trade', mode: 'fail', count: 1 }, 'INVALID_REQUEST'],
    ['unknown mode', { target: 'venue_b', operation: 'deposit', mode: 'explode', count: 1 }, 'INVALID_REQUEST'],
    ['count missing', { target: 'venue_b', operation: 'deposit', mode: 'fail' }, 'INVALID_REQUEST'],
    ['count zero', { target: 'venue_b', operation: 'deposit', mode: 'stall', count: 0 }, 'INVALID_REQUEST'],
    ['count fractional', { target: 'venue_b', operation: 'deposit', mode: 'stall', count: 1.5 }, 'INVALID_REQUEST'],
    ['count as a string', { target: 'venue_b', operation: 'deposit', mode: 'stall', count: '1' }, 'INVALID_REQUEST'],
    ['bridge operation on a venue', { target: 'venue_b', operation: 'bridge', mode: 'fail', count: 1 }, 'INVALID_OPERATION'],
    ['a venue operation on the bridge', { target: 'bridge', operation: 'deposit', mode: 'refund', count: 1 }, 'INVALID_OPERATION'],
    ['bridge count missing', { target: 'bridge', operation: 'bridge', mode: 'stall' }, 'INVALID_REQUEST'],
  ])('%s is 400 %s', async (_what, json, code) => {
    const response = await faults(json);
    expect(response.status, JSON.stringify(response.body)).toBe(400);
    expect(expectErrorShape(response.body).code).toBe(code);
  });

  it('a body that is not JSON is 400 INVALID_JSON', async () => {
    const response = await call('account', 'POST', '/sandbox/faults', { rawBody: '{', headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expect(expectErrorShape(response.body).code).toBe('INVALID_JSON');
  });

  it('sets a venue_b withdrawal fault and clears it', async () => {
    // Withdrawal faults only: other API tests deposit to venue_b, none withdraws through the sandbox.
    const set = await faults({ target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 2 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ success: true, sandbox: true, target: 'venue_b', operation: 'withdrawal', fault: { mode: 'fail', remaining: 2 } });
    const cleared = await faults({ target: 'venue_b', operation: 'withdrawal', mode: 'clear' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ fault: null });
  });
});

describe.runIf(isSandbox)('the sandbox bridge', () => {
  it('GET /sandbox/bridge lists its URL, its vaults and the routes with fees, limits and sources', async () => {
    const response = await call('account', 'GET', '/sandbox/bridge');
    expect(response.status).toBe(200);
    const bridge = response.body.bridge as { url: string; vaults: { evm: string; sol: string }; routes: { id: string; fee_fixed: string; fee_bps: string; min: string; sources: Record<string, string> }[] };
    expect(bridge.url).toMatch(/^http:\/\//);
    expect(bridge.vaults.evm).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const route = bridge.routes.find((r) => r.id === 'across:ARB.USDC->ETH.USDC');
    expect(route).toMatchObject({ fee_fixed: '1500000', fee_bps: '4', min: '5000000' });
    expect(route!.sources.fee_fixed).toContain('sandbox choice');
    expect(bridge.routes.some((r) => r.id === 'cctp:SOL.USDC->ARB.USDC')).toBe(true);
  });

  it('sets a bridge fault and clears it', async () => {
    // Stall only, then clear at once: other API tests may bridge through the sandbox.
    const set = await faults({ target: 'bridge', operation: 'bridge', mode: 'stall', count: 1 });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ success: true, sandbox: true, target: 'bridge', operation: 'bridge', fault: { mode: 'stall', remaining: 1 } });
    const cleared = await faults({ target: 'bridge', operation: 'bridge', mode: 'clear' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ fault: null });
  });
});
