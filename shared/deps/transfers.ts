import * as v from 'valibot';
import type { AppRegistry } from '../apps/app-registry.ts';
import { secretBridgeApiKey } from '../chains/rpc-urls.ts';
import { ConfigError, loadRpcUrlsSecret } from '../config.ts';
import type { BridgeClient } from '../transfers/bridge.ts';
import { BridgeClientQuoter } from '../transfers/bridge-quoter.ts';
import { BRIDGE_CHAINS } from '../transfers/bridge-routes.ts';
import type { EstimateDeps } from '../transfers/estimate.ts';
import { loadTransfersConfig, SfnTransferExecutor } from '../transfers/executor.ts';
import { ChainGasEstimator } from '../transfers/gas-estimator.ts';
import { HttpBridgeClient, type HttpBridgeClientOptions } from '../transfers/http-bridge-client.ts';
import { loadPlatformFee, platformFeeFor } from '../transfers/platform-fee.ts';
import { BridgeNotConfiguredError, type EstimateRouteDeps, type TaskDeps, type TransferServiceDeps } from '../transfers/service.ts';
import { chainsFromEnv } from './chains.ts';
import { chainlinkPricesFor } from './evm-chains.ts';
import { appsFromEnv, systemClock } from './table.ts';

type WithApps<T> = T & { readonly apps: AppRegistry };

/** Need `bridge`: BRIDGE_URL, optional (CDK leaves it unset without `-c bridgeUrl`: routes with a bridge step then answer 503). */
export function loadBridgeUrl(env = process.env): string | undefined {
  const url = env.BRIDGE_URL;
  if (url === undefined || url === '') return undefined;
  if (!/^https?:\/\/\S+$/.test(url)) throw new ConfigError('Invalid configuration: BRIDGE_URL: must be an http(s) URL');
  return url;
}

/**
 * BRIDGE_PROVIDER (optional): the bridge provider id an estimate names as a bridge step's `dex`.
 * Default `lifi`, the API the bridge client speaks (LI.FI's public endpoint is the default
 * BRIDGE_URL); the local sandbox, which speaks the same API, names itself `sandbox_bridge`.
 */
export function loadBridgeProvider(env = process.env): string {
  const provider = env.BRIDGE_PROVIDER;
  if (provider === undefined || provider === '') return 'lifi';
  if (!/^[a-z][a-z0-9_]{0,31}$/.test(provider))
    throw new ConfigError('Invalid configuration: BRIDGE_PROVIDER: must be a lowercase id (a-z, 0-9, _), at most 32 characters');
  return provider;
}

const BridgeContractsSchema = v.record(v.picklist(BRIDGE_CHAINS), v.array(v.pipe(v.string(), v.minLength(1))));

/**
 * The bridge client's options: BRIDGE_CONTRACTS (optional, JSON `{ "<chain>": [address, …] }`) replaces
 * the whole allow-list (a chain it does not name allows nothing): LI.FI's published diamonds, what a
 * quote may pay, and on SOL LI.FI's Solana programs, what its transaction may invoke (the local
 * sandbox sets its own). LI.FI's API key (optional, `x-lifi-api-key`) is the `LIFI_API_KEY` field of the RPC URLs'
 * secret (RPC_URLS_SECRET), read with it on the first bridge call.
 */
export function bridgeClientOptions(baseUrl: string, env = process.env): HttpBridgeClientOptions {
  let contracts: HttpBridgeClientOptions['contracts'];
  if (env.BRIDGE_CONTRACTS) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(env.BRIDGE_CONTRACTS);
    } catch {
      parsed = undefined;
    }
    const result = v.safeParse(BridgeContractsSchema, parsed);
    if (!result.success) throw new ConfigError('Invalid configuration: BRIDGE_CONTRACTS: must be JSON {"<chain>": ["<address>", …]}');
    contracts = result.output;
  }
  const secret = loadRpcUrlsSecret(env);
  return { baseUrl, ...(contracts ? { contracts } : {}), ...(secret ? { apiKey: secretBridgeApiKey(secret) } : {}) };
}

/** The bridge of a deployment without one: never called, the service answers 503 before (bridgeConfigured false). */
const NO_BRIDGE: BridgeClient = {
  quote: () => Promise.reject(new BridgeNotConfiguredError()),
  status: () => Promise.reject(new BridgeNotConfiguredError()),
};

/**
 * The estimate's ports (needs: chains, bridge, platformFee): gas from the chains, prices from the
 * Chainlink feeds on the ETH chain (Ethereum mainnet; the sandbox's anvil carries feeds at the same
 * addresses), the bridge's quotes, the platform fee for the route's first wallet chain.
 */
function estimatePortsFromEnv(): Pick<TransferServiceDeps, 'estimateDeps' | 'bridgeConfigured' | 'balances'> {
  const chains = chainsFromEnv();
  const bridgeUrl = loadBridgeUrl();
  const bridge = bridgeUrl ? new HttpBridgeClient(bridgeClientOptions(bridgeUrl)) : NO_BRIDGE;
  const fees = loadPlatformFee();
  const prices = chainlinkPricesFor(chains);
  const provider = loadBridgeProvider();
  return {
    bridgeConfigured: bridgeUrl !== undefined,
    balances: chains,
    estimateDeps: (wallet, feeChain): EstimateDeps => ({
      gas: new ChainGasEstimator(chains, wallet, bridge),
      prices,
      bridge: new BridgeClientQuoter(bridge, wallet, provider),
      platformFee: platformFeeFor(fees, feeChain),
    }),
  };
}

/** POST /transfer/estimate-transfer-cost (needs: table read, chains, bridge, platformFee). */
export function estimateDepsFromEnv(): WithApps<EstimateRouteDeps> {
  return { ...appsFromEnv(), ...estimatePortsFromEnv() };
}

/** GET /task and resume (needs: table read-write, transfers): they start and describe executions. */
export function taskDepsFromEnv(): WithApps<TaskDeps> {
  return { ...appsFromEnv(), executor: new SfnTransferExecutor(loadTransfersConfig()), now: systemClock };
}

/** POST /transfer (needs: table read-write, chains, bridge, platformFee, transfers). */
export function transferDepsFromEnv(): WithApps<TransferServiceDeps> {
  return { ...taskDepsFromEnv(), ...estimatePortsFromEnv() };
}
