import * as v from 'valibot';
import { VENUE_IDS } from '../venues/default-status.ts';
import { CHAIN_CODES } from '../wallets/networks.ts';

/**
 * The transfer body shared by `POST /transfer/estimate-transfer-cost` and `POST /transfer` (spec,
 * Endpoints: "Transfer body"). The schema checks each field alone; the rules between fields
 * (self needs an allowed chain, self to self needs destination_chain + destination_token, ...)
 * live in planner.ts (`planTransfer`), which names the field in its 400.
 *
 * `chain` and `token` carry no schema default on purpose: the planner must tell "ARB because the
 * caller said so" from "ARB by default" (a venue-to-venue route ignores an absent chain but
 * refuses a contradicting one). The defaults (ARB, USDC) are applied in planner.ts.
 */
/** Spec, Shared enumerations: token code (kept here so this module pulls no Solana client into bundles). */
export const TOKEN_CODES = ['ETH', 'USDC', 'USDC.E', 'POL', 'SOL'] as const;
export type TokenCode = (typeof TOKEN_CODES)[number];

export const TRANSFER_LOCATIONS = ['self', ...VENUE_IDS] as const;
export type TransferLocation = (typeof TRANSFER_LOCATIONS)[number];

const Location = v.picklist(TRANSFER_LOCATIONS, `must be one of ${TRANSFER_LOCATIONS.join(', ')}`);
const Chain = v.picklist(CHAIN_CODES, `must be one of ${CHAIN_CODES.join(', ')}`);
const Token = v.picklist(TOKEN_CODES, `must be one of ${TOKEN_CODES.join(', ')}`);

export const TransferRequest = v.object({
  source: v.pipe(Location, v.description("`self` (the user's own wallet) or a venue id.")),
  destination: v.pipe(Location, v.description("`self` (the user's own wallet) or a venue id.")),
  amount: v.pipe(
    v.string('must be a decimal string'),
    v.maxLength(128, 'must be at most 128 characters'),
    v.description('Decimal string of the token (6 decimals for USDC and USDC.E), e.g. "25.5": what leaves the source.'),
  ),
  chain: v.optional(
    v.pipe(Chain, v.description("Default ARB. The user's wallet chain on the self side: where a self source sends from, or where a venue pays out to self.")),
  ),
  token: v.optional(v.pipe(Token, v.description('Default USDC. Transfers move USDC or USDC.E.'))),
  destination_chain: v.optional(v.pipe(Chain, v.description('Only with destination self; required with destination_token for self to self.'))),
  destination_token: v.optional(v.pipe(Token, v.description('Only with destination self; required with destination_chain for self to self.'))),
  gas_sponsored: v.optional(
    v.pipe(v.boolean('must be true or false'), v.description('Gas-sponsored execution of the EVM legs; never for Solana legs (ignored there and reported).')),
    false,
  ),
});
export type TransferInput = v.InferOutput<typeof TransferRequest>;

const Decimal = v.pipe(v.string(), v.description('Decimal string.'));
const Integer = v.pipe(v.string(), v.regex(/^[0-9]+$/), v.description('Integer as a decimal string (gas units, wei or lamports per unit).'));
const GasPolicy = v.picklist(['venue', 'sponsored', 'user']);

