import { getAddressDecoder } from '@solana/kit';
import { type Address, createWalletClient, defineChain, encodeFunctionData, erc20Abi, http, parseUnits } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { chainBalance, chainInfo, evmClient, faucet, sandboxChains } from './support/chains.ts';
import { call, expectErrorShape } from './support/client.ts';
import { setUserFault } from './support/faults.ts';
import { POLL_TICKS, ticks } from './support/sandbox-clock.ts';

/**
 * The sandbox venues through `npm start`'s runtime: `GET /sandbox/venues` lists each running
 * venue (venue_b this session) with its URL, chain, token, deposit address and rules, and
 * `POST /sandbox/faults` validates its input like every other endpoint (400 and the error shape).
 * Every fault set here is scoped to an address of this file's own (fresh keys): other test files
 * deposit, withdraw and bridge on the same sandbox at the same time.
 */
const isSandbox = (await sandboxChains()) !== undefined;

interface VenueListing {
  dex: string;
  url: string;
  chain: string;
  token: string;
  deposit_address: Address;
  rules: {
    first_deposit_minimum: string;
    deposit: { minimum_amount: string; fee: { amount: string } };
    withdrawal: { minimum_amount: string; fee: { amount: string; fee_type: string } };
    sources: Record<string, string>;
  };
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

const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;
const USDC = (amount: string) => parseUnits(amount, 6);

/** A fresh wallet on ARB with gas and `usdc` USDC, which sends USDC to venue_b's deposit address. */
async function venueBDepositor(usdc: string) {
  const account = privateKeyToAccount(generatePrivateKey());
  await faucet('ARB', account.address, 'ETH', '1');
  await faucet('ARB', account.address, 'USDC', usdc);
  const arb = await chainInfo('ARB');
  const token = arb.tokens.find((t) => t.token === 'USDC')!.address as Address;
  const chain = defineChain({
    id: arb.chain_id!,
    name: 'ARB',
    nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [arb.rpc_url] } },
  });
  const wallet = createWalletClient({ chain, account, transport: http(arb.rpc_url) });
  return {
    address: account.address,
    async deposit(amount: bigint, to: Address): Promise<void> {
      const hash = await wallet.sendTransaction({ to: token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) });
      expect((await (await evmClient('ARB')).waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success');
    },
  };
}

/** What venue_b's own API says `user` may withdraw (its credited balance), as a decimal string. */
async function withdrawable(venue: VenueListing, user: Address): Promise<string> {
  const response = await fetch(`${venue.url}/info`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'clearinghouseState', user }),
  });
  return ((await response.json()) as { withdrawable: string }).withdrawable;
}

