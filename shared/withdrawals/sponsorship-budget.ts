import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConfigError } from '../config.ts';
import { isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { TABLE_TTL_ATTRIBUTE } from '../db/table-definition.ts';
import { DomainError } from '../errors.ts';
import { formatAmount, parseAmount } from '../money.ts';

/**
 * How much gas sponsorship an app and each of its users may draw (issue 21 §6): without a limit,
 * a user could drain the sponsor with dust withdrawals, each one a transaction the sponsor pays for.
 *
 * - A budget of sponsored transactions per UTC day, per user and per app. Each sponsored
 *   transaction the platform signs for counts once when it is first attempted (a withdrawal with
 *   `gas_sponsored`, each sponsored send of a bridge or deposit step); the resumption of a send
 *   already recorded does not count again. An attempt counts even when it then fails (the count is
 *   taken before signing, and a failure before broadcast is not given back): a refusal is cheap to
 *   provoke, so it is not free. Over budget: 422 `SPONSORSHIP_BUDGET_EXCEEDED` with `Retry-After`
 *   (seconds to the next UTC midnight), and nothing is signed.
 * - A minimum amount for a sponsored withdrawal, per token: below it, 422
 *   `SPONSORED_AMOUNT_TOO_SMALL` (send it unsponsored, or more).
 *
 * Defaults (SPONSOR_DAILY_SENDS_PER_USER, SPONSOR_DAILY_SENDS_PER_APP, SPONSOR_MIN_AMOUNTS):
 * 20 per user and 10000 per app a day; 1 USDC, 1 USDC.E, 0.001 ETH, 1 POL. A sponsored ERC-20
 * transfer costs the sponsor about 60k-90k gas: on an L2 a fraction of a cent, on Ethereum a dollar
 * or more at 10-20 gwei, so 20 a day bounds one user's draw on ETH to about a day of normal use,
 * and the minimum keeps each sponsored transfer worth more than the gas it costs.
 *
 * Storage: one counter item per (app, UTC day) and per (app, user, UTC day) under
 * `SPONSOR#BUDGET#<app_id>#<day>` (keys.sponsorshipBudget), expiring two days later (the table's TTL).
 * The user's counter is taken first, then the app's; if the app's is spent the user's is given
 * back. (Two conditional updates, not one transaction: dynalite, the sandbox's engine, has no
 * TransactWriteItems.)
 */
export interface SponsorshipLimits {
  readonly perUserPerDay: number;
  readonly perAppPerDay: number;
  /** Minimum sponsored withdrawal, decimal string per token code. */
  readonly minAmounts: Readonly<Record<string, string>>;
}

export const DEFAULT_SPONSORSHIP_LIMITS: SponsorshipLimits = {
  perUserPerDay: 20,
  perAppPerDay: 10_000,
  minAmounts: { USDC: '1', 'USDC.E': '1', ETH: '0.001', POL: '1' },
};

const MAX_DAILY = 1_000_000;

export function loadSponsorshipLimits(env: NodeJS.ProcessEnv = process.env): SponsorshipLimits {
  const count = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!/^[0-9]{1,7}$/.test(raw) || Number(raw) > MAX_DAILY)
      throw new ConfigError(`Invalid configuration: ${name}: must be a whole number of sponsored transactions a day, 0 to ${MAX_DAILY}`);
    return Number(raw);
  };
  let minAmounts = DEFAULT_SPONSORSHIP_LIMITS.minAmounts;
  const raw = env.SPONSOR_MIN_AMOUNTS;
  if (raw !== undefined && raw !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    const valid =
      typeof parsed === 'object' &&
      parsed !== null &&
      !Array.isArray(parsed) &&
      Object.entries(parsed).every(
        ([token, amount]) => /^[A-Z][A-Z.]{0,15}$/.test(token) && typeof amount === 'string' && /^[0-9]{1,30}(\.[0-9]{1,18})?$/.test(amount),
      );
    if (!valid) throw new ConfigError('Invalid configuration: SPONSOR_MIN_AMOUNTS: must be a JSON object of token code to decimal string, e.g. {"USDC":"1"}');
    minAmounts = { ...DEFAULT_SPONSORSHIP_LIMITS.minAmounts, ...(parsed as Record<string, string>) };
  }
  return {
    perUserPerDay: count('SPONSOR_DAILY_SENDS_PER_USER', DEFAULT_SPONSORSHIP_LIMITS.perUserPerDay),
    perAppPerDay: count('SPONSOR_DAILY_SENDS_PER_APP', DEFAULT_SPONSORSHIP_LIMITS.perAppPerDay),
    minAmounts,
  };
}

