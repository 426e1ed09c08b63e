import * as v from 'valibot';
import { Hex32 } from '../http/schemas.ts';
import { VENUE_IDS } from '../venues/default-status.ts';

/** Request and response schemas of the account service. */
export const Account = v.object({
  app_user_id: v.pipe(v.string(), v.description('The JWT `sub` claim.')),
  user_id: v.pipe(v.string(), v.uuid(), v.description('Internal user id (UUIDv7).')),
  public_address: v.object({
    ETH: v.pipe(v.string(), v.description('EIP-55 address; also used for ARB, POL and INK.')),
    SOL: v.pipe(v.string(), v.description('Base58 public key.')),
  }),
  perp_dex_status: v.object(
    Object.fromEntries(VENUE_IDS.map((venue) => [venue, v.looseObject({ initialized: v.boolean() })])) as Record<
      (typeof VENUE_IDS)[number],
      v.LooseObjectSchema<{ initialized: v.BooleanSchema<undefined> }, undefined>
    >,
  ),
});

export const CreateAccountResponse = v.object({ success: v.literal(true), ...Account.entries });

export const SignRequest = v.pipe(
  v.object({
    raw_data_hash: v.optional(Hex32),
    message: v.optional(v.pipe(v.string('must be a string'), v.maxLength(65536, 'must be at most 65536 characters'))),
  }),
  v.description('At least one of raw_data_hash and message; raw_data_hash wins when both are given; message is keccak256-hashed.'),
);

export const SignResponse = v.object({
  success: v.literal(true),
  signature: v.pipe(v.string(), v.description('65 bytes r‖s‖v, 0x-hex, v = 27 or 28.')),
  raw_data_hash: v.string(),
  app_user_id: v.string(),
});
