import type { AppRegistry } from '../apps/app-registry.ts';
import type { LeaseTiming } from '../chains/sender/sender-lease.ts';
import { ConfigError, loadInclusionTimeoutMs, loadSenderLeaseTiming, loadSponsorPoolSize } from '../config.ts';
import { loadPlatformFee } from '../transfers/platform-fee.ts';
import { DEFAULT_STEP_DEADLINE_SECONDS, DEFAULT_STUCK_SECONDS, POLL_INTERVAL_MS, type StepCoreDeps } from '../transfers/steps/core.ts';
import { enclaveStepWallets } from '../transfers/steps/wallets.ts';
import type { WalletEnclave } from '../wallets/enclave-client.ts';
import { EnclaveSponsorPool } from '../withdrawals/gas-sponsor.ts';
import { loadSponsorshipLimits, SponsorshipBudget } from '../withdrawals/sponsorship-budget.ts';
import { accountKeyWrapperFromEnv, enclaveClientFromEnv, opJwtSignerFromEnv, sponsorSignerFromEnv } from './clients.ts';
import { appsFromEnv, systemClock, tableFromEnv } from './table.ts';

/**
 * What every transfer step Lambda builds (functions/transfer-steps.ts lists their needs): the
 * table, the enclave signing path (a platform service token per app, no user JWT), the platform
 * fee and the poll settings. No chain, sender, venue or bridge code: the per-kind roots add those
 * (transfer-venue-steps.ts: withdrawal and deposit, EVM chains and venues; transfer-bridge-step.ts:
 * EVM and Solana chains and the bridge), so each bundle carries its own kind only (bench:bundles).
 *
 * TRANSFER_POLL_SECONDS (default 1): the Wait between polls the steps ask for.
 * TRANSFER_POLL_WINDOW_MS (default 5000, 0 to 20000): how long one poll invocation keeps
 *   re-checking an unsettled step (every 200 ms) before it answers `settled: false`; the step
 *   Lambdas time out at 60 s (statemachines/README.md, "Polling: long polls").
 * TRANSFER_POLL_INTERVAL_MS (default 200, 10 to 5000): the pause between two looks inside one long
 *   poll. Measured: the sandbox's own tick (25 ms) here made the 200-transfer conservation run
 *   slower on 2 cores (more looks, more CPU), so the sandbox keeps the default.
 * TRANSFER_STEP_DEADLINE_SECONDS (default 3600): a step unsettled that long fails STEP_TIMED_OUT.
 * TRANSFER_STUCK_SECONDS (default 900): a step unsettled that long records `task.stuck` once per try
 *   (issue 24: e.g. a deposit the venue has not credited), long before its deadline.
 * SENDER_LEASE_MS (default 15000): the senders' lease (shared/config.ts, loadSenderLeaseTiming).
 */
export function stepCoreFromEnv(env = process.env): StepCoreParts {
  const { table, apps } = appsFromEnv();
  const enclave = enclaveClientFromEnv();
  const opJwtSigner = opJwtSignerFromEnv();
  return {
    core: {
      table,
      wallets: enclaveStepWallets({ apps, keyWrapper: accountKeyWrapperFromEnv(), opJwtSigner, enclave, now: systemClock }),
      platformFee: loadPlatformFee(env),
      now: systemClock,
      pollSeconds: wholeNumber(env, 'TRANSFER_POLL_SECONDS', 1, { min: 1, max: 999_999, unit: 'seconds' }),
      pollWindowMs: wholeNumber(env, 'TRANSFER_POLL_WINDOW_MS', DEFAULT_POLL_WINDOW_MS, { min: 0, max: 20_000, unit: 'milliseconds' }),
      pollIntervalMs: wholeNumber(env, 'TRANSFER_POLL_INTERVAL_MS', POLL_INTERVAL_MS, { min: 10, max: 5_000, unit: 'milliseconds' }),
      deadlineSeconds: wholeNumber(env, 'TRANSFER_STEP_DEADLINE_SECONDS', DEFAULT_STEP_DEADLINE_SECONDS, { min: 1, max: 999_999, unit: 'seconds' }),
      stuckSeconds: wholeNumber(env, 'TRANSFER_STUCK_SECONDS', DEFAULT_STUCK_SECONDS, { min: 1, max: 999_999, unit: 'seconds' }),
    },
    signing: { apps, enclave },
    inclusionTimeoutMs: loadInclusionTimeoutMs(env),
    lease: loadSenderLeaseTiming(env),
  };
}

export interface StepCoreParts {
  readonly core: Omit<StepCoreDeps, 'chains' | 'senders'>;
  /** For the gas sponsor of the kinds that sponsor (sponsoredGas). */
  readonly signing: { readonly apps: AppRegistry; readonly enclave: WalletEnclave };
  readonly inclusionTimeoutMs: number;
  /** The senders' lease (SENDER_LEASE_MS). */
  readonly lease: LeaseTiming;
}

/** The daily budget of sponsored sends (SPONSOR_DAILY_SENDS_PER_USER, SPONSOR_DAILY_SENDS_PER_APP), for the kinds that sponsor. */
export const sponsorshipBudget = ({ core }: StepCoreParts, env = process.env) =>
  new SponsorshipBudget({ table: core.table, limits: loadSponsorshipLimits(env), now: core.now });

/** The gas sponsors of sponsored sends (the platform's enclave wallets, SPONSOR_POOL_SIZE of them, their tokens signed with the sponsor's own key: SPONSOR_SIGNER), for the bridge and deposit steps. */
export const sponsorPool = ({ signing }: StepCoreParts, env = process.env) =>
  new EnclaveSponsorPool(signing.enclave, sponsorSignerFromEnv(), signing.apps, loadSponsorPoolSize(env));

export const DEFAULT_POLL_WINDOW_MS = 5_000;

/** The settle Lambda: the table only. */
export function settleDepsFromEnv() {
  return { table: tableFromEnv(), now: systemClock };
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, range: { min: number; max: number; unit: string }): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]{1,6}$/.test(raw) || Number(raw) < range.min || Number(raw) > range.max) {
    throw new ConfigError(`Invalid configuration: ${name}: must be a whole number of ${range.unit}, ${range.min} to ${range.max}`);
  }
  return Number(raw);
}
