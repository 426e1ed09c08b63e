import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { UpstreamError } from '../../shared/errors.ts';
import { parseInput } from '../../shared/http/validate.ts';
import {
  AmountBelowMinimumError,
  BridgeAmountRefused,
  type BridgeQuote,
  BridgeQuoteError,
  type BridgeQuoter,
  type BridgeRoute,
  DEFAULT_PLATFORM_FEE,
  type EstimateDeps,
  estimateTransferCost,
  type GasEstimator,
  type GasLeg,
  type PlatformFeeConfig,
  toEth,
  toUsd,
} from '../../shared/transfers/estimate.ts';
import { planTransfer } from '../../shared/transfers/planner.ts';
import { TransferCostEstimateResponse, TransferRequest } from '../../shared/transfers/schemas.ts';
import type { ChainCode } from '../../shared/wallets/networks.ts';
import { ConfiguredPrices } from './support/configured-prices.ts';

/**
 * Test double: gas units per `action:chain` for the step's own send, plus the platform fee
 * transfer when the leg carries one (30,000 units on EVM, one signature on Solana), and a gas
 * price per chain; records what it was asked.
 */
class TableGasEstimator implements GasEstimator {
  readonly legs: GasLeg[] = [];
  static readonly UNITS: Readonly<Record<string, bigint>> = {
    'deposit:ARB': 65_000n,
    'deposit:ETH': 120_000n,
    'deposit:INK': 80_000n,
    'deposit:POL': 60_000n,
    'bridge:ARB': 90_000n,
    'bridge:ETH': 100_000n,
    'bridge:INK': 90_000n,
    'bridge:POL': 90_000n,
    'bridge:SOL': 1n, // signatures
  };
  static readonly FEE_TRANSFER = 30_000n;
  static readonly PRICES: Readonly<Record<ChainCode, bigint>> = {
    ARB: 100_000_000n, // 0.1 gwei
    ETH: 10_000_000_000n, // 10 gwei
    INK: 1_000_000n, // 0.001 gwei
    POL: 30_000_000_000n, // 30 gwei
    SOL: 5_000n, // lamports per signature
  };
  estimateGas(leg: GasLeg): Promise<bigint> {
    this.legs.push(leg);
    const units = leg.action === 'withdrawal' ? 0n : TableGasEstimator.UNITS[`${leg.action}:${leg.chain}`];
    if (units === undefined) throw new Error(`no gas for ${leg.action} on ${leg.chain}`);
    const fee = leg.platformFee ? (leg.chain === 'SOL' ? 1n : TableGasEstimator.FEE_TRANSFER) : 0n;
    return Promise.resolve(units + fee);
  }
  gasPrice(chain: ChainCode): Promise<bigint> {
    return Promise.resolve(TableGasEstimator.PRICES[chain]);
  }
}

/**
 * Test double: an Across-like quote, fee = 0.5 USDC + ceil(amount × 4 / 10,000), min 1 USDC, max
 * 1,000,000 USDC; like the sandbox bridge it refuses to quote an amount outside the limits.
 */
class FormulaBridgeQuoter implements BridgeQuoter {
  readonly provider = 'test_bridge';
  readonly asked: { route: BridgeRoute; amount: bigint }[] = [];
  static readonly LIMITS = { minAmount: 1_000_000n, maxAmount: 1_000_000_000_000n };
  quote(route: BridgeRoute, amount: bigint): Promise<BridgeQuote> {
    this.asked.push({ route, amount });
    const fee = 500_000n + (amount * 4n + 9_999n) / 10_000n;
    const { minAmount, maxAmount } = FormulaBridgeQuoter.LIMITS;
    if (amount < minAmount || amount <= fee) return Promise.reject(new BridgeAmountRefused('too_low', FormulaBridgeQuoter.LIMITS));
    if (amount > maxAmount) return Promise.reject(new BridgeAmountRefused('too_high', FormulaBridgeQuoter.LIMITS));
    return Promise.resolve({ fee, minAmount, maxAmount, expiresAt: '2026-11-22T12:05:00.000Z' });
  }
}