const EstimateStep = v.object({
  action: v.picklist(['deposit', 'withdrawal', 'bridge']),
  dex: v.pipe(v.string(), v.description('The venue id, or the bridge provider id for a bridge step.')),
  cost_eth: v.pipe(
    Decimal,
    v.description('What the user pays in native gas (and any native value the calls send), as ETH; POL and SOL converted at the price source.'),
  ),
  cost_usdc: v.pipe(Decimal, v.description("All of the step's cost in USD (USDC): the user's gas converted, plus bridge, platform and venue fees.")),
  breakdown: v.object({
    gas_cost_eth: Decimal,
    bridge_fee_usdc: Decimal,
    platform_fee_usdc: v.pipe(Decimal, v.description('Charged once per transfer, on the first step.')),
    venue_fee_usdc: v.pipe(Decimal, v.description("The venue's own withdrawal or deposit fee (transfer_rules).")),
  }),
  estimated_gas: v.pipe(
    v.nullable(v.number()),
    v.description(
      "Gas units of every transaction the step sends from the user's wallet, as used (not the signer's padded gas limit): the platform fee transfer on the step that takes it, approvals, bridge and venue deposits (EVM: eth_estimateGas, summed; Solana: one signature per transaction). Null when the wallet sends nothing: a venue withdrawal without a platform fee (the venue sends its payout).",
    ),
  ),
  gas_breakdown: v.nullable(
    v.object({
      chain: v.picklist(CHAIN_CODES),
      native_token: v.picklist(['ETH', 'POL', 'SOL']),
      gas_units: Integer,
      gas_price: v.pipe(Integer, v.description('Native base units per gas unit (wei; lamports per signature on Solana).')),
      gas_cost_native: Decimal,
      native_value: v.pipe(Decimal, v.description("Native coin the call itself sends (venue_c's L1 message fee).")),
      gas_cost_usdc: Decimal,
      paid_by: v.pipe(
        v.picklist(['sponsored', 'user']),
        v.description(
          "`user`: charged in `cost_eth` / `cost_usdc`; `sponsored`: shown, paid by the platform. A venue withdrawal's platform fee transfer is the user's.",
        ),
      ),
    }),
  ),
  amount_in: Decimal,
  amount_out: Decimal,
});

const RouteStep = v.object({
  action: v.picklist(['deposit', 'withdrawal', 'bridge']),
  dex: v.string(),
  chain: v.optional(v.picklist(CHAIN_CODES)),
  token: v.optional(Token),
  from_chain: v.optional(v.picklist(CHAIN_CODES)),
  from_token: v.optional(Token),
  to_chain: v.optional(v.picklist(CHAIN_CODES)),
  to_token: v.optional(Token),
  gas_policy: GasPolicy,
});

const EstimateWarning = v.object({
  code: v.pipe(
    v.picklist(['DEX_NOT_INITIALIZED']),
    v.description('`DEX_NOT_INITIALIZED`: POST /transfer answers 409 with this code until POST /account/init-perp-dex sets the venue up.'),
  ),
  side: v.pipe(v.picklist(['source', 'destination']), v.description('The body field naming the venue.')),
  dex: v.picklist(VENUE_IDS),
  message: v.string(),
});

/** Spec, "Transfer cost estimate" (+ step fields); the fields beyond the spec's are described. */
export const TransferCostEstimateResponse = v.object({
  success: v.literal(true),
  source: Location,
  destination: Location,
  amount: Decimal,
  steps: v.array(EstimateStep),
  total_cost_eth: Decimal,
  total_cost_usdc: Decimal,
  gas_sponsored: v.pipe(v.boolean(), v.description('True when at least one step runs gas-sponsored (EVM only).')),
  message: v.nullable(v.string()),
  route: v.object({
    route_id: v.pipe(v.string(), v.description('The locations and holdings passed through, e.g. venue_b>ARB.USDC>INK.USDC>venue_d.')),
    reason: v.string(),
    hops: v.pipe(v.number(), v.description('Number of steps.')),
    steps: v.array(RouteStep),
    gas_policy: v.pipe(
      v.picklist(['venue', 'user', 'sponsored', 'mixed']),
      v.description("Who pays the gas of what the user's wallet sends; `venue` when it sends nothing (a venue payout without a platform fee)."),
    ),
    chain_estimates: v.record(
      v.string(),
      v.object({ native_token: v.picklist(['ETH', 'POL', 'SOL']), gas_units: Integer, gas_price: Integer, native_cost: Decimal, cost_usdc: Decimal }),
    ),
    bridge_estimation_error: v.optional(v.pipe(v.string(), v.description('The bridge quote failed; the bridge fee is not included.'))),
    bridge_quote_expires_at: v.optional(v.string()),
    amount_received: v.pipe(Decimal, v.description('What reaches the destination after every fee.')),
    effective_minimum_deposit: v.pipe(Decimal, v.description("The least amount that survives the route's fees and minimums; less is a 422.")),
    warnings: v.pipe(
      v.array(EstimateWarning),
      v.description(
        'What POST /transfer would refuse although the route is priced (empty when nothing): a source or destination venue not initialized for this user. Each warning is also in `message`.',
      ),
    ),
  }),
});
