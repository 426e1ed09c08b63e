import type { VenueModule } from './framework.ts';
import { venueBModule } from './venue-b.ts';
import { venueEModule } from './venue-e.ts';

/**
 * Every implemented sandbox venue, in venue order: what `npm start` runs. One line per venue;
 * a venue not listed here is "not running" (GET /sandbox/venues omits it, faults refuse it).
 */
export function implementedVenueModules(): VenueModule<any>[] {
  return [
    // venue_a (Extended): infra/local/venues/venue-a.ts
    venueBModule(),
    // venue_c (Paradex): infra/local/venues/venue-c.ts
    // venue_d (Nado): infra/local/venues/venue-d.ts
    venueEModule(),
  ];
}
