import type { VenueModule } from './framework.ts';
import { venueBModule } from './venue-b.ts';
import { venueDModule } from './venue-d.ts';

/**
 * Every implemented sandbox venue, in venue order: what `npm start` runs. One line per venue;
 * a venue not listed here is "not running" (GET /sandbox/venues omits it, faults refuse it).
 */
export function implementedVenueModules(): VenueModule<any>[] {
  return [
    // venue_a (Extended): infra/local/venues/venue-a.ts
    venueBModule(),
    // venue_c (Paradex): infra/local/venues/venue-c.ts
    venueDModule(),
    // venue_e (Polymarket): infra/local/venues/venue-e.ts
  ];
}
