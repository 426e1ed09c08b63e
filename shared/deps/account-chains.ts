import { Chains } from '../chains/chains.ts';
import { loadChainsConfig, loadInclusionTimeoutMs } from '../config.ts';
import { EnclaveGasSponsor } from '../withdrawals/gas-sponsor.ts';
import type { WithdrawDeps } from '../withdrawals/withdraw.ts';
import { accountDeps } from './account.ts';

/** The account service's functions that read or move funds: accountDeps plus the chains. */
export const accountChainDeps: WithdrawDeps & typeof accountDeps = {
  ...accountDeps,
  chains: new Chains(loadChainsConfig()),
  sponsor: new EnclaveGasSponsor(accountDeps.enclave, accountDeps.opJwtSigner, accountDeps.apps),
  inclusionTimeoutMs: loadInclusionTimeoutMs(),
};
