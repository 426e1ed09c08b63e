import type { AppRegistry } from '../apps/app-registry.ts';
import { ConfigError } from '../config.ts';
import { type BridgeClient, HttpBridgeClient } from '../transfers/bridge.ts';
import { BridgeClientQuoter } from '../transfers/bridge-quoter.ts';
import type { EstimateDeps } from '../transfers/estimate.ts';
import { loadTransfersConfig, SfnTransferExecutor } from '../transfers/executor.ts';
import { ChainGasEstimator } from '../transfers/gas-estimator.ts';
import { loadPlatformFee, platformFeeFor } from '../transfers/platform-fee.ts';
import { BridgeNotConfiguredError, type EstimateRouteDeps, type TaskDeps, type TransferServiceDeps } from '../transfers/service.ts';
import { chainlinkPricesFor, chainsFromEnv } from './chains.ts';
import { appsFromEnv, systemClock } from './table.ts';

type WithApps<T> = T & { readonly apps: AppRegistry };

/** Need `bridge`: BRIDGE_URL, optional (CDK leaves it unset without `-c bridgeUrl`: routes with a bridge step then answer 503). */
export function loadBridgeUrl(env = process.env): string | undefined {
  const url = env.BRIDGE_URL;
  if (url === undefined || url === '') return undefined;
  if (!/^https?:\/\/\S+$/.test(url)) throw new ConfigError('Invalid configuration: BRIDGE_URL: must be an http(s) URL');
  return url;
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
  const bridge = bridgeUrl ? new HttpBridgeClient({ baseUrl: bridgeUrl }) : NO_BRIDGE;
  const fees = loadPlatformFee();
  const prices = chainlinkPricesFor(chains);
  return {
    bridgeConfigured: bridgeUrl !== undefined,
    balances: chains,
    estimateDeps: (wallet, feeChain): EstimateDeps => ({
      gas: new ChainGasEstimator(chains, wallet, bridge),
      prices,
      bridge: new BridgeClientQuoter(bridge, wallet),
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
