import { type Address, type Client, type Hex, hexToBigInt, hexToNumber, numberToHex, pad } from 'viem';
import type { PayoutClaim, PayoutWatch, WithdrawalStatus } from './driver.ts';

export type { PayoutClaim, PayoutWatch } from './driver.ts';

/**
 * Venue payouts as the chain shows them (issue 23): the token `Transfer` from the venue's payout
 * contract (Hyperliquid's Bridge2 on Arbitrum, Nado's WithdrawPool on Ink) to the user, of the
 * requested amount minus the venue's fee, in a block after the request (research E). Such a log
 * carries nothing that names the withdrawal, so two withdrawals of the same amount to the same
 * user would both match it: every match is claimed first (`PayoutClaim`, held exactly once by the
 * caller), and a withdrawal takes the first matching log no other withdrawal holds.
 */

/** One ERC-20 Transfer log. */
export interface PayoutLog {
  readonly txHash: Hex;
  readonly logIndex: number;
  readonly blockNumber: bigint;
  readonly amount: bigint;
}

/** The chain a venue pays out on, as a driver reads it. */
export interface TransferLogs {
  /** The latest block number. */
  head(): Promise<bigint>;
  /** `token`'s Transfer logs from `from` to `to` in blocks [fromBlock, toBlock], in chain order. */
  transfers(query: { token: Address; from: Address; to: Address; fromBlock: bigint; toBlock: bigint }): Promise<readonly PayoutLog[]>;
}

/** topic0 of ERC-20 `Transfer(address indexed from, address indexed to, uint256 value)`. */
export const TRANSFER_TOPIC: Hex = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/** The longest block range one eth_getLogs asks for (public RPCs cap it; 2,000 passes everywhere we run). */
const LOG_RANGE = 2_000n;

interface RpcLog {
  readonly transactionHash: Hex;
  readonly logIndex: Hex;
  readonly blockNumber: Hex;
  readonly data: Hex;
  readonly removed?: boolean;
}

/**
 * TransferLogs over a viem client (the account service's chain client), by raw eth_blockNumber and
 * eth_getLogs with the Transfer topics: no ABI decoding, so the venue bundles stay small (bench:bundles).
 */
export function transferLogsOf(client: Pick<Client, 'request'>): TransferLogs {
  const request = client.request as (args: { method: string; params?: unknown }) => Promise<unknown>;
  return {
    head: async () => hexToBigInt((await request({ method: 'eth_blockNumber' })) as Hex),
    transfers: async ({ token, from, to, fromBlock, toBlock }) => {
      const topics = [TRANSFER_TOPIC, pad(from.toLowerCase() as Hex), pad(to.toLowerCase() as Hex)];
      const found: PayoutLog[] = [];
      for (let start = fromBlock; start <= toBlock; start += LOG_RANGE) {
        const end = start + LOG_RANGE - 1n < toBlock ? start + LOG_RANGE - 1n : toBlock;
        const logs = (await request({
          method: 'eth_getLogs',
          params: [{ address: token, topics, fromBlock: numberToHex(start), toBlock: numberToHex(end) }],
        })) as RpcLog[];
        for (const log of logs) {
          if (log.removed) continue;
          found.push({
            txHash: log.transactionHash,
            logIndex: hexToNumber(log.logIndex),
            blockNumber: hexToBigInt(log.blockNumber),
            amount: hexToBigInt(log.data),
          });
        }
      }
      return found;
    },
  };
}

/**
 * The payout of one withdrawal: the first Transfer of exactly `amount` that this withdrawal can
 * claim, or undefined while there is none yet.
 */
export async function findPayout(
  logs: TransferLogs,
  watch: PayoutWatch,
  payout: { token: Address; from: Address; to: Address; amount: bigint },
): Promise<PayoutLog | undefined> {
  const head = await logs.head();
  if (head < watch.fromBlock) return undefined;
  const candidates = await logs.transfers({ token: payout.token, from: payout.from, to: payout.to, fromBlock: watch.fromBlock, toBlock: head });
  for (const log of candidates) {
    if (log.amount !== payout.amount) continue;
    if (await watch.claim(log)) return log;
  }
  return undefined;
}

/**
 * A driver's side of payout watching: the chain's head (recorded by the caller before a request)
 * and a withdrawal's status from its payout. Without a PayoutWatch (a direct call outside a
 * transfer step) it looks back `lookbackBlocks` and claims in this process only: exactly once per
 * driver instance; transfer steps pass claims held in the table (shared/transfers/steps/payout-claim.ts).
 */
export class PayoutWatcher {
  readonly #logs: TransferLogs;
  readonly #lookbackBlocks: bigint;
  /** Process claims: payout log → the withdrawal holding it. */
  readonly #holders = new Map<string, string>();

  constructor(logs: TransferLogs, lookbackBlocks: bigint) {
    this.#logs = logs;
    this.#lookbackBlocks = lookbackBlocks;
  }

  head(): Promise<bigint> {
    return this.#logs.head();
  }

  /** Completed by the first claimable Transfer of exactly `payout.amount`; pending while there is none. `holder` names the withdrawal for process claims. */
  async status(
    watch: PayoutWatch | undefined,
    holder: string,
    payout: { token: Address; from: Address; to: Address; amount: bigint },
  ): Promise<WithdrawalStatus> {
    const looking = watch ?? { fromBlock: await this.#lookbackStart(), claim: this.#processClaim(holder) };
    const log = await findPayout(this.#logs, looking, payout);
    return log ? { state: 'completed', txHash: log.txHash, logIndex: log.logIndex } : { state: 'pending' };
  }

  async #lookbackStart(): Promise<bigint> {
    const head = await this.#logs.head();
    return head > this.#lookbackBlocks ? head - this.#lookbackBlocks : 0n;
  }

  #processClaim(holder: string): PayoutClaim {
    return async (log) => {
      const key = `${log.txHash.toLowerCase()}:${log.logIndex}`;
      const current = this.#holders.get(key);
      if (current !== undefined) return current === holder;
      this.#holders.set(key, holder);
      return true;
    };
  }
}
