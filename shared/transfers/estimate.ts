import { DomainError, UnprocessableError } from '../errors.ts';
import { formatAmount } from '../money.ts';
import type { NativeCoin, PriceSource } from '../prices/price-source.ts';
import type { VenueId } from '../venues/default-status.ts';
import { VENUE_RULES } from '../venues/rules.ts';
import type { ChainCode } from '../wallets/networks.ts';
import { type Holding, type PlannedStep, type StepAction, TRANSFER_DECIMALS, type TransferPlan } from './planner.ts';

/**
 * The transfer cost estimate (issue 11 §1; spec, "Transfer cost estimate" and step fields),
 * computed from ports, never guessed:
 * - gas: each step's `estimated_gas` from the GasEstimator over every transaction the step sends
 *   from the user's wallet (issue 19: the platform fee transfer of the step that takes it, approvals,
 *   bridge and venue deposits; eth_estimateGas, or on Solana one signature per transaction) times
 *   the chain's gas price, converted to USD and to ETH with the PriceSource (Chainlink feeds:
 *   shared/prices/; no fresh price is 503 PRICE_UNAVAILABLE, never a default). A venue withdrawal's
 *   only such transaction is the platform fee out of the payout (none without a fee: no gas);
 * - `bridge_fee_usdc` from the BridgeQuoter (the bridge's own quote for this amount and route);
 * - `platform_fee_usdc` from configuration (PlatformFeeConfig);
 * - `venue_fee_usdc` (an extra breakdown field) from the venues' rules (shared/venues/rules.ts).
 *
 * Money is bigint base units inside and decimal strings on the wire. Every conversion rounds up,
 * against the user. Fees come out of the moving amount in route order: the venue's withdrawal
 * fee, then the platform fee (on what reaches the user's wallet), then the bridge fee, then the
 * venue's deposit fee. Gas is paid in the chain's native coin on top, by the user or, for a
 * sponsored EVM step, by the platform (then it is shown in `gas_breakdown` but not charged).
 */

export type { NativeCoin, PriceSource } from '../prices/price-source.ts';

const NATIVE: Readonly<Record<ChainCode, NativeCoin>> = { ETH: 'ETH', ARB: 'ETH', INK: 'ETH', POL: 'POL', SOL: 'SOL' };
const NATIVE_DECIMALS: Readonly<Record<NativeCoin, number>> = { ETH: 18, POL: 18, SOL: 9 };
const ETH_DECIMALS = 18;
const USD_DECIMALS = 6; // USD amounts are USDC base units

/**
 * A step's on-chain work from the user's wallet, as the GasEstimator sees it: the step's own send
 * (a venue deposit, a bridge deposit; none for a venue withdrawal, whose payout the venue sends)
 * and the platform fee transfer when the step takes it.
 */
export interface GasLeg {
  readonly action: StepAction;
  /** The chain the transactions run on (a bridge: its source chain; a withdrawal: where the payout lands). */
  readonly chain: ChainCode;
  /** The token the wallet holds in this step. */
  readonly token: Holding['token'];
  /**
   * Base units the step's own send moves on (deposit, bridge), or that stay in the wallet (a
   * withdrawal's payout), after the platform fee: the wallet holds `amount` + the fee at the start.
   */
  readonly amount: bigint;
  readonly venue?: VenueId;
  readonly bridge?: BridgeRoute;
  /** The platform fee this step sends from the wallet (step 0, fee > 0), to its configured recipient when there is one. */
  readonly platformFee?: { readonly amount: bigint; readonly recipient?: string };
}

/** Port: gas of a leg, and the chain's gas price. */
export interface GasEstimator {
  /**
   * Gas units of every transaction the leg sends from the user's wallet, as the user pays them
   * (gasUsed, not the signer's padded gas limit): EVM, eth_estimateGas summed over the calls (the
   * platform fee transfer, a venue deposit's approve + deposit, a bridge's deposit); Solana, one
   * signature per transaction (the fee is charged per signature). The user may not hold the
   * amount yet (an estimate comes before funding), so an adapter must not let a balance revert
   * fail it: estimate with a state override of the token balance, or from a funded address, as
   * the sandbox and the chain allow.
   */
  estimateGas(leg: GasLeg): Promise<bigint>;
  /** Native base units per gas unit: EVM maxFeePerGas (wei); Solana lamports per signature (getFeeForMessage / signatures). */
  gasPrice(chain: ChainCode): Promise<bigint>;
}

