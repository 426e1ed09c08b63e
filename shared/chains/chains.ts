import { EvmChains } from './evm-chains.ts';
import { SolanaChain } from './solana-chain.ts';

/** Every configured chain: the EVM chains and Solana. */
export class Chains extends EvmChains {
  #sol: Promise<SolanaChain> | undefined;

  sol(): Promise<SolanaChain> {
    if (!this.#sol) {
      const chain = this.rpcUrl('SOL').then((rpc_url) => new SolanaChain({ ...this.config.SOL, rpc_url }));
      chain.catch(() => (this.#sol = undefined));
      this.#sol = chain;
    }
    return this.#sol;
  }
}
