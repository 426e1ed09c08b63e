import { type Address, formatUnits, parseUnits } from 'viem';
import { VenueRuleError } from '../driver.ts';
import type { ExtendedSigningConfig } from './signing.ts';
import type { StarknetDomain } from './withdrawal.ts';

/**
 * venue_a's HTTP API (modelled on Extended, research §2): the live base URL serves both
 * `POST /auth/onboard` and `/api/v1/…`. Every answer is Extended's envelope: `{ status: "OK",
 * data }` or `{ status: "ERR", error: { code, message } }`.
 */
export const EXTENDED_MAINNET_BASE_URL = 'https://api.starknet.extended.exchange';
/** Native USDC on Arbitrum One (the sandbox chain's ERC-20 sits at the same address). */
export const ARBITRUM_USDC: Address = '0xaf88d065e77c8cC2239327C5EDb3A432268e5831';
/** Extended's chain codes ([O] E1i). */
export const ARB_CHAIN = 'ARB';
export const STARKNET_CHAIN = 'STRK';
export const VENUE_A_DECIMALS = 6;

/**
 * What the sandbox venue_a signs and verifies with instead of the live venue's values (its own
 * EIP-712 domain, onboarding host and Starknet domain, so no signature made for it is valid at
 * the live venue). Passed to `VenueADriver` by configuration when it talks to the sandbox.
 */
export const VENUE_A_SANDBOX_PROFILE: { readonly signing: ExtendedSigningConfig; readonly starknetDomain: StarknetDomain } = {
  signing: { signingDomain: 'sandbox.venue-a.local', onboardingHost: 'http://sandbox.venue-a.local' },
  starknetDomain: { name: 'Perpetuals', version: 'v0', chainId: 'SN_SANDBOX', revision: 1 },
};

/** The venue answered and refused (`status: "ERR"` or a 4xx). */
export class VenueARefusedError extends VenueRuleError {
  readonly httpStatus: number;
  readonly venueCode: number | string | undefined;
  constructor(httpStatus: number, venueCode: number | string | undefined, message: string) {
    super('VENUE_REFUSED', `venue_a refused: ${message}`);
    this.httpStatus = httpStatus;
    this.venueCode = venueCode;
  }
}

/** The venue could not be reached, failed (5xx) or answered something unreadable. */
export class VenueAUnavailableError extends Error {
  readonly code = 'VENUE_UNAVAILABLE';
}

export interface VenueARequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

/** One request to the venue; returns the envelope's `data`. */
export async function venueARequest(baseUrl: string, request: VenueARequest, timeoutMs: number): Promise<unknown> {
  const query = request.query && Object.keys(request.query).length > 0 ? `?${new URLSearchParams(request.query as Record<string, string>)}` : '';
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${request.path}${query}`, {
      method: request.method,
      headers: { ...(request.body === undefined ? {} : { 'content-type': 'application/json' }), ...request.headers },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new VenueAUnavailableError(`venue_a is unreachable (${(error as Error).name})`);
  }
  const text = await response.text();
  let envelope: { status?: unknown; data?: unknown; error?: { code?: number | string; message?: unknown } } | undefined;
  try {
    envelope = text === '' ? undefined : JSON.parse(text);
  } catch {
    envelope = undefined;
  }
  if (response.status >= 500) throw new VenueAUnavailableError(`venue_a answered HTTP ${response.status}`);
  if (envelope?.status === 'ERR' || response.status >= 400) {
    const message = typeof envelope?.error?.message === 'string' ? envelope.error.message : `HTTP ${response.status}`;
    throw new VenueARefusedError(response.status, envelope?.error?.code, message.slice(0, 300));
  }
  if (envelope?.status !== 'OK') throw new VenueAUnavailableError('venue_a answered something that is not its { status, data } envelope');
  return envelope.data;
}

/** USDC base units as the venue's decimal string ("10", "9.99"). */
export function toDecimal(units: bigint): string {
  return formatUnits(units, VENUE_A_DECIMALS);
}

/** A venue decimal (string or number) as base units; undefined when it is not one or has more than 6 decimals. */
export function fromDecimal(value: unknown): bigint | undefined {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== 'string' || !/^-?[0-9]+(\.[0-9]+)?$/.test(text)) return undefined;
  if ((text.split('.')[1] ?? '').length > VENUE_A_DECIMALS) return undefined;
  return parseUnits(text, VENUE_A_DECIMALS);
}

/** A quote id as the bridge's uint256 commitmentId (hex digits, with or without 0x). */
export function commitmentIdOf(quoteId: string): bigint {
  const digits = quoteId.replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{1,64}$/.test(digits)) throw new VenueAUnavailableError(`venue_a quote id "${quoteId.slice(0, 80)}" is not hex`);
  return BigInt(`0x${digits}`);
}

/** The account model's JSON (x10/perpetual/accounts.py, camelCase). */
export interface AccountView {
  readonly id: number;
  readonly description: string;
  readonly accountIndex: number;
  readonly status: string;
  readonly l2Key: string;
  readonly l2Vault: number | string;
  readonly bridgeStarknetAddress: string;
  readonly apiKeys: readonly string[];
}
