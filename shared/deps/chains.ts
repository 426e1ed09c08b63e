import { Chains } from '../chains/chains.ts';
import { secretRpcUrls } from '../chains/rpc-urls.ts';
import { loadChainsConfig, loadRpcUrlsSecret } from '../config.ts';
import { ChainlinkPrices } from '../prices/chainlink-prices.ts';
import { loadPriceCacheSeconds } from '../prices/config.ts';

/**
 * Need `chains`: CHAINS_CONFIG, and RPC_URLS_SECRET when it leaves the RPC URLs out (read from
 * Secrets Manager on the first chain call, never at cold start). Each chain's client is built on first use.
 */
export function chainsFromEnv(): Chains {
  const rpcUrlsSecret = loadRpcUrlsSecret();
  return new Chains(loadChainsConfig(), rpcUrlsSecret ? secretRpcUrls(rpcUrlsSecret) : undefined);
}

/**
 * Native coin prices from the Chainlink feeds on the ETH chain (Ethereum mainnet; the sandbox's
 * anvil carries feeds at the same addresses), kept PRICE_CACHE_SECONDS: the transfer estimate's
 * gas prices and the enclave's signing policy (issue 22) read the same.
 */
export function chainlinkPricesFor(chains: Chains): ChainlinkPrices {
  return new ChainlinkPrices({ client: async () => (await chains.evm('ETH')).client, cacheSeconds: loadPriceCacheSeconds() });
}