/** Test double: a bridge that cannot quote. */
class RefusingBridgeQuoter implements BridgeQuoter {
  readonly provider = 'test_bridge';
  quote(): Promise<BridgeQuote> {
    return Promise.reject(new UpstreamError('BRIDGE_UNAVAILABLE', 'the bridge is unavailable'));
  }
}

function deps(overrides: Partial<EstimateDeps> = {}): EstimateDeps {
  return { gas: new TableGasEstimator(), prices: new ConfiguredPrices(), bridge: new FormulaBridgeQuoter(), platformFee: DEFAULT_PLATFORM_FEE, ...overrides };
}
const estimate = (body: Record<string, unknown>, d: EstimateDeps = deps()) => estimateTransferCost(d, planTransfer(parseInput(TransferRequest, body, 'body')));
const units = (decimal: string) => BigInt(Math.round(Number(decimal) * 1e6)); // test-side only, for small exact values

async function refusal(body: Record<string, unknown>, d?: EstimateDeps) {
  try {
    await estimate(body, d);
  } catch (error) {
    return error as Error & { status: number; code: string };
  }
  throw new Error('the estimate was accepted');
}

describe('transfer cost estimate: fee arithmetic to the base unit', () => {
  it('self (ARB USDC) to venue_b: gas × price in ETH and USD, platform fee 10 bps', async () => {
    const result = await estimate({ source: 'self', destination: 'venue_b', amount: '100' });
    // gas: the deposit's 65,000 and the platform fee transfer's 30,000, × 0.1 gwei = 9.5e12 wei = 0.0000095 ETH; × 3,000 USD = 0.0285 USD.
    expect(result.steps).toEqual([
      {
        action: 'deposit',
        dex: 'venue_b',
        cost_eth: '0.0000095',
        cost_usdc: '0.1285',
        breakdown: { gas_cost_eth: '0.0000095', bridge_fee_usdc: '0', platform_fee_usdc: '0.1', venue_fee_usdc: '0' },
        estimated_gas: 95_000,
        gas_breakdown: {
          chain: 'ARB',
          native_token: 'ETH',
          gas_units: '95000',
          gas_price: '100000000',
          gas_cost_native: '0.0000095',
          native_value: '0',
          gas_cost_usdc: '0.0285',
          paid_by: 'user',
        },
        amount_in: '100',
        amount_out: '99.9',
      },
    ]);
    expect(result).toMatchObject({
      success: true,
      source: 'self',
      destination: 'venue_b',
      amount: '100',
      total_cost_eth: '0.0000095',
      total_cost_usdc: '0.1285',
      gas_sponsored: false,
      message: null,
    });
    expect(result.route).toEqual({
      route_id: 'self>ARB.USDC>venue_b',
      reason: 'Your wallet deposits USDC on ARB into venue_b.',
      hops: 1,
      steps: [{ action: 'deposit', dex: 'venue_b', chain: 'ARB', token: 'USDC', gas_policy: 'user' }],
      gas_policy: 'user',
      chain_estimates: { ARB: { native_token: 'ETH', gas_units: '95000', gas_price: '100000000', native_cost: '0.0000095', cost_usdc: '0.0285' } },
      amount_received: '99.9',
      // 5 USDC deposit minimum; x − ceil(x × 10 / 10,000) ≥ 5,000,000 first holds at 5,005,006.
      effective_minimum_deposit: '5.005006',
      warnings: [],
    });
  });

  it('venue_b to self on SOL: the venue fee, the platform fee, then the bridge quote for what is left', async () => {
    const bridge = new FormulaBridgeQuoter();
    const result = await estimate({ source: 'venue_b', destination: 'self', chain: 'SOL', amount: '100' }, deps({ bridge }));
    const [withdrawal, bridgeStep] = result.steps;
    // 100 − 1 (venue_b fee) = 99; platform ceil(99 × 0.001) = 0.099; bridge gets 98.901. The venue
    // sends the payout; the wallet sends the platform fee out of it: 30,000 × 0.1 gwei = 0.000003 ETH = 0.009 USD.
    expect(withdrawal).toMatchObject({
      action: 'withdrawal',
      dex: 'venue_b',
      cost_eth: '0.000003',
      cost_usdc: '1.108',
      estimated_gas: 30_000,
      amount_out: '98.901',
    });
    expect(withdrawal!.gas_breakdown).toMatchObject({ chain: 'ARB', gas_units: '30000', gas_cost_usdc: '0.009', paid_by: 'user' });
    expect(withdrawal!.breakdown).toEqual({ gas_cost_eth: '0.000003', bridge_fee_usdc: '0', platform_fee_usdc: '0.099', venue_fee_usdc: '1' });
    expect(bridge.asked[0]).toEqual({ route: { from: { chain: 'ARB', token: 'USDC' }, to: { chain: 'SOL', token: 'USDC' } }, amount: 98_901_000n });
    // 0.5 + ceil(98,901,000 × 4 / 10,000) = 500,000 + 39,561 units; gas 90,000 × 0.1 gwei = 0.000009 ETH = 0.027 USD.
    expect(bridgeStep).toMatchObject({
      action: 'bridge',
      dex: 'test_bridge',
      cost_eth: '0.000009',
      cost_usdc: '0.566561',
      estimated_gas: 90_000,
      amount_in: '98.901',
      amount_out: '98.361439',
    });
    expect(bridgeStep!.breakdown.bridge_fee_usdc).toBe('0.539561');
    expect(result.total_cost_usdc).toBe('1.674561');
    expect(result.total_cost_eth).toBe('0.000012');
    expect(result.route.amount_received).toBe('98.361439');
    expect(result.route.bridge_quote_expires_at).toBe('2026-11-22T12:05:00.000Z');
    expect(result.route.hops).toBe(2);
    // Walked back: the bridge's 1 USDC minimum, the platform fee (1,001,002), venue_b's 1 USDC fee.
    expect(result.route.effective_minimum_deposit).toBe('2.001002');
  });

  it('a Solana leg pays in SOL (signatures × lamports), converted through the SOL and ETH prices; the EVM leg is sponsored', async () => {
    const result = await estimate({ source: 'self', destination: 'venue_d', chain: 'SOL', amount: '50', gas_sponsored: true });
    const [bridgeStep, deposit] = result.steps;
    // Two transactions from the wallet, the platform fee and the bridge deposit: 2 signatures × 5,000
    // lamports = 0.00001 SOL × 150 USD = 0.0015 USD = 0.0000005 ETH at 3,000 USD.
    expect(bridgeStep).toMatchObject({ action: 'bridge', cost_eth: '0.0000005', estimated_gas: 2 });
    expect(bridgeStep!.gas_breakdown).toMatchObject({
      chain: 'SOL',
      native_token: 'SOL',
      gas_cost_native: '0.00001',
      gas_cost_usdc: '0.0015',
      paid_by: 'user',
    });
    // platform 0.05; bridge 0.5 + ceil(49,950,000 × 4 / 10,000) = 0.51998; cost 0.0015 + 0.51998 + 0.05.
    expect(bridgeStep!.cost_usdc).toBe('0.57148');
    // INK: 80,000 × 0.001 gwei = 8e10 wei = 240 micro-USD, paid by the sponsor: shown, not charged.
    expect(deposit).toMatchObject({ action: 'deposit', dex: 'venue_d', cost_eth: '0', cost_usdc: '0', estimated_gas: 80_000 });
    expect(deposit!.gas_breakdown).toMatchObject({ gas_cost_native: '0.00000008', gas_cost_usdc: '0.00024', paid_by: 'sponsored' });
    expect(result.gas_sponsored).toBe(true);
    expect(result.route.gas_policy).toBe('mixed');
    expect(result.message).toMatch(/Solana leg is paid by your wallet in SOL/);
    expect(result.route.chain_estimates).toEqual({
      SOL: { native_token: 'SOL', gas_units: '2', gas_price: '5000', native_cost: '0.00001', cost_usdc: '0.0015' },
      INK: { native_token: 'ETH', gas_units: '80000', gas_price: '1000000', native_cost: '0.00000008', cost_usdc: '0.00024' },
    });
    expect(result.total_cost_usdc).toBe('0.57148');
    expect(result.route.amount_received).toBe('49.43002');
  });

  it('POL gas converts through the POL price', async () => {
    const result = await estimate({ source: 'self', destination: 'venue_e', chain: 'POL', token: 'USDC.E', amount: '10' });
    // (60,000 + 30,000 for the platform fee) × 30 gwei = 0.0027 POL × 0.25 USD = 675 micro-USD = 2.25e11 wei of ETH.
    expect(result.steps[0]).toMatchObject({ cost_eth: '0.000000225', cost_usdc: '0.010675', estimated_gas: 90_000 });
    expect(result.steps[0]!.gas_breakdown).toMatchObject({ native_token: 'POL', gas_cost_native: '0.0027', gas_cost_usdc: '0.000675' });
  });

  it("venue_c's deposit also sends its L1 message fee in ETH, charged even with sponsored gas", async () => {
    const plain = await estimate({ source: 'self', destination: 'venue_c', chain: 'ETH', amount: '10' });
    // gas (120,000 + 30,000) × 10 gwei = 0.0015 ETH (4.5 USD) + 0.0001 ETH value (0.3 USD) + platform 0.01.
    expect(plain.steps[0]).toMatchObject({ cost_eth: '0.0016', cost_usdc: '4.81' });
    expect(plain.steps[0]!.gas_breakdown).toMatchObject({ native_value: '0.0001', gas_cost_native: '0.0015' });
    expect(plain.route.chain_estimates.ETH!.native_cost).toBe('0.0016');
    const sponsored = await estimate({ source: 'self', destination: 'venue_c', chain: 'ETH', amount: '10', gas_sponsored: true });
    expect(sponsored.steps[0]).toMatchObject({ cost_eth: '0.0001', cost_usdc: '0.31' });
  });

  it("venue_a's deposit quote fee is a venue fee on the deposit step", async () => {
    const result = await estimate({ source: 'self', destination: 'venue_a', amount: '10' });
    expect(result.steps[0]!.breakdown).toMatchObject({ platform_fee_usdc: '0.01', venue_fee_usdc: '0.01' });
    expect(result.route.amount_received).toBe('9.98');
  });

  it('the platform fee comes from configuration', async () => {
    const platformFee: PlatformFeeConfig = { fixed: 250_000n, bps: 0n };
    const result = await estimate({ source: 'self', destination: 'venue_b', amount: '100' }, deps({ platformFee }));
    expect(result.steps[0]!.breakdown.platform_fee_usdc).toBe('0.25');
    expect(result.route.effective_minimum_deposit).toBe('5.25');
  });

  it('asks the gas estimator about each leg with the amount reaching it', async () => {
    const gas = new TableGasEstimator();
    await estimate({ source: 'venue_b', destination: 'venue_d', amount: '20' }, deps({ gas }));
    // 20 − 1 = 19 paid out, the platform fee 0.019 sent from it; 18.981 reaches the bridge; − (0.5 + 0.007593) = 18.473407 the deposit.
    expect(gas.legs).toEqual([
      { action: 'withdrawal', chain: 'ARB', token: 'USDC', amount: 18_981_000n, venue: 'venue_b', platformFee: { amount: 19_000n } },
      {
        action: 'bridge',
        chain: 'ARB',
        token: 'USDC',
        amount: 18_981_000n,
        bridge: { from: { chain: 'ARB', token: 'USDC' }, to: { chain: 'INK', token: 'USDC' } },
      },
      { action: 'deposit', chain: 'INK', token: 'USDC', amount: 18_473_407n, venue: 'venue_d' },
    ]);
  });
});