export interface BridgeRoute {
  readonly from: Holding;
  readonly to: Holding;
}

/** The bridge's answer for one amount on one route (research C.6): fee and limits in the source token's base units. */
export interface BridgeQuote {
  readonly fee: bigint;
  readonly minAmount: bigint;
  readonly maxAmount: bigint;
  /** ISO 8601: the quote is not honoured after this. */
  readonly expiresAt: string;
}

/**
 * Port: the bridge's quote (connected to shared/transfers/bridge.ts's BridgeClient). A bridge that
 * refuses the amount itself (below its minimum, not above its fee, above its maximum) throws
 * BridgeAmountRefused with the route's limits; any other failure throws anything, and only a
 * BridgeQuoteError's or DomainError's message is shown to the caller.
 */
export interface BridgeQuoter {
  /** The provider id shown as the bridge step's `dex`. */
  readonly provider: string;
  quote(route: BridgeRoute, amount: bigint): Promise<BridgeQuote>;
}

/** The bridge refused the amount (Across `isAmountTooLow` / above `maxDeposit`; the sandbox bridge's AMOUNT_TOO_LOW / AMOUNT_TOO_HIGH). */
export class BridgeAmountRefused extends Error {
  readonly reason: 'too_low' | 'too_high';
  readonly minAmount: bigint;
  readonly maxAmount: bigint;
  constructor(reason: 'too_low' | 'too_high', limits: { minAmount: bigint; maxAmount: bigint }) {
    super(`the bridge refused the amount (${reason === 'too_low' ? 'too low' : 'too high'})`);
    this.reason = reason;
    this.minAmount = limits.minAmount;
    this.maxAmount = limits.maxAmount;
  }
}

/** A quote failure whose message is safe to show (no URL, no host). */
export class BridgeQuoteError extends Error {}

/**
 * The platform fee: `fixed + ceil(amount × bps / 10,000)` in USDC base units, charged once per
 * transfer on what reaches the user's wallet (shown on the first step). Default: 0 fixed + 10 bps
 * (0.1 %), a product choice, overridable by configuration.
 */
export interface PlatformFeeConfig {
  readonly fixed: bigint;
  readonly bps: bigint;
}
export const DEFAULT_PLATFORM_FEE: PlatformFeeConfig = { fixed: 0n, bps: 10n };

export function platformFee(config: PlatformFeeConfig, amount: bigint): bigint {
  return config.fixed + ceilDiv(amount * config.bps, 10_000n);
}

export interface EstimateDeps {
  readonly gas: GasEstimator;
  readonly prices: PriceSource;
  readonly bridge: BridgeQuoter;
  /** The fee for the route's first wallet chain, and where it is sent (platform-fee.ts platformFeeFor). */
  readonly platformFee: PlatformFeeConfig & { readonly recipient?: string };
}

/** 422 for an amount that does not survive the route: the message carries the effective minimum. */
export class AmountBelowMinimumError extends UnprocessableError {
  readonly effectiveMinimum: bigint;
  constructor(effectiveMinimum: bigint, why: string) {
    super(
      'AMOUNT_BELOW_EFFECTIVE_MINIMUM',
      `body.amount: below the effective minimum of ${formatAmount(effectiveMinimum, TRANSFER_DECIMALS)} for this route (${why})`,
    );
    this.effectiveMinimum = effectiveMinimum;
  }
}

interface StepMoney {
  readonly amountIn: bigint;
  readonly amountOut: bigint;
  readonly venueFee: bigint;
  readonly platformFee: bigint;
  readonly bridgeFee: bigint;
}

export interface EstimateOptions {
  /**
   * The destination venue has not been funded yet: its first-deposit minimum applies (venue_d
   * opens a subaccount only from 5 USDC; rules.firstDepositMinimum) instead of the deposit
   * minimum. The caller knows this from the account; default false.
   */
  readonly firstDeposit?: boolean;
  /**
   * The account's venues (`perp_dex_status`): a source or destination venue not initialized there
   * is named in `route.warnings` and the message, since POST /transfer refuses it (409
   * DEX_NOT_INITIALIZED). Absent: nothing is said about the venues.
   */
  readonly venues?: Readonly<Partial<Record<VenueId, { readonly initialized?: boolean }>>>;
}

