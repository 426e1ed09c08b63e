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
/** LI.FI's published diamond per chain: the only `transactionRequest.to` / `estimate.approvalAddress` a quote may name. */
export const LIFI_CONTRACTS: Readonly<Record<BridgeChain, readonly string[]>> = {
  ETH: [DIAMOND],
  ARB: [DIAMOND],
  POL: [DIAMOND],
  INK: ['0x864b314D4C5a0399368609581d3E8933a63b9232'],
  SOL: [],
};

/** A `fromChain` / `toChain` value (a chain id or key, any case) as our chain code. */
export function bridgeChainOfLifi(value: string | number | undefined): BridgeChain | undefined {
  if (value === undefined) return undefined;
  const text = String(value).trim();
  const byId = (Object.entries(LIFI_CHAIN_IDS) as [BridgeChain, number][]).find(([, id]) => String(id) === text);
  return byId ? byId[0] : LIFI_CHAIN_KEYS[text.toLowerCase()];
}