describe('transfer cost estimate: every transaction from the wallet is priced (issue 19)', () => {
  const RECIPIENT = '0x00000000000000000000000000000000000Fee00';

  it('the platform fee transfer is part of the gas of the step that takes it, sent to the configured recipient', async () => {
    const gas = new TableGasEstimator();
    const result = await estimate(
      { source: 'self', destination: 'venue_d', chain: 'ARB', amount: '100' },
      deps({ gas, platformFee: { ...DEFAULT_PLATFORM_FEE, recipient: RECIPIENT } }),
    );
    // Step 0 (the bridge) sends the fee, 0.1 USDC, and then 99.9 into the bridge; step 1 sends no fee.
    expect(gas.legs[0]).toEqual({
      action: 'bridge',
      chain: 'ARB',
      token: 'USDC',
      amount: 99_900_000n,
      bridge: { from: { chain: 'ARB', token: 'USDC' }, to: { chain: 'INK', token: 'USDC' } },
      platformFee: { amount: 100_000n, recipient: RECIPIENT },
    });
    expect(gas.legs[1]).not.toHaveProperty('platformFee');
    expect(result.steps.map((step) => step.estimated_gas)).toEqual([120_000, 80_000]);
  });

  it('without a fee no fee transfer is priced; a venue payout then sends nothing from the wallet', async () => {
    const gas = new TableGasEstimator();
    const noFee = deps({ gas, platformFee: { fixed: 0n, bps: 0n } });
    expect((await estimate({ source: 'self', destination: 'venue_b', amount: '100' }, noFee)).steps[0]!.estimated_gas).toBe(65_000);
    const payout = await estimate({ source: 'venue_a', destination: 'self', amount: '100' }, noFee);
    expect(payout.steps[0]).toMatchObject({ action: 'withdrawal', estimated_gas: null, gas_breakdown: null, cost_eth: '0' });
    expect(payout.route.gas_policy).toBe('venue');
    expect(gas.legs.map((leg) => leg.action)).toEqual(['deposit']);
  });

  it("a venue payout's platform fee transfer is the user's gas even when sponsorship is asked for", async () => {
    const result = await estimate({ source: 'venue_b', destination: 'self', amount: '100', gas_sponsored: true });
    expect(result.steps[0]).toMatchObject({ action: 'withdrawal', estimated_gas: 30_000, cost_eth: '0.000003' });
    expect(result.steps[0]!.gas_breakdown).toMatchObject({ paid_by: 'user' });
    expect(result.route).toMatchObject({ gas_policy: 'user', chain_estimates: { ARB: { gas_units: '30000' } } });
  });

  it("a sponsored step shows the fee transfer's gas but does not charge it", async () => {
    const result = await estimate({ source: 'self', destination: 'venue_b', amount: '100', gas_sponsored: true });
    expect(result.steps[0]).toMatchObject({ estimated_gas: 95_000, cost_eth: '0', cost_usdc: '0.1' });
    expect(result.steps[0]!.gas_breakdown).toMatchObject({ gas_units: '95000', paid_by: 'sponsored' });
  });
});

