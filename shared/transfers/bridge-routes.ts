/**
 * The bridge's routes: one table read by the sandbox bridge (infra/local/bridge/) and by the
 * transfer planner. Every number is in base units of a 6-decimal USDC / USDC.E and is either
 * published (source beside it) or marked "sandbox choice" with the public practice it follows
 * (Across's and LI.FI's published quote and fee rules; the C.n tags name the rule, e.g. C.6 rounding).
 *
 * Fee = fixed + ceil(amount × bps / 10 000) (C.6: rounding up, against the user); the fill pays
 * amount − fee on the destination chain. An amount below `min`, above `max`, or not above the fee
 * is refused at quote time.
 *
 * Two models:
 * - `across`: intent bridge (C.1). EVM ↔ EVM USDC, and USDC ↔ USDC.E (Across maps USDC.e to the
 *   same L1 token, C.5). Fixed part = the relayer's destination gas, bps = capital + LP fee.
 * - `cctp`: Circle CCTP v2 Fast Transfer (C.3), USDC only, EVM ↔ SOL. bps = the fast-transfer fee
 *   of the source chain; fixed part = the Forwarding Service's forward fee (destination mint
 *   relayed for the user).
 */
export const BRIDGE_CHAINS = ['ETH', 'ARB', 'POL', 'INK', 'SOL'] as const;
export type BridgeChain = (typeof BRIDGE_CHAINS)[number];
export type BridgeToken = 'USDC' | 'USDC.E';

export interface BridgeEndpoint {
  readonly chain: BridgeChain;
  readonly token: BridgeToken;
}

export interface BridgeRoute {
  /** `<model>:<from chain>.<from token>-><to chain>.<to token>`, e.g. `across:ARB.USDC->ETH.USDC`. */
  readonly id: string;
  readonly model: 'across' | 'cctp';
  readonly from: BridgeEndpoint;
  readonly to: BridgeEndpoint;
  readonly fee_fixed: bigint;
  readonly fee_bps: bigint;
  readonly min: bigint;
  readonly max: bigint;
  /** How long after the deposit the sandbox fills (0 by default so tests are fast). */
  readonly fill_latency_ms: number;
  /** What the real bridge takes (documentation and planner estimates; the sandbox uses `fill_latency_ms`). */
  readonly published_fill_s: number;
  /** A quote is valid this long. */
  readonly quote_ttl_s: number;
  /** Not filled this long after the deposit: the fill expires and the deposit is refunded on the source chain. */
  readonly fill_deadline_s: number;
  /** Where each number comes from. */
  readonly sources: Readonly<Record<string, string>>;
}

const USDC = 1_000_000n;
const EVM: readonly BridgeChain[] = ['ETH', 'ARB', 'POL', 'INK'];
/** Chains whose sandbox (and mainnet) config carries a bridged USDC.E (infra/config/mainnet-tokens.json). */
export const USDC_E_CHAINS: readonly BridgeChain[] = ['ARB', 'POL'];

/** Across relayer gas on the destination, as a fixed USDC amount (C.6 illustrative route `across:42161->1`: 1.5 USDC to Ethereum). */
const ACROSS_GAS: Record<BridgeChain, bigint> = { ETH: 1_500_000n, ARB: 50_000n, POL: 50_000n, INK: 50_000n, SOL: 0n };
/** CCTP Fast Transfer fee by source chain, bps (C.3: ETH, ARB 1 bps published; Ink and Solana 1 bps sandbox choice; Polygon has no Fast, Standard is free and ~8 s). */
const CCTP_FAST_BPS: Record<BridgeChain, bigint> = { ETH: 1n, ARB: 1n, INK: 1n, SOL: 1n, POL: 0n };
/** CCTP published attestation times (C.3 table), seconds. */
const CCTP_FILL_S: Record<BridgeChain, number> = { ETH: 20, ARB: 8, INK: 8, SOL: 8, POL: 8 };

