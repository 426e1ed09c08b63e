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
  source: v.pipe(Location, v.description('`self` (the user\'s own wallet) or a venue id.')),
  destination: v.pipe(Location, v.description('`self` (the user\'s own wallet) or a venue id.')),
  amount: v.pipe(
    v.string('must be a decimal string'),
    v.maxLength(128, 'must be at most 128 characters'),
    v.description('Decimal string of the token (6 decimals for USDC and USDC.E), e.g. "25.5": what leaves the source.'),
  ),
  chain: v.optional(v.pipe(Chain, v.description('Default ARB. The user\'s wallet chain on the self side: where a self source sends from, or where a venue pays out to self.'))),
  token: v.optional(v.pipe(Token, v.description('Default USDC. Transfers move USDC or USDC.E.'))),
  destination_chain: v.optional(v.pipe(Chain, v.description('Only with destination self; required with destination_token for self to self.'))),
  destination_token: v.optional(v.pipe(Token, v.description('Only with destination self; required with destination_chain for self to self.'))),
  gas_sponsored: v.optional(v.pipe(v.boolean('must be true or false'), v.description('Gas-sponsored execution of the EVM legs; never for Solana legs (ignored there and reported).')), false),
});
export type TransferInput = v.InferOutput<typeof TransferRequest>;
