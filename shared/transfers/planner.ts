import { UnprocessableError, ValidationError } from '../errors.ts';
import { formatAmount, MAX_SOLANA_UNITS, parseAmount } from '../money.ts';
import type { VenueId } from '../venues/default-status.ts';
import { VENUE_RULES } from '../venues/rules.ts';
import type { ChainCode } from '../wallets/networks.ts';
import { findBridgeRoute } from './bridge-routes.ts';
import type { TransferInput, TransferLocation } from './schemas.ts';

/**
 * The transfer route planner (issue 11 §1; spec, Endpoints: "Transfer body"; Limits). Pure: it
 * turns a validated body into the list of steps the executor runs and the estimate prices, or a
 * 400 naming the field of a bad combination.
 *
 * Money moves only as USDC or USDC.E (6 decimals everywhere). A route is at most three steps:
 * the source venue pays out to the user's own wallet on the venue's chain and token
 * (`withdrawal`), a `bridge` moves it when chain or token differ (EVM to EVM, EVM to and from
 * SOL, USDC to and from USDC.E on a chain that carries both), and a `deposit` puts it into the
 * destination venue. Venue to venue therefore always goes through the user's wallet.
 */
export const DEFAULT_CHAIN = 'ARB' as const;
export const DEFAULT_TOKEN = 'USDC' as const;
/** Spec, Limits: chains allowed when `self` is source or destination, and for `destination_chain`. */
export const SELF_CHAINS = ['ETH', 'ARB', 'POL', 'INK', 'SOL'] as const satisfies readonly ChainCode[];
export const TRANSFER_TOKENS = ['USDC', 'USDC.E'] as const;
export type TransferToken = (typeof TRANSFER_TOKENS)[number];
/** Every transfer token has 6 decimals on every chain (research C.5). */
export const TRANSFER_DECIMALS = 6;
/** The stablecoins each chain carries (chains config; spec "Supported token per chain for withdrawal"). */
export const CHAIN_STABLES: Readonly<Record<ChainCode, readonly TransferToken[]>> = {
  ETH: ['USDC'],
  ARB: ['USDC', 'USDC.E'],
  POL: ['USDC', 'USDC.E'],
  INK: ['USDC'],
  SOL: ['USDC'],
};

/** A token on a chain: where the money sits between steps. */
export interface Holding {
  readonly chain: ChainCode;
  readonly token: TransferToken;
}

/** Who pays a step's gas: the venue (its payout), the platform's sponsor (EVM only) or the user. */
export type StepGasPolicy = 'venue' | 'sponsored' | 'user';

export type PlannedStep =
  /** The venue pays out to the user's wallet on `holding` (a signed venue request; the venue sends the transaction). */
  | { readonly action: 'withdrawal'; readonly venue: VenueId; readonly holding: Holding; readonly gasPolicy: 'venue' }
  /** The user's wallet sends `from` through the bridge; the bridge fills `to` to the same user. Gas is paid on `from.chain`. */
  | { readonly action: 'bridge'; readonly from: Holding; readonly to: Holding; readonly gasPolicy: 'sponsored' | 'user' }
  /** The user's wallet deposits into the venue on `holding` (the venue driver's calls). */
  | { readonly action: 'deposit'; readonly venue: VenueId; readonly holding: Holding; readonly gasPolicy: 'sponsored' | 'user' };

export type StepAction = PlannedStep['action'];

export interface TransferPlan {
  readonly source: TransferLocation;
  readonly destination: TransferLocation;
  /** What leaves the source, in base units (6 decimals). */
  readonly amount: bigint;
  /** The body's amount as sent (the estimate echoes it). */
  readonly requestedAmount: string;
  /** The user's wallet holding the money first enters (a self source's chain/token, or the source venue's payout). */
  readonly origin: Holding;
  /** The holding the money ends in (a self destination's chain/token, or the destination venue's). */
  readonly target: Holding;
  readonly steps: readonly PlannedStep[];
  /** As requested; `gasPolicy` per step says where it applies. */
  readonly gasSponsoredRequested: boolean;
  /** True when at least one step uses the sponsor. */
  readonly gasSponsored: boolean;
  /** Deterministic id of the route shape (same body, same id). */
  readonly routeId: string;
  /** One sentence per step saying why it is there. */
  readonly reason: string;
  /** Things the caller should know (a request that was partly ignored). */
  readonly notes: readonly string[];
}

const isSelfChain = (chain: string): chain is (typeof SELF_CHAINS)[number] => (SELF_CHAINS as readonly string[]).includes(chain);
const sameHolding = (a: Holding, b: Holding) => a.chain === b.chain && a.token === b.token;
const describeHolding = (h: Holding) => `${h.token} on ${h.chain}`;

function venueHolding(venue: VenueId): Holding {
  const rules = VENUE_RULES[venue];
  return { chain: rules.chain, token: rules.token as TransferToken };
}

