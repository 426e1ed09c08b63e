import type { VenueId, VenueStatus } from './default-status.ts';

/**
 * A venue's status as `GET /account/perp-credentials` shows it: the stored metadata, never a
 * secret. Its own module so the event publisher (venue.* events carry this view) does not bundle
 * the venue drivers.
 */

/** Field names that would hold a secret: never stored from a driver, never shown as metadata. */
export const SECRET_NAME = /private_key|secret|passphrase/i;

/** Where a venue's credential metadata is null until trading is set up (spec, Venue credentials). */
const CREDENTIAL_FIELDS: Readonly<Partial<Record<VenueId, readonly string[]>>> = {
  venue_b: ['agent_name', 'agent_address', 'builder_address', 'max_builder_fee_rate'],
};

export function venueCredentialsView(dex: VenueId, status: VenueStatus | undefined) {
  const fields: Readonly<Record<string, unknown>> = status ?? {};
  const { initialized = false, trade_initialized = false, ...rest } = fields;
  const metadata = Object.fromEntries(Object.entries(rest).filter(([name]) => !SECRET_NAME.test(name)));
  return {
    dex,
    initialized: initialized === true,
    trade_initialized: trade_initialized === true,
    error: null,
    ...Object.fromEntries((CREDENTIAL_FIELDS[dex] ?? []).map((name) => [name, null])),
    ...metadata,
  };
}