const ACROSS_SOURCES = {
  fee_fixed:
    'sandbox choice: relayer destination gas as a fixed USDC amount, 1.5 USDC to ETH after C.6 (across:42161->1), 0.05 USDC to an L2 (C.1 relayerGasFee)',
  fee_bps: 'sandbox choice: 4 bps capital + LP fee after C.6 (across:42161->1); C.1 fee model',
  min: 'sandbox choice: 1 USDC (5 USDC to ETH), after C.1 limits.minDeposit / isAmountTooLow',
  max: 'sandbox choice: 1,000,000 USDC, after C.1 limits.maxDeposit (the API rejects amount > maxDeposit)',
  published_fill_s: 'C.1: "fills most deposits in ~2 seconds"',
  quote_ttl_s: 'C.1: cache suggested fees for no more than 300 s',
  fill_deadline_s: 'sandbox choice: 1 h fillDeadline as in C.6 prototype; expiry refunds on the origin chain (C.1)',
};
const CCTP_SOURCES = {
  fee_fixed: 'sandbox choice: 0.20 USDC Forwarding Service forwardFee (C.3: fixed, in token units)',
  fee_bps: 'C.3: Fast Transfer 1 bps from ETH and ARB (published); INK and SOL 1 bps sandbox choice; POL source has Standard only (free)',
  min: 'sandbox choice: 1 USDC',
  max: 'sandbox choice: 1,000,000 USDC (C.3 Fast Transfer allowance is global; not modelled)',
  published_fill_s: 'C.3 attestation table: ETH ~20 s, ARB/INK/SOL ~8 s fast, POL ~8 s standard',
  quote_ttl_s: 'sandbox choice: 300 s as for Across (C.6)',
  fill_deadline_s: 'sandbox choice: 1 h. Real CCTP never refunds after the burn (C.3); the sandbox keeps one refund path for all routes (C.6)',
};

function across(from: BridgeEndpoint, to: BridgeEndpoint): BridgeRoute {
  return {
    id: routeId('across', from, to),
    model: 'across',
    from,
    to,
    fee_fixed: ACROSS_GAS[to.chain],
    fee_bps: 4n,
    min: to.chain === 'ETH' ? 5n * USDC : USDC,
    max: 1_000_000n * USDC,
    fill_latency_ms: 0,
    published_fill_s: 2,
    quote_ttl_s: 300,
    fill_deadline_s: 3600,
    sources: ACROSS_SOURCES,
  };
}

function cctp(from: BridgeChain, to: BridgeChain): BridgeRoute {
  const a: BridgeEndpoint = { chain: from, token: 'USDC' };
  const b: BridgeEndpoint = { chain: to, token: 'USDC' };
  return {
    id: routeId('cctp', a, b),
    model: 'cctp',
    from: a,
    to: b,
    fee_fixed: 200_000n,
    fee_bps: CCTP_FAST_BPS[from],
    min: USDC,
    max: 1_000_000n * USDC,
    fill_latency_ms: 0,
    published_fill_s: CCTP_FILL_S[from],
    quote_ttl_s: 300,
    fill_deadline_s: 3600,
    sources: CCTP_SOURCES,
  };
}

function routeId(model: string, from: BridgeEndpoint, to: BridgeEndpoint): string {
  return `${model}:${from.chain}.${from.token}->${to.chain}.${to.token}`;
}

function buildRoutes(): readonly BridgeRoute[] {
  const routes: BridgeRoute[] = [];
  // EVM ↔ EVM USDC (Across; C.1).
  for (const from of EVM) for (const to of EVM) if (from !== to) routes.push(across({ chain: from, token: 'USDC' }, { chain: to, token: 'USDC' }));
  // USDC ↔ USDC.E (Across maps both to L1 USDC, C.5): any EVM USDC to ARB/POL USDC.E and back,
  // same chain included (sandbox choice: a venue on POL takes USDC.E, a user holds POL USDC).
  for (const e of USDC_E_CHAINS) {
    for (const other of EVM) {
      routes.push(across({ chain: other, token: 'USDC' }, { chain: e, token: 'USDC.E' }));
      routes.push(across({ chain: e, token: 'USDC.E' }, { chain: other, token: 'USDC' }));
    }
  }
  // EVM ↔ SOL USDC (CCTP v2 fast; C.3, Solana domain 5).
  for (const evm of EVM) routes.push(cctp(evm, 'SOL'), cctp('SOL', evm));
  return routes;
}

export const BRIDGE_ROUTES: readonly BridgeRoute[] = buildRoutes();

export function findBridgeRoute(from: BridgeEndpoint, to: BridgeEndpoint, routes: readonly BridgeRoute[] = BRIDGE_ROUTES): BridgeRoute | undefined {
  return routes.find((r) => r.from.chain === from.chain && r.from.token === from.token && r.to.chain === to.chain && r.to.token === to.token);
}

/** fixed + ceil(amount × bps / 10 000). */
export function bridgeFee(route: Pick<BridgeRoute, 'fee_fixed' | 'fee_bps'>, amount: bigint): bigint {
  return route.fee_fixed + (amount * route.fee_bps + 9_999n) / 10_000n;
}

/** The route table as JSON (amounts as base-unit decimal strings). */
export function bridgeRouteJson(route: BridgeRoute) {
  return {
    ...route,
    fee_fixed: route.fee_fixed.toString(),
    fee_bps: route.fee_bps.toString(),
    min: route.min.toString(),
    max: route.max.toString(),
  };
}
