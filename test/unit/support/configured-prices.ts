import type { NativeCoin, PriceSource } from '../../../shared/prices/price-source.ts';

/**
 * Test double of the PriceSource: fixed prices, micro-USD per whole coin. Defaults: ETH 3,000 USD,
 * POL 0.25 USD, SOL 150 USD, the sandbox feeds' initial answers (infra/local/price-feeds.ts).
 * Deployments and the sandbox read Chainlink feeds (shared/prices/chainlink-prices.ts).
 */
export const FIXED_PRICES: Readonly<Record<NativeCoin, bigint>> = { ETH: 3_000_000_000n, POL: 250_000n, SOL: 150_000_000n };

export class ConfiguredPrices implements PriceSource {
  readonly #prices: Readonly<Record<NativeCoin, bigint>>;
  constructor(prices: Readonly<Record<NativeCoin, bigint>> = FIXED_PRICES) {
    for (const [coin, price] of Object.entries(prices)) if (price <= 0n) throw new Error(`price of ${coin} must be positive`);
    this.#prices = prices;
  }
  usdPrice(coin: NativeCoin): Promise<bigint> {
    return Promise.resolve(this.#prices[coin]);
  }
}
