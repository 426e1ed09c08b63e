/**
 * What decoding a sign body yields (facts.ts adds the operation and channel), and the part of the
 * chains configuration decoding reads. Apart from facts.ts so the decoders need not import it.
 */
export interface DecodedFacts {
  /** A chain code (ETH, ARB, POL, INK, SOL) when the request names a configured chain, else `eip155:<id>`; absent for sign_data and sign_message. */
  readonly chain?: string;
  /** Decoded recipients: EIP-55 EVM addresses or base58 Solana addresses (SPL: the destination token account). */
  readonly recipients: readonly string[];
  /** True when what is signed cannot be decoded (a raw hash; calldata or a Solana instruction of an unknown kind). */
  readonly opaque: boolean;
  /**
   * Micro-USD (6 decimals) the request moves or approves, when known: USDC and USDC.E at face
   * value, native coins once priced (native-usd.ts); absent when unknown (unknown tokens, opaque
   * requests, a native coin not yet priced or without a price).
   */
  readonly usd?: { readonly value: bigint };
  /**
   * The chain's native coin the request moves (EVM `value`; Solana System transfers, in lamports),
   * in base units, with `otherUsd` the value of everything else it moves when that is known. Set
   * only with `usd` absent: priceNativeFacts (native-usd.ts) fills `usd` from a price source.
   */
  readonly native?: { readonly coin: NativeCoin; readonly amount: bigint; readonly otherUsd?: bigint };
  /**
   * SPL TransferChecked destinations: token accounts, with the mint and token program that make
   * them an owner's associated token account. The message names no owner; token-owners.ts finds
   * which address a policy lists owns each (`owners`).
   */
  readonly tokenAccounts?: readonly { readonly account: string; readonly mint: string; readonly program: string }[];
  /** Why a native coin could not be priced (native-usd.ts), in words fit for a denial's reason. */
  readonly priceError?: string;
  /** A recipient token account → the listed owner whose associated token account it is (token-owners.ts). */
  readonly owners?: ReadonlyMap<string, string>;
}

/** Native coins a policy can price: ETH (ETH, ARB, INK), POL, SOL. */
export type NativeCoin = 'ETH' | 'POL' | 'SOL';

/** The chains configuration as decoding reads it (a ChainsConfig is one): chain codes to `{ family, chain_id, tokens }`. */
export interface PolicyChains {
  readonly [code: string]: unknown;
}