/** Something the caller should know before POST /transfer; the estimate itself still stands. */
export interface EstimateWarning {
  readonly code: 'DEX_NOT_INITIALIZED';
  readonly side: 'source' | 'destination';
  readonly dex: VenueId;
  readonly message: string;
}

/** The route's venues that are not initialized for this user (service.ts requireInitialized refuses them in POST /transfer). */
function venueWarnings(plan: TransferPlan, options: EstimateOptions): EstimateWarning[] {
  if (!options.venues) return [];
  const warnings: EstimateWarning[] = [];
  for (const side of ['source', 'destination'] as const) {
    const location = plan[side];
    if (location === 'self' || options.venues[location]?.initialized) continue;
    warnings.push({
      code: 'DEX_NOT_INITIALIZED',
      side,
      dex: location,
      message: `body.${side}: ${location} is not initialized for this user, so POST /transfer would answer 409 DEX_NOT_INITIALIZED: call POST /account/init-perp-dex first.`,
    });
  }
  return warnings;
}

/** The deposit minimum that applies at the destination venue. */
function depositMinimum(venue: VenueId, options: EstimateOptions): bigint {
  const rules = VENUE_RULES[venue];
  return options.firstDeposit ? max(rules.deposit.minimum, rules.firstDepositMinimum) : rules.deposit.minimum;
}

/** The estimate for a planned route, in the spec's wire shape. */
export async function estimateTransferCost(deps: EstimateDeps, plan: TransferPlan, options: EstimateOptions = {}) {
  const bridgeStep = plan.steps.find((step) => step.action === 'bridge');
  const money = await flowMoney(deps, plan, options);
  const effectiveMinimum = await effectiveMinimumDeposit(deps, plan, money.bridgeLimits, money.bridgeQuote?.fee, options);

  if (money.bridgeLimits && money.bridgeInput !== undefined && money.bridgeInput > money.bridgeLimits.maxAmount && bridgeStep?.action === 'bridge') {
    throw new UnprocessableError(
      'AMOUNT_ABOVE_BRIDGE_MAXIMUM',
      `body.amount: the bridge takes at most ${formatAmount(money.bridgeLimits.maxAmount, TRANSFER_DECIMALS)} ${bridgeStep.from.token} on this route`,
    );
  }
  if (plan.amount < effectiveMinimum) throw new AmountBelowMinimumError(effectiveMinimum, money.shortfall ?? 'fees and minimums along the route');
  if (money.shortfall) throw new AmountBelowMinimumError(effectiveMinimum, money.shortfall);

  const ethPrice = await deps.prices.usdPrice('ETH');
  const chainEstimates: Record<string, { native_token: NativeCoin; gas_units: bigint; gas_price: bigint; native_cost: bigint; cost_usdc: bigint }> = {};
  const steps = [];
  const payers: ('sponsored' | 'user')[] = [];
  let totalEth = 0n;
  let totalUsdc = 0n;
  for (const [index, step] of plan.steps.entries()) {
    const m = money.steps[index];
    if (!m) throw new Error(`internal: flowMoney gave no money for step ${index} of ${plan.steps.length}`); // one entry per planned step
    const gas = await gasOf(deps, step, m, ethPrice);
    const payer = gasPayer(step);
    const userGasUsd = gas && payer === 'user' ? gas.gasUsd : 0n;
    const userGasEth = gas && payer === 'user' ? gas.gasEth : 0n;
    // A native value the call itself sends (venue_c's L1 message fee) is the user's even when gas is sponsored.
    const valueUsd = gas?.valueUsd ?? 0n;
    const valueEth = gas?.valueEth ?? 0n;
    const costEth = userGasEth + valueEth;
    const costUsdc = userGasUsd + valueUsd + m.bridgeFee + m.platformFee + m.venueFee;
    totalEth += costEth;
    totalUsdc += costUsdc;
    if (gas) {
      payers.push(payer);
      let entry = chainEstimates[gas.chain];
      if (!entry) {
        entry = { native_token: gas.coin, gas_units: 0n, gas_price: gas.gasPrice, native_cost: 0n, cost_usdc: 0n };
        chainEstimates[gas.chain] = entry;
      }
      entry.gas_units += gas.gasUnits;
      entry.native_cost += gas.gasNative + gas.value;
      entry.cost_usdc += gas.gasUsd + gas.valueUsd;
    }
    steps.push({
      action: step.action,
      dex: step.action === 'bridge' ? deps.bridge.provider : step.venue,
      cost_eth: eth(costEth),
      cost_usdc: usdc(costUsdc),
      breakdown: {
        gas_cost_eth: eth(costEth),
        bridge_fee_usdc: usdc(m.bridgeFee),
        platform_fee_usdc: usdc(m.platformFee),
        venue_fee_usdc: usdc(m.venueFee),
      },
      estimated_gas: gas ? Number(gas.gasUnits) : null,
      gas_breakdown: gas
        ? {
            chain: gas.chain,
            native_token: gas.coin,
            gas_units: gas.gasUnits.toString(),
            gas_price: gas.gasPrice.toString(),
            gas_cost_native: formatAmount(gas.gasNative, NATIVE_DECIMALS[gas.coin]),
            native_value: formatAmount(gas.value, NATIVE_DECIMALS[gas.coin]),
            gas_cost_usdc: usdc(gas.gasUsd),
            paid_by: payer,
          }
        : null,
      amount_in: usdc(m.amountIn),
      amount_out: usdc(m.amountOut),
    });
  }

  const warnings = venueWarnings(plan, options);
  const notes = [...plan.notes];
  if (money.bridgeError) notes.push(`The bridge quote failed (${money.bridgeError}); the bridge fee is not included.`);
  notes.push(...warnings.map((warning) => warning.message));
  return {
    success: true as const,
    source: plan.source,
    destination: plan.destination,
    amount: plan.requestedAmount,
    steps,
    total_cost_eth: eth(totalEth),
    total_cost_usdc: usdc(totalUsdc),
    gas_sponsored: plan.gasSponsored,
    message: notes.length ? notes.join(' ') : null,
    route: {
      route_id: plan.routeId,
      reason: plan.reason,
      hops: plan.steps.length,
      steps: plan.steps.map((step) => routeStep(step, deps.bridge.provider)),
      gas_policy: routeGasPolicy(payers),
      chain_estimates: Object.fromEntries(
        Object.entries(chainEstimates).map(([chain, e]) => [
          chain,
          {
            native_token: e.native_token,
            gas_units: e.gas_units.toString(),
            gas_price: e.gas_price.toString(),
            native_cost: formatAmount(e.native_cost, NATIVE_DECIMALS[e.native_token]),
            cost_usdc: usdc(e.cost_usdc),
          },
        ]),
      ),
      ...(money.bridgeError ? { bridge_estimation_error: money.bridgeError } : {}),
      ...(money.bridgeQuote ? { bridge_quote_expires_at: money.bridgeQuote.expiresAt } : {}),
      amount_received: usdc(money.received),
      effective_minimum_deposit: usdc(effectiveMinimum),
      warnings,
    },
  };
}

