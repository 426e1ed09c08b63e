import { createSenders } from '../chains/sender/senders.ts';
import { ConfigError, loadInclusionTimeoutMs } from '../config.ts';
import { HttpBridgeClient } from '../transfers/bridge.ts';
import { loadPlatformFee } from '../transfers/platform-fee.ts';
import { DEFAULT_STEP_DEADLINE_SECONDS, type StepDeps } from '../transfers/steps/run-step.ts';
import { enclaveStepWallets } from '../transfers/steps/wallets.ts';
import { EnclaveGasSponsor } from '../withdrawals/gas-sponsor.ts';
import { chainsFromEnv } from './chains.ts';
import { accountKeyWrapperFromEnv, enclaveClientFromEnv, opJwtSignerFromEnv } from './clients.ts';
import { appsFromEnv, systemClock, tableFromEnv } from './table.ts';
import { venueRegistryFromEnv } from './venues.ts';

/**
 * Composition roots of the transfer step Lambdas (functions/transfer-steps.ts lists their needs).
 * Each builds only what its kind uses: the withdrawal and deposit steps the venues, the bridge
 * step the bridge client (BRIDGE_URL); all of them the table, the chains, the exactly-once
 * senders and the enclave signing path (a platform service token per app, no user JWT).
 *
 * TRANSFER_POLL_SECONDS (default 1): the Wait between polls the steps ask for.
 * TRANSFER_STEP_DEADLINE_SECONDS (default 3600): a step unsettled that long fails STEP_TIMED_OUT.
 */
export function transferStepDepsFromEnv(kind: 'withdrawal' | 'bridge' | 'deposit', env = process.env): StepDeps {
  const { table, apps } = appsFromEnv();
  const enclave = enclaveClientFromEnv();
  const opJwtSigner = opJwtSignerFromEnv();
  const chains = chainsFromEnv();
  return {
    table,
    chains,
    senders: createSenders({ table, sponsor: new EnclaveGasSponsor(enclave, opJwtSigner, apps), inclusionTimeoutMs: loadInclusionTimeoutMs(env), now: systemClock }),
    wallets: enclaveStepWallets({ apps, keyWrapper: accountKeyWrapperFromEnv(), opJwtSigner, enclave, now: systemClock }),
    platformFee: loadPlatformFee(env),
    ...(kind === 'bridge' ? { bridge: new HttpBridgeClient({ baseUrl: bridgeUrlFromEnv(env) }) } : { venues: venueRegistryFromEnv(chains) }),
    now: systemClock,
    pollSeconds: positiveInteger(env, 'TRANSFER_POLL_SECONDS', 1),
    deadlineSeconds: positiveInteger(env, 'TRANSFER_STEP_DEADLINE_SECONDS', DEFAULT_STEP_DEADLINE_SECONDS),
  };
}

/** The settle Lambda: the table only. */
export function settleDepsFromEnv() {
  return { table: tableFromEnv(), now: systemClock };
}

function bridgeUrlFromEnv(env: NodeJS.ProcessEnv): string {
  const url = env.BRIDGE_URL;
  if (!url || !/^https?:\/\/[^\s]+$/.test(url)) throw new ConfigError('Invalid configuration: BRIDGE_URL: must be the bridge API base URL (http or https)');
  return url;
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]{1,6}$/.test(raw) || Number(raw) < 1) throw new ConfigError(`Invalid configuration: ${name}: must be a whole number of seconds, at least 1`);
  return Number(raw);
}
