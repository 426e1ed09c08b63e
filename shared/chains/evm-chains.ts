import { logger } from '../logger.ts';
import { type ChainsConfig, type EvmChainCode, NATIVE_DECIMALS } from './chain-config.ts';
import { ChainUnavailableError } from './errors.ts';
import { EvmChain } from './evm-chain.ts';
import type { RpcUrlSource } from './rpc-urls.ts';

export type ChainCode = EvmChainCode | 'SOL';

/**
 * The configured EVM chains, each client built once per container, on first use. A chain whose
 * `rpc_url` is not in CHAINS_CONFIG gets it from `rpcUrls` (the Secrets Manager secret), read
 * then; what needs no RPC (decimals, token lists) is answered from configuration alone. Routes
 * that never touch Solana (the venue routes) use this class, so their bundles carry no Solana client.
 */
export class EvmChains {
  readonly config: ChainsConfig;
  readonly #rpcUrls: RpcUrlSource | undefined;
  readonly #evm = new Map<EvmChainCode, Promise<EvmChain>>();

  constructor(config: ChainsConfig, rpcUrls?: RpcUrlSource) {
    this.config = config;
    this.#rpcUrls = rpcUrls;
  }

  evm(code: EvmChainCode): Promise<EvmChain> {
    let chain = this.#evm.get(code);
    if (!chain) {
      chain = this.rpcUrl(code).then((rpc_url) => new EvmChain(code, { ...this.config[code], rpc_url }));
      chain.catch(() => this.#evm.delete(code));
      this.#evm.set(code, chain);
    }
    return chain;
  }

  /** Decimals of `token` on `chain` (native: 18 on EVM, 9 on Solana); throws for a token the chain lacks. */
  decimals(chain: ChainCode, token: string): number {
    const entry = this.config[chain];
    if (token === entry.native) return NATIVE_DECIMALS[entry.family];
    const configured = (entry.tokens as Record<string, { decimals: number } | undefined>)[token];
    if (!configured) throw new Error(`${token} is not configured on ${chain}`);
    return configured.decimals;
  }

  /** Every token the chain carries, native first. */
  tokens(chain: ChainCode): string[] {
    return [this.config[chain].native, ...Object.keys(this.config[chain].tokens)];
  }

  protected async rpcUrl(code: ChainCode): Promise<string> {
    const inline = this.config[code].rpc_url;
    if (inline) return inline;
    if (!this.#rpcUrls) throw new Error(`${code} has no rpc_url and no RPC_URLS_SECRET is configured`);
    try {
      return (await this.#rpcUrls())[code];
    } catch (error) {
      // Secrets Manager failed, or the secret is unset or malformed (its message names the secret
      // and the problem, never the value): the operator's detail goes to the log, the caller gets
      // a 502 that names nothing internal, and nothing was sent.
      logger.error('RPC URLs unavailable', { chain: code, error });
      throw new ChainUnavailableError(code, 'its RPC URL could not be read');
    }
  }
}
