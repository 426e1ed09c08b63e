import type { JSONWebKeySet, JWK } from 'jose';

/**
 * What an app id may be: 1-64 letters, digits, ".", "_" or "-" (app:create and APPS_FILE hold
 * new ids to it). An id from a caller (a service token's `sub`) that is not one names no app,
 * and is never sent to the table as part of a key.
 */
export const APP_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The client id(s) this app's identity provider puts in `aud`: one, or several (a web and a mobile
 * client). Required: with a shared issuer (Google, Apple, a multi-client Auth0 tenant) a token
 * without an audience check is any site's token.
 */
export type Audience = string | readonly string[];

/** An application (tenant) of the platform and its identity provider. */
export interface OidcProvider {
  readonly provider_id: string;
  readonly issuer: string;
  /** User JWTs and op_jwt must carry one of these in `aud` (401 otherwise). */
  readonly audience: Audience;
  /** Inline key set, or `jwks_uri` to fetch it (cached). One of the two is required. */
  readonly jwks?: JSONWebKeySet;
  readonly jwks_uri?: string;
  /**
   * Lowers the maximum age of user JWTs below DEFAULT_MAX_TOKEN_AGE_SECONDS: they must be at most
   * this many seconds old and live (`exp - iat`) at most this long (401 INVALID_TOKEN otherwise).
   */
  readonly max_token_age_seconds?: number;
}

/**
 * Maximum age and lifetime of a user JWT for every app (24 hours): the longest default lifetime
 * of the common identity providers (Auth0 access tokens: 86,400 s; Google, Apple and Cognito ID
 * tokens: 1 hour or less), so a provider's default tokens pass, while a leaked token, or one minted
 * to live a year, is good for a day at most. An app may lower it, never raise it.
 */
export const DEFAULT_MAX_TOKEN_AGE_SECONDS = 24 * 3600;

/** Bounds of `max_token_age_seconds`: one minute to the default (an app may only lower it). */
export const MAX_TOKEN_AGE_BOUNDS = { min: 60, max: DEFAULT_MAX_TOKEN_AGE_SECONDS } as const;

/** The token age limit that applies to an app: its own, never above the default. */
export function maxTokenAgeOf(oidc: OidcProvider): number {
  const own = oidc.max_token_age_seconds;
  return own !== undefined && own < DEFAULT_MAX_TOKEN_AGE_SECONDS ? own : DEFAULT_MAX_TOKEN_AGE_SECONDS;
}

/** The app's audiences as a list (at least one in a valid record). */
export function audiencesOf(oidc: Pick<OidcProvider, 'audience'>): string[] {
  return typeof oidc.audience === 'string' ? [oidc.audience] : [...oidc.audience];
}

/** What is wrong with an audience value (one non-empty string, or a non-empty list of them), or undefined. */
export function audienceProblem(audience: unknown): string | undefined {
  const REQUIRED = 'is required: the client id (one or more) the identity provider puts in "aud" of this app\'s user JWTs';
  if (audience === undefined || audience === null || audience === '') return REQUIRED;
  if (typeof audience === 'string') return undefined;
  if (!Array.isArray(audience)) return 'must be a string or a list of strings';
  if (audience.length === 0) return REQUIRED;
  if (!audience.every((value) => typeof value === 'string' && value !== '')) return 'must list non-empty strings only';
  return undefined;
}

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

/**
 * A stored application record that cannot be used (one written before the audience was
 * required): it is refused where it is loaded, naming the app and the field, so no token is ever
 * checked against it. Not a DomainError: a request that meets it is a 500, and this goes to the log.
 */
export class ApplicationRecordError extends Error {
  constructor(appId: string, field: string, problem: string) {
    super(`application "${appId}" (stored record): ${field} ${problem}`);
    this.name = 'ApplicationRecordError';
  }
}

/** Checks a record read from the table: the fields the authentication depends on must be there. */
export function assertUsableApplication(app: Application): Application {
  const problem = audienceProblem((app.oidc as { audience?: unknown } | undefined)?.audience);
  if (problem) throw new ApplicationRecordError(app.app_id, 'oidc.audience', problem);
  return app;
}
