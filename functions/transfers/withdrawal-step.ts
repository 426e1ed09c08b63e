import { withdrawalStepDepsFromEnv } from '../../shared/deps/transfer-venue-steps.ts';
import { runStep } from '../../shared/transfers/steps/core.ts';
import { stepHandler } from '../../shared/transfers/steps/lambda.ts';
import { WITHDRAWAL_KIND } from '../../shared/transfers/steps/withdrawal.ts';
import type { StepInvocation } from '../../shared/transfers/task.ts';

/**
 * The withdrawal step of the transfer state machine (StepInvocation → StepResult; shared/transfers/steps/withdrawal.ts).
 * Composition root (functions/transfer-steps.ts: needs). It runs withdrawal steps only: its bundle carries no other kind.
 */
const deps = withdrawalStepDepsFromEnv();

export const handler = stepHandler((event: StepInvocation) => runStep(deps, { withdrawal: WITHDRAWAL_KIND }, event));
