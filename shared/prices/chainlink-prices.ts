import type { Address } from 'viem';
import { describeChainError } from '../chains/errors.ts';
import type { EvmClient } from '../chains/evm/evm-client.ts';
import { logger } from '../logger.ts';
import { AGGREGATOR_V3_ABI, CHAINLINK_FEEDS, type ChainlinkFeed } from './chainlink-feeds.ts';
import { DEFAULT_PRICE_CACHE_SECONDS } from './config.ts';
import type { NativeCoin, PriceSource } from './price-source.ts';
import { PriceUnavailableError } from './price-unavailable.ts';

/**
 * A heartbeat round "may land with a slight delay" (Chainlink docs, data-feeds/index.mdx, "Check
 * the timestamp of the latest answer"): a feed is stale only once its last update is older than
 * the heartbeat plus this share of it (10 %: 6 min on a 1 h feed, 2.4 h on a 24 h feed).
 */
export const STALENESS_GRACE_PERCENT = 10n;

/** The feed's bound: heartbeat + grace, seconds. */
export function stalenessBoundSeconds(feed: ChainlinkFeed): bigint {
  const heartbeat = BigInt(feed.heartbeatSeconds);
  return heartbeat + (heartbeat * STALENESS_GRACE_PERCENT) / 100n;
}

const MICRO_USD_DECIMALS = 6n;

/** A feed answer at `decimals` as micro-USD, bigint only; rounded up (as every estimate conversion: against the user). */
export function answerToMicroUsd(answer: bigint, decimals: number): bigint {
  const shift = BigInt(decimals) - MICRO_USD_DECIMALS;
  if (shift <= 0n) return answer * 10n ** -shift;
  const scale = 10n ** shift;
  return (answer + scale - 1n) / scale;
}

export interface ChainlinkPricesOptions {
  /** The Ethereum-mainnet client the feeds are read with (the configured ETH chain's: shared/deps/transfers.ts). */
  readonly client: () => Promise<Pick<EvmClient, 'readContract'>>;
  readonly feeds?: Readonly<Record<NativeCoin, ChainlinkFeed>>;
  /** How long a good answer is reused, seconds (default 30; shared/prices/config.ts). Failures are never kept. */
  readonly cacheSeconds?: number;
  /** Wall clock, ms (tests move it). */
  readonly now?: () => number;
}

/**
 * The PriceSource of deployments and the sandbox alike: Chainlink's AggregatorV3Interface
 * (`decimals`, `latestRoundData`) at each feed's Ethereum-mainnet proxy ({@link CHAINLINK_FEEDS}),
 * as production systems read them. The answer counts only when `updatedAt` is set, within the
 * heartbeat plus {@link STALENESS_GRACE_PERCENT}, and the answer is positive; otherwise, and on
 * any RPC error or revert, PriceUnavailableError (503): a missing price is never defaulted.
 * `decimals` is read once per feed and kept (a feed's decimals never change); a good price is
 * kept `cacheSeconds`.
 */
export class ChainlinkPrices implements PriceSource {
  readonly #client: ChainlinkPricesOptions['client'];
  readonly #feeds: Readonly<Record<NativeCoin, ChainlinkFeed>>;
  readonly #cacheMs: number;
  readonly #now: () => number;
  readonly #decimals = new Map<NativeCoin, Promise<number>>();
  readonly #cached = new Map<NativeCoin, { readonly price: bigint; readonly until: number }>();

  constructor(options: ChainlinkPricesOptions) {
    this.#client = options.client;
    this.#feeds = options.feeds ?? CHAINLINK_FEEDS;
    this.#cacheMs = (options.cacheSeconds ?? DEFAULT_PRICE_CACHE_SECONDS) * 1000;
    this.#now = options.now ?? Date.now;
  }

  async usdPrice(coin: NativeCoin): Promise<bigint> {
    const cached = this.#cached.get(coin);
    if (cached && this.#now() < cached.until) return cached.price;
    const price = await this.#read(coin);
    if (this.#cacheMs > 0) this.#cached.set(coin, { price, until: this.#now() + this.#cacheMs });
    return price;
  }

  async #read(coin: NativeCoin): Promise<bigint> {
    const feed = this.#feeds[coin];
    let decimals: number;
    let answer: bigint;
    let updatedAt: bigint;
    try {
      const client = await this.#client();
      const [feedDecimals, round] = await Promise.all([
        this.#decimalsOf(coin, feed.proxy, client),
        client.readContract({ address: feed.proxy, abi: AGGREGATOR_V3_ABI, functionName: 'latestRoundData' }),
      ]);
      decimals = feedDecimals;
      [, answer, , updatedAt] = round;
    } catch (error) {
      // The operator's detail (redacted: no RPC URL) to the log; the caller learns only which feed.
      logger.warn('price feed unreadable', { coin, feed: feed.proxy, error: describeChainError(error) });
      throw new PriceUnavailableError(coin, `the ${feed.pair} feed could not be read`);
    }
    if (updatedAt === 0n) throw new PriceUnavailableError(coin, `the ${feed.pair} feed has no round`);
    if (answer <= 0n) throw new PriceUnavailableError(coin, `the ${feed.pair} feed answered a price that is not positive`);
    const age = BigInt(Math.floor(this.#now() / 1000)) - updatedAt;
    const bound = stalenessBoundSeconds(feed);
    if (age > bound) {
      throw new PriceUnavailableError(coin, `the ${feed.pair} feed was last updated ${age} s ago, past its heartbeat of ${feed.heartbeatSeconds} s`);
    }
    return answerToMicroUsd(answer, decimals);
  }

  /** Read once per feed; a failed read is forgotten, so the next call asks again. */
  #decimalsOf(coin: NativeCoin, proxy: Address, client: Pick<EvmClient, 'readContract'>): Promise<number> {
    let decimals = this.#decimals.get(coin);
    if (!decimals) {
      decimals = client.readContract({ address: proxy, abi: AGGREGATOR_V3_ABI, functionName: 'decimals' });
      decimals.catch(() => this.#decimals.delete(coin));
      this.#decimals.set(coin, decimals);
    }
    return decimals;
  }
}
