import type { AppRegistry } from '../apps/app-registry.ts';
import { loadAllowedDelegates, loadPublicChainsConfig, loadV1RetirementAt } from '../config.ts';
import type { Table } from '../db/client.ts';
import { enclaveKeyWrapperFromEnv } from '../deps/clients.ts';
import { chainlinkPricesFor, evmChainsFromEnv } from '../deps/evm-chains.ts';
import { appsFromEnv, systemClock } from '../deps/table.ts';
import type { PolicyChains } from '../policies/facts.ts';
import type { NativePrices } from '../policies/native-usd.ts';
import type { EnclaveDeps } from './create-wallet.ts';

/**
 * Builders for the wallet enclave's composition roots (functions/enclave/*): each route calls
 * the ones its `needs` name. v1 routes never touch the KMS wallet key (their keys derive from
 * the caller's encryption_context), so they build no key wrapper and read no KMS variable.
 */
export type V1Deps = Pick<EnclaveDeps, 'table' | 'now' | 'v1RetiresAt'> & { readonly apps: AppRegistry };
export type V2Deps = EnclaveDeps & { readonly apps: AppRegistry };

/** Table and apps, clock, V1_RETIREMENT_AT: what every enclave route but health needs. */
export function v1DepsFromEnv(): V1Deps {
  const { table, apps }: { table: Table; apps: AppRegistry } = appsFromEnv();
  return { table, apps, now: systemClock, v1RetiresAt: loadV1RetirementAt() };
}

/** v1 plus the wallet-key wrapper (need `enclaveWalletKey`). */
export function v2DepsFromEnv(): V2Deps {
  return { ...v1DepsFromEnv(), keyWrapper: enclaveKeyWrapperFromEnv() };
}

/** Need `chainData` (implied by `chains`): the public chains config the signing policy reads chain codes and USDC contracts from (issue 22). */
export const policyChainsFromEnv = (): PolicyChains => loadPublicChainsConfig();

/**
 * Need `chains`: native coin prices for the signing policy's USD limits (issue 22), from the
 * Chainlink feeds on the ETH chain. Read only when a policy with a USD limit meets a request that
 * moves a native coin; the ETH chain's RPC URL comes from the RPC URLs secret on that first read.
 */
export const policyPricesFromEnv = (): NativePrices => chainlinkPricesFor(evmChainsFromEnv());

/** Need `delegates`: ALLOWED_7702_DELEGATES. */
export const allowedDelegatesFromEnv = (): ReadonlySet<string> => loadAllowedDelegates();
