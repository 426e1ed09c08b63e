import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { Account } from '../../shared/accounts/schemas.ts';
import { defaultPerpDexStatus, VENUE_IDS } from '../../shared/venues/default-status.ts';

/** The documented `perp_dex_status` (OpenAPI, typed client) names exactly the fields each venue stores. */
describe('Account schema: perp_dex_status', () => {
  const venues = Account.entries.perp_dex_status.pipe[0].entries;

  it('documents every venue, each with initialized and exactly the fields a new account carries', () => {
    expect(Object.keys(venues).sort()).toEqual([...VENUE_IDS].sort());
    const defaults = defaultPerpDexStatus();
    for (const venue of VENUE_IDS) expect(Object.keys(venues[venue].entries).sort(), venue).toEqual(Object.keys(defaults[venue]).sort());
  });

  it('accepts a new account and an initialised venue_a (numeric account id and vault), refuses a wrong type', () => {
    const account = {
      app_user_id: 'alice',
      user_id: '01a20453-3325-7168-9fb3-9dd34ee74982',
      public_address: { ETH: '0xA474e09cF581a63cDBF60af7615fAd50ab8067B8', SOL: '88hRQfBDXsxTWWCtzzfTWqNWvDSR7ZztJywG7doPSmh3' },
      perp_dex_status: defaultPerpDexStatus(),
    };
    expect(v.safeParse(Account, account).success).toBe(true);
    const venueA = { initialized: true, account_id: 1234, vault: 5678, stark_public_key: '0x1', api_key: 'k' };
    expect(v.safeParse(Account, { ...account, perp_dex_status: { ...account.perp_dex_status, venue_a: venueA } }).success).toBe(true);
    const wrong = { ...venueA, account_id: '1234' };
    expect(v.safeParse(Account, { ...account, perp_dex_status: { ...account.perp_dex_status, venue_a: wrong } }).success).toBe(false);
  });
});
