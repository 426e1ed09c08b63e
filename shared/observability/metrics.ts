import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { serviceLogger } from '../logger.ts';
import { currentServiceName } from './service-name.ts';

/**
 * Business metrics as CloudWatch Embedded Metric Format lines (Powertools Metrics), flushed by
 * the `logMetrics` middleware in `httpHandler`. Namespace from POWERTOOLS_METRICS_NAMESPACE,
 * `service` dimension from the service name.
 */
export const METRIC_NAMES = {
  withdrawalSent: 'WithdrawalSent',
  withdrawalFailed: 'WithdrawalFailed',
  withdrawalReplayed: 'WithdrawalReplayed',
  signingLatency: 'SigningLatency',
  sponsorBelowFloor: 'SponsorBelowFloor',
} as const;

const instances = new Map<string, Metrics>();

/** The Metrics instance of the current service (one per process in Lambda). */
export function serviceMetrics(serviceName = currentServiceName()): Metrics {
  let found = instances.get(serviceName);
  if (!found) {
    const log = serviceLogger(serviceName);
    // A request that records no metric is the normal case here, not worth a warning per request.
    const quiet = { debug: log.debug.bind(log), info: log.info.bind(log), warn: log.debug.bind(log), error: log.error.bind(log) };
    found = new Metrics({ serviceName, logger: quiet });
    instances.set(serviceName, found);
  }
  return found;
}

type WithdrawalResult = { readonly replayed: boolean; readonly response: { readonly status: number } };

/**
 * Runs a withdrawal and counts it: replayed (an Idempotency-Key seen before), sent (a 2xx
 * answer) or failed (an error or an error answer; its code goes to the metadata, not a dimension).
 */
export async function measureWithdrawal<R extends WithdrawalResult>(chain: string, run: () => Promise<R>): Promise<R> {
  const metrics = serviceMetrics();
  metrics.addDimension('chain', chain);
  try {
    const result = await run();
    const name = result.replayed ? METRIC_NAMES.withdrawalReplayed : result.response.status < 400 ? METRIC_NAMES.withdrawalSent : METRIC_NAMES.withdrawalFailed;
    metrics.addMetric(name, MetricUnit.Count, 1);
    return result;
  } catch (error) {
    metrics.addMetric(METRIC_NAMES.withdrawalFailed, MetricUnit.Count, 1);
    metrics.addMetadata('error_code', String((error as { code?: unknown })?.code ?? (error as Error)?.name ?? 'unknown'));
    throw error;
  }
}

/** Times one signing operation of the enclave (`route` names it: "POST /v2/api/wallet/sign_data"). */
export async function measureSigning<R>(route: string, run: () => Promise<R>): Promise<R> {
  const started = performance.now();
  const result = await run();
  // Successful operations only: a refused one returns early and would pull the figures down.
  const metrics = serviceMetrics();
  metrics.addDimension('route', route);
  metrics.addMetric(METRIC_NAMES.signingLatency, MetricUnit.Milliseconds, performance.now() - started);
  return result;
}

/**
 * A gas sponsor of the pool was skipped for holding less than its floor (shared/chains/sender/
 * sponsor-pool.ts): one count, dimension `chain`, the sponsor's address and slot as metadata. A
 * metric of its own, flushed at once (singleMetric), so the transfer steps, which have no metrics
 * middleware, report it too. Alarm on it: the pool is running dry.
 */
export function reportSponsorBelowFloor(event: { readonly chain: string; readonly slot: number; readonly address: string }): void {
  const single = serviceMetrics().singleMetric();
  single.addDimension('chain', event.chain);
  single.addMetadata('sponsor', event.address);
  single.addMetadata('slot', String(event.slot));
  single.addMetric(METRIC_NAMES.sponsorBelowFloor, MetricUnit.Count, 1);
}
