import * as v from 'valibot';
import { getSecureParameter } from './ssm-parameter.ts';

/**
 * The chains' RPC URLs, kept out of the function environment and the CloudFormation template
 * (hosted RPC URLs carry API keys in the path). RPC_URLS_PARAMETER names an SSM SecureString
 * parameter whose value is `{ "ETH": url, "ARB": url, "POL": url, "INK": url, "SOL": url }`.
 * It is read decrypted (ssm-parameter.ts), once per container and on the first chain call, so
 * a cold start makes no AWS call and a request that never reaches a chain never reads it. The value is never logged, and no error message repeats it.
 */
const Url = v.pipe(v.string('must be a string'), v.url('must be a URL'));

export const RpcUrlsSchema = v.object({ ETH: Url, ARB: Url, POL: Url, INK: Url, SOL: Url }, 'must be a JSON object');
export type RpcUrls = v.InferOutput<typeof RpcUrlsSchema>;

/** Where the URLs come from when CHAINS_CONFIG leaves them out. */
export type RpcUrlSource = () => Promise<RpcUrls>;

export class RpcUrlsError extends Error {}

/** Validates the parameter's value; the message names keys and problems, never the value. */
export function parseRpcUrls(parameterName: string, raw: string | undefined): RpcUrls {
  let json: unknown;
  try {
    json = JSON.parse(raw ?? '');
  } catch {
    throw new RpcUrlsError(`SSM parameter ${parameterName}: must be JSON`);
  }
  const result = v.safeParse(RpcUrlsSchema, json);
  if (!result.success) {
    // Only our own messages (every schema above has one): valibot's defaults quote the received
    // value, which would be a URL with its key.
    const problems = result.issues.map((issue) => {
      const path = v.getDotPath(issue);
      return path ? `${path}: ${issue.input === undefined ? 'is missing' : issue.message}` : `(root): ${issue.message}`;
    });
    throw new RpcUrlsError(`SSM parameter ${parameterName}: ${problems.join('; ')}`);
  }
  return result.output;
}

const readSecureString = (name: string): Promise<string | undefined> => getSecureParameter(name);

/** The URLs from an SSM SecureString parameter: one read per container (a failed read is retried on the next call). */
export function ssmRpcUrls(parameterName: string, read: (name: string) => Promise<string | undefined> = readSecureString): RpcUrlSource {
  let urls: Promise<RpcUrls> | undefined;
  return () => {
    urls ??= read(parameterName)
      .then((raw) => parseRpcUrls(parameterName, raw))
      .catch((error: unknown) => {
        urls = undefined;
        throw error;
      });
    return urls;
  };
}
