import { createSenders } from '../chains/sender/senders.ts';
import { logger } from '../logger.ts';
import { reportSponsorBelowFloor } from '../observability/metrics.ts';
import type { BridgeClient } from '../transfers/bridge.ts';
import { HttpBridgeClient } from '../transfers/http-bridge-client.ts';
import type { BridgeStepDeps } from '../transfers/steps/bridge.ts';
import { chainsFromEnv } from './chains.ts';
import { systemClock } from './table.ts';
import { sponsorPool, sponsorshipBudget, stepCoreFromEnv } from './transfer-steps.ts';
import { bridgeClientOptions } from './transfers.ts';

/**
 * Composition root of the bridge step Lambda: the common step pieces, every chain (a bridge
 * leg may start or end on Solana), the exactly-once senders including Solana's, and the bridge
 * client. No venue code.
 */
export function bridgeStepDepsFromEnv(env = process.env): BridgeStepDeps {
  const parts = stepCoreFromEnv(env);
  const bridge = bridgeClientFromEnv(env);
  return {
    ...parts.core,
    chains: chainsFromEnv(),
    sponsorship: sponsorshipBudget(parts, env),
    senders: createSenders({
      table: parts.core.table,
      sponsors: sponsorPool(parts, env),
      onSponsorBelowFloor: reportSponsorBelowFloor,
      inclusionTimeoutMs: parts.inclusionTimeoutMs,
      lease: parts.lease,
      now: systemClock,
    }),
    ...(bridge ? { bridge } : {}),
  };
}

/**
 * BRIDGE_URL, read without failing the cold start: a deployment without a bridge (`-c bridgeUrl`
 * not given) or with a malformed one has none, and each bridge step then fails, recorded on the
 * task, with BRIDGE_NOT_CONFIGURED (shared/transfers/steps/bridge.ts). The value is never logged.
 */
export function bridgeClientFromEnv(env: NodeJS.ProcessEnv): BridgeClient | undefined {
  const url = env.BRIDGE_URL;
  if (!url) return undefined;
  if (!/^https?:\/\/[^\s]+$/.test(url)) {
    logger.error('BRIDGE_URL is not an http(s) URL: bridge steps fail BRIDGE_NOT_CONFIGURED');
    return undefined;
  }
  return new HttpBridgeClient(bridgeClientOptions(url, env));
}