describe('transfer cost estimate: venues not initialized (issue 19)', () => {
  const initialized = { venue_a: { initialized: true }, venue_b: { initialized: true }, venue_d: { initialized: false } };
  const withVenues = (body: Record<string, unknown>) =>
    estimateTransferCost(deps(), planTransfer(parseInput(TransferRequest, body, 'body')), { venues: initialized });

  it('a destination venue not initialized: still estimated, with a DEX_NOT_INITIALIZED warning and a message', async () => {
    const result = await withVenues({ source: 'self', destination: 'venue_c', chain: 'ETH', amount: '100' });
    expect(result.route.warnings).toEqual([
      {
        code: 'DEX_NOT_INITIALIZED',
        side: 'destination',
        dex: 'venue_c',
        message: expect.stringMatching(/^body\.destination: venue_c is not initialized for this user.*409 DEX_NOT_INITIALIZED.*POST \/account\/init-perp-dex/),
      },
    ]);
    expect(result.message).toBe(result.route.warnings[0]!.message);
    expect(result.route.amount_received).toBe('99.9');
    expect(v.parse(TransferCostEstimateResponse, result)).toEqual(result);
  });

  it('a source venue not initialized (initialized: false), next to the other notes', async () => {
    const result = await withVenues({ source: 'venue_d', destination: 'venue_b', amount: '100', gas_sponsored: true });
    expect(result.route.warnings).toEqual([
      { code: 'DEX_NOT_INITIALIZED', side: 'source', dex: 'venue_d', message: expect.stringContaining('body.source: venue_d is not initialized') },
    ]);
    expect(result.message).toContain('body.source: venue_d is not initialized');
  });

  it('both sides, and none when both are initialized or the estimate is not told about the account', async () => {
    expect((await withVenues({ source: 'venue_d', destination: 'venue_e', amount: '100' })).route.warnings.map((w) => [w.side, w.dex])).toEqual([
      ['source', 'venue_d'],
      ['destination', 'venue_e'],
    ]);
    const ready = await withVenues({ source: 'venue_a', destination: 'venue_b', amount: '100' });
    expect(ready.route.warnings).toEqual([]);
    expect(ready.message).toBeNull();
    expect((await estimate({ source: 'self', destination: 'venue_c', amount: '100' })).route.warnings).toEqual([]);
  });
});

