import { Chains } from '../chains/chains.ts';
import { ssmRpcUrls } from '../chains/rpc-urls.ts';
import { createSenders } from '../chains/sender/senders.ts';
import { loadChainsConfig, loadInclusionTimeoutMs, loadRpcUrlsParameter } from '../config.ts';
import { EnclaveGasSponsor } from '../withdrawals/gas-sponsor.ts';
import type { WithdrawDeps } from '../withdrawals/withdraw.ts';
import { accountDeps } from './account.ts';

/**
 * The account service's functions that read or move funds: accountDeps plus the chains and the
 * exactly-once senders. RPC URLs come from CHAINS_CONFIG (sandbox) or the SSM parameter named by
 * RPC_URLS_PARAMETER, read on first use.
 */
const rpcUrlsParameter = loadRpcUrlsParameter();
const chains = new Chains(loadChainsConfig(), rpcUrlsParameter ? ssmRpcUrls(rpcUrlsParameter) : undefined);

export const accountChainDeps: WithdrawDeps & typeof accountDeps = {
  ...accountDeps,
  chains,
  senders: createSenders({
    table: accountDeps.table,
    sponsor: new EnclaveGasSponsor(accountDeps.enclave, accountDeps.opJwtSigner, accountDeps.apps),
    inclusionTimeoutMs: loadInclusionTimeoutMs(),
    now: accountDeps.now,
  }),
};
