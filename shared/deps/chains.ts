import { Chains } from '../chains/chains.ts';
import { secretRpcUrls } from '../chains/rpc-urls.ts';
import { loadChainsConfig, loadRpcUrlsSecret } from '../config.ts';

/**
 * Need `chains`: CHAINS_CONFIG, and RPC_URLS_SECRET when it leaves the RPC URLs out (read from
 * Secrets Manager on the first chain call, never at cold start). Each chain's client is built on first use.
 */
export function chainsFromEnv(): Chains {
  const rpcUrlsSecret = loadRpcUrlsSecret();
  return new Chains(loadChainsConfig(), rpcUrlsSecret ? secretRpcUrls(rpcUrlsSecret) : undefined);
}
