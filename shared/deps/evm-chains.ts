import { EvmChains } from '../chains/evm-chains.ts';
import { secretRpcUrls } from '../chains/rpc-urls.ts';
import { loadChainsConfig, loadRpcUrlsSecret } from '../config.ts';
import { ChainlinkPrices } from '../prices/chainlink-prices.ts';
import { loadPriceCacheSeconds } from '../prices/config.ts';

/** Need `chains`, EVM chains only (routes that never touch Solana: their bundles carry no Solana client). */
export function evmChainsFromEnv(): EvmChains {
  const rpcUrlsSecret = loadRpcUrlsSecret();
  return new EvmChains(loadChainsConfig(), rpcUrlsSecret ? secretRpcUrls(rpcUrlsSecret) : undefined);
}

/**
 * Native coin prices from the Chainlink feeds on the ETH chain (Ethereum mainnet; the sandbox's
 * anvil carries feeds at the same addresses), kept PRICE_CACHE_SECONDS: the transfer estimate's
 * gas prices and the enclave's signing policy (issue 22) read the same.
 */
export function chainlinkPricesFor(chains: EvmChains): ChainlinkPrices {
  return new ChainlinkPrices({ client: async () => (await chains.evm('ETH')).client, cacheSeconds: loadPriceCacheSeconds() });
}
