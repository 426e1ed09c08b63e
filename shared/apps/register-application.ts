import { randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import { ConflictError } from '../errors.ts';
import type { Table } from '../db/client.ts';
import { type Application, DEFAULT_WALLET_GROUP_ID, type OidcProvider } from './application.ts';
import { getApplication, hashSecret, putApplication } from './app-registry.ts';

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
