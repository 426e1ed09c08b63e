import type { StepInvocation, StepResult } from '../task.ts';
import { BRIDGE_KIND, type BridgeStepDeps } from './bridge.ts';
import { runStep as runKinds } from './core.ts';
import { DEPOSIT_KIND } from './deposit.ts';
import type { VenueStepDeps } from './venue.ts';
import { WITHDRAWAL_KIND } from './withdrawal.ts';

export { DEFAULT_STEP_DEADLINE_SECONDS, settle } from './core.ts';

/**
 * Every step kind in one place, for a process that runs them all (the unit tests). The Lambdas
 * do not import this: each runs its own kind (functions/transfers/*-step.ts), so a venue step's
 * bundle carries no Solana or bridge code and the bridge step's no venue code.
 */
export type StepDeps = VenueStepDeps & BridgeStepDeps;

const KINDS = { withdrawal: WITHDRAWAL_KIND, deposit: DEPOSIT_KIND, bridge: BRIDGE_KIND };

export function runStep(deps: StepDeps, inv: StepInvocation): Promise<StepResult> {
  return runKinds<StepDeps>(deps, KINDS, inv);
}
