import { type Client, createClient, http, type PublicActions } from 'viem';
import {
  estimateFeesPerGas,
  estimateGas,
  getBalance,
  getCode,
  getStorageAt,
  getTransactionCount,
  readContract,
  sendRawTransaction,
  waitForTransactionReceipt,
} from 'viem/actions';
import { localFetch } from '../../deps/local-endpoints.ts';

/** The public actions our EVM code calls, and no others. */
type UsedActions = Pick<
  PublicActions,
  | 'getBalance'
  | 'readContract'
  | 'estimateFeesPerGas'
  | 'estimateGas'
  | 'getTransactionCount'
  | 'sendRawTransaction'
  | 'waitForTransactionReceipt'
  | 'getStorageAt'
  | 'getCode'
>;

export type EvmClient = Client & UsedActions;

/**
 * A viem client with exactly the actions we call, each imported from `viem/actions`.
 * `createPublicClient` attaches every public action (multicall, ENS, CCIP, simulateCalls, ...),
 * which a bundler cannot drop: about 160 KB of each chain function's bundle (bench:bundles).
 */
export function createEvmClient(rpcUrl: string): EvmClient {
  // localFetch: the global fetch, or the sandbox's RPC gateway in this process (shared/deps/local-endpoints.ts).
  const client = createClient({ transport: http(rpcUrl, { retryCount: 2, timeout: 10_000, fetchFn: localFetch }) });
  // The casts keep viem's generic signatures; each wrapper passes its arguments through unchanged.
  const actions = {
    getBalance: (args: Parameters<typeof getBalance>[1]) => getBalance(client, args),
    readContract: ((args: Parameters<typeof readContract>[1]) => readContract(client, args)) as UsedActions['readContract'],
    estimateFeesPerGas: ((args?: Parameters<typeof estimateFeesPerGas>[1]) => estimateFeesPerGas(client, args)) as UsedActions['estimateFeesPerGas'],
    estimateGas: ((args: Parameters<typeof estimateGas>[1]) => estimateGas(client, args)) as UsedActions['estimateGas'],
    getTransactionCount: (args: Parameters<typeof getTransactionCount>[1]) => getTransactionCount(client, args),
    sendRawTransaction: (args: Parameters<typeof sendRawTransaction>[1]) => sendRawTransaction(client, args),
    waitForTransactionReceipt: ((args: Parameters<typeof waitForTransactionReceipt>[1]) =>
      waitForTransactionReceipt(client, args)) as UsedActions['waitForTransactionReceipt'],
    getStorageAt: (args: Parameters<typeof getStorageAt>[1]) => getStorageAt(client, args),
    getCode: (args: Parameters<typeof getCode>[1]) => getCode(client, args),
  } satisfies Record<keyof UsedActions, unknown>;
  return client.extend(() => actions as UsedActions);
}
