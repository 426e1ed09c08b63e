import type { DeliveryEndpoints } from './deliver.ts';
import type { DeliveryOutcome, WebhookEndpoint } from './endpoints.ts';

/**
 * What a warm deliverer keeps between deliveries (issue 24), so a busy endpoint costs neither a
 * KMS Decrypt, nor a read of its endpoint item, nor a write to it (a hot key) per delivery:
 * - the endpoint item, for ENDPOINT_TTL_MS: a deletion or a new URL reaches a warm deliverer
 *   within that (a rotation's new secret too; the old one signs on for 24 h anyway);
 * - the opened signing secrets, by endpoint and by the sealed blobs they were opened from (a
 *   rotation seals a new blob, so it is never served stale), for SECRET_TTL_MS;
 * - an outcome is recorded when it differs from the last one recorded (a failure after a success,
 *   a success after a failure), else at most once per RECORD_MS per endpoint: `last_delivery`
 *   of GET /webhook-endpoints is at most that old.
 * In the container's memory only: secrets never leave the process, as before.
 */
export const ENDPOINT_TTL_MS = 5_000;
export const SECRET_TTL_MS = 5 * 60_000;
export const RECORD_MS = 60_000;

export function cachedDeliveryEndpoints(store: DeliveryEndpoints, clock: () => number = Date.now): DeliveryEndpoints {
  const secrets = new Map<string, { readonly sealed: string; readonly at: number; readonly values: Promise<string[]> }>();
  const endpoints = new Map<string, { readonly at: number; readonly endpoint: Promise<WebhookEndpoint | undefined> }>();
  const recordedAt = new Map<string, number>();
  const health = new Map<string, boolean>();
  return {
    get: (appId, endpointId) => {
      const key = `${appId}\n${endpointId}`;
      const cached = endpoints.get(key);
      if (cached && clock() - cached.at < ENDPOINT_TTL_MS) return cached.endpoint;
      const endpoint = store.get(appId, endpointId).then((found) => {
        if (found) health.set(key, found.status === 'enabled' && found.last_delivery?.ok !== false);
        return found;
      });
      endpoints.set(key, { at: clock(), endpoint });
      endpoint.catch(() => endpoints.delete(key)); // a failed read is tried again next time
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
      if (health.get(key) === outcome.ok && clock() - (recordedAt.get(key) ?? Number.NEGATIVE_INFINITY) < RECORD_MS) return;
      await store.record(appId, endpointId, outcome);
      recordedAt.set(key, clock());
      health.set(key, outcome.ok);
    },
    markFailing: (appId, endpointId, since) => {
      health.set(`${appId}\n${endpointId}`, false);
      return store.markFailing(appId, endpointId, since);
    },
  };
}
