import type { ChainsConfig, EvmChainCode } from './chain-config.ts';
import { EvmChain } from './evm-chain.ts';
import { SolanaChain } from './solana-chain.ts';

/** The configured chains, each client built once per container. */
export class Chains {
  readonly config: ChainsConfig;
  readonly #evm = new Map<EvmChainCode, EvmChain>();
  #sol: SolanaChain | undefined;

  constructor(config: ChainsConfig) {
    this.config = config;
  }

  evm(code: EvmChainCode): EvmChain {
    let chain = this.#evm.get(code);
    if (!chain) {
      chain = new EvmChain(code, this.config[code]);
      this.#evm.set(code, chain);
    }
    return chain;
  }

  sol(): SolanaChain {
    this.#sol ??= new SolanaChain(this.config.SOL);
    return this.#sol;
  }
}
