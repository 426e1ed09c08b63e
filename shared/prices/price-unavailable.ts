import { DomainError } from '../errors.ts';

/**
 * 503 PRICE_UNAVAILABLE: no fresh price for a coin (a stale, missing or unreadable feed). The
 * message names the coin and why in words fit for the caller, never an RPC URL or a revert's data.
 */
export class PriceUnavailableError extends DomainError {
  readonly coin: string;
  constructor(coin: string, why: string) {
    super(503, 'PRICE_UNAVAILABLE', `No current ${coin}/USD price: ${why}. Try again later.`, { retryAfterSeconds: 30 });
    this.coin = coin;
  }
}
