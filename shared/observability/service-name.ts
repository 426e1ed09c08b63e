import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The service a log line or metric belongs to. In Lambda each function has its own process and
 * POWERTOOLS_SERVICE_NAME (set per function by the CDK construct). The local runtime serves all
 * three services from one process, so it runs each invocation inside `withServiceName`.
 */
const scope = new AsyncLocalStorage<string>();

export function withServiceName<T>(serviceName: string, run: () => T): T {
  return scope.run(serviceName, run);
}

export function currentServiceName(): string {
  return scope.getStore() ?? (process.env.POWERTOOLS_SERVICE_NAME || 'perp-wallet');
}
