import type { VenueDriver, VenueFields } from '../../venues/driver.ts';
import { VenueRuleError } from '../../venues/driver.ts';
import type { VenueRegistry } from '../../venues/registry.ts';
import type { Ctx, StepCoreDeps } from './core.ts';
import { StepFailure } from './outcomes.ts';

/** What the venue kinds (withdrawal, deposit) add: the venue drivers (none configured: the step fails VENUE_NOT_CONFIGURED). */
export interface VenueStepDeps extends StepCoreDeps {
  readonly venues?: VenueRegistry;
}

/** The venue kinds: their steps name the venue. */
export type VenueAction = 'withdrawal' | 'deposit';

export function venueDriver(ctx: Ctx<VenueStepDeps, VenueAction>): { driver: VenueDriver; fields: VenueFields } {
  const venue = ctx.step.venue;
  const status = ctx.account.perp_dex_status[venue];
  if (!status?.initialized)
    throw new StepFailure('DEX_NOT_INITIALIZED', `${venue} is not initialized for this account: call POST /account/init-perp-dex first`);
  if (!ctx.deps.venues) throw new StepFailure('VENUE_NOT_CONFIGURED', `${venue} is not configured on this deployment`);
  const fields = Object.fromEntries(
    Object.entries(status).filter(([, value]) => value === null || ['string', 'number', 'boolean'].includes(typeof value)),
  ) as VenueFields;
  return { driver: ctx.deps.venues.driver(venue), fields };
}

/** A venue's rule refusal (below its minimum, …) ends the step. */
export const venueFailure = (error: unknown): StepFailure | undefined =>
  error instanceof VenueRuleError ? new StepFailure(error.code, error.message) : undefined;
