import { Chains } from '../chains/chains.ts';
import { ssmRpcUrls } from '../chains/rpc-urls.ts';
import { loadChainsConfig, loadRpcUrlsParameter } from '../config.ts';

/**
 * Need `chains`: CHAINS_CONFIG, and RPC_URLS_PARAMETER when it leaves the RPC URLs out (read
 * from SSM on the first chain call, never at cold start). Each chain's client is built on first use.
 */
export function chainsFromEnv(): Chains {
  const rpcUrlsParameter = loadRpcUrlsParameter();
  return new Chains(loadChainsConfig(), rpcUrlsParameter ? ssmRpcUrls(rpcUrlsParameter) : undefined);
}
