import { EvmSender } from '../chains/sender/evm-sender.ts';
import { SponsoredEvmSender } from '../chains/sender/sponsored-sender.ts';
import { reportSponsorBelowFloor } from '../observability/metrics.ts';
import type { VenueStepDeps } from '../transfers/steps/venue.ts';
import { evmChainsFromEnv } from './evm-chains.ts';
import { systemClock } from './table.ts';
import { type StepCoreParts, sponsorPool, sponsorshipBudget, stepCoreFromEnv } from './transfer-steps.ts';
import { venueRegistryFromEnv } from './venues.ts';

/**
 * Composition roots of the venue step Lambdas (withdrawal, deposit): the common step pieces, the
 * EVM chains only (every venue is on an EVM chain: EvmChains, not Chains), the EVM exactly-once
 * senders (built here: createSenders would bring the Solana sender) and the venue drivers
 * (VENUE_URLS). Nothing here imports Solana or the bridge client.
 */
function venueStepDeps(parts: StepCoreParts, sponsored?: SponsoredEvmSender, env = process.env): VenueStepDeps {
  const chains = evmChainsFromEnv();
  const { table } = parts.core;
  return {
    ...parts.core,
    chains,
    senders: {
      evm: new EvmSender({ table, inclusionTimeoutMs: parts.inclusionTimeoutMs, lease: parts.lease, now: clockMs }),
      ...(sponsored ? { sponsored } : {}),
    },
    venues: venueRegistryFromEnv(chains),
    ...(sponsored ? { sponsorship: sponsorshipBudget(parts, env) } : {}),
  };
}

const clockMs = () => systemClock().getTime();

/** The withdrawal step: the venue pays the gas of its payout (gas policy `venue`), so no sponsored sender. */
export function withdrawalStepDepsFromEnv(env = process.env): VenueStepDeps {
  return venueStepDeps(stepCoreFromEnv(env));
}

/** The deposit step: its calls may be gas-sponsored (needs: delegates). */
export function depositStepDepsFromEnv(env = process.env): VenueStepDeps {
  const parts = stepCoreFromEnv(env);
  const sponsored = new SponsoredEvmSender({
    table: parts.core.table,
    sponsors: sponsorPool(parts, env),
    onSponsorBelowFloor: reportSponsorBelowFloor,
    inclusionTimeoutMs: parts.inclusionTimeoutMs,
    lease: parts.lease,
    now: clockMs,
  });
  return venueStepDeps(parts, sponsored, env);
}
