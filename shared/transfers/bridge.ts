import type { BridgeChain, BridgeEndpoint } from './bridge-routes.ts';

/**
 * The account service's port to a bridge; its adapter for LI.FI's public API
 * (`GET /v1/quote`, `GET /v1/status`; docs/bridge.md) is http-bridge-client.ts. Amounts are base units (bigint inside,
 * decimal strings on the wire). Statuses are LI.FI's: NOT_FOUND, PENDING, DONE, FAILED, with a
 * substatus.
 *
 * Flow: `quote` (checked before anything is signed: bridge-quote-checks.ts) → send the `deposit`
 * call from `sender` on the source chain (EVM: `approve(spender, amount)` on the token, then the
 * quote's transactionRequest; SOL: the quote's serialized transaction, signed as given by the
 * wallet) → `status({chain, tx})` until DONE or FAILED.
 */
export interface BridgeQuoteRequest {
  readonly route: { readonly from: BridgeEndpoint; readonly to: BridgeEndpoint };
  readonly amount: bigint;
  /** Who sends the deposit (a refund goes back here, on the source chain). */
  readonly sender: string;
  /** Who receives the fill on the destination chain. */
  readonly recipient: string;
}

export type BridgeDepositCall =
  | {
      readonly kind: 'evm_transaction';
      readonly chain: Exclude<BridgeChain, 'SOL'>;
      /**
       * The ERC-20 the call spends (the quote's `action.fromToken`): the wallet approves `spender`
       * for the amount first, as LI.FI's contracts pull tokens with `transferFrom`.
       */
      readonly token: `0x${string}`;
      /** Who the approval names: the quote's `estimate.approvalAddress` (allow-listed). */
      readonly spender: `0x${string}`;
      readonly to: `0x${string}`;
      readonly data: `0x${string}`;
      readonly value: bigint;
    }
  | {
      /**
       * LI.FI's Solana form: the quote's own serialized transaction (`transactionRequest.data`,
       * base64, unsigned), checked (solana-bridge-transaction.ts) and signed as given by the
       * wallet, its fee payer.
       */
      readonly kind: 'solana_transaction';
      readonly chain: 'SOL';
      readonly transaction: string;
      /** The route token's mint as the quote names it (`action.fromToken.address`); the step compares it with its chain config. */
      readonly mint: string;
      /** The most of `mint` that leaves the wallet: the quoted amount. */
      readonly amount: bigint;
    };

export interface BridgeQuote {
  readonly quote_id: string;
  readonly route_id: string;
  readonly amount: bigint;
  readonly fee: bigint;
  /** amount − fee: what the fill pays, to the base unit. */
  readonly to_amount: bigint;
  /** What the bridge guarantees after slippage (LI.FI `estimate.toAmountMin`), checked before signing. */
  readonly to_amount_min: bigint;
  /** ISO time; a deposit landing later is refunded, not filled. */
  readonly expires_at: string;
  readonly estimated_fill_ms: number;
  readonly deposit: readonly BridgeDepositCall[];
}

export type BridgeStatusCode = 'NOT_FOUND' | 'PENDING' | 'DONE' | 'FAILED';
export type BridgeSubstatus =
  | 'WAIT_DESTINATION_TRANSACTION'
  | 'REFUND_IN_PROGRESS'
  | 'COMPLETED'
  | 'REFUNDED'
  | 'EXPIRED'
  | 'NOT_PROCESSABLE_REFUND_NEEDED'
  | 'UNKNOWN_ERROR';

export interface BridgeLeg {
  readonly chain: BridgeChain;
  readonly tx_hash: string;
  readonly amount: bigint;
}

export interface BridgeStatus {
  readonly status: BridgeStatusCode;
  readonly substatus?: BridgeSubstatus;
  readonly message?: string;
  readonly quote_id?: string;
  readonly sending?: BridgeLeg;
  /** The fill on the destination chain, once sent. */
  readonly receiving?: BridgeLeg;
  /** The refund on the source chain, once sent. */
  readonly refund?: BridgeLeg;
}

export interface BridgeReference {
  readonly chain: BridgeChain;
  /** The deposit's transaction hash (EVM) or signature (SOL). */
  readonly tx: string;
}

export interface BridgeClient {
  quote(request: BridgeQuoteRequest): Promise<BridgeQuote>;
  status(reference: BridgeReference): Promise<BridgeStatus>;
}

/** A 4xx from the bridge: the request is wrong or out of the route's limits (`code` says which). */
export class BridgeRefusedError extends Error {
  readonly code: string;
  readonly httpStatus: number;
  constructor(code: string, message: string, httpStatus: number) {
    super(message);
    this.code = code;
    this.httpStatus = httpStatus;
  }
}

/** The bridge did not answer, or answered 5xx / something unreadable: try again later. */
export class BridgeUnavailableError extends Error {
  readonly code = 'BRIDGE_UNAVAILABLE';
}

/** A quote that fails a check before signing (shared/transfers/bridge-quote-checks.ts): refused, nothing is sent. */
export class BridgeQuoteRejectedError extends BridgeRefusedError {
  constructor(code: string, message: string) {
    super(code, message, 422);
  }
}
