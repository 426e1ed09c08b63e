import * as v from 'valibot';
import { parseEvmAddress } from '../chains/evm-address.ts';
import { VENUE_IDS, type VenueId } from './default-status.ts';

/**
 * Request and response schemas of the venue endpoints (spec, Endpoints: check-perp-dex-requirements,
 * init-perp-dex, init-perp-dex-trading, perp, perp-credentials). The handlers validate with these
 * and the OpenAPI document is generated from them.
 */
const Dex = v.picklist(VENUE_IDS, (issue) => (issue.input === undefined ? 'is required' : `must be one of ${VENUE_IDS.join(', ')}`));
const ForceReinit = v.optional(v.boolean('must be true or false'), false);

export const DexRequest = v.object({ dex: v.pipe(Dex, v.description('Venue id.')) });
export const DexQuery = DexRequest;

export const InitPerpDexRequest = v.object({
  dex: Dex,
  force_reinit: v.pipe(ForceReinit, v.description('Redo the venue onboarding even when already initialized.')),
  metadata: v.optional(v.pipe(v.record(v.string(), v.unknown(), 'must be a JSON object'), v.description('Venue-specific; passed to the venue adapter.'))),
});

const Label = (max: number) =>
  v.pipe(
    v.string('must be a string'),
    v.regex(new RegExp(`^[A-Za-z0-9 _.:-]{1,${max}}$`), `must be 1-${max} characters of letters, digits, space, ".", "_", ":" or "-"`),
  );

/** venue_b ApproveBuilderFee `maxFeeRate`: a percent string, at most the venue's 0.1 % perps cap ([O] H5). */
const BuilderFeeRate = v.pipe(
  v.string('must be a string'),
  v.regex(/^(0|[1-9][0-9]{0,2})(\.[0-9]{1,4})?%$/, 'must be a percent string such as "0.01%"'),
  v.check((rate) => Number(rate.slice(0, -1)) <= 0.1, "must be at most 0.1% (the venue's cap for perps)"),
);

const EvmAddress = v.pipe(
  v.string('must be a string'),
  v.regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address'),
  // EIP-55: a wrong mixed-case checksum is a typo, never corrected (400 INVALID_ADDRESS_CHECKSUM); fees go there, so not the zero address.
  v.transform((address) => parseEvmAddress(address, 'body.metadata.builder_address', { destination: true })),
);

/**
 * Trading-setup metadata per venue (spec: venue_b accepts `agent_name`, `builder_address`,
 * `max_builder_fee_rate`; venue_c and venue_d accept `name`; the others none). Strict: an
 * unknown field is a 400, not silently dropped. Lengths are sandbox choices except where noted.
 */
export const TRADING_METADATA = {
  venue_a: v.strictObject({}),
  venue_b: v.pipe(
    v.strictObject({
      // The venue's own limit (the driver and the sandbox venue refuse a longer name too).
      agent_name: v.optional(Label(16)),
      builder_address: v.optional(EvmAddress),
      max_builder_fee_rate: v.optional(BuilderFeeRate),
    }),
    v.check(
      (m) => (m.builder_address === undefined) === (m.max_builder_fee_rate === undefined),
      'builder_address and max_builder_fee_rate go together (ApproveBuilderFee needs both)',
    ),
  ),
  venue_c: v.strictObject({ name: v.optional(Label(64)) }),
  // Nado subaccount names are 12 bytes (research §4.2): a name that fits one.
  venue_d: v.strictObject({ name: v.optional(Label(12)) }),
  venue_e: v.strictObject({}),
} satisfies Record<VenueId, v.GenericSchema>;

