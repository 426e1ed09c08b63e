import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import * as v from 'valibot';

/**
 * The chains' RPC URLs, kept out of the function environment and the CloudFormation template
 * (hosted RPC URLs carry API keys in the path). RPC_URLS_SECRET names the Secrets Manager secret
 * whose value is `{ "ETH": url, "ARB": url, "POL": url, "INK": url, "SOL": url }`. It is read
 * with Powertools Parameters on the first chain call, not at cold start, so a cold start makes no
 * AWS call and a request that never reaches a chain never reads it. The value is never logged,
 * and no error message repeats it.
 */
const Url = v.pipe(v.string('must be a string'), v.url('must be a URL'));

export const RpcUrlsSchema = v.object({ ETH: Url, ARB: Url, POL: Url, INK: Url, SOL: Url }, 'must be a JSON object');
export type RpcUrls = v.InferOutput<typeof RpcUrlsSchema>;

/** Where the URLs come from when CHAINS_CONFIG leaves them out. */
export type RpcUrlSource = () => Promise<RpcUrls>;

export class RpcUrlsError extends Error {}

/**
 * The only key of the value the stack creates the secret with (infra/stateful-stack.ts), until
 * the operator puts the URLs (docs/deploy.md): recognised so the error says what to do.
 */
export const RPC_URLS_PLACEHOLDER_KEY = 'placeholder';

/**
 * How long a read value is reused, in seconds. Chains builds each chain's client once per
 * container, so within a container this is one read; a longer-lived container re-reads for
 * clients built after it (a rotated provider key reaches them without a redeploy).
 */
export const RPC_URLS_MAX_AGE_SECONDS = 15 * 60;

/** Validates the secret's value; the message names keys and problems, never the value. */
export function parseRpcUrls(secretId: string, raw: string | Uint8Array | undefined): RpcUrls {
  if (typeof raw !== 'string') throw new RpcUrlsError(`secret ${secretId}: ${raw === undefined ? 'has no value' : 'must be a SecretString, not binary'}`);
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new RpcUrlsError(`secret ${secretId}: must be JSON`);
  }
  if (typeof json === 'object' && json !== null && RPC_URLS_PLACEHOLDER_KEY in json) {
    throw new RpcUrlsError(`secret ${secretId}: still holds the placeholder it was created with; put the RPC URLs in it (docs/deploy.md)`);
  }
  const result = v.safeParse(RpcUrlsSchema, json);
  if (!result.success) {
    // Only our own messages (every schema above has one): valibot's defaults quote the received
    // value, which would be a URL with its key.
    const problems = result.issues.map((issue) => {
      const path = v.getDotPath(issue);
      return path ? `${path}: ${issue.input === undefined ? 'is missing' : issue.message}` : `(root): ${issue.message}`;
    });
    throw new RpcUrlsError(`secret ${secretId}: ${problems.join('; ')}`);
  }
  return result.output;
}

/**
 * The URLs from a Secrets Manager secret, through Powertools' cache (RPC_URLS_MAX_AGE_SECONDS).
 * A failed read is not cached and is retried on the next call; after a value that does not
 * validate (e.g. the placeholder), the next call reads past the cache, so the operator's fix is
 * seen at once.
 */
export function secretRpcUrls(secretId: string): RpcUrlSource {
  let refused = false;
  return async () => {
    const raw = await getSecret(secretId, { maxAge: RPC_URLS_MAX_AGE_SECONDS, forceFetch: refused });
    try {
      const urls = parseRpcUrls(secretId, raw);
      refused = false;
      return urls;
    } catch (error) {
      refused = true;
      throw error;
    }
  };
}

/** The optional field of the same secret with LI.FI's API key (docs/bridge.md; `x-lifi-api-key` only raises rate limits). */
export const BRIDGE_API_KEY_FIELD = 'LIFI_API_KEY';

/**
 * The bridge API key from the RPC URLs' secret (same cache as secretRpcUrls), or none: the key is
 * optional, so a secret without it, or one that cannot be read, means requests without it.
 */
export function secretBridgeApiKey(secretId: string): () => Promise<string | undefined> {
  return async () => {
    try {
      const raw = await getSecret(secretId, { maxAge: RPC_URLS_MAX_AGE_SECONDS });
      const value = typeof raw === 'string' ? (JSON.parse(raw) as Record<string, unknown>)[BRIDGE_API_KEY_FIELD] : undefined;
      return typeof value === 'string' && value !== '' ? value : undefined;
    } catch {
      return undefined;
    }
  };
}
