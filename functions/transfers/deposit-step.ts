import { depositStepDepsFromEnv } from '../../shared/deps/transfer-venue-steps.ts';
import { runStep } from '../../shared/transfers/steps/core.ts';
import { DEPOSIT_KIND } from '../../shared/transfers/steps/deposit.ts';
import { stepHandler } from '../../shared/transfers/steps/lambda.ts';
import type { StepInvocation } from '../../shared/transfers/task.ts';

/**
 * The deposit step of the transfer state machine (StepInvocation → StepResult; shared/transfers/steps/deposit.ts).
 * Composition root (functions/transfer-steps.ts: needs). It runs deposit steps only: its bundle carries no other kind.
 */
const deps = depositStepDepsFromEnv();

export const handler = stepHandler((event: StepInvocation) => runStep(deps, { deposit: DEPOSIT_KIND }, event));
