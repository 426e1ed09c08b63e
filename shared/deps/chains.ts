import { Chains } from '../chains/chains.ts';
import { loadChainsConfig } from '../config.ts';

/** Need `chains`: CHAINS_CONFIG. Each chain's client is built on first use (shared/chains/chains.ts). */
export function chainsFromEnv(): Chains {
  return new Chains(loadChainsConfig());
}
