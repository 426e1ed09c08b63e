import { settleDepsFromEnv } from '../../shared/deps/transfer-steps.ts';
import { settle } from '../../shared/transfers/steps/core.ts';
import { stepHandler } from '../../shared/transfers/steps/lambda.ts';
import type { SettleInvocation } from '../../shared/transfers/task.ts';

/** The Map's Catch: records a failure the step could not record itself (idempotent). Needs: table read-write. */
const deps = settleDepsFromEnv();

export const handler = stepHandler((event: SettleInvocation) => settle(deps, event));
