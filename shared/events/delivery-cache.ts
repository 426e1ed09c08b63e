import type { DeliveryEndpoints } from './deliver.ts';
import type { DeliveryOutcome, WebhookEndpoint } from './endpoints.ts';

/**
 * What a warm deliverer keeps between deliveries (issue 24), so a busy endpoint costs neither a
 * KMS Decrypt per delivery nor a write per delivery to its one endpoint item (a hot key):
 * - the opened signing secrets, by endpoint and by the sealed blobs they were opened from (a
 *   rotation seals a new blob, so it is never served stale), for SECRET_TTL_MS;
 * - a success is recorded at most once per OK_RECORD_MS per endpoint while the endpoint and its
 *   last recorded delivery are fine; a failure, or a success after one, is always recorded.
 * In the container's memory only: secrets never leave the process, as before.
 */
export const SECRET_TTL_MS = 5 * 60_000;
export const OK_RECORD_MS = 60_000;

export function cachedDeliveryEndpoints(store: DeliveryEndpoints, clock: () => number = Date.now): DeliveryEndpoints {
  const secrets = new Map<string, { readonly sealed: string; readonly at: number; readonly values: Promise<string[]> }>();
  const recordedOk = new Map<string, number>();
  const health = new Map<string, boolean>();
  return {
    get: async (appId, endpointId) => {
      const endpoint = await store.get(appId, endpointId);
      if (endpoint) health.set(`${appId}\n${endpointId}`, endpoint.status === 'enabled' && endpoint.last_delivery?.ok !== false);
      return endpoint;
    },
    secrets: (endpoint: WebhookEndpoint, now: Date) => {
      const key = `${endpoint.app_id}\n${endpoint.id}`;
      const sealed = `${endpoint.secret.sealed.wrapped_key}|${endpoint.previous_secret?.sealed.wrapped_key ?? ''}|${endpoint.previous_secret?.expires_at ?? ''}`;
      const cached = secrets.get(key);
      const previousExpired = endpoint.previous_secret !== undefined && Date.parse(endpoint.previous_secret.expires_at) <= now.getTime();
      if (cached && cached.sealed === sealed && clock() - cached.at < SECRET_TTL_MS && !previousExpired) return cached.values;
      const values = store.secrets(endpoint, now);
      secrets.set(key, { sealed, at: clock(), values });
      values.catch(() => secrets.delete(key)); // a failed Decrypt is tried again next time
      return values;
    },
    record: async (appId, endpointId, outcome: DeliveryOutcome) => {
      const key = `${appId}\n${endpointId}`;
      const healthy = health.get(key) === true;
      if (outcome.ok && healthy && clock() - (recordedOk.get(key) ?? Number.NEGATIVE_INFINITY) < OK_RECORD_MS) return;
      await store.record(appId, endpointId, outcome);
      if (outcome.ok) recordedOk.set(key, clock());
      health.set(key, outcome.ok);
    },
    markFailing: (appId, endpointId, since) => {
      health.set(`${appId}\n${endpointId}`, false);
      return store.markFailing(appId, endpointId, since);
    },
  };
}
