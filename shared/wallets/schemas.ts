import * as v from 'valibot';
import { Hex32, NonEmptyString, SafeInteger } from '../http/schemas.ts';

/**
 * The sign-body fields on the wire: the enclave's sign requests and the express service's sign
 * requests carry the same fields, so both validate with these.
 */
export const SignDataFields = { raw_data_hash: Hex32 };

export const SignMessageFields = {
  message: v.pipe(NonEmptyString(65536), v.description('utf8 text, or 0x-hex bytes when encoding is "hex".')),
  encoding: v.optional(v.picklist(['utf8', 'hex'], 'must be "utf8" or "hex"'), 'utf8'),
};

/** EIP-155 chain ids and nonces as JSON numbers: safe integers (JS numbers hold them exactly). */
export const ChainId = SafeInteger(1);
export const Nonce = SafeInteger(0);
export const Address = v.pipe(v.string('must be a string'), v.regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address'));
const HexData = v.pipe(v.string('must be a string'), v.regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex bytes'));

const FORMS = 'decimal string, 0x hex or JSON integer';
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A non-negative integer in [min, max] as JSON can carry viem's bigint or number: a decimal string
 * (no sign, no leading zeros), a 0x hex string (as JSON-RPC writes quantities), or a JSON integer,
 * which must be a safe integer since JSON.parse rounds larger ones. Validated only: the wire form
 * passes through (the express service forwards it to the enclave) and becomes a bigint or number
 * where it is signed (`shared/enclave/evm-transaction.ts`), never a float.
 */
const Quantity = (min: bigint, max: bigint, range: string, description: string) => {
  const rule = min === 0n && max >= MAX_SAFE ? `must be a non-negative integer (${FORMS})` : `must be an integer from ${range} (${FORMS})`;
  return v.pipe(
    v.union(
      [
        v.pipe(
          v.string(),
          v.regex(/^(0|[1-9][0-9]{0,77}|0x[0-9a-fA-F]{1,64})$/, rule),
          v.check((text) => BigInt(text) >= min, rule),
          v.check((text) => BigInt(text) <= max, max >= MAX_SAFE ? `must be at most ${range.replace(/^.* to /, '')}` : rule),
        ),
        v.pipe(
          v.number(),
          v.integer(rule),
          v.check(
            (number: number) => Number.isSafeInteger(number),
            'must be a safe integer (at most 2^53 - 1) when a JSON number: send larger values as a decimal or 0x string',
          ),
          v.minValue(Number(min), rule),
          v.maxValue(max < MAX_SAFE ? Number(max) : Number.MAX_SAFE_INTEGER, rule),
        ),
      ],
      rule,
    ),
    v.description(`${description} A ${FORMS}; a JSON number must be a safe integer.`),
  );
};
/** Wei amounts and fees are uint256, gas is uint64 (as the EVM holds them); chain ids and nonces are JS numbers in viem. */
const Uint256 = (description: string) => Quantity(0n, 2n ** 256n - 1n, '0 to 2^256 - 1', description);
const Uint64 = (description: string) => Quantity(0n, 2n ** 64n - 1n, '0 to 2^64 - 1', description);
const SafeUint = (min: 0 | 1, description: string) => Quantity(BigInt(min), MAX_SAFE, `${min} to 2^53 - 1`, description);
/** A signature's r or s: up to 32 bytes of hex (nodes write them without leading zeros). */
const SignatureScalar = v.pipe(v.string('must be a string'), v.regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be 0x followed by 1-64 hex characters'));

/** Transaction types by viem's name, or by the type number as JSON-RPC writes it. */
export const EVM_TRANSACTION_TYPES = {
  legacy: 'legacy',
  eip2930: 'eip2930',
  eip1559: 'eip1559',
  eip4844: 'eip4844',
  eip7702: 'eip7702',
  '0x0': 'legacy',
  '0x1': 'eip2930',
  '0x2': 'eip1559',
  '0x3': 'eip4844',
  '0x4': 'eip7702',
} as const;

/** viem's SignedAuthorization (EIP-7702), as sign_authorization returns it; `contractAddress` is viem's alias of `address`. */
const SignedAuthorization = v.pipe(
  v.object({
    address: v.optional(Address),
    contractAddress: v.optional(Address),
    chainId: SafeUint(0, 'The chain the authorisation is valid on (0: any).'),
    nonce: SafeUint(0, "The authorising account's nonce."),
    r: SignatureScalar,
    s: SignatureScalar,
    yParity: v.optional(Quantity(0n, 1n, '0 to 1', "The signature's y parity.")),
    v: v.optional(
      v.pipe(
        Quantity(0n, 28n, '0 to 28', 'Deprecated form of yParity: 27 or 28.'),
        v.check((value) => [0n, 1n, 27n, 28n].includes(BigInt(value)), 'must be 27 or 28'),
      ),
    ),
  }),
  v.forward(
    v.check((entry) => (entry.address ?? entry.contractAddress) !== undefined, 'is required'),
    ['address'],
  ),
  v.forward(
    v.check(
      (entry) => !entry.address || !entry.contractAddress || entry.address.toLowerCase() === entry.contractAddress.toLowerCase(),
      'must equal address when both are given',
    ),
    ['contractAddress'],
  ),
  v.forward(
    v.check((entry) => entry.yParity !== undefined || entry.v !== undefined, 'is required (or v)'),
    ['yParity'],
  ),
);

/**
 * An EVM transaction to sign as viem's `TransactionSerializable` holds it, in JSON: bigint and
 * number fields as quantities (see Quantity), plus an optional `from` that must be the wallet's
 * address. Unsigned: signature fields (r, s, v, yParity) are refused, as are blobs (send
 * blobVersionedHashes).
 */
export const EvmTransaction = v.pipe(
  v.strictObject({
    type: v.optional(
      v.picklist(
        Object.keys(EVM_TRANSACTION_TYPES) as (keyof typeof EVM_TRANSACTION_TYPES)[],
        'must be legacy, eip2930, eip1559, eip4844 or eip7702 (or its JSON-RPC number 0x0-0x4)',
      ),
    ),
    chainId: SafeUint(1, 'EIP-155 chain id.'),
    nonce: SafeUint(0, "The sender's transaction nonce."),
    from: v.optional(v.pipe(Address, v.description("Optional; when given it must be this wallet's address (any case)."))),
    to: v.nullish(Address),
    value: v.optional(Uint256('Wei.')),
    data: v.optional(HexData),
    input: v.optional(v.pipe(HexData, v.description("JSON-RPC's name for data; when both are given they must be equal."))),
    gas: v.optional(Uint64('Gas limit.')),
    gasPrice: v.optional(Uint256('Wei per gas (legacy, eip2930).')),
    maxFeePerGas: v.optional(Uint256('Wei per gas (eip1559, eip4844, eip7702).')),
    maxPriorityFeePerGas: v.optional(Uint256('Wei per gas (eip1559, eip4844, eip7702).')),
    maxFeePerBlobGas: v.optional(Uint256('Wei per blob gas (eip4844).')),
    accessList: v.optional(v.array(v.object({ address: Address, storageKeys: v.array(Hex32) }))),
    blobVersionedHashes: v.optional(v.pipe(v.array(Hex32), v.minLength(1, 'must list at least one hash'))),
    /** EIP-7702 (type 4): signed authorisations, as sign_authorization returns them. */
    authorizationList: v.optional(v.pipe(v.array(SignedAuthorization), v.minLength(1, 'must list at least one authorization'))),
  }),
  v.forward(
    v.check((tx) => tx.data === undefined || tx.input === undefined || tx.data.toLowerCase() === tx.input.toLowerCase(), 'must equal data when both are given'),
    ['input'],
  ),
  v.description(
    "An EVM transaction as viem's TransactionSerializable holds it, in JSON: quantities as decimal strings, 0x hex or safe JSON integers; `from`, when given, must be the wallet's address.",
  ),
);

export const SolanaTransaction = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64'),
  v.description('Base64 of the serialised transaction message (legacy or v0) to sign.'),
);

export const SignTransactionFields = {
  transaction: v.union([EvmTransaction, SolanaTransaction], 'must be an EVM transaction object or a base64 Solana message'),
};
