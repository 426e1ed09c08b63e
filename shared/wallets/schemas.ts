import * as v from 'valibot';
import { Hex32, NonEmptyString } from '../http/schemas.ts';

/**
 * The sign-body fields on the wire: the enclave's sign requests and the express service's sign
 * requests carry the same fields, so both validate with these.
 */
export const SignDataFields = { raw_data_hash: Hex32 };

export const SignMessageFields = {
  message: v.pipe(NonEmptyString(65536), v.description('utf8 text, or 0x-hex bytes when encoding is "hex".')),
  encoding: v.optional(v.picklist(['utf8', 'hex'], 'must be "utf8" or "hex"'), 'utf8'),
};

const Uint = v.pipe(v.string('must be a decimal string'), v.regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a non-negative integer as a decimal string'));
export const Address = v.pipe(v.string('must be a string'), v.regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address'));
const HexData = v.pipe(v.string('must be a string'), v.regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex bytes'));

/** An EVM transaction as viem serialises it; quantities are decimal strings (never JS numbers). */
export const EvmTransaction = v.strictObject({
  type: v.optional(v.picklist(['legacy', 'eip2930', 'eip1559', 'eip7702'], 'must be legacy, eip2930, eip1559 or eip7702')),
  chainId: v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1, 'must be positive')),
  nonce: v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(0, 'must not be negative')),
  to: v.optional(Address),
  value: v.optional(Uint),
  data: v.optional(HexData),
  gas: v.optional(Uint),
  gasPrice: v.optional(Uint),
  maxFeePerGas: v.optional(Uint),
  maxPriorityFeePerGas: v.optional(Uint),
  accessList: v.optional(v.array(v.object({ address: Address, storageKeys: v.array(Hex32) }))),
  /** EIP-7702 (type 4): signed authorisations, as sign_authorization returns them. */
  authorizationList: v.optional(
    v.array(
      v.object({
        address: Address,
        chainId: v.pipe(v.number(), v.integer(), v.minValue(0)),
        nonce: v.pipe(v.number(), v.integer(), v.minValue(0)),
        r: Hex32,
        s: Hex32,
        yParity: v.picklist([0, 1]),
      }),
    ),
  ),
});

export const SolanaTransaction = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64'),
  v.description('Base64 of the serialised transaction message (legacy or v0) to sign.'),
);

export const SignTransactionFields = {
  transaction: v.union([EvmTransaction, SolanaTransaction], 'must be an EVM transaction object or a base64 Solana message'),
};
