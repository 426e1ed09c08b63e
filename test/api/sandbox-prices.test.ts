import { describe, expect, it } from 'vitest';
import { newAccount, sandboxChains } from './support/chains.ts';
import { appOne, call, expectErrorShape, uniqueUser } from './support/client.ts';

/**
 * The sandbox's Chainlink feeds over HTTP (issue 23): GET/POST /sandbox/prices, and the bar:
 * doubling the ETH price through /sandbox/prices doubles an EVM estimate's gas cost in USDC.
 *
 * Other files run alongside against the same runtime, so the ETH price moves only briefly and
 * only downwards: the test sets half the current price, estimates, sets the current price back
 * (that is the doubling), estimates again, and restores it in `finally` whatever happened. Half
 * the price makes other files' estimates cheaper for a moment, never dearer (no file asserts a
 * USD gas cost; POST /transfer checks funds in native units). A stale feed's 503 is shown at unit
 * level (test/unit/chainlink-prices.test.ts): a stale ETH feed here would fail every file's estimates.
 */
const isSandbox = (await sandboxChains()) !== undefined;
const MICRO_USD = 1_000_000n;
const WEI_PER_ETH = 10n ** 18n;

const prices = (json: unknown) => call('account', 'POST', '/sandbox/prices', { json });
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;
/** A decimal USD string (at most 8 decimals) as micro-USD, the test's own exact parse. */
function microUsd(decimal: string): bigint {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return BigInt(whole) * MICRO_USD + BigInt(fraction.padEnd(6, '0').slice(0, 6));
}

describe.runIf(isSandbox)('/sandbox/prices', () => {
  it('GET: the feeds at their mainnet proxies, read from the sandbox ETH chain', async () => {
    const response = await call('account', 'GET', '/sandbox/prices');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      success: true,
      sandbox: true,
      prices: { ETH: expect.any(String), POL: expect.any(String), SOL: expect.any(String) },
    });
    expect(response.body.feeds.ETH).toMatchObject({
      pair: 'ETH/USD',
      address: '0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419',
      decimals: 8,
      heartbeat_seconds: 3600,
    });
    expect(response.body.feeds.SOL).toMatchObject({ pair: 'SOL/USD', address: '0x4ffC43a60e009B551865A93d232E33Fce9f01507', heartbeat_seconds: 86_400 });
    expect(response.body.feeds.POL).toMatchObject({ pair: 'MATIC/USD', address: '0x7bAC85A8a13A4BcD8abb3eB7d6b4d632c5a57676' });
  });

  it('POST refuses bad bodies with 400 in the error shape and changes nothing', async () => {
    const before = (await call('account', 'GET', '/sandbox/prices')).body.feeds;
    const cases: [unknown, RegExp][] = [
      [{}, /body: must set at least one of ETH, POL, SOL/],
      [{ ETH: '0' }, /body\.ETH: must be greater than zero/],
      [{ ETH: '-1' }, /body\.ETH: must be a decimal string/],
      [{ ETH: '1.123456789' }, /body\.ETH: must be a decimal string in USD with at most 8 decimals/],
      [{ ETH: 3000 }, /body\.ETH: must be a decimal string/],
      [{ DOGE: '1' }, /body\.DOGE: is not allowed/],
      [{ ETH: '3000', updated_at: Math.floor(Date.now() / 1000) + 3600 }, /body\.updated_at: must not be in the future/],
    ];
    for (const [json, message] of cases) {
      const response = await prices(json);
      expect(response.status, JSON.stringify(json)).toBe(400);
      expect(expectErrorShape(response.body).code).toBe('INVALID_REQUEST');
      expect(response.body.error.message).toMatch(message);
    }
    const notJson = await call('account', 'POST', '/sandbox/prices', { rawBody: '{', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(expectErrorShape(notJson.body).code).toBe('INVALID_JSON');
    expect((await call('account', 'GET', '/sandbox/prices')).body.feeds).toEqual(before);
  });

  it('doubling the ETH price doubles an EVM estimate’s gas cost in USDC (ARB deposit, paid in ETH by the user)', async () => {
    const { headers } = await newAccount(appOne, uniqueUser('prices-double'));
    const original: string = (await call('account', 'GET', '/sandbox/prices')).body.prices.ETH;
    const full = microUsd(original);
    expect(full % 2n, 'the current ETH price halves exactly in micro-USD').toBe(0n);
    const half = full / 2n;
    const halfText = `${half / MICRO_USD}.${(half % MICRO_USD).toString().padStart(6, '0')}`;
    const gasOf = async () => {
      const response = await call('account', 'POST', '/transfer/estimate-transfer-cost', {
        headers,
        json: { source: 'self', destination: 'venue_b', amount: '25' },
      });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const gas = response.body.steps[0].gas_breakdown;
      expect(gas).toMatchObject({ chain: 'ARB', native_token: 'ETH', paid_by: 'user' });
      return { native: BigInt(gas.gas_units) * BigInt(gas.gas_price), usdc: microUsd(gas.gas_cost_usdc) };
    };
    let before: Awaited<ReturnType<typeof gasOf>>;
    let after: Awaited<ReturnType<typeof gasOf>>;
    try {
      const set = await prices({ ETH: halfText });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      expect(microUsd(set.body.prices.ETH)).toBe(half);
      before = await gasOf();
      const doubled = await prices({ ETH: original });
      expect(doubled.body.prices.ETH).toBe(original);
      after = await gasOf();
    } finally {
      const restored = await prices({ ETH: original });
      expect(restored.body.prices.ETH).toBe(original);
    }
    // To the unit: each cost is exactly gas_units × gas_price × price, rounded up to a USDC base unit.
    expect(before.usdc).toBe(ceilDiv(before.native * half, WEI_PER_ETH));
    expect(after.usdc).toBe(ceilDiv(after.native * full, WEI_PER_ETH));
    console.info(`ETH ${halfText} → ${original}: native ${before.native} → ${after.native} wei, gas ${before.usdc} → ${after.usdc} micro-USDC`);
    if (before.native === after.native) {
      // Same gas (other files' blocks can move the gas price between the two reads): double the
      // unrounded cost, so double the rounded one, less one unit when the half-price cost had a
      // fraction of a unit of at most one half (ceil(2x) = 2·ceil(x) − 1 exactly then).
      const exact = (before.native * half) % WEI_PER_ETH === 0n;
      const lowHalf = !exact && ((before.native * half) % WEI_PER_ETH) * 2n <= WEI_PER_ETH;
      expect(after.usdc).toBe(2n * before.usdc - (lowHalf ? 1n : 0n));
    }
  });
});
