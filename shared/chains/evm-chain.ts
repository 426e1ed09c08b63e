import {
  type Address,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  HttpRequestError,
  RpcError,
  RpcRequestError,
  TimeoutError,
  TransactionReceiptNotFoundError,
  BaseError as ViemError,
  WaitForTransactionReceiptTimeoutError,
} from 'viem';
import { getTransactionReceipt } from 'viem/actions';
import type { EvmChainCode, EvmChainConfig } from './chain-config.ts';
import { BroadcastRejectedError, CallWouldFailError, ChainUnavailableError, describeChainError } from './errors.ts';
import { createEvmClient, type EvmClient } from './evm/evm-client.ts';
import { isDelegatedTo, readExecutorNonce } from './evm/sponsored-executor.ts';

/**
 * One EVM chain through viem: balances, fee and gas estimates, broadcast and inclusion. The RPC
 * URL, chain id and token addresses come from configuration (a real RPC in AWS, anvil in the
 * sandbox); nothing here knows which. No viem error leaves this class: its message holds the RPC
 * URL (see errors.ts), so failures become ChainUnavailableError / BroadcastRejectedError /
 * CallWouldFailError with a redacted reason.
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
    if (token === this.config.native) return 18;
    const entry = this.config.tokens[token as 'USDC' | 'USDC.E'];
    if (!entry) throw new Error(`${token} is not configured on ${this.code}`);
    return entry.decimals;
  }

  /** Every token this chain carries, native first. */
  tokens(): string[] {
    return [this.config.native, ...Object.keys(this.config.tokens)];
  }

  balance(owner: Address, token: string): Promise<bigint> {
    const address = this.tokenAddress(token);
    return this.#rpc(() =>
      address
        ? this.client.readContract({ address, abi: erc20Abi, functionName: 'balanceOf', args: [owner], blockTag: 'pending' })
        : this.client.getBalance({ address: owner, blockTag: 'pending' }),
    );
  }

  /** What `spender` may still take of `owner`'s `token` (ERC-20 `allowance`, pending block). */
  allowance(owner: Address, spender: Address, token: string): Promise<bigint> {
    const address = this.tokenAddress(token);
    if (!address) return Promise.resolve(0n);
    return this.#rpc(() => this.client.readContract({ address, abi: erc20Abi, functionName: 'allowance', args: [owner, spender], blockTag: 'pending' }));
  }

  /** The call that moves `amount` of `token` from the caller to `to`. */
  transferCall(token: string, to: Address, amount: bigint): EvmCall {
    const address = this.tokenAddress(token);
    if (!address) return { to, value: amount, data: '0x' };
    return { to: address, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) };
  }

  fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    return this.#rpc(async () => {
      const { maxFeePerGas, maxPriorityFeePerGas } = await this.client.estimateFeesPerGas();
      return { maxFeePerGas, maxPriorityFeePerGas };
    });
  }

  /**
   * Gas for a call from `from`, with 20% headroom (estimates can move between estimate and
   * inclusion). CallWouldFailError when the node says the call reverts.
   */
  async estimateGas(from: Address, call: EvmCall): Promise<bigint> {
    try {
      const estimate = await this.client.estimateGas({ account: from, to: call.to, value: call.value, data: call.data });
      return (estimate * 12n) / 10n;
    } catch (error) {
      if (error instanceof ViemError && !isTransportFailure(error)) throw new CallWouldFailError(describeChainError(error));
      throw this.#unavailable(error);
    }
  }

  pendingNonce(address: Address): Promise<number> {
    return this.#rpc(() => this.client.getTransactionCount({ address, blockTag: 'pending' }));
  }

  /** The nonce of the account's next transaction as of the latest block (its included ones only). */
  includedNonce(address: Address): Promise<number> {
    return this.#rpc(() => this.client.getTransactionCount({ address, blockTag: 'latest' }));
  }

  /** EIP-7702: true when `account`'s code is the delegation indicator to `delegate`. */
  isDelegatedTo(account: Address, delegate: Address): Promise<boolean> {
    return this.#rpc(() => isDelegatedTo(this.client, account, delegate));
  }

  /** The SponsoredExecutor nonce the account's next `execute` must carry. */
  executorNonce(account: Address): Promise<bigint> {
    return this.#rpc(() => readExecutorNonce(this.client, account));
  }

  /**
   * BroadcastRejectedError when the node answers with an error (nothing was sent);
   * ChainUnavailableError when it did not answer (maybe sent).
   */
  async broadcast(signedTransaction: Hex): Promise<Hex> {
    try {
      return await this.client.sendRawTransaction({ serializedTransaction: signedTransaction });
    } catch (error) {
      if (error instanceof RpcError || error instanceof RpcRequestError) throw new BroadcastRejectedError(describeChainError(error));
      throw this.#unavailable(error);
    }
  }

  /** The receipt if the transaction is included, else null (no waiting). */
  async receipt(hash: Hex) {
    try {
      return await getTransactionReceipt(this.client, { hash });
    } catch (error) {
      if (error instanceof TransactionReceiptNotFoundError) return null;
      throw this.#unavailable(error);
    }
  }

  /** Waits for inclusion; `null` when the bound passes first. */
  async waitForReceipt(hash: Hex, timeoutMs: number) {
    try {
      return await this.client.waitForTransactionReceipt({ hash, timeout: timeoutMs, pollingInterval: 250 });
    } catch (error) {
      if (error instanceof WaitForTransactionReceiptTimeoutError) return null;
      throw this.#unavailable(error);
    }
  }

  async #rpc<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.#unavailable(error);
    }
  }

  #unavailable(error: unknown): Error {
    return error instanceof ViemError ? new ChainUnavailableError(this.code, describeChainError(error)) : (error as Error);
  }
}

function isTransportFailure(error: ViemError): boolean {
  return error.walk((cause) => cause instanceof HttpRequestError || cause instanceof TimeoutError) !== null;
}
