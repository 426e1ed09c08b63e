import { randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import type { Table } from '../db/client.ts';
import { ConflictError, ValidationError } from '../errors.ts';
import { PLATFORM_APP_ID, PLATFORM_ISSUER_FOR_WALLETS } from '../withdrawals/gas-sponsor.ts';
import { getApplication, hashSecret, putApplication } from './app-registry.ts';
import { type Application, audienceProblem, DEFAULT_WALLET_GROUP_ID, type OidcProvider } from './application.ts';

export interface NewApplication {
  readonly app_id: string;
  readonly oidc: OidcProvider;
  readonly created_at?: Date;
  /** The account service's op_jwt public key(s), trusted to sign op_jwt for this app's users. */
  readonly trusted_keys: readonly JWK[];
  readonly legacy_provider_ids?: readonly string[];
}

/**
 * Registers an application with fresh credentials and returns them once; only their sha256
 * digests are stored. Refuses an app id that exists (credentials are never silently replaced).
 */
export async function registerApplication(table: Table, input: NewApplication): Promise<{ app: Application; secret_key: string; api_key: string }> {
  if (input.app_id === PLATFORM_APP_ID) {
    throw new ConflictError('APP_ID_RESERVED', `"${PLATFORM_APP_ID}" is reserved for the platform application (npm run app:create -- --platform)`);
  }
  const audience = audienceProblem(input.oidc.audience);
  if (audience) throw new ValidationError(`oidc.audience ${audience}`);
  if (await getApplication(table, input.app_id)) {
    throw new ConflictError('APP_EXISTS', `An application "${input.app_id}" already exists`);
  }
  const secretKey = `sk_${randomBytes(32).toString('base64url')}`;
  const apiKey = `ak_${randomBytes(32).toString('base64url')}`;
  const app: Application = {
    app_id: input.app_id,
    created_at: (input.created_at ?? new Date()).toISOString(),
    oidc: input.oidc,
    secret_key_hash: hashSecret(secretKey),
    api_key_hash: hashSecret(apiKey),
    trusted_keys: input.trusted_keys,
    default_wallet_group_id: DEFAULT_WALLET_GROUP_ID,
    ...(input.legacy_provider_ids?.length ? { legacy_provider_ids: input.legacy_provider_ids } : {}),
  };
  await putApplication(table, app);
  return { app, secret_key: secretKey, api_key: apiKey };
}

/**
 * The platform application: its identity provider is the platform's own op_jwt key, so platform
 * services can hold enclave wallets of their own (the gas sponsor). Its secret and API key are
 * random and never shown: nobody calls the APIs as this app.
 */
export function platformApplication(platformKey: JWK): Application {
  return {
    app_id: PLATFORM_APP_ID,
    created_at: new Date(0).toISOString(),
    // Its tokens are minted by the platform for itself: the issuer is its audience too.
    oidc: { provider_id: 'platform', issuer: PLATFORM_ISSUER_FOR_WALLETS, audience: PLATFORM_ISSUER_FOR_WALLETS, jwks: { keys: [platformKey] } },
    secret_key_hash: hashSecret(randomBytes(32).toString('base64url')),
    api_key_hash: hashSecret(randomBytes(32).toString('base64url')),
    trusted_keys: [platformKey],
    default_wallet_group_id: DEFAULT_WALLET_GROUP_ID,
  };
}
