import { type Address, encodeFunctionData, erc20Abi, type Hex } from 'viem';
import type { EvmChainCode, EvmChainConfig } from './chain-config.ts';
import { createEvmClient, type EvmClient } from './evm/evm-client.ts';

/**
 * One EVM chain through viem: balances, fee and gas estimates, broadcast and inclusion. The RPC
 * URL, chain id and token addresses come from configuration (a real RPC in AWS, anvil in the
 * sandbox); nothing here knows which.
 */
export interface EvmCall {
  readonly to: Address;
  readonly value: bigint;
  readonly data: Hex;
}

export class EvmChain {
  readonly code: EvmChainCode;
  readonly config: EvmChainConfig;
  readonly client: EvmClient;

  constructor(code: EvmChainCode, config: EvmChainConfig) {
    this.code = code;
    this.config = config;
    this.client = createEvmClient(config.rpc_url);
  }

  /** The token's contract, or undefined for the native coin. Throws for a token the chain lacks. */
  tokenAddress(token: string): Address | undefined {
    if (token === this.config.native) return undefined;
    const entry = this.config.tokens[token as 'USDC' | 'USDC.E'];
    if (!entry) throw new Error(`${token} is not configured on ${this.code}`);
    return entry.address as Address;
  }

  decimals(token: string): number {
    return token === this.config.native ? 18 : this.config.tokens[token as 'USDC' | 'USDC.E']!.decimals;
  }

  /** Every token this chain carries, native first. */
  tokens(): string[] {
    return [this.config.native, ...Object.keys(this.config.tokens)];
  }

  async balance(owner: Address, token: string): Promise<bigint> {
    const address = this.tokenAddress(token);
    if (!address) return this.client.getBalance({ address: owner, blockTag: 'pending' });
    return this.client.readContract({ address, abi: erc20Abi, functionName: 'balanceOf', args: [owner], blockTag: 'pending' });
  }

  /** The call that moves `amount` of `token` from the caller to `to`. */
  transferCall(token: string, to: Address, amount: bigint): EvmCall {
    const address = this.tokenAddress(token);
    if (!address) return { to, value: amount, data: '0x' };
    return { to: address, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) };
  }

  async fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const { maxFeePerGas, maxPriorityFeePerGas } = await this.client.estimateFeesPerGas();
    return { maxFeePerGas, maxPriorityFeePerGas };
  }

  /** Gas for a call from `from`, with 20% headroom (estimates can move between estimate and inclusion). */
  async estimateGas(from: Address, call: EvmCall): Promise<bigint> {
    const estimate = await this.client.estimateGas({ account: from, to: call.to, value: call.value, data: call.data });
    return (estimate * 12n) / 10n;
  }

  pendingNonce(address: Address): Promise<number> {
    return this.client.getTransactionCount({ address, blockTag: 'pending' });
  }

  async broadcast(signedTransaction: Hex): Promise<Hex> {
    return this.client.sendRawTransaction({ serializedTransaction: signedTransaction });
  }

  /** Waits for inclusion; `null` when the bound passes first. */
  async waitForReceipt(hash: Hex, timeoutMs: number) {
    try {
      return await this.client.waitForTransactionReceipt({ hash, timeout: timeoutMs, pollingInterval: 250 });
    } catch (error) {
      if ((error as Error).name === 'WaitForTransactionReceiptTimeoutError') return null;
      throw error;
    }
  }
}
