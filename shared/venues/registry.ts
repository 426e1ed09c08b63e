import type { VenueUrls } from '../config.ts';
import { DomainError } from '../errors.ts';
import type { VenueId } from './default-status.ts';
import type { VenueDriver } from './driver.ts';

/**
 * Builds one venue's driver for its configured base URL. The composition root
 * (shared/deps/venues.ts) closes over whatever else a driver needs (the chains, a clock).
 */
export type VenueDriverFactory = (options: { readonly baseUrl: string }) => VenueDriver;

/** 503: this deployment has no base URL (or no adapter) for the venue. */
export class VenueNotConfiguredError extends DomainError {
  constructor(venue: VenueId) {
    super(503, 'VENUE_NOT_CONFIGURED', `${venue} is not configured on this deployment`);
  }
}

/**
 * VenueId → VenueDriver, from VENUE_URLS and the adapters the composition root knows. Each
 * driver is built on first use and kept (a warm Lambda reuses it). A venue without a URL or
 * without an adapter is "not configured": `driver` throws VenueNotConfiguredError, nothing crashes.
 */
export class VenueRegistry {
  readonly #urls: VenueUrls;
  readonly #factories: Readonly<Partial<Record<VenueId, VenueDriverFactory>>>;
  readonly #drivers = new Map<VenueId, VenueDriver>();

  constructor(urls: VenueUrls, factories: Readonly<Partial<Record<VenueId, VenueDriverFactory>>>) {
    this.#urls = urls;
    this.#factories = factories;
  }

  isConfigured(venue: VenueId): boolean {
    return this.#urls[venue] !== undefined && this.#factories[venue] !== undefined;
  }

  driver(venue: VenueId): VenueDriver {
    let driver = this.#drivers.get(venue);
    if (driver) return driver;
    const baseUrl = this.#urls[venue];
    const factory = this.#factories[venue];
    if (baseUrl === undefined || factory === undefined) throw new VenueNotConfiguredError(venue);
    driver = factory({ baseUrl });
    if (driver.id !== venue) throw new Error(`the ${venue} factory built a driver for ${driver.id}`);
    this.#drivers.set(venue, driver);
    return driver;
  }
}
