import type { JSONWebKeySet, JWK } from 'jose';

/**
 * What an app id may be: 1-64 letters, digits, ".", "_" or "-" (app:create and APPS_FILE hold
 * new ids to it). An id from a caller (a service token's `sub`) that is not one names no app,
 * and is never sent to the table as part of a key.
 */
export const APP_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** An application (tenant) of the platform and its identity provider. */
export interface OidcProvider {
  readonly provider_id: string;
  readonly issuer: string;
  /** When set, user JWTs must carry it in `aud`. */
  readonly audience?: string;
  /** Inline key set, or `jwks_uri` to fetch it (cached). One of the two is required. */
  readonly jwks?: JSONWebKeySet;
  readonly jwks_uri?: string;
  /**
   * When set, user JWTs must carry `iat`, be at most this many seconds old and have a lifetime
   * (`exp - iat`) of at most this long (401 INVALID_TOKEN otherwise). Unset: no limit beyond `exp`
   * (which may never be more than 10 years ahead, for any app).
   */
  readonly max_token_age_seconds?: number;
}

/** Bounds of `max_token_age_seconds`: one minute to one year. */
export const MAX_TOKEN_AGE_BOUNDS = { min: 60, max: 365 * 24 * 3600 } as const;

export interface Application {
  readonly app_id: string;
  readonly created_at: string;
  readonly oidc: OidcProvider;
  /** sha256 (hex) of the secret key; the key itself is never stored. */
  readonly secret_key_hash: string;
  /** sha256 (hex) of the API key used by the express wallet service. */
  readonly api_key_hash: string;
  /**
   * Public keys, besides the identity provider's, trusted to sign op_jwt for this app's users:
   * the account service's own signing key (KMS asymmetric in AWS, a DATA_DIR key locally).
   */
  readonly trusted_keys: readonly JWK[];
  /** The wallet group the account and express services use for a user's wallets. */
  readonly default_wallet_group_id: string;
  /**
   * Provider ids from the deprecated iframe-based login, still accepted as X-OIDC-Provider-ID by
   * the express service (answered with a Deprecation header). They name the same provider.
   */
  readonly legacy_provider_ids?: readonly string[];
  /**
   * How this app's users get a valid op_jwt, added to the enclave's refusal of one that lives too
   * long. Only the local sandbox's dev app has it (its identity provider is `npm run token`);
   * an app of a deployment brings its own provider, and the message then names none.
   */
  readonly op_jwt_help?: string;
}

export const DEFAULT_WALLET_GROUP_ID = 'default';
