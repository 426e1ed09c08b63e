import * as v from 'valibot';
import { Hex32 } from '../http/schemas.ts';

/** A venue's status on an account: `initialized` and that venue's own fields (null until initialised). */
function venueStatus<const TFields extends v.ObjectEntries>(fields: TFields) {
  return v.looseObject({ initialized: v.boolean(), ...fields });
}

/** Request and response schemas of the account service. */
export const Account = v.object({
  app_user_id: v.pipe(v.string(), v.description('The JWT `sub` claim.')),
  user_id: v.pipe(v.string(), v.uuid(), v.description('Internal user id (UUIDv7).')),
  public_address: v.object({
    ETH: v.pipe(v.string(), v.description('EIP-55 address; also used for ARB, POL and INK.')),
    SOL: v.pipe(v.string(), v.description('Base58 public key.')),
  }),
  perp_dex_status: v.pipe(
    v.object({
      venue_a: venueStatus({
        account_id: v.pipe(v.nullable(v.number()), v.description('The venue account id.')),
        vault: v.pipe(v.nullable(v.number()), v.description('The L2 vault (position) id.')),
        stark_public_key: v.pipe(v.nullable(v.string()), v.description('0x-hex Stark public key.')),
        api_key: v.pipe(v.nullable(v.string()), v.description('The API key the venue issued at account creation.')),
      }),
      venue_b: venueStatus({ account_address: v.pipe(v.nullable(v.string()), v.description("EIP-55 address: the user's wallet is the venue account.")) }),
      venue_c: venueStatus({
        l2_address: v.pipe(v.nullable(v.string()), v.description('0x-hex L2 account address.')),
        l2_public_key: v.pipe(v.nullable(v.string()), v.description('0x-hex L2 public key.')),
      }),
      venue_d: venueStatus({ account_address: v.pipe(v.nullable(v.string()), v.description('bytes32 subaccount sender (0x-hex).')) }),
      venue_e: venueStatus({
        proxy_wallet_address: v.pipe(v.nullable(v.string()), v.description('The CREATE2 proxy wallet.')),
        service_wallet_address: v.pipe(v.nullable(v.string()), v.description("The EOA that owns the proxy (the user's EVM wallet).")),
      }),
    }),
    v.description('Every venue is always present: `initialized` false and each field null until the venue is initialised.'),
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
