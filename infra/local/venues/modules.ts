import type { VenueModule } from './framework.ts';
import { venueAModule } from './venue-a.ts';
import { venueBModule } from './venue-b.ts';
import { venueCModule } from './venue-c.ts';
import { venueDModule } from './venue-d.ts';
import { venueEModule } from './venue-e.ts';

/**
 * Every implemented sandbox venue, in venue order: what `npm start` runs. One line per venue;
 * a venue not listed here is "not running" (GET /sandbox/venues omits it, faults refuse it).
 */
export function implementedVenueModules(): VenueModule<any>[] {
  return [venueAModule(), venueBModule(), venueCModule(), venueDModule(), venueEModule()];
}
