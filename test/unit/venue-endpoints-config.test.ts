import { describe, expect, it } from 'vitest';
import { ConfigError, loadVenueUrls } from '../../shared/config.ts';
import type { VenueId } from '../../shared/venues/default-status.ts';
import type { VenueDriver } from '../../shared/venues/driver.ts';
import { VenueNotConfiguredError, VenueRegistry } from '../../shared/venues/registry.ts';

/** VENUE_URLS parsing (fails fast at cold start) and the registry built from it. */
describe('VENUE_URLS', () => {
  it('is a JSON object of venue id to http(s) base URL; trailing slashes dropped; `{}` configures nothing', () => {
    expect(loadVenueUrls({ VENUE_URLS: '{"venue_b":"http://127.0.0.1:4101/","venue_a":"https://api.example.com/v1"}' })).toEqual({
      venue_b: 'http://127.0.0.1:4101',
      venue_a: 'https://api.example.com/v1',
    });
    expect(loadVenueUrls({ VENUE_URLS: '{}' })).toEqual({});
  });

  it('stops the cold start naming VENUE_URLS when missing, not JSON, an unknown venue or a bad URL', () => {
    const refused = (value: string | undefined, message: RegExp) => {
      expect(() => loadVenueUrls({ VENUE_URLS: value })).toThrow(ConfigError);
      expect(() => loadVenueUrls({ VENUE_URLS: value })).toThrow(message);
    };
    refused(undefined, /^Invalid configuration: VENUE_URLS: /);
    refused('venue_b=https://x', /VENUE_URLS: must be JSON/);
    refused('{"venue_f":"https://x.example.com"}', /VENUE_URLS: venue_f: is not a venue id/);
    refused('{"venue_b":"not a url"}', /VENUE_URLS: venue_b: must be a URL/);
    refused('{"venue_b":"ftp://x.example.com"}', /VENUE_URLS: venue_b: must be an http\(s\) URL/);
    refused('["https://x.example.com"]', /VENUE_URLS: /);
  });
});

describe('VenueRegistry', () => {
  const driverFor =
    (id: VenueId, built: string[]) =>
    ({ baseUrl }: { baseUrl: string }) => {
      built.push(`${id} ${baseUrl}`);
      return { id } as unknown as VenueDriver;
    };

  it("builds a configured venue's driver once, with its base URL", () => {
    const built: string[] = [];
    const registry = new VenueRegistry({ venue_b: 'https://b.example.com' }, { venue_b: driverFor('venue_b', built) });
    expect(registry.isConfigured('venue_b')).toBe(true);
    const driver = registry.driver('venue_b');
    expect(registry.driver('venue_b')).toBe(driver);
    expect(built).toEqual(['venue_b https://b.example.com']);
  });

  it('calls a venue without a URL or without an adapter "not configured": a 503 VENUE_NOT_CONFIGURED, not a crash', () => {
    const built: string[] = [];
    const registry = new VenueRegistry({ venue_a: 'https://a.example.com' }, { venue_b: driverFor('venue_b', built) });
    for (const venue of ['venue_a', 'venue_b', 'venue_e'] as const) {
      expect(registry.isConfigured(venue)).toBe(false);
      let error: unknown;
      try {
        registry.driver(venue);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(VenueNotConfiguredError);
      expect(error).toMatchObject({ status: 503, code: 'VENUE_NOT_CONFIGURED', message: `${venue} is not configured on this deployment` });
    }
    expect(built).toEqual([]);
  });

  it("refuses a factory that builds another venue's driver", () => {
    const registry = new VenueRegistry({ venue_c: 'https://c.example.com' }, { venue_c: driverFor('venue_d', []) });
    expect(() => registry.driver('venue_c')).toThrow(/venue_c factory built a driver for venue_d/);
  });
});
