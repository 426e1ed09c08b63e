import { createSenders } from '../chains/sender/senders.ts';
import { loadInclusionTimeoutMs, loadSenderLeaseTiming, loadSponsorPoolSize } from '../config.ts';
import { reportSponsorBelowFloor } from '../observability/metrics.ts';
import { EnclaveSponsorPool } from '../withdrawals/gas-sponsor.ts';
import { claimLeaseMs } from '../withdrawals/idempotency.ts';
import { loadSponsorshipLimits, SponsorshipBudget } from '../withdrawals/sponsorship-budget.ts';
import type { WithdrawDeps } from '../withdrawals/withdraw.ts';
import { chainsFromEnv } from './chains.ts';
import { accountKeyWrapperFromEnv, enclaveClientFromEnv, opJwtSignerFromEnv, sponsorSignerFromEnv } from './clients.ts';
import { appsFromEnv, systemClock } from './table.ts';

/**
 * `POST /withdraw`: everything a signing account route has, plus the chains and the
 * exactly-once senders (the gas sponsors, SPONSOR_POOL_SIZE of them, mint their tokens with their own key, SPONSOR_SIGNER: never the op_jwt key).
 */
export function withdrawDepsFromEnv(): WithdrawDeps & Pick<ReturnType<typeof appsFromEnv>, 'apps'> {
  const { table, apps } = appsFromEnv();
  const enclave = enclaveClientFromEnv();
  const opJwtSigner = opJwtSignerFromEnv();
  const inclusionTimeoutMs = loadInclusionTimeoutMs();
  const lease = loadSenderLeaseTiming();
  return {
    table,
    apps,
    keyWrapper: accountKeyWrapperFromEnv(),
    opJwtSigner,
    enclave,
    now: systemClock,
    chains: chainsFromEnv(),
    senders: createSenders({
      table,
      sponsors: new EnclaveSponsorPool(enclave, sponsorSignerFromEnv(), apps, loadSponsorPoolSize()),
      onSponsorBelowFloor: reportSponsorBelowFloor,
      inclusionTimeoutMs,
      lease,
      now: systemClock,
    }),
    claimLeaseMs: claimLeaseMs(inclusionTimeoutMs, lease.leaseMs),
    sponsorship: new SponsorshipBudget({ table, limits: loadSponsorshipLimits(), now: systemClock }),
  };
}
