import type { BridgeChain, BridgeToken } from './bridge-routes.ts';

/**
 * LI.FI's public API vocabulary (research B): chain ids (`ChainId` in @lifi/types
 * src/chains/base.ts), token symbols, and the contracts a quote may send to or ask an allowance
 * for (`LiFiDiamond` in lifinance/contracts deployments/{mainnet,arbitrum,polygon,ink}.json).
 */
export const LIFI_CHAIN_IDS: Readonly<Record<BridgeChain, number>> = { ETH: 1, ARB: 42161, POL: 137, INK: 57073, SOL: 1151111081099710 };

/** LI.FI's chain keys (`ChainKey`), accepted beside the ids as `fromChain` / `toChain`. */
const LIFI_CHAIN_KEYS: Readonly<Record<string, BridgeChain>> = { eth: 'ETH', arb: 'ARB', pol: 'POL', ink: 'INK', sol: 'SOL' };

/** The symbols LI.FI lists our tokens under (bridged USDC is `USDC.e`). */
export const LIFI_TOKEN_SYMBOLS: Readonly<Record<BridgeToken, string>> = { USDC: 'USDC', 'USDC.E': 'USDC.e' };

const DIAMOND = '0x1231DEB6f5749EF6cE6943a275A1D3E7486F4EaE';

/**
 * The programs a Solana quote's transaction may invoke (its `transactionRequest.data`):
 * - LI.FI's own program, which logs the LI.FI transaction id (lifinance/solana-programs,
 *   lifi-solana-program-1: `LIFI_PROGRAM_1_ADDRESS`);
 * - the bridge programs of LI.FI's Solana USDC routes that name their ids publicly: Mayan (docs.li.fi
 *   "Solana Providers": keys mayan, mayanMCTP, mayanWH) per mayan-finance/swap-sdk src/addresses.ts
 *   (`MAYAN_PROGRAM_ID`, `MCTP_PROGRAM_ID`, `FAST_MCTP_PROGRAM_ID`, `SWIFT_PROGRAM_ID`, `SWIFT_V2_PROGRAM_ID`);
 * - the runtime programs such a transaction calls at top level, decoded strictly
 *   (solana-bridge-transaction.ts): Compute Budget, Associated Token Account, SPL Token.
 * Allbridge, Relay, Across and the other Solana tools LI.FI lists are not here: their quotes are
 * refused BRIDGE_QUOTE_UNKNOWN_PROGRAM until BRIDGE_CONTRACTS.SOL names their programs.
 */
export const LIFI_SOLANA_PROGRAMS: readonly string[] = [
  '3i5JeuZuUxeKtVysUnwQNGerJP2bSMX9fTFfS4Nxe3Br',
  'FC4eXxkyrMPTjiYUpp4EAnkmwMbQyZ6NDCh1kfLn6vsf',
  'dkpZqrxHFrhziEMQ931GLtfy11nFkCsfMftH9u6QwBU',
  'Gx9rivpS3YR8pBFwMuP6omYqVxunpLvLkNn7ubNyuZZ5',
  'BLZRi6frs4X4DNLw56V4EXai1b6QVESN1BhHBTYM9VcY',
  'mayan34VedncxdK2XobtvWFDXQASUTBXhUVzt2kKgny',
  'ComputeBudget111111111111111111111111111111',
  'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
  'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
];

/**
 * What a quote may pay or invoke per source chain: on EVM LI.FI's published diamond (the only
 * `transactionRequest.to` / `estimate.approvalAddress`), on Solana the programs its transaction may
 * invoke.
 */
export const LIFI_CONTRACTS: Readonly<Record<BridgeChain, readonly string[]>> = {
  ETH: [DIAMOND],
  ARB: [DIAMOND],
  POL: [DIAMOND],
  INK: ['0x864b314D4C5a0399368609581d3E8933a63b9232'],
  SOL: LIFI_SOLANA_PROGRAMS,
};

/** A `fromChain` / `toChain` value (a chain id or key, any case) as our chain code. */
export function bridgeChainOfLifi(value: string | number | undefined): BridgeChain | undefined {
  if (value === undefined) return undefined;
  const text = String(value).trim();
  const byId = (Object.entries(LIFI_CHAIN_IDS) as [BridgeChain, number][]).find(([, id]) => String(id) === text);
  return byId ? byId[0] : LIFI_CHAIN_KEYS[text.toLowerCase()];
}
