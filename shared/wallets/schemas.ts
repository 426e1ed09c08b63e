import * as v from 'valibot';
import { DecimalUint, Hex32, NonEmptyString, SafeInteger } from '../http/schemas.ts';

/**
 * The sign-body fields on the wire: the enclave's sign requests and the express service's sign
 * requests carry the same fields, so both validate with these.
 */
export const SignDataFields = { raw_data_hash: Hex32 };

export const SignMessageFields = {
  message: v.pipe(NonEmptyString(65536), v.description('utf8 text, or 0x-hex bytes when encoding is "hex".')),
  encoding: v.optional(v.picklist(['utf8', 'hex'], 'must be "utf8" or "hex"'), 'utf8'),
};

/** Wei amounts and fees are uint256, gas is uint64 (as the EVM holds them). */
const Uint256 = DecimalUint(256);
const Uint64 = DecimalUint(64);
/** EIP-155 chain ids and nonces as JSON numbers: safe integers (JS numbers hold them exactly). */
export const ChainId = SafeInteger(1);
export const Nonce = SafeInteger(0);
export const Address = v.pipe(v.string('must be a string'), v.regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address'));
const HexData = v.pipe(v.string('must be a string'), v.regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex bytes'));

/** An EVM transaction as viem serialises it; quantities are decimal strings (never JS numbers). */
export const EvmTransaction = v.strictObject({
  type: v.optional(v.picklist(['legacy', 'eip2930', 'eip1559', 'eip7702'], 'must be legacy, eip2930, eip1559 or eip7702')),
  chainId: ChainId,
  nonce: Nonce,
  to: v.optional(Address),
  value: v.optional(Uint256),
  data: v.optional(HexData),
  gas: v.optional(Uint64),
  gasPrice: v.optional(Uint256),
  maxFeePerGas: v.optional(Uint256),
  maxPriorityFeePerGas: v.optional(Uint256),
  accessList: v.optional(v.array(v.object({ address: Address, storageKeys: v.array(Hex32) }))),
  /** EIP-7702 (type 4): signed authorisations, as sign_authorization returns them. */
  authorizationList: v.optional(
    v.array(
      v.object({
        address: Address,
        chainId: SafeInteger(0),
        nonce: Nonce,
        r: Hex32,
        s: Hex32,
        yParity: v.picklist([0, 1], 'must be 0 or 1'),
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
