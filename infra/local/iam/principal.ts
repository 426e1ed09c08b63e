import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who is calling AWS, as AWS would know it: the role of the function whose invocation runs now.
 * The local runtime runs every invocation of every function in one process (API routes, transfer
 * steps, event source mappings: infra/local/api-gateway.ts runInvocation), so the principal is
 * the invocation's, carried by AsyncLocalStorage through every await of that invocation down to
 * the in-process endpoints (shared/deps/local-endpoints.ts), which authorise the call
 * (docs/sandbox-iam.md). Code outside an invocation (the sandbox's own routes and set-up, tests
 * that read the table directly) has no principal and is not a Lambda: it is not evaluated.
 */
const current = new AsyncLocalStorage<string>();

/** Runs `invoke` as function `functionId` (its construct id: a route id, a step or events function id). */
export function runAsFunction<T>(functionId: string, invoke: () => T): T {
  return current.run(functionId, invoke);
}

/** The function whose invocation is running, if any. */
export function currentFunction(): string | undefined {
  return current.getStore();
}
