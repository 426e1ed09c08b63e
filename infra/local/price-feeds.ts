import { type Address, encodeFunctionData, type Hex } from 'viem';
import { formatAmount } from '../../shared/money.ts';
import { CHAINLINK_FEEDS } from '../../shared/prices/chainlink-feeds.ts';
import type { NativeCoin } from '../../shared/prices/price-source.ts';
import { SANDBOX_PRICE_DECIMALS } from '../../shared/sandbox/prices-request.ts';
import { sandboxPriceFeedArtifact, sandboxPriceFeedArtifactAbi } from './contracts/sandbox-price-feed.artifact.ts';

/**
 * The sandbox's Chainlink feeds: SandboxPriceFeed (AggregatorV3Interface) at the real
 * Ethereum-mainnet proxy addresses of shared/prices/chainlink-feeds.ts on the sandbox ETH chain,
 * so the production adapter (ChainlinkPrices) reads them unchanged. The code is installed on every
 * start (anvil_setCode; storage is kept, so the answers persist in DATA_DIR across restarts); a feed
 * without a round gets its initial answer. Rounds are written by the sandbox's funded account,
 * the feed's operator (its `transmit`), with the wall clock as `updatedAt`.
 *
 * Heartbeat emulation: each tick, a feed whose latest round is older than half its heartbeat gets a
 * new round with the same answer, so a sandbox left running never goes stale. A feed set with a
 * past `updated_at` (POST /sandbox/prices) is left alone ("frozen", held in memory) until it is set
 * again without one, so a test can make it stale; a restart unfreezes it.
 */
export const SANDBOX_INITIAL_PRICES: Readonly<Record<NativeCoin, bigint>> = {
  ETH: 3_000n * 10n ** 8n, // 3,000 USD
  POL: 25_000_000n, // 0.25 USD
  SOL: 150n * 10n ** 8n, // 150 USD
};

/** The real feeds' `description()`. */
const DESCRIPTIONS: Readonly<Record<NativeCoin, string>> = { ETH: 'ETH / USD', POL: 'MATIC / USD', SOL: 'SOL / USD' };
const COINS = Object.keys(CHAINLINK_FEEDS) as NativeCoin[];

/** What the feeds need of the sandbox ETH chain. */
export interface PriceFeedChain {
  /** The operator: the account `send` sends from. */
  readonly operator: Address;
  /** anvil_setCode. */
  readonly setCode: (address: Address, bytecode: Hex) => Promise<void>;
  readonly read: <T>(address: Address, functionName: 'initialized' | 'latestRound' | 'latestRoundData' | 'decimals') => Promise<T>;
  /** Sends `data` to `to` from the operator and waits for a successful receipt (serialized with the chain's other sends). */
  readonly send: (to: Address, data: Hex) => Promise<void>;
}

export interface FeedReading {
  readonly pair: string;
  readonly address: Address;
  readonly decimals: number;
  readonly price: string;
  readonly round_id: string;
  readonly updated_at: string;
  readonly heartbeat_seconds: number;
  /** Left alone by the heartbeat (set with a past updated_at). */
  readonly frozen: boolean;
}

export interface SandboxPriceFeeds {
  /** Every feed's latest round, read from the chain. */
  read(): Promise<Record<NativeCoin, FeedReading>>;
  /** New rounds with these answers (8 decimals), dated `updatedAt` (unix seconds; default now, which unfreezes). */
  set(answers: Partial<Record<NativeCoin, bigint>>, updatedAt?: number): Promise<void>;
  /** One heartbeat: a new round, same answer, for each unfrozen feed older than half its heartbeat. */
  heartbeat(): Promise<void>;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

export async function installPriceFeeds(chain: PriceFeedChain, clock: () => number = nowSeconds): Promise<SandboxPriceFeeds> {
  const transmit = (coin: NativeCoin, answer: bigint, at: number) =>
    chain.send(CHAINLINK_FEEDS[coin].proxy, encodeFunctionData({ abi: sandboxPriceFeedArtifactAbi, functionName: 'transmit', args: [answer, BigInt(at)] }));
  // The latest round of each feed as written here: the heartbeat decides from it without an RPC call.
  const latest = new Map<NativeCoin, { answer: bigint; updatedAt: number }>();
  const frozen = new Set<NativeCoin>();
  // set and heartbeat one at a time: a heartbeat must not rewrite an answer set while it ran.
  let tail: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task);
    tail = run.catch(() => undefined);
    return run;
  };

  for (const coin of COINS) {
    const proxy = CHAINLINK_FEEDS[coin].proxy;
    await chain.setCode(proxy, sandboxPriceFeedArtifact.deployedBytecode);
    if (!(await chain.read<boolean>(proxy, 'initialized'))) {
      await chain.send(
        proxy,
        encodeFunctionData({
          abi: sandboxPriceFeedArtifactAbi,
          functionName: 'initialize',
          args: [chain.operator, SANDBOX_PRICE_DECIMALS, DESCRIPTIONS[coin]],
        }),
      );
    }
    if ((await chain.read<bigint>(proxy, 'latestRound')) === 0n) {
      const at = clock();
      await transmit(coin, SANDBOX_INITIAL_PRICES[coin], at);
      latest.set(coin, { answer: SANDBOX_INITIAL_PRICES[coin], updatedAt: at });
    } else {
      const [, answer, , updatedAt] = await chain.read<readonly [bigint, bigint, bigint, bigint, bigint]>(proxy, 'latestRoundData');
      latest.set(coin, { answer, updatedAt: Number(updatedAt) });
    }
  }

  let beating = false;
  return {
    async read() {
      const entries = await Promise.all(
        COINS.map(async (coin): Promise<[NativeCoin, FeedReading]> => {
          const feed = CHAINLINK_FEEDS[coin];
          const [decimals, [roundId, answer, , updatedAt]] = await Promise.all([
            chain.read<number>(feed.proxy, 'decimals'),
            chain.read<readonly [bigint, bigint, bigint, bigint, bigint]>(feed.proxy, 'latestRoundData'),
          ]);
          return [
            coin,
            {
              pair: feed.pair,
              address: feed.proxy,
              decimals,
              price: formatAmount(answer, decimals),
              round_id: roundId.toString(),
              updated_at: new Date(Number(updatedAt) * 1000).toISOString(),
              heartbeat_seconds: feed.heartbeatSeconds,
              frozen: frozen.has(coin),
            },
          ];
        }),
      );
      return Object.fromEntries(entries) as Record<NativeCoin, FeedReading>;
    },
    set: (answers, updatedAt) =>
      exclusive(async () => {
        const at = updatedAt ?? clock();
        for (const coin of COINS) {
          const answer = answers[coin];
          if (answer === undefined) continue;
          await transmit(coin, answer, at);
          latest.set(coin, { answer, updatedAt: at });
          if (updatedAt === undefined) frozen.delete(coin);
          else frozen.add(coin);
        }
      }),
    async heartbeat() {
      if (beating) return; // a slow round write outlasted the tick: the next tick looks again
      beating = true;
      try {
        await exclusive(async () => {
          for (const coin of COINS) {
            const round = latest.get(coin);
            if (!round || frozen.has(coin) || clock() - round.updatedAt <= CHAINLINK_FEEDS[coin].heartbeatSeconds / 2) continue;
            const at = clock();
            await transmit(coin, round.answer, at);
            latest.set(coin, { answer: round.answer, updatedAt: at });
          }
        });
      } finally {
        beating = false;
      }
    },
  };
}