describe('transfer cost estimate: what is charged plus what arrives is the amount', () => {
  it.each([
    { source: 'self', destination: 'venue_a' },
    { source: 'self', destination: 'venue_e' },
    { source: 'venue_b', destination: 'venue_d' },
    { source: 'venue_d', destination: 'self', chain: 'SOL' },
    { source: 'self', destination: 'self', chain: 'SOL', destination_chain: 'POL', destination_token: 'USDC' },
  ])('%j', async (body) => {
    const result = await estimate({ ...body, amount: '1234.567891' });
    const fees = result.steps.reduce(
      (sum, step) => sum + units(step.breakdown.bridge_fee_usdc) + units(step.breakdown.platform_fee_usdc) + units(step.breakdown.venue_fee_usdc),
      0n,
    );
    expect(fees + units(result.route.amount_received)).toBe(1_234_567_891n);
  });
});

describe('transfer cost estimate: the effective minimum', () => {
  it('422 below it, with the minimum in the message; accepted at it', async () => {
    const below = await refusal({ source: 'self', destination: 'venue_b', amount: '5.005005' });
    expect(below).toBeInstanceOf(AmountBelowMinimumError);
    expect(below.status).toBe(422);
    expect(below.code).toBe('AMOUNT_BELOW_EFFECTIVE_MINIMUM');
    expect(below.message).toMatch(/^body\.amount: below the effective minimum of 5\.005006 /);
    expect((await estimate({ source: 'self', destination: 'venue_b', amount: '5.005006' })).route.amount_received).toBe('5');

    const bridged = await refusal({ source: 'venue_b', destination: 'self', chain: 'SOL', amount: '2.001001' });
    expect(bridged.message).toMatch(/effective minimum of 2\.001002 .*bridge takes at least 1/);
    expect((await estimate({ source: 'venue_b', destination: 'self', chain: 'SOL', amount: '2.001002' })).route.amount_received).toBe('0.4996');
  });

  it.each([
    ...['venue_a', 'venue_b', 'venue_c', 'venue_d', 'venue_e'].map((venue) => ({ source: 'self', destination: venue })),
    ...['venue_a', 'venue_b', 'venue_d'].map((venue) => ({ source: venue, destination: 'self' })),
    { source: 'venue_b', destination: 'venue_d' },
    { source: 'venue_d', destination: 'venue_e' },
    { source: 'venue_a', destination: 'venue_b' },
    { source: 'venue_d', destination: 'venue_b', gas_sponsored: true },
    { source: 'self', destination: 'self', destination_chain: 'SOL', destination_token: 'USDC' },
    { source: 'self', destination: 'self', chain: 'SOL', destination_chain: 'POL', destination_token: 'USDC' },
  ])('is exact for %j: accepted at it, 422 one base unit below', async (body) => {
    const probe = await estimate({ ...body, amount: '1000' });
    const minimum = probe.route.effective_minimum_deposit;
    const at = await estimate({ ...body, amount: minimum });
    expect(at.route.effective_minimum_deposit).toBe(minimum);
    const oneBelow = (units(minimum) - 1n).toString().padStart(7, '0');
    const below = await refusal({ ...body, amount: `${oneBelow.slice(0, -6)}.${oneBelow.slice(-6)}` });
    expect(below.code).toBe('AMOUNT_BELOW_EFFECTIVE_MINIMUM');
    expect(below.message).toContain(`effective minimum of ${minimum} `);
  });

  it.each(['venue_c', 'venue_e'])('a withdrawal from %s is refused up front: 422 VENUE_WITHDRAWAL_UNSUPPORTED naming the venue and why', async (venue) => {
    for (const body of [
      { source: venue, destination: 'self', amount: '100' },
      { source: venue, destination: 'venue_b', amount: '100' },
    ]) {
      const error = await refusal(body);
      expect([error.status, error.code]).toEqual([422, 'VENUE_WITHDRAWAL_UNSUPPORTED']);
      expect(error.message).toMatch(new RegExp(`^${venue} withdrawals are not supported by this service: .+(Starknet|Bridge API)`));
    }
    // Deposits to it are still estimated.
    expect((await estimate({ source: 'self', destination: venue, amount: '100' })).steps.at(-1)).toMatchObject({ action: 'deposit' });
  });

  it('an amount above the bridge maximum is a 422 naming the maximum', async () => {
    const error = await refusal({ source: 'self', destination: 'venue_c', amount: '2000000' });
    expect(error.status).toBe(422);
    expect(error.code).toBe('AMOUNT_ABOVE_BRIDGE_MAXIMUM');
    expect(error.message).toMatch(/at most 1000000 USDC/);
  });
});

