import type { TxErrorJson } from './errors.ts';

/** The shapes the chain keeps and answers from. */

export interface AccountState {
  readonly lamports: bigint;
  readonly owner: string;
  readonly data: Uint8Array;
  readonly executable: boolean;
}

/** Agave's UiTokenAmount (spl.ts `uiTokenAmount`). */
export interface UiTokenAmount {
  readonly amount: string;
  readonly decimals: number;
  readonly uiAmount: number;
  readonly uiAmountString: string;
}

export interface TokenBalance {
  readonly accountIndex: number;
  readonly mint: string;
  readonly owner: string;
  readonly programId: string;
  readonly uiTokenAmount: UiTokenAmount;
}

interface CompiledInnerInstructions {
  readonly index: number;
  readonly instructions: readonly { programIdIndex: number; accounts: number[]; data: string; stackHeight: number }[];
}

/** What getTransaction and getSignatureStatuses answer from; u64 values as decimal strings. */
export interface TransactionRecord {
  readonly signature: string;
  readonly slot: number;
  readonly blockTime: number;
  readonly version: 'legacy' | 0;
  readonly wire: string;
  readonly err: TxErrorJson | null;
  readonly fee: string;
  readonly preBalances: readonly string[];
  readonly postBalances: readonly string[];
  readonly preTokenBalances: readonly TokenBalance[];
  readonly postTokenBalances: readonly TokenBalance[];
  readonly logs: readonly string[];
  readonly innerInstructions: readonly CompiledInnerInstructions[];
  readonly computeUnitsConsumed: number;
  readonly loadedAddresses: { readonly writable: readonly string[]; readonly readonly: readonly string[] };
  readonly returnData: { programId: string; data: [string, 'base64'] } | null;
  readonly computeUnitPrice: string;
  readonly writableKeys: readonly string[];
}
