import { bridgeStepDepsFromEnv } from '../../shared/deps/transfer-bridge-step.ts';
import { BRIDGE_KIND } from '../../shared/transfers/steps/bridge.ts';
import { runStep } from '../../shared/transfers/steps/core.ts';
import { stepHandler } from '../../shared/transfers/steps/lambda.ts';
import type { StepInvocation } from '../../shared/transfers/task.ts';

/**
 * The bridge step of the transfer state machine (StepInvocation → StepResult; shared/transfers/steps/bridge.ts).
 * Composition root (functions/transfer-steps.ts: needs). It runs bridge steps only: its bundle carries no other kind.
 */
const deps = bridgeStepDepsFromEnv();

export const handler = stepHandler((event: StepInvocation) => runStep(deps, { bridge: BRIDGE_KIND }, event));
