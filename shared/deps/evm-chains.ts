import { EvmChains } from '../chains/evm-chains.ts';
import { secretRpcUrls } from '../chains/rpc-urls.ts';
import { loadChainsConfig, loadRpcUrlsSecret } from '../config.ts';

/** Need `chains`, EVM chains only (routes that never touch Solana: their bundles carry no Solana client). */
export function evmChainsFromEnv(): EvmChains {
  const rpcUrlsSecret = loadRpcUrlsSecret();
  return new EvmChains(loadChainsConfig(), rpcUrlsSecret ? secretRpcUrls(rpcUrlsSecret) : undefined);
}
