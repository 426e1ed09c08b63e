import { transferStepDepsFromEnv } from '../../shared/deps/transfer-steps.ts';
import { stepHandler } from '../../shared/transfers/steps/lambda.ts';
import { runStep } from '../../shared/transfers/steps/run-step.ts';
import type { StepInvocation } from '../../shared/transfers/task.ts';

/**
 * The deposit step of the transfer state machine (StepInvocation → StepResult; shared/transfers/steps/run-step.ts).
 * Composition root (functions/transfer-steps.ts: needs).
 */
const deps = transferStepDepsFromEnv('deposit');

export const handler = stepHandler((event: StepInvocation) => runStep(deps, event));
