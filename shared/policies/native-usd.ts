import type { DecodedFacts, NativeCoin } from './decoded-facts.ts';
import type { Policy } from './policy.ts';

/** Where native coin prices come from: micro-USD per whole coin (the transfer estimate's PriceSource is one). */
export interface NativePrices {
  usdPrice(coin: NativeCoin): Promise<bigint>;
}

/** Base-unit decimals of each native coin: wei, wei (POL), lamports. */
const COIN_DECIMALS: Readonly<Record<NativeCoin, bigint>> = { ETH: 18n, POL: 18n, SOL: 9n };

/** Micro-USD worth of `amount` base units of `coin` at `price` micro-USD per coin, rounded up (a limit is never undershot). */
export function nativeUsd(coin: NativeCoin, amount: bigint, price: bigint): bigint {
  const scale = 10n ** COIN_DECIMALS[coin];
  return (amount * price + scale - 1n) / scale;
}

/** True when a rule of `policy` has a USD limit (per transaction or per day): only then is a price worth reading. */
export function hasUsdLimit(policy: Policy): boolean {
  return policy.rules.some((rule) => rule.max_usd_per_tx !== undefined || rule.max_usd_per_day !== undefined);
}

/**
 * Fills `usd` of facts whose request moves a native coin (issue 22: "native coins through the
 * price source"): the rest's value plus the coin amount at the source's price. Without a source,
 * when the rest's value is unknown, or when the price cannot be had (a stale or missing feed:
 * the source throws), `usd` stays absent and no USD limit can allow the request: a missing price
 * refuses, it never lets through. `priceError` says why in words fit for a denial's reason.
 */
export async function priceNativeFacts<F extends DecodedFacts>(facts: F, prices: NativePrices | undefined): Promise<F> {
  const native = facts.native;
  if (!native || facts.usd !== undefined || native.otherUsd === undefined) return facts;
  if (!prices) return { ...facts, priceError: `no price source for ${native.coin}` };
  let price: bigint;
  try {
    price = await prices.usdPrice(native.coin);
  } catch {
    // Said as is to the caller (a denial's reason): the source's own message may name an RPC URL.
    return { ...facts, priceError: `the ${native.coin} price is unavailable` };
  }
  return { ...facts, usd: { value: native.otherUsd + nativeUsd(native.coin, native.amount, price) } };
}