export class SponsorshipBudgetExceededError extends DomainError {
  constructor(message: string, retryAfterSeconds: number) {
    super(422, 'SPONSORSHIP_BUDGET_EXCEEDED', message, { retryAfterSeconds });
  }
}

const DAY_MS = 86_400_000;

export class SponsorshipBudget {
  readonly #table: Table;
  readonly #limits: SponsorshipLimits;
  readonly #now: () => Date;

  constructor(options: { table: Table; limits: SponsorshipLimits; now: () => Date }) {
    this.#table = options.table;
    this.#limits = options.limits;
    this.#now = options.now;
  }

  /** 422 SPONSORED_AMOUNT_TOO_SMALL below the token's minimum (`amount` in base units). */
  assertMinimum(token: string, amount: bigint, decimals: number): void {
    const minimum = this.#limits.minAmounts[token];
    if (minimum === undefined) return;
    const floor = parseAmount(minimum, decimals, 'SPONSOR_MIN_AMOUNTS', 2n ** 256n - 1n);
    if (amount < floor) {
      throw new DomainError(
        422,
        'SPONSORED_AMOUNT_TOO_SMALL',
        `A gas-sponsored transfer of ${token} must be at least ${formatAmount(floor, decimals)} ${token}; send more, or without gas_sponsored`,
      );
    }
  }

  /** Counts one sponsored transaction for the user and the app today, or throws SPONSORSHIP_BUDGET_EXCEEDED counting nothing. */
  async consume(appId: string, sub: string): Promise<void> {
    const now = this.#now().getTime();
    const day = new Date(now).toISOString().slice(0, 10);
    const nextDay = (Math.floor(now / DAY_MS) + 1) * DAY_MS;
    const retryAfter = (nextDay - now) / 1000;
    const expires = Math.floor(nextDay / 1000) + 2 * 86_400;
    if (!(await this.#take(keys.sponsorshipBudget(appId, day, sub), this.#limits.perUserPerDay, expires))) {
      throw new SponsorshipBudgetExceededError(
        `This user's gas sponsorship for today (${this.#limits.perUserPerDay} sponsored transactions a day) is spent; it renews at 00:00 UTC, or send without gas_sponsored`,
        retryAfter,
      );
    }
    if (!(await this.#take(keys.sponsorshipBudget(appId, day), this.#limits.perAppPerDay, expires))) {
      await this.#giveBack(keys.sponsorshipBudget(appId, day, sub));
      throw new SponsorshipBudgetExceededError(
        `This application's gas sponsorship for today (${this.#limits.perAppPerDay} sponsored transactions a day) is spent; it renews at 00:00 UTC, or send without gas_sponsored`,
        retryAfter,
      );
    }
  }

  async #take(key: { pk: string; sk: string }, limit: number, expires: number): Promise<boolean> {
    if (limit === 0) return false;
    try {
      await this.#table.doc.send(
        new UpdateCommand({
          TableName: this.#table.name,
          Key: key,
          UpdateExpression: 'SET #used = if_not_exists(#used, :zero) + :one, #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(#used) OR #used < :limit',
          ExpressionAttributeNames: { '#used': 'used', '#ttl': TABLE_TTL_ATTRIBUTE },
          ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':limit': limit, ':ttl': expires },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  async #giveBack(key: { pk: string; sk: string }): Promise<void> {
    await this.#table.doc.send(
      new UpdateCommand({
        TableName: this.#table.name,
        Key: key,
        UpdateExpression: 'SET #used = #used - :one',
        ConditionExpression: '#used > :zero',
        ExpressionAttributeNames: { '#used': 'used' },
        ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
      }),
    );
  }
}
