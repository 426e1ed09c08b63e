import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JWK } from 'jose';
import { generateEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import * as v from 'valibot';
import { APP_ID_PATTERN, type Application, DEFAULT_WALLET_GROUP_ID, MAX_TOKEN_AGE_BOUNDS } from '../../shared/apps/application.ts';
import { hashSecret } from '../../shared/apps/app-registry.ts';
import { PLATFORM_APP_ID } from '../../shared/withdrawals/gas-sponsor.ts';

/**
 * Applications for the local runtime: from `APPS_FILE` (a JSON array), or a dev app generated
 * once into DATA_DIR with its own dev issuer key (`npm run token` mints JWTs with it).
 */
const Jwks = v.object({ keys: v.array(v.looseObject({ kty: v.string() })) });

const AGE_RULE = `must be whole seconds from ${MAX_TOKEN_AGE_BOUNDS.min} to ${MAX_TOKEN_AGE_BOUNDS.max}`;

export const AppFileEntry = v.pipe(
  v.object({
    app_id: v.pipe(
      v.string(),
      v.regex(APP_ID_PATTERN, 'must be 1-64 letters, digits, ".", "_" or "-"'),
      v.check((id) => id !== PLATFORM_APP_ID, `"${PLATFORM_APP_ID}" is reserved for the platform application`),
    ),
    secret_key: v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters')),
    api_key: v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters')),
    created_at: v.pipe(
      v.string(),
      v.regex(/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/, 'must be an ISO 8601 date or timestamp'),
      v.check((value) => !Number.isNaN(Date.parse(value)), 'must be a valid date'),
    ),
    default_wallet_group_id: v.optional(v.string()),
    /** Provider ids of the deprecated iframe-based login, still accepted by the express service. */
    legacy_provider_ids: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
    oidc: v.object({
      provider_id: v.pipe(v.string(), v.minLength(1)),
      issuer: v.pipe(v.string(), v.minLength(1)),
      audience: v.optional(v.string()),
      jwks: v.optional(Jwks),
      jwks_uri: v.optional(v.pipe(v.string(), v.url())),
      max_token_age_seconds: v.optional(
        v.pipe(
          v.number(),
          v.integer(AGE_RULE),
          v.minValue(MAX_TOKEN_AGE_BOUNDS.min, AGE_RULE),
          v.maxValue(MAX_TOKEN_AGE_BOUNDS.max, AGE_RULE),
        ),
      ),
    }),
  }),
  v.check((app) => Boolean(app.oidc.jwks) !== Boolean(app.oidc.jwks_uri), 'oidc needs exactly one of "jwks" or "jwks_uri"'),
);
export type AppFileEntry = v.InferOutput<typeof AppFileEntry>;

export async function readAppsFile(path: string): Promise<AppFileEntry[]> {
  const raw = JSON.parse(await readFile(path, 'utf8')) as unknown;
  const result = v.safeParse(v.pipe(v.array(AppFileEntry), v.minLength(1, 'must list at least one app')), raw);
  if (!result.success) {
    const problems = result.issues.map((issue) => `${v.getDotPath(issue) ?? '(root)'}: ${issue.message}`);
    throw new Error(`APPS_FILE ${path} is invalid: ${problems.join('; ')}`);
  }
  return result.output;
}

export function toApplication(entry: AppFileEntry, trustedKeys: JWK[]): Application {
  return {
    app_id: entry.app_id,
    created_at: new Date(entry.created_at).toISOString(),
    oidc: entry.oidc as Application['oidc'],
    secret_key_hash: hashSecret(entry.secret_key),
    api_key_hash: hashSecret(entry.api_key),
    trusted_keys: trustedKeys,
    default_wallet_group_id: entry.default_wallet_group_id ?? DEFAULT_WALLET_GROUP_ID,
    ...(entry.legacy_provider_ids?.length ? { legacy_provider_ids: entry.legacy_provider_ids } : {}),
  };
}

export const DEV_ISSUER = 'https://dev-idp.sandbox.local';
export const DEV_AUDIENCE = 'perp-wallet-dev';

export function devAppPaths(dataDir: string) {
  return { app: join(dataDir, 'dev-app.json'), issuerKey: join(dataDir, 'keys', 'dev-issuer.jwk.json') };
}

/** The dev app and its issuer key, created on first start and kept in DATA_DIR. */
export async function loadOrCreateDevApp(dataDir: string): Promise<AppFileEntry> {
  const paths = devAppPaths(dataDir);
  try {
    return v.parse(AppFileEntry, JSON.parse(await readFile(paths.app, 'utf8')));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  const entry: AppFileEntry = {
    app_id: 'dev-app',
    secret_key: `sk_dev_${randomBytes(24).toString('base64url')}`,
    api_key: `ak_dev_${randomBytes(24).toString('base64url')}`,
    created_at: new Date().toISOString(),
    oidc: {
      provider_id: 'dev-idp',
      issuer: DEV_ISSUER,
      audience: DEV_AUDIENCE,
      jwks: { keys: [publicJwk as { kty: string }] },
    },
  };
  await mkdir(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
  await writeFile(paths.issuerKey, JSON.stringify(privateJwk), { mode: 0o600 });
  await writeFile(paths.app, JSON.stringify(entry, null, 2), { mode: 0o600 });
  return entry;
}