export type TransferCostEstimate = Awaited<ReturnType<typeof estimateTransferCost>>;

/** The amounts in and out of each step for the requested amount, and the first rule it breaks. */
async function flowMoney(deps: EstimateDeps, plan: TransferPlan, options: EstimateOptions) {
  const steps: StepMoney[] = [];
  let amount = plan.amount;
  let shortfall: string | undefined;
  let bridgeQuote: BridgeQuote | undefined;
  let bridgeError: string | undefined;
  let bridgeInput: bigint | undefined;
  let bridgeLimits: { minAmount: bigint; maxAmount: bigint } | undefined;
  let platformCharged = false;
  const short = (why: string) => (shortfall ??= why);
  for (const step of plan.steps) {
    const amountIn = amount;
    let venueFee = 0n;
    let platform = 0n;
    let bridgeFee = 0n;
    if (step.action === 'withdrawal') {
      const rule = VENUE_RULES[step.venue].withdrawal;
      if (amountIn < rule.minimum) short(`${step.venue} withdraws at least ${usdc(rule.minimum)}`);
      venueFee = rule.fee.amount;
    }
    if (!platformCharged) {
      // On what reaches the user's wallet: after a source venue's withdrawal fee.
      platform = platformFee(deps.platformFee, clampZero(amountIn - venueFee));
      platformCharged = true;
    }
    if (step.action === 'bridge') {
      bridgeInput = clampZero(amountIn - venueFee - platform);
      try {
        bridgeQuote = await deps.bridge.quote({ from: step.from, to: step.to }, bridgeInput);
        bridgeFee = bridgeQuote.fee;
        bridgeLimits = bridgeQuote;
      } catch (error) {
        if (error instanceof BridgeAmountRefused) bridgeLimits = error;
        else bridgeError = error instanceof DomainError || error instanceof BridgeQuoteError ? error.message : 'the bridge did not answer with a quote';
      }
      if (bridgeLimits && bridgeInput < bridgeLimits.minAmount) short(`the bridge takes at least ${usdc(bridgeLimits.minAmount)}`);
    }
    if (step.action === 'deposit') {
      const rule = VENUE_RULES[step.venue].deposit;
      const reaching = amountIn - platform;
      const minimum = depositMinimum(step.venue, options);
      if (reaching < minimum) short(`${step.venue} takes ${options.firstDeposit ? 'a first deposit' : 'deposits'} of at least ${usdc(minimum)}`);
      venueFee = rule.fee.amount;
    }
    const out = amountIn - venueFee - platform - bridgeFee;
    if (out <= 0n) short('the fees take the whole amount');
    amount = clampZero(out);
    steps.push({ amountIn, amountOut: amount, venueFee, platformFee: platform, bridgeFee });
  }
  return { steps, received: amount, shortfall, bridgeQuote, bridgeError, bridgeInput, bridgeLimits };
}