/** A self-side holding from the body: chain in SELF_CHAINS, token a stablecoin the chain carries. */
function selfHolding(chain: string, token: string, chainField: string, tokenField: string): Holding {
  if (!isSelfChain(chain))
    throw new ValidationError(`${chainField}: must be one of ${SELF_CHAINS.join(', ')} when self is source or destination`, 'UNSUPPORTED_CHAIN');
  if (!(TRANSFER_TOKENS as readonly string[]).includes(token)) {
    throw new ValidationError(`${tokenField}: transfers move ${TRANSFER_TOKENS.join(' or ')}`, 'UNSUPPORTED_TOKEN');
  }
  if (!(CHAIN_STABLES[chain] as readonly string[]).includes(token)) {
    throw new ValidationError(`${tokenField}: ${token} is not carried on ${chain}; ${chain} carries ${CHAIN_STABLES[chain].join(', ')}`, 'UNSUPPORTED_TOKEN');
  }
  return { chain, token: token as TransferToken };
}

/**
 * Checks every rule of the transfer body and returns the route. Throws ValidationError (400)
 * naming the field of a bad combination, UnprocessableError (422) when a venue does not support
 * the direction at all.
 */
export function planTransfer(
  body: TransferInput,
  hasBridgeRoute: (from: Holding, to: Holding) => boolean = (from, to) => findBridgeRoute(from, to) !== undefined,
): TransferPlan {
  const { source, destination } = body;
  const notes: string[] = [];
  if (source === destination && source !== 'self') {
    throw new ValidationError(`body.destination: must differ from the source (${source} to itself moves nothing)`, 'INVALID_ROUTE');
  }
  if (destination !== 'self') {
    if (body.destination_chain !== undefined)
      throw new ValidationError('body.destination_chain: only for transfers to self (a venue takes its own chain)', 'INVALID_ROUTE');
    if (body.destination_token !== undefined)
      throw new ValidationError('body.destination_token: only for transfers to self (a venue takes its own token)', 'INVALID_ROUTE');
  } else if ((body.destination_chain === undefined) !== (body.destination_token === undefined)) {
    const missing = body.destination_chain === undefined ? 'destination_chain' : 'destination_token';
    throw new ValidationError(
      `body.${missing}: is required together with ${missing === 'destination_chain' ? 'destination_token' : 'destination_chain'}`,
      'INVALID_ROUTE',
    );
  }
  const amount = parseAmount(body.amount, TRANSFER_DECIMALS, 'body.amount', MAX_SOLANA_UNITS);

  let origin: Holding;
  let target: Holding;
  if (source === 'self' && destination === 'self') {
    // destination_chain and destination_token come together or not at all (checked above).
    if (body.destination_chain === undefined || body.destination_token === undefined)
      throw new ValidationError('body.destination_chain: is required for self to self (with destination_token)', 'INVALID_ROUTE');
    origin = selfHolding(body.chain ?? DEFAULT_CHAIN, body.token ?? DEFAULT_TOKEN, 'body.chain', 'body.token');
    target = selfHolding(body.destination_chain, body.destination_token, 'body.destination_chain', 'body.destination_token');
    if (sameHolding(origin, target)) {
      throw new ValidationError(
        `body.destination_chain: self to self needs a different chain or token than the source (${describeHolding(origin)})`,
        'INVALID_ROUTE',
      );
    }
  } else if (source === 'self') {
    origin = selfHolding(body.chain ?? DEFAULT_CHAIN, body.token ?? DEFAULT_TOKEN, 'body.chain', 'body.token');
    target = venueHolding(destination as VenueId);
  } else if (destination === 'self') {
    origin = venueHolding(source);
    // destination_chain and destination_token come together or not at all (checked above).
    if (body.destination_chain !== undefined && body.destination_token !== undefined) {
      // destination_chain/destination_token name the target; a chain/token that says otherwise is a contradiction.
      if (body.chain !== undefined && body.chain !== body.destination_chain) {
        throw new ValidationError('body.chain: contradicts destination_chain; for a transfer to self give one of them', 'INVALID_ROUTE');
      }
      if (body.token !== undefined && body.token !== body.destination_token) {
        throw new ValidationError('body.token: contradicts destination_token; for a transfer to self give one of them', 'INVALID_ROUTE');
      }
      target = selfHolding(body.destination_chain, body.destination_token, 'body.destination_chain', 'body.destination_token');
    } else {
      target = selfHolding(body.chain ?? DEFAULT_CHAIN, body.token ?? DEFAULT_TOKEN, 'body.chain', 'body.token');
    }
  } else {
    // Venue to venue: through the user's wallet on the venues' own chains. A chain or token
    // naming neither venue's side asks for a detour the planner does not make.
    origin = venueHolding(source);
    target = venueHolding(destination as VenueId);
    if (body.chain !== undefined && body.chain !== origin.chain && body.chain !== target.chain) {
      throw new ValidationError(
        `body.chain: a ${source} to ${destination} route runs on ${[...new Set([origin.chain, target.chain])].join(' and ')}; leave chain out`,
        'INVALID_ROUTE',
      );
    }
    if (body.token !== undefined && body.token !== origin.token && body.token !== target.token) {
      throw new ValidationError(
        `body.token: a ${source} to ${destination} route moves ${[...new Set([origin.token, target.token])].join(' and ')}; leave token out`,
        'INVALID_ROUTE',
      );
    }
  }

  if (!sameHolding(origin, target) && !hasBridgeRoute(origin, target)) {
    // The bridge's route table (bridge-routes.ts) has no direct route (e.g. SOL USDC to or from USDC.E): name the self-side field.
    const field = source === 'self' && destination !== 'self' ? 'body.chain' : body.destination_chain !== undefined ? 'body.destination_chain' : 'body.chain';
    throw new ValidationError(`${field}: no bridge route from ${describeHolding(origin)} to ${describeHolding(target)}`, 'NO_BRIDGE_ROUTE');
  }

  const sponsorOn = (chain: ChainCode): 'sponsored' | 'user' => (body.gas_sponsored && chain !== 'SOL' ? 'sponsored' : 'user');
  const steps: PlannedStep[] = [];
  if (source !== 'self') {
    assertSupported(source, 'withdrawal');
    steps.push({ action: 'withdrawal', venue: source, holding: origin, gasPolicy: 'venue' });
  }
  if (!sameHolding(origin, target)) steps.push({ action: 'bridge', from: origin, to: target, gasPolicy: sponsorOn(origin.chain) });
  if (destination !== 'self') {
    assertSupported(destination, 'deposit');
    steps.push({ action: 'deposit', venue: destination, holding: target, gasPolicy: sponsorOn(target.chain) });
  }

  if (body.gas_sponsored) {
    if (steps.some((step) => step.action !== 'withdrawal' && step.gasPolicy === 'user')) {
      notes.push('Gas sponsorship is EVM only: the Solana leg is paid by your wallet in SOL.');
    }
    if (steps.every((step) => step.action === 'withdrawal')) notes.push('Gas sponsorship does not apply: the venue sends its own payout.');
  }
  return {
    source,
    destination,
    amount,
    requestedAmount: body.amount,
    origin,
    target,
    steps,
    gasSponsoredRequested: body.gas_sponsored,
    gasSponsored: steps.some((step) => step.gasPolicy === 'sponsored'),
    routeId: routeId(source, destination, steps),
    reason: steps.map(stepReason).join(' '),
    notes,
  };
}

