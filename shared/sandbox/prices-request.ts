import * as v from 'valibot';

/** Chainlink USD feeds answer with 8 decimals (infra/local/price-feeds.ts writes them so). */
export const SANDBOX_PRICE_DECIMALS = 8;

const Price = v.pipe(
  v.string('must be a decimal string'),
  v.maxLength(30, 'must be at most 30 characters'),
  v.regex(/^[0-9]+(\.[0-9]{1,8})?$/, 'must be a decimal string in USD with at most 8 decimals, e.g. "3000" or "0.25"'),
  v.check((price) => /[1-9]/.test(price), 'must be greater than zero'),
  v.description('USD per whole coin, a decimal string with at most 8 decimals (the feed’s own).'),
);

/**
 * `POST /sandbox/prices` (local sandbox only): new answers of the sandbox's Chainlink feeds on the
 * ETH chain, e.g. `{ "ETH": "6000", "SOL": "140.5" }`. `updated_at` (optional, unix seconds, not in
 * the future) backdates the new rounds: a time past the feed's heartbeat makes it stale, and the
 * sandbox's heartbeat then leaves that feed alone until it is set again without `updated_at`.
 */
export const PricesRequest = v.pipe(
  v.strictObject({
    ETH: v.optional(Price),
    POL: v.optional(Price),
    SOL: v.optional(Price),
    updated_at: v.optional(
      v.pipe(
        v.number('must be unix seconds'),
        v.safeInteger('must be unix seconds'),
        v.minValue(1, 'must be at least 1'),
        v.description('Unix seconds the new rounds are dated; a past time past the heartbeat makes the feed stale. Default: now.'),
      ),
    ),
  }),
  v.check((body) => body.ETH !== undefined || body.POL !== undefined || body.SOL !== undefined, 'must set at least one of ETH, POL, SOL'),
);
export type PricesRequest = v.InferOutput<typeof PricesRequest>;