describe('transfer cost estimate: the bridge quote failing', () => {
  it('still estimates, with bridge_estimation_error and no bridge fee', async () => {
    const result = await estimate({ source: 'self', destination: 'venue_d', amount: '100' }, deps({ bridge: new RefusingBridgeQuoter() }));
    expect(result.route.bridge_estimation_error).toBe('the bridge is unavailable');
    expect(result.route).not.toHaveProperty('bridge_quote_expires_at');
    expect(result.steps[0]).toMatchObject({ action: 'bridge', dex: 'test_bridge', estimated_gas: 120_000 });
    expect(result.steps[0]!.breakdown.bridge_fee_usdc).toBe('0');
    expect(result.message).toMatch(/The bridge quote failed \(the bridge is unavailable\); the bridge fee is not included\./);
    // Without the bridge's fee and limits, the minimum is what the rest of the route needs.
    expect(result.route.effective_minimum_deposit).toBe('1.001002');
  });

  it('names no internals when the quoter throws something else', async () => {
    const broken: BridgeQuoter = { provider: 'test_bridge', quote: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:4100')) };
    const result = await estimate(
      { source: 'self', destination: 'self', destination_chain: 'SOL', destination_token: 'USDC', amount: '10' },
      deps({ bridge: broken }),
    );
    expect(result.route.bridge_estimation_error).toBe('the bridge did not answer with a quote');
  });

  it("shows a BridgeQuoteError's own message", async () => {
    const closed: BridgeQuoter = { provider: 'test_bridge', quote: () => Promise.reject(new BridgeQuoteError('the route ARB.USDC->SOL.USDC is paused')) };
    const result = await estimate(
      { source: 'self', destination: 'self', destination_chain: 'SOL', destination_token: 'USDC', amount: '10' },
      deps({ bridge: closed }),
    );
    expect(result.route.bridge_estimation_error).toBe('the route ARB.USDC->SOL.USDC is paused');
  });

  it('a bridge refusing the amount is not an estimation error but the 422 of the effective minimum', async () => {
    const bridge = new FormulaBridgeQuoter();
    // 1.000999 − platform 0.001001 = 0.999998 reaches the bridge: below its 1 USDC minimum.
    const error = await refusal(
      { source: 'self', destination: 'self', destination_chain: 'SOL', destination_token: 'USDC', amount: '1.000999' },
      deps({ bridge }),
    );
    expect(error.code).toBe('AMOUNT_BELOW_EFFECTIVE_MINIMUM');
    expect(error.message).toMatch(/effective minimum of 1\.001002 .*bridge takes at least 1\)/);
    // The fee search never asks below the bridge's minimum.
    expect(bridge.asked.slice(1).every(({ amount }) => amount >= 1_000_000n)).toBe(true);
  });

  it('a route without a bridge never asks for a quote', async () => {
    const bridge = new FormulaBridgeQuoter();
    const result = await estimate({ source: 'venue_a', destination: 'venue_b', amount: '10' }, deps({ bridge }));
    expect(bridge.asked).toEqual([]);
    expect(result.route).not.toHaveProperty('bridge_estimation_error');
  });
});