/** Polls `read` until `done` holds (10 s at most) and returns the last value. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await ticks(POLL_TICKS);
    value = await read();
  }
  return value;
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
    const user = await venueBDepositor('12.5');
    await user.deposit(USDC('12.5'), venue.deposit_address);
    expect(
      await eventually(
        () => withdrawable(venue, user.address),
        (value) => value !== '0.0',
      ),
    ).toBe('12.5');
  });
});

describe.runIf(isSandbox)('sandbox faults scoped to an address', () => {
  it("a fault scoped to one address leaves another address's deposit alone", async () => {
    const venue = await venueB();
    const [faulted, other] = await Promise.all([venueBDepositor('10'), venueBDepositor('10')]);
    expect(await setUserFault({ target: 'venue_b', operation: 'deposit', mode: 'refund', count: 1, address: faulted.address })).toEqual({
      mode: 'refund',
      remaining: 1,
    });
    // The other address deposits first: the fault standing for `faulted` does not take it.
    await other.deposit(USDC('10'), venue.deposit_address);
    await faulted.deposit(USDC('10'), venue.deposit_address);
    expect(
      await eventually(
        () => withdrawable(venue, other.address),
        (value) => value !== '0.0',
      ),
    ).toBe('10.0');
    // `faulted`'s own deposit took its fault: sent back on chain, never credited.
    expect(
      await eventually(
        () => chainBalance('ARB', faulted.address, 'USDC'),
        (value) => value === USDC('10'),
      ),
    ).toBe(USDC('10'));
    expect(await withdrawable(venue, faulted.address)).toBe('0.0');
    // Used up: clearing it now finds nothing to end.
    expect(await setUserFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', address: faulted.address })).toBeNull();
  });

  it("two addresses' faults at once: each takes its own; a clear releases only its address's stall", async () => {
    const venue = await venueB();
    const [stalled, refunded, untouched] = await Promise.all([venueBDepositor('7'), venueBDepositor('8'), venueBDepositor('9')]);
    await setUserFault({ target: 'venue_b', operation: 'deposit', mode: 'stall', count: 1, address: stalled.address });
    // Lower-case: an EVM address names the same wallet whatever its case.
    await setUserFault({ target: 'venue_b', operation: 'deposit', mode: 'refund', count: 1, address: refunded.address.toLowerCase() });
    await stalled.deposit(USDC('7'), venue.deposit_address);
    await refunded.deposit(USDC('8'), venue.deposit_address);
    await untouched.deposit(USDC('9'), venue.deposit_address);
    // The watcher reads blocks in order: once the last deposit is credited, the two before it were seen.
    expect(
      await eventually(
        () => withdrawable(venue, untouched.address),
        (value) => value !== '0.0',
      ),
    ).toBe('9.0');
    expect(
      await eventually(
        () => chainBalance('ARB', refunded.address, 'USDC'),
        (value) => value === USDC('8'),
      ),
    ).toBe(USDC('8'));
    expect(await withdrawable(venue, refunded.address)).toBe('0.0');
    expect(await withdrawable(venue, stalled.address)).toBe('0.0');
    // Clearing the refunded address's (used-up) fault releases nothing of the stalled one's.
    expect(await setUserFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', address: refunded.address })).toBeNull();
    expect(await withdrawable(venue, stalled.address)).toBe('0.0');
    expect(await setUserFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', address: stalled.address })).toBeNull();
    expect(
      await eventually(
        () => withdrawable(venue, stalled.address),
        (value) => value !== '0.0',
      ),
    ).toBe('7.0');
    expect(await chainBalance('ARB', stalled.address, 'USDC')).toBe(0n);
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
    ['address not a string', { target: 'venue_b', operation: 'deposit', mode: 'stall', count: 1, address: 42 }, 'INVALID_REQUEST'],
    ['address not an address', { target: 'venue_b', operation: 'deposit', mode: 'stall', count: 1, address: '0x1234' }, 'INVALID_ADDRESS'],
    [
      'a Solana address on a venue (EVM only)',
      { target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 1, address: 'So11111111111111111111111111111111111111112' },
      'INVALID_ADDRESS',
    ],
    ['address not an address on the bridge', { target: 'bridge', operation: 'bridge', mode: 'stall', count: 1, address: 'nobody' }, 'INVALID_ADDRESS'],
  ])('%s is 400 %s', async (_what, json, code) => {
    const response = await faults(json);
    expect(response.status, JSON.stringify(response.body)).toBe(400);
    expect(expectErrorShape(response.body).code).toBe(code);
    if ('address' in json) expect(expectErrorShape(response.body).message).toMatch(/^body\.address: /);
  });

  it('a body that is not JSON is 400 INVALID_JSON', async () => {
    const response = await call('account', 'POST', '/sandbox/faults', { rawBody: '{', headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expect(expectErrorShape(response.body).code).toBe('INVALID_JSON');
  });

  it('sets a venue_b withdrawal fault for one address and clears it; the answer names the address (EIP-55)', async () => {
    const address = freshAddress();
    const set = await faults({ target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 2, address: address.toLowerCase() });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ success: true, sandbox: true, target: 'venue_b', operation: 'withdrawal', address, fault: { mode: 'fail', remaining: 2 } });
    const cleared = await faults({ target: 'venue_b', operation: 'withdrawal', mode: 'clear', address });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ success: true, sandbox: true, target: 'venue_b', operation: 'withdrawal', address, fault: null });
  });
});

describe.runIf(isSandbox)('the sandbox bridge', () => {
  it('GET /sandbox/bridge lists its URL, its vaults and the routes with fees, limits and sources', async () => {
    const response = await call('account', 'GET', '/sandbox/bridge');
    expect(response.status).toBe(200);
    const bridge = response.body.bridge as {
      url: string;
      vaults: { evm: string; sol: string };
      routes: { id: string; fee_fixed: string; fee_bps: string; min: string; sources: Record<string, string> }[];
    };
    expect(bridge.url).toMatch(/^http:\/\//);
    expect(bridge.vaults.evm).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const route = bridge.routes.find((r) => r.id === 'across:ARB.USDC->ETH.USDC');
    expect(route).toMatchObject({ fee_fixed: '1500000', fee_bps: '4', min: '5000000' });
    expect(route!.sources.fee_fixed).toContain('sandbox choice');
    expect(bridge.routes.some((r) => r.id === 'cctp:SOL.USDC->ARB.USDC')).toBe(true);
  });

  it('sets a bridge fault for an EVM and for a Solana address and clears them', async () => {
    const evm = freshAddress();
    const sol = getAddressDecoder().decode(crypto.getRandomValues(new Uint8Array(32))) as string;
    const set = await faults({ target: 'bridge', operation: 'bridge', mode: 'stall', count: 1, address: evm });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ success: true, sandbox: true, target: 'bridge', operation: 'bridge', address: evm, fault: { mode: 'stall', remaining: 1 } });
    const setSol = await faults({ target: 'bridge', operation: 'bridge', mode: 'refund', count: 3, address: sol });
    expect(setSol.body).toEqual({ success: true, sandbox: true, target: 'bridge', operation: 'bridge', address: sol, fault: { mode: 'refund', remaining: 3 } });
    for (const address of [evm, sol]) {
      const cleared = await faults({ target: 'bridge', operation: 'bridge', mode: 'clear', address });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toMatchObject({ address, fault: null });
    }
  });
});
