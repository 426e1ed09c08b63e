import { appendFileSync } from 'node:fs';
import { importJWK, SignJWT } from 'jose';
import { inject } from 'vitest';
import type { Sandbox, TestApp } from './global-setup.ts';

/** Helpers for black-box API tests: HTTP calls to the sandbox and JWTs from the test IdPs. */
export const sandbox: Sandbox = inject('sandbox');
export const [appOne, appTwo] = sandbox.apps as [TestApp, TestApp];
/** The app whose signing policy test/api/policies.test.ts sets (global-setup.ts TEST_APPS): no other file may use it. */
export const policyApp = sandbox.apps[2] as TestApp;
/** The app whose policies test/api/policies-evaluate.test.ts sets (global-setup.ts TEST_APPS): no other file may use it. */
export const policyEvaluateApp = sandbox.apps[3] as TestApp;
/** The app whose webhook endpoints test/api/webhook-endpoints.test.ts fills to the limit (global-setup.ts TEST_APPS): no other file may use it. */
export const webhooksApp = sandbox.apps[4] as TestApp;
/** The app whose events test/api/events.test.ts receives (global-setup.ts TEST_APPS): no other file may use it. */
export const eventsApp = sandbox.apps[5] as TestApp;

export interface ApiResponse<T = any> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export async function call<T = any>(
  service: keyof Sandbox['urls'],
  method: string,
  path: string,
  options: { headers?: Record<string, string>; json?: unknown; rawBody?: string } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined = options.rawBody;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${sandbox.urls[service]}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: tests that expect JSON will fail on the shape.
  }
  registerSecrets(parsed);
  registerPublicHashes(parsed);
  registerPublicHashes(options.json);
  return { status: response.status, headers: response.headers, body: parsed as T };
}

const HASH_32 = /^0x[0-9a-fA-F]{64}$/;

/**
 * Records the 32-byte hex values that are public by nature (transaction hashes a response
 * returned, hashes a test asked to have signed), which log lines may carry; the scan flags any
 * other 0x + 64 hex as a possible private key.
 */
export function registerPublicHashes(value: unknown): void {
  if (!sandbox.publicValuesFile || value === null || typeof value !== 'object') return;
  for (const [key, inner] of Object.entries(value)) {
    if (typeof inner === 'string' && HASH_32.test(inner) && /hash|tx/i.test(key)) {
      appendFileSync(sandbox.publicValuesFile, `${inner.toLowerCase()}\n`, { mode: 0o600 });
    } else if (typeof inner === 'object') {
      registerPublicHashes(inner);
    }
  }
}

/** Response fields that hold a credential: the log scan at the end of the run looks for their values. */
const SECRET_FIELD =
  /^(access_key|secret_key|api_key|private_key|secret|passphrase|op_jwt|service_token|[a-z_]*_secret|[a-z_]*_private_key|[a-z_]*_passphrase)$/;

/**
 * Records every credential a response handed the tests (wallet access keys, tokens, keys) in the
 * run's secrets file, so the global teardown can prove none of them reached a log line.
 */
export function registerSecrets(body: unknown, path = ''): void {
  if (!sandbox.secretsFile || body === null || typeof body !== 'object') return;
  for (const [key, value] of Object.entries(body)) {
    if (typeof value === 'string' && SECRET_FIELD.test(key) && value.length >= 12) {
      appendFileSync(sandbox.secretsFile, `${JSON.stringify({ label: `${path}${key} received by a test`, value })}\n`, { mode: 0o600 });
    } else if (typeof value === 'object') {
      registerSecrets(value, `${path}${key}.`);
    }
  }
}

export async function mintToken(
  app: TestApp,
  sub: string,
  options: { ttlSeconds?: number; iat?: number | null; issuer?: string; audience?: string | null; jti?: string | null; claims?: Record<string, unknown> } = {},
): Promise<string> {
  // iat null: the token carries none (exp still counts from now).
  const iat = options.iat ?? Math.floor(Date.now() / 1000);
  // A fresh random jti on every token (null: none): the enclave accepts an op_jwt once, so a test mints one per call.
  const jti = options.jti === undefined ? crypto.randomUUID() : options.jti;
  const jwt = new SignJWT({ ...(jti === null ? {} : { jti }), ...options.claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: app.privateJwk.kid! })
    .setIssuer(options.issuer ?? app.issuer)
    .setSubject(sub)
    .setExpirationTime(iat + (options.ttlSeconds ?? 300));
  if (options.iat !== null) jwt.setIssuedAt(iat);
  if (options.audience !== null) jwt.setAudience(options.audience ?? app.audience);
  return jwt.sign(await importJWK(app.privateJwk, 'ES256'));
}

/** A user id unique to one test, so tests never share state. */
export function uniqueUser(label: string): string {
  return `${label}-${crypto.randomUUID()}`;
}

export async function accountHeaders(app: TestApp, sub: string): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await mintToken(app, sub)}`, 'x-service-secret-key': app.secret_key };
}

export function expectErrorShape(body: unknown): { code: string; message: string } {
  const error = (body as { success?: unknown; error?: { code?: unknown; message?: unknown } }).error;
  if ((body as { success?: unknown }).success !== false || typeof error?.code !== 'string' || typeof error.message !== 'string') {
    throw new Error(`not the JSON error shape: ${JSON.stringify(body)}`);
  }
  return error as { code: string; message: string };
}

export async function expressHeaders(app: TestApp, sub: string, chain: string, options: { providerId?: string } = {}): Promise<Record<string, string>> {
  return {
    authorization: `Bearer ${await mintToken(app, sub)}`,
    'x-service-api-key': app.api_key,
    'x-oidc-provider-id': options.providerId ?? app.provider_id,
    'x-service-chain': chain,
  };
}
