import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config.ts';
import { getItem, type Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { DEFAULT_SPONSORSHIP_LIMITS, loadSponsorshipLimits, SponsorshipBudget } from '../../shared/withdrawals/sponsorship-budget.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

let table: Table;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('sponsorship-budget-unit'));
});
afterAll(() => stop());

const at = (iso: string) => () => new Date(iso);

describe('SponsorshipBudget (issue 21 §6)', () => {
  it('counts per user and per app per UTC day; over the user limit is 422 SPONSORSHIP_BUDGET_EXCEEDED with Retry-After to midnight, counting nothing', async () => {
    const budget = new SponsorshipBudget({
      table,
      limits: { ...DEFAULT_SPONSORSHIP_LIMITS, perUserPerDay: 3, perAppPerDay: 100 },
      now: at('2026-11-25T23:00:00Z'),
    });
    for (let i = 0; i < 3; i++) await budget.consume('app-a', 'alice');
    const refused = await budget.consume('app-a', 'alice').catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 422, code: 'SPONSORSHIP_BUDGET_EXCEEDED', retryAfterSeconds: 3600 });
    expect((refused as Error).message).toContain('3 sponsored transactions a day');
    expect(await getItem(table, keys.sponsorshipBudget('app-a', '2026-11-25', 'alice'))).toMatchObject({ used: 3 });
    expect(await getItem(table, keys.sponsorshipBudget('app-a', '2026-11-25'))).toMatchObject({ used: 3 });
    // Another user of the same app, and the same user the next UTC day, have their own budget.
    await budget.consume('app-a', 'bob');
    const tomorrow = new SponsorshipBudget({
      table,
      limits: { ...DEFAULT_SPONSORSHIP_LIMITS, perUserPerDay: 3, perAppPerDay: 100 },
      now: at('2026-11-26T00:00:01Z'),
    });
    await tomorrow.consume('app-a', 'alice');
    const item = await getItem(table, keys.sponsorshipBudget('app-a', '2026-11-26', 'alice'));
    expect(item).toMatchObject({ used: 1, ttl: Date.parse('2026-11-29T00:00:00Z') / 1000 });
  });

  it('over the app limit: refused, and the user counter taken for it is given back', async () => {
    const budget = new SponsorshipBudget({
      table,
      limits: { ...DEFAULT_SPONSORSHIP_LIMITS, perUserPerDay: 10, perAppPerDay: 2 },
      now: at('2026-11-25T12:00:00Z'),
    });
    await budget.consume('app-b', 'u1');
    await budget.consume('app-b', 'u2');
    await expect(budget.consume('app-b', 'u3')).rejects.toMatchObject({
      code: 'SPONSORSHIP_BUDGET_EXCEEDED',
      message: expect.stringContaining("application's"),
    });
    expect(await getItem(table, keys.sponsorshipBudget('app-b', '2026-11-25', 'u3'))).toMatchObject({ used: 0 });
    expect(await getItem(table, keys.sponsorshipBudget('app-b', '2026-11-25'))).toMatchObject({ used: 2 });
  });

  it('holds the limit under concurrency: of 12 parallel attempts with 5 left, exactly 5 pass', async () => {
    const budget = new SponsorshipBudget({
      table,
      limits: { ...DEFAULT_SPONSORSHIP_LIMITS, perUserPerDay: 5, perAppPerDay: 1000 },
      now: at('2026-11-25T12:00:00Z'),
    });
    const results = await Promise.allSettled(Array.from({ length: 12 }, () => budget.consume('app-c', 'racer')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    expect(await getItem(table, keys.sponsorshipBudget('app-c', '2026-11-25', 'racer'))).toMatchObject({ used: 5 });
  });

  it('a limit of 0 sponsors nothing', async () => {
    const budget = new SponsorshipBudget({ table, limits: { ...DEFAULT_SPONSORSHIP_LIMITS, perUserPerDay: 0 }, now: at('2026-11-25T12:00:00Z') });
    await expect(budget.consume('app-d', 'x')).rejects.toMatchObject({ code: 'SPONSORSHIP_BUDGET_EXCEEDED' });
  });

  it('refuses a sponsored amount under the token minimum: 422 SPONSORED_AMOUNT_TOO_SMALL naming it', () => {
    const budget = new SponsorshipBudget({ table, limits: DEFAULT_SPONSORSHIP_LIMITS, now: at('2026-11-25T12:00:00Z') });
    expect(() => budget.assertMinimum('USDC', 999_999n, 6)).toThrow(expect.objectContaining({ status: 422, code: 'SPONSORED_AMOUNT_TOO_SMALL' }));
    expect(() => budget.assertMinimum('USDC', 999_999n, 6)).toThrow('at least 1 USDC');
    expect(() => budget.assertMinimum('USDC', 1_000_000n, 6)).not.toThrow();
    expect(() => budget.assertMinimum('ETH', 10n ** 15n - 1n, 18)).toThrow('at least 0.001 ETH');
    expect(() => budget.assertMinimum('UNLISTED', 1n, 6)).not.toThrow();
  });
});

describe('loadSponsorshipLimits', () => {
  it('has documented defaults and takes overrides', () => {
    expect(loadSponsorshipLimits({})).toEqual(DEFAULT_SPONSORSHIP_LIMITS);
    expect(DEFAULT_SPONSORSHIP_LIMITS).toMatchObject({ perUserPerDay: 20, perAppPerDay: 10_000 });
    const limits = loadSponsorshipLimits({ SPONSOR_DAILY_SENDS_PER_USER: '3', SPONSOR_DAILY_SENDS_PER_APP: '0', SPONSOR_MIN_AMOUNTS: '{"USDC":"5"}' });
    expect(limits).toEqual({ perUserPerDay: 3, perAppPerDay: 0, minAmounts: { ...DEFAULT_SPONSORSHIP_LIMITS.minAmounts, USDC: '5' } });
  });
  it('refuses malformed values, naming the variable', () => {
    for (const env of [
      { SPONSOR_DAILY_SENDS_PER_USER: '-1' },
      { SPONSOR_DAILY_SENDS_PER_USER: '1.5' },
      { SPONSOR_DAILY_SENDS_PER_APP: '99999999' },
      { SPONSOR_MIN_AMOUNTS: '[1]' },
      { SPONSOR_MIN_AMOUNTS: '{"USDC":1}' },
      { SPONSOR_MIN_AMOUNTS: '{"USDC":"-1"}' },
      { SPONSOR_MIN_AMOUNTS: 'not json' },
    ]) {
      expect(() => loadSponsorshipLimits(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => loadSponsorshipLimits(env), JSON.stringify(env)).toThrow(Object.keys(env)[0]!);
    }
  });
});