describe('unit conversions round up, against the user', () => {
  it('USD and ETH equivalents', () => {
    expect(toUsd(1n, 'ETH', 3_000_000_000n)).toBe(1n);
    expect(toUsd(10n ** 18n, 'ETH', 3_000_000_000n)).toBe(3_000_000_000n);
    expect(toUsd(10n ** 9n, 'SOL', 150_000_000n)).toBe(150_000_000n);
    expect(toEth(10n ** 9n, 'SOL', 150_000_000n, 3_000_000_000n)).toBe(5n * 10n ** 16n);
    expect(toEth(1n, 'POL', 250_000n, 3_000_000_000n)).toBe(1n);
    expect(toEth(7n, 'ETH', 1n, 3n)).toBe(7n);
  });

  it('configured prices refuse a non-positive price', () => {
    expect(() => new ConfiguredPrices({ ETH: 0n, POL: 1n, SOL: 1n })).toThrow(/ETH must be positive/);
  });
});

describe('the estimate matches its response schema (the OpenAPI source)', () => {
  it.each([
    // The sponsor pays the bridge and the deposit; the wallet pays the platform fee transfer out of venue_d's payout.
    [{ source: 'venue_d', destination: 'venue_e', gas_sponsored: true }, 'mixed'],
    [{ source: 'self', destination: 'venue_e', chain: 'POL', token: 'USDC.E', gas_sponsored: true }, 'sponsored'],
    [{ source: 'self', destination: 'venue_d', chain: 'SOL' }, 'user'],
    [{ source: 'venue_a', destination: 'self' }, 'user'],
  ] as const)('%j', async (body, expected) => {
    const result = await estimate({ ...body, amount: '250' });
    expect(v.parse(TransferCostEstimateResponse, result)).toEqual(result);
    expect(result.route.gas_policy).toBe(expected);
  });

  it('with a failed bridge quote', async () => {
    const result = await estimate({ source: 'self', destination: 'venue_c', amount: '250' }, deps({ bridge: new RefusingBridgeQuoter() }));
    expect(v.safeParse(TransferCostEstimateResponse, result).success).toBe(true);
    expect(v.safeParse(TransferCostEstimateResponse, { ...result, total_cost_usdc: 1 }).success).toBe(false);
  });
});

describe('the estimate echoes the request', () => {
  it('amount as sent, source and destination', async () => {
    const result = await estimate({ source: 'self', destination: 'venue_b', amount: '25.50' });
    expect(result).toMatchObject({ source: 'self', destination: 'venue_b', amount: '25.50' });
    expect(result.route.amount_received).toBe('25.4745'); // 25.5 − 0.0255 platform fee
    // One base unit more rounds the platform fee up: ceil(25,500,001 × 10 / 10,000) = 25,501.
    expect((await estimate({ source: 'self', destination: 'venue_b', amount: '25.500001' })).route.amount_received).toBe('25.4745');
  });
});

describe('a first deposit', () => {
  it("applies the venue's first-deposit minimum (venue_d: 5 USDC, not 1)", async () => {
    const d = deps();
    const body = { source: 'self', destination: 'venue_d', chain: 'INK', amount: '3' };
    const p = planTransfer(parseInput(TransferRequest, body, 'body'));
    expect((await estimateTransferCost(d, p)).route.effective_minimum_deposit).toBe('1.001002');
    const error = await estimateTransferCost(d, p, { firstDeposit: true }).then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/effective minimum of 5\.005006 .*venue_d takes a first deposit of at least 5\)/);
  });
});