/**
 * The least amount that survives the route: walked back from the destination (a venue's deposit
 * minimum, or one base unit for self). A fee that depends on the amount is solved by iterating
 * x = required + fee(x) upward from `required` (fees are non-decreasing in the amount, so the
 * first x with x - fee(x) >= required is the least). The bridge's fee is asked of the bridge at
 * each candidate from its minimum up (it refuses less); when that fails, `fallbackFee` (the
 * requested amount's) stands in. Without the bridge's limits (its quote failed), its minimum is
 * taken as 0 and its fee as `fallbackFee` or 0: the result is then a lower bound.
 */
export async function effectiveMinimumDeposit(
  deps: EstimateDeps,
  plan: TransferPlan,
  bridgeLimits?: { readonly minAmount: bigint },
  fallbackFee?: bigint,
  options: EstimateOptions = {},
): Promise<bigint> {
  // The fee stages in the order flowMoney applies them: a source venue's withdrawal, then the
  // platform fee once the money is in the user's wallet, then the bridge and the deposit.
  type Stage = { kind: 'fixed'; minimum: bigint; fee: bigint } | { kind: 'platform' } | { kind: 'bridge'; route: BridgeRoute };
  const stages: Stage[] = [];
  for (const step of plan.steps) {
    if (step.action === 'withdrawal') {
      const rule = VENUE_RULES[step.venue].withdrawal;
      stages.push({ kind: 'fixed', minimum: rule.minimum, fee: rule.fee.amount });
    }
    if (!stages.some((stage) => stage.kind === 'platform')) stages.push({ kind: 'platform' });
    if (step.action === 'bridge') stages.push({ kind: 'bridge', route: { from: step.from, to: step.to } });
    if (step.action === 'deposit') {
      stages.push({ kind: 'fixed', minimum: depositMinimum(step.venue, options), fee: VENUE_RULES[step.venue].deposit.fee.amount });
    }
  }
  let required = 1n; // self receives at least one base unit; a venue's minimum comes from its stage
  for (const stage of stages.reverse()) {
    if (stage.kind === 'fixed') required = max(stage.minimum, required + stage.fee);
    else if (stage.kind === 'platform') required = await leastInput(required, (amount) => Promise.resolve(platformFee(deps.platformFee, amount)));
    else {
      const feeAt = async (amount: bigint) => {
        try {
          return (await deps.bridge.quote(stage.route, amount)).fee;
        } catch {
          return fallbackFee ?? 0n;
        }
      };
      required = await leastInput(required, feeAt, bridgeLimits?.minAmount ?? 0n);
    }
  }
  return required;
}

/** The least x >= floor with x - fee(x) >= required, for a fee non-decreasing in x. */
async function leastInput(required: bigint, fee: (amount: bigint) => Promise<bigint>, floor = 0n): Promise<bigint> {
  let x = max(required, floor);
  for (let round = 0; round < 64; round += 1) {
    const next = required + (await fee(x));
    if (next <= x) return x;
    x = next;
  }
  return x;
}

/**
 * Who pays a step's gas: its policy, except a venue withdrawal's, whose one transaction from the
 * wallet (the platform fee out of the payout) the user's wallet pays (the withdrawal step has no
 * sponsored sender: shared/transfers/steps/core.ts EvmSenders).
 */
