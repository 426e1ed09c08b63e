import type { Address } from 'viem';
import type { ChainCode } from '../wallets/networks.ts';
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

  /** `owner`'s balance of `token` (a token or the native coin) on any configured chain, in base units. */
  async balance(chain: ChainCode, owner: string, token: string): Promise<bigint> {
    if (chain === 'SOL') return (await this.sol()).balance(owner, token);
    return (await this.evm(chain)).balance(owner as Address, token);
  }
}
