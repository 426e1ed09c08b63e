import { ConfigError } from '../config.ts';

/** How long a good price is reused per process, seconds (PRICE_CACHE_SECONDS; docs/deploy.md "Price feeds"). */
export const DEFAULT_PRICE_CACHE_SECONDS = 30;

/**
 * PRICE_CACHE_SECONDS (optional, 0 to 300, default 30): how long a container reuses a feed's good
 * answer, so an estimate does not read three feeds each time. 30 s is well inside the feeds'
 * 0.5 % deviation trigger at ordinary volatility and adds at most 30 s to a feed's staleness.
 * The local sandbox sets 0: its prices change on request (POST /sandbox/prices) and an estimate
 * must see them at once.
 */
export function loadPriceCacheSeconds(env = process.env): number {
  const raw = env.PRICE_CACHE_SECONDS;
  if (raw === undefined || raw === '') return DEFAULT_PRICE_CACHE_SECONDS;
  const seconds = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(seconds >= 0 && seconds <= 300)) throw new ConfigError('Invalid configuration: PRICE_CACHE_SECONDS: must be whole seconds from 0 to 300');
  return seconds;
}