function gasPayer(step: PlannedStep): 'sponsored' | 'user' {
  return step.action === 'withdrawal' ? 'user' : step.gasPolicy;
}

/**
 * The gas of every transaction the step sends from the user's wallet (null: it sends none, a
 * venue withdrawal without a platform fee). The fee, when the step takes one, is sent on the
 * step's wallet chain; the step's own send moves what is left after it.
 */
async function gasOf(deps: EstimateDeps, step: PlannedStep, money: StepMoney, ethPrice: bigint) {
  const holding = step.action === 'bridge' ? step.from : step.holding;
  const chain = holding.chain;
  if (step.action === 'withdrawal' && money.platformFee === 0n) return null;
  const recipient = deps.platformFee.recipient;
  const platformFee = money.platformFee > 0n ? { platformFee: { amount: money.platformFee, ...(recipient ? { recipient } : {}) } } : {};
  // What the wallet holds at the step's start, less the fee: a withdrawal's payout, a deposit's or a bridge's input.
  const amount = clampZero(money.amountIn - (step.action === 'withdrawal' ? money.venueFee : 0n) - money.platformFee);
  const common = { chain, token: holding.token, amount, ...platformFee };
  const leg: GasLeg =
    step.action === 'bridge'
      ? { action: 'bridge', ...common, bridge: { from: step.from, to: step.to } }
      : { action: step.action, ...common, venue: step.venue };
  const [gasUnits, gasPrice] = await Promise.all([deps.gas.estimateGas(leg), deps.gas.gasPrice(chain)]);
  const coin = NATIVE[chain];
  const price = await deps.prices.usdPrice(coin);
  const gasNative = gasUnits * gasPrice;
  const value = step.action === 'deposit' ? (VENUE_RULES[step.venue].depositNativeValue ?? 0n) : 0n;
  return {
    chain,
    coin,
    gasUnits,
    gasPrice,
    gasNative,
    value,
    gasUsd: toUsd(gasNative, coin, price),
    gasEth: toEth(gasNative, coin, price, ethPrice),
    valueUsd: toUsd(value, coin, price),
    valueEth: toEth(value, coin, price, ethPrice),
  };
}

/** Native base units to USD base units (6 decimals), rounded up. */
export function toUsd(native: bigint, coin: NativeCoin, usdPerCoin: bigint): bigint {
  return ceilDiv(native * usdPerCoin, 10n ** BigInt(NATIVE_DECIMALS[coin]));
}

/** Native base units to wei of ETH at the two USD prices, rounded up; ETH itself unchanged. */
export function toEth(native: bigint, coin: NativeCoin, usdPerCoin: bigint, usdPerEth: bigint): bigint {
  if (coin === 'ETH') return native;
  return ceilDiv(native * usdPerCoin * 10n ** BigInt(ETH_DECIMALS), 10n ** BigInt(NATIVE_DECIMALS[coin]) * usdPerEth);
}

/** `venue` when the user's wallet sends nothing (a venue payout without a platform fee), else who pays the gas of what it sends. */
function routeGasPolicy(own: readonly ('sponsored' | 'user')[]): 'venue' | 'user' | 'sponsored' | 'mixed' {
  if (own.length === 0) return 'venue';
  if (own.every((policy) => policy === 'sponsored')) return 'sponsored';
  return own.includes('sponsored') ? 'mixed' : 'user';
}

function routeStep(step: PlannedStep, provider: string) {
  switch (step.action) {
    case 'withdrawal':
      return { action: step.action, dex: step.venue, chain: step.holding.chain, token: step.holding.token, gas_policy: step.gasPolicy };
    case 'bridge':
      return {
        action: step.action,
        dex: provider,
        from_chain: step.from.chain,
        from_token: step.from.token,
        to_chain: step.to.chain,
        to_token: step.to.token,
        gas_policy: step.gasPolicy,
      };
    case 'deposit':
      return { action: step.action, dex: step.venue, chain: step.holding.chain, token: step.holding.token, gas_policy: step.gasPolicy };
  }
}

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;
const clampZero = (a: bigint) => (a < 0n ? 0n : a);
const max = (a: bigint, b: bigint) => (a > b ? a : b);
const usdc = (units: bigint) => formatAmount(units, USD_DECIMALS);
const eth = (wei: bigint) => formatAmount(wei, ETH_DECIMALS);
