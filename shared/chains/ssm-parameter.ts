import { createHash, createHmac } from 'node:crypto';

/**
 * SSM GetParameter (WithDecryption) as one SigV4-signed HTTPS call: the SSM JSON 1.1 protocol
 * (`X-Amz-Target: AmazonSSM.GetParameter`), signed with the function's credentials from its
 * environment (Lambda sets AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
 *
 * Why not the SDK: @aws-sdk/client-ssm carries every SSM operation's schema and exception class
 * (~80 KB), Powertools Parameters a little more, in each chain function, to read one parameter
 * once per container (bench:bundles: Withdraw 763 KB over the 700 KB budget). Signing is checked
 * against @smithy/signature-v4 in test/unit/ssm-parameter.test.ts.
 * Errors name the parameter and SSM's error type, never the value.
 */
export interface SsmEnvironment {
  readonly AWS_REGION?: string;
  readonly AWS_ACCESS_KEY_ID?: string;
  readonly AWS_SECRET_ACCESS_KEY?: string;
  readonly AWS_SESSION_TOKEN?: string;
  /** LocalStack or a VPC endpoint; the SDK honours the same variables. */
  readonly AWS_ENDPOINT_URL_SSM?: string;
  readonly AWS_ENDPOINT_URL?: string;
}

export class SsmParameterError extends Error {}

const TIMEOUT_MS = 5_000;
const sha256Hex = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** The SigV4 `authorization` header (and the headers it signs) for a POST of `body` to `url`. */
export function signSsmRequest(
  url: URL,
  body: string,
  headers: Record<string, string>,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
  region: string,
  now: Date,
): Record<string, string> {
  const amzDate = now.toISOString().replace(/[:-]|\.\d{3}/g, ''); // 20261122T091500Z
  const day = amzDate.slice(0, 8);
  // x-amz-content-sha256 as the SDK's signer sends it (applyChecksum).
  const signed: Record<string, string> = { ...headers, host: url.host, 'x-amz-content-sha256': sha256Hex(body), 'x-amz-date': amzDate };
  if (credentials.sessionToken) signed['x-amz-security-token'] = credentials.sessionToken;
  const names = Object.keys(signed).map((name) => name.toLowerCase()).sort();
  const lower = Object.fromEntries(Object.entries(signed).map(([name, value]) => [name.toLowerCase(), value.trim().replace(/\s+/g, ' ')]));
  const canonicalRequest = ['POST', url.pathname || '/', '', ...names.map((name) => `${name}:${lower[name]}`), '', names.join(';'), sha256Hex(body)].join('\n');
  const scope = `${day}/${region}/ssm/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), region), 'ssm'), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return { ...signed, authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}` };
}

/** The decrypted value of a (SecureString) parameter; undefined when it has none. */
export async function getSecureParameter(name: string, env: SsmEnvironment = process.env, now: () => Date = () => new Date()): Promise<string | undefined> {
  const region = env.AWS_REGION;
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!region || !accessKeyId || !secretAccessKey) throw new SsmParameterError(`SSM parameter ${name}: no AWS region or credentials in the environment`);
  const url = new URL(env.AWS_ENDPOINT_URL_SSM ?? env.AWS_ENDPOINT_URL ?? `https://ssm.${region}.amazonaws.com/`);
  const body = JSON.stringify({ Name: name, WithDecryption: true });
  const headers = signSsmRequest(
    url,
    body,
    { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AmazonSSM.GetParameter' },
    { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN },
    region,
    now(),
  );
  delete headers.host; // fetch sets it from the URL
  const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(TIMEOUT_MS) });
  const answer = (await response.json().catch(() => ({}))) as { Parameter?: { Value?: string }; __type?: string };
  if (!response.ok) {
    const type = (answer.__type ?? `HTTP ${response.status}`).split('#').pop();
    throw new SsmParameterError(`SSM parameter ${name}: ${type}`);
  }
  return answer.Parameter?.Value;
}