/**
 * A venue whose rules say it does not support the direction is refused before anything starts
 * (issue 23): a withdrawal this service cannot follow to the payout would start and then hang.
 */
function assertSupported(venue: VenueId, direction: 'deposit' | 'withdrawal') {
  const rule = VENUE_RULES[venue][direction];
  if (rule.supported) return;
  if (direction === 'withdrawal')
    throw new UnprocessableError(
      'VENUE_WITHDRAWAL_UNSUPPORTED',
      `${venue} withdrawals are not supported by this service: ${rule.note ?? 'see the venue page'}`,
    );
  throw new UnprocessableError('UNSUPPORTED_ROUTE', `${venue} does not support deposits`);
}

/** E.g. `venue_b>ARB.USDC>SOL.USDC>self`: the locations and the holdings the money passes through. */
function routeId(source: TransferLocation, destination: TransferLocation, steps: readonly PlannedStep[]): string {
  const holdings: string[] = [];
  const push = (h: Holding) => {
    const key = `${h.chain}.${h.token}`;
    if (holdings.at(-1) !== key) holdings.push(key);
  };
  for (const step of steps) {
    if (step.action === 'bridge') {
      push(step.from);
      push(step.to);
    } else push(step.holding);
  }
  return [source, ...holdings, destination].join('>');
}

function stepReason(step: PlannedStep): string {
  switch (step.action) {
    case 'withdrawal':
      return `${step.venue} pays out ${describeHolding(step.holding)} to your wallet.`;
    case 'bridge':
      return step.from.chain === step.to.chain
        ? `The bridge turns ${step.from.token} into ${step.to.token} on ${step.from.chain}.`
        : `The bridge moves ${step.from.token} on ${step.from.chain} to ${describeHolding(step.to)}.`;
    case 'deposit':
      return `Your wallet deposits ${describeHolding(step.holding)} into ${step.venue}.`;
  }
}

/**
 * The plan as JSON (amounts as decimal strings), for a task's `metadata.route`; the same fields
 * as TransferPlan, nothing secret.
 */
export function planToJson(plan: TransferPlan) {
  return {
    source: plan.source,
    destination: plan.destination,
    amount: formatAmount(plan.amount, TRANSFER_DECIMALS),
    origin: plan.origin,
    target: plan.target,
    steps: plan.steps,
    gas_sponsored_requested: plan.gasSponsoredRequested,
    gas_sponsored: plan.gasSponsored,
    route_id: plan.routeId,
    reason: plan.reason,
    notes: plan.notes,
  };
}
