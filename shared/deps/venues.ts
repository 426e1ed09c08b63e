import { type Address, erc20Abi } from 'viem';
import type { AppRegistry } from '../apps/app-registry.ts';
import type { EvmChains } from '../chains/evm-chains.ts';
import { loadVenueNetwork, loadVenueUrls } from '../config.ts';
import type { Table } from '../db/client.ts';
import type { VenueId } from '../venues/default-status.ts';
import { type TransferLogs, transferLogsOf } from '../venues/payouts.ts';
import { type VenueDriverFactory, VenueRegistry } from '../venues/registry.ts';
import { chainReader, type InitPerpDexDeps, type RequirementsDeps, type VenueSigningDeps } from '../venues/service.ts';
import { VENUE_A_SANDBOX_PROFILE } from '../venues/venue-a/api.ts';
import { VenueADriver } from '../venues/venue-a/driver.ts';
import { VenueBDriver } from '../venues/venue-b/driver.ts';
import { VenueCDriver } from '../venues/venue-c/driver.ts';
import { VenueDDriver } from '../venues/venue-d/driver.ts';
import { VenueEDriver } from '../venues/venue-e/driver.ts';
import { accountKeyWrapperFromEnv, enclaveClientFromEnv, opJwtSignerFromEnv } from './clients.ts';
import { evmChainsFromEnv } from './evm-chains.ts';
import { appsFromEnv } from './table.ts';

/**
 * The venue adapters this build carries, each given its base URL from VENUE_URLS (the live
 * venue's defaults otherwise: Hyperliquid "Mainnet", Arbitrum's USDC and bridge). A venue absent
 * here, or absent from VENUE_URLS, answers 503 VENUE_NOT_CONFIGURED.
 */
export function venueDriverFactories(chains: EvmChains, network: 'live' | 'sandbox' = loadVenueNetwork()): Partial<Record<VenueId, VenueDriverFactory>> {
  const sandbox = network === 'sandbox';
  return {
    venue_a: ({ baseUrl }) => new VenueADriver({ baseUrl, ...(sandbox ? VENUE_A_SANDBOX_PROFILE : {}) }),
    venue_b: ({ baseUrl }) => new VenueBDriver({ baseUrl, payouts: chainTransferLogs(chains, 'ARB') }),
    venue_c: ({ baseUrl }) => new VenueCDriver({ baseUrl }),
    // The sandbox's INK USDC stands in for Nado's collateral (USDT0, the live default).
    // The sandbox serves the CLOB and the Bridge API on one URL; live, the Bridge API is bridge.polymarket.com (the default).
    venue_e: ({ baseUrl }) =>
      new VenueEDriver({
        baseUrl,
        ...(sandbox ? { bridgeUrl: baseUrl } : {}),
        polygonBalanceOf: async (token, owner) =>
          (await chains.evm('POL')).client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] }),
      }),
    venue_d: ({ baseUrl }) =>
      new VenueDDriver({ baseUrl, payouts: chainTransferLogs(chains, 'INK'), ...(sandbox ? { collateral: sandboxInkUsdc(chains) } : {}) }),
  };
}

/** A chain's Transfer logs through the account service's client for it (built on first use: its RPC URL may come from a secret). */
function chainTransferLogs(chains: EvmChains, code: 'ARB' | 'INK'): TransferLogs {
  const logs = async () => transferLogsOf((await chains.evm(code)).client);
  return {
    head: async () => (await logs()).head(),
    transfers: async (query) => (await logs()).transfers(query),
  };
}

/** The sandbox's INK USDC, venue_d's collateral there: the sandbox's chains config always lists it. */
function sandboxInkUsdc(chains: EvmChains): Address {
  const usdc = chains.config.INK.tokens.USDC;
  if (!usdc) throw new Error('venue_d in the sandbox takes INK USDC as its collateral, and the chains config lists no USDC on INK');
  return usdc.address as Address;
}

/** Need `venues`: VENUE_URLS (and the chains, which the adapters read). */
export function venueRegistryFromEnv(chains: EvmChains): VenueRegistry {
  return new VenueRegistry(loadVenueUrls(), venueDriverFactories(chains));
}

type WithApps<T> = T & { readonly apps: AppRegistry; readonly table: Table };

/** check-perp-dex-requirements (needs: table read, chains, venues). */
export function requirementsDepsFromEnv(): WithApps<RequirementsDeps> {
  const chains = evmChainsFromEnv();
  return { ...appsFromEnv(), chains: chainReader(chains), venues: venueRegistryFromEnv(chains) };
}

/** init-perp-dex (needs: table read-write, account access key Decrypt, op_jwt key, enclave URL, chains, venues). */
export function initPerpDexDepsFromEnv(): WithApps<InitPerpDexDeps> {
  return { ...requirementsDepsFromEnv(), keyWrapper: accountKeyWrapperFromEnv(), opJwtSigner: opJwtSignerFromEnv(), enclave: enclaveClientFromEnv() };
}

/** init-perp-dex-trading and GET /account/perp (needs: table, account access key Decrypt, op_jwt key, enclave URL, chains, venues). */
export function venueSigningDepsFromEnv(): WithApps<VenueSigningDeps> {
  const chains = evmChainsFromEnv();
  return {
    ...appsFromEnv(),
    venues: venueRegistryFromEnv(chains),
    keyWrapper: accountKeyWrapperFromEnv(),
    opJwtSigner: opJwtSignerFromEnv(),
    enclave: enclaveClientFromEnv(),
  };
}