export const InitPerpDexTradingRequest = v.object({
  dex: Dex,
  force_reinit: v.pipe(ForceReinit, v.description('Redo the trading setup: a new key, the previous one revoked at the venue.')),
  // Loose here (unknown fields kept), strict per venue in the use case (TRADING_METADATA): an
  // unknown field is named in a 400, never dropped.
  metadata: v.optional(
    v.pipe(
      v.looseObject(
        {
          agent_name: v.optional(v.pipe(v.string(), v.description('venue_b: 1-16 characters.'))),
          builder_address: v.optional(v.pipe(v.string(), v.description('venue_b: 0x address; with max_builder_fee_rate.'))),
          max_builder_fee_rate: v.optional(v.pipe(v.string(), v.description('venue_b: percent string, at most "0.1%".'))),
          name: v.optional(v.pipe(v.string(), v.description('venue_c: 1-64 characters; venue_d: 1-12.'))),
        },
        'must be a JSON object',
      ),
      v.description('Venue-specific: venue_b agent_name, builder_address, max_builder_fee_rate; venue_c and venue_d name; none for venue_a and venue_e.'),
    ),
  ),
});

const Decimal = v.pipe(v.string(), v.description('Decimal string.'));

export const RequirementsResponse = v.object({
  success: v.literal(true),
  dex: v.picklist(VENUE_IDS),
  requirements_met: v.boolean(),
  requirements: v.object({
    requirements_met: v.boolean(),
    message: v.string(),
    usdc_required: v.pipe(Decimal, v.description("The venue's first-deposit minimum.")),
    usdc_available: v.pipe(Decimal, v.description("The venue token's balance of the wallet on the venue's chain.")),
    usdc_sufficient: v.boolean(),
    chain_balances: v.pipe(
      v.record(v.string(), v.string()),
      v.description("Chain code to the venue token's balance there (decimal string), for every EVM chain carrying that token."),
    ),
    eth_required: v.pipe(Decimal, v.description("Native coin for the gas of the first deposit on the venue's chain (POL on POL).")),
    eth_available: Decimal,
    eth_sufficient: v.boolean(),
    chain: v.pipe(v.string(), v.description("The venue's deposit chain.")),
    token: v.pipe(v.string(), v.description("The venue's deposit token.")),
    gas_token: v.pipe(v.string(), v.description('The native coin eth_required and eth_available are in.')),
  }),
  message: v.string(),
});

export const InitPerpDexResponse = v.object({
  success: v.literal(true),
  dex: v.picklist(VENUE_IDS),
  status: v.pipe(v.looseObject({ initialized: v.boolean() }), v.description('The stored venue status (perp_dex_status[dex]).')),
  message: v.string(),
});

export const InitPerpDexTradingResponse = v.object({
  success: v.literal(true),
  dex: v.picklist(VENUE_IDS),
  message: v.string(),
  status: v.pipe(
    v.looseObject({ trade_initialized: v.literal(true) }),
    v.description(
      "Credential metadata plus the one-time secret (agent_private_key, stark_private_key, subkey_private_key, linked_signer_private_key, or venue_e's CLOB credentials), returned in this response only: never stored.",
    ),
  ),
});

const DirectionRules = v.object({
  supported: v.boolean(),
  minimum_amount: Decimal,
  fee: v.object({ amount: Decimal, token: v.string(), fee_type: v.string(), note: v.nullable(v.string()) }),
  note: v.nullable(v.string()),
});

export const VenueAssetsResponse = v.object({
  dex: v.picklist(VENUE_IDS),
  initialized: v.boolean(),
  assets: v.nullable(
    v.pipe(
      v.looseObject({ balance: Decimal, account_value: Decimal, available_for_withdrawal: Decimal }),
      v.description('Read from the venue. venue_e also proxy_wallet_usdc_e and proxy_wallet_pusd.'),
    ),
  ),
  transfer_rules: v.nullable(v.object({ chain: v.string(), token: v.string(), deposit: DirectionRules, withdrawal: DirectionRules })),
  error: v.pipe(v.nullable(v.string()), v.description('Set (HTTP 200) when the venue could not be read or is not configured.')),
});

export const VenueCredentialsResponse = v.pipe(
  v.looseObject({ dex: v.picklist(VENUE_IDS), initialized: v.boolean(), trade_initialized: v.boolean(), error: v.nullable(v.string()) }),
  v.description("Plus the venue's credential metadata (venue_b: agent_name, agent_address, builder_address, max_builder_fee_rate). Never a private key."),
);
