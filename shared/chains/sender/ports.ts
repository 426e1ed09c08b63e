import type { Address, Hex } from 'viem';

/**
 * What the exactly-once sender needs from the outside, as small ports: a signer per chain kind
 * (the enclave in production: see enclave-signers.ts), a journal that records a signed
 * transaction before it is broadcast, and a place to add up phase timings.
 */

/** An EVM transaction for the signer; quantities as bigints (the enclave adapter turns them into wire strings). */
export interface EvmTransactionRequest {
  readonly type: 'eip1559' | 'eip7702';
  readonly chainId: number;
  readonly nonce: number;
  readonly to: Address;
  readonly value: bigint;
  readonly data: Hex;
  readonly gas: bigint;
  readonly maxFeePerGas: bigint;
  readonly maxPriorityFeePerGas: bigint;
  readonly authorizationList?: readonly SignedAuthorization[];
}

/** An EIP-7702 authorisation as the enclave's sign_authorization returns it. */
export interface SignedAuthorization {
  readonly address: Address;
  readonly chainId: number;
  readonly nonce: number;
  readonly r: Hex;
  readonly s: Hex;
  readonly yParity: number;
}

/** Signs for one EVM account; the key stays wherever the implementation keeps it (the enclave). */
export interface EvmSigner {
  /** The signed, serialised transaction. */
  signTransaction(transaction: EvmTransactionRequest): Promise<Hex>;
  signAuthorization(request: { chainId: number; contractAddress: Address; nonce: number }): Promise<SignedAuthorization>;
  /** A 65-byte signature over a 32-byte digest, no prefix (EIP-712 digests). */
  signDigest(digest: Hex): Promise<Hex>;
}

/** Signs Solana transaction messages for one account. */
export interface SolanaSigner {
  /** The base58 ed25519 signature of the serialised message. */
  signMessage(messageBytes: Uint8Array): Promise<string>;
}

/** Who pays gas for EIP-7702 sponsored sends: an account with its own signer. */
export interface GasPayer {
  address(): Promise<Address>;
  signTransaction(transaction: EvmTransactionRequest): Promise<Hex>;
}

/**
 * The sponsors of sponsored sends (sponsor-pool.ts): `size` pool members, each its own account
 * (own nonce, own sender lease), and the treasury that funds them. Members are reached by slot,
 * so a journaled send finds the very sponsor that signed it.
 */
export interface SponsorPool {
  readonly size: number;
  member(slot: number): GasPayer;
  /** Funds the members (sponsor-pool.ts topUpSponsors); the one sponsor of records from before the pool. */
  readonly treasury: GasPayer;
}

/**
 * What a send must move to count as sent, checked on its receipt (shared/chains/sender/effect.ts):
 * a successful receipt alone is not enough (an EIP-7702 call to an account whose delegation was
 * skipped runs no code and succeeds). Recorded with the transaction, so a resume checks the same.
 */
export interface ExpectedEffect {
  /** The token's symbol on the send's chain (its native coin, an ERC-20 or an SPL token). */
  readonly token: string;
  /** Base units, decimal. 0: nothing moves (an approval), only the execution itself is checked. */
  readonly amount: string;
  readonly from: string;
  /** The recipient, when the send names one (a transfer); a contract that pulls (transferFrom) names none. */
  readonly to?: string;
  /** Sponsored sends: the SponsoredExecutor nonce the account's `execute` consumes (its Executed event). */
  readonly executor_nonce?: string;
}

/** One signed transaction of a send. */
export interface SendCandidate {
  readonly tx_hash: string;
  readonly raw: string;
}

/**
 * A signed transaction: its hash (EVM) or signature (Solana) and its wire form, public once
 * broadcast. A send that was replaced (evm-inclusion.ts) keeps every candidate; `tx_hash`/`raw`
 * is then the latest one (what a resume re-broadcasts), or the mined one once it is known.
 */
export interface Broadcast {
  readonly tx_hash: string;
  /** 0x-hex (EVM) or base64 (Solana). */
  readonly raw: string;
  /** What it must move (absent on records written before effects were checked: then status alone decides). */
  readonly effect?: ExpectedEffect;
  /**
   * Every transaction signed for this send, in signing order, `tx_hash` among them; absent until
   * a first replacement. EVM: one nonce, so at most one of them is ever mined. Solana: each
   * earlier one was proven expired and absent before the next was signed.
   */
  readonly candidates?: readonly SendCandidate[];
  /** Solana: the block height past which the transaction's blockhash is expired (decimal). */
  readonly last_valid_block_height?: string;
  /**
   * Sponsored (EIP-7702) sends: which pool member signed and pays for it (sponsor-pool.ts), so a
   * resume re-broadcasts and replaces it from that same sponsor. Absent on records from before
   * the pool: the treasury, which was the one sponsor then.
   */
  readonly sponsor?: SponsorRef;
}

/** A gas sponsor of the pool: its slot (0 … size-1) and address. */
export interface SponsorRef {
  readonly slot: number;
  readonly address: string;
}

/**
 * Durable memory of one logical send (an idempotency record, a transfer step). `record` must be
 * durable when it returns: it runs before the broadcast, so a retry after a crash re-sends the
 * very transaction (same nonce or signature: at most one inclusion) instead of signing anew.
 * `record` throwing means "do not broadcast" (e.g. the caller's claim was taken over). Without a
 * journal a send is still ordered and checked, but a retry after a crash cannot find it: callers
 * that retry (venue deposits, transfer steps) must pass one.
 */
export interface SendJournal {
  /** What an earlier attempt of this send recorded, if anything: the sender resumes it. */
  readonly previous?: Broadcast;
  record(broadcast: Broadcast): Promise<void>;
  /**
   * Stores `next` in place of `current` (what this send's journal holds now): a replacement
   * candidate, before its broadcast, or the candidate that was mined. Durable when it returns;
   * throws when the journal no longer holds `current` (another invocation moved on: do not
   * broadcast). A journal without it gets no replacements (its send only waits).
   */
  replace?(next: Broadcast, current: Broadcast): Promise<void>;
}

/** Milliseconds spent signing, broadcasting and waiting for inclusion, added up across calls. */
export interface SendTimings {
  sign: number;
  broadcast: number;
  inclusion: number;
}

/** What a send returns once included. */
export interface SendReceipt {
  readonly txHash: string;
  /** True when this call resumed an earlier attempt's recorded transaction. */
  readonly resumed: boolean;
}
