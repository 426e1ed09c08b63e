/** The native coins the estimate prices gas in (shared/transfers/estimate.ts maps each chain to one). */
export type NativeCoin = 'ETH' | 'POL' | 'SOL';

/** Port: the USD price of a native coin, in micro-USD (USDC base units) per whole coin. */
export interface PriceSource {
  /** Throws PriceUnavailableError (503) when there is no fresh price: never a default. */
  usdPrice(coin: NativeCoin): Promise<bigint>;
}
