/**
 * Venue ids and the status each venue has on a new account (spec, Resources: Account):
 * every field null and `initialized` false. All five keys are always present.
 */
export const VENUE_IDS = ['venue_a', 'venue_b', 'venue_c', 'venue_d', 'venue_e'] as const;
export type VenueId = (typeof VENUE_IDS)[number];

const DEFAULT_FIELDS: Record<VenueId, readonly string[]> = {
  venue_a: ['account_id', 'vault', 'stark_public_key', 'api_key'],
  venue_b: ['account_address'],
  venue_c: ['l2_address', 'l2_public_key'],
  venue_d: ['account_address'],
  venue_e: ['proxy_wallet_address', 'service_wallet_address'],
};

export type VenueStatus = { initialized: boolean } & Record<string, unknown>;

export function defaultPerpDexStatus(): Record<VenueId, VenueStatus> {
  return Object.fromEntries(
    VENUE_IDS.map((venue) => [venue, { initialized: false, ...Object.fromEntries(DEFAULT_FIELDS[venue].map((field) => [field, null])) }]),
  ) as Record<VenueId, VenueStatus>;
}
