import { createLocalJWKSet, createRemoteJWKSet, errors, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { type Application, audiencesOf, maxTokenAgeOf } from '../apps/application.ts';
import { UnauthorizedError } from '../errors.ts';

/** Asymmetric algorithms only: `none` and HMAC are never accepted. */
export const ACCEPTED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** Longest op_jwt lifetime (`exp - iat`) the enclave accepts: spec, Limits. */
export const MAX_OP_JWT_LIFETIME_SECONDS = 300;

/**
 * Longest `sub` accepted, in UTF-8 bytes: OpenID Connect Core 1.0 (section 2) caps it at 255 ASCII
 * characters. `sub` becomes part of DynamoDB keys (`ACCOUNT#…`, `IDEMP#…`, whose partition key
 * may hold at most 2,048 bytes), so a longer one is refused with the token, not at the table.
 */
export const MAX_SUBJECT_BYTES = 255;

/**
 * Latest `exp` accepted, in seconds from now, for every token (10 years): a later one, or one that
 * is not a finite number (`1e308`), is absurd and refused whatever the app's settings.
 */
export const MAX_EXP_AHEAD_SECONDS = 10 * 365 * 24 * 3600;

/**
 * The claim naming the app an op_jwt is for. The platform's op_jwt key is trusted by every app, so
 * a token it signs must say which one (two tenants may share an issuer and an audience); an
 * identity provider's op_jwt may carry it too, and is then refused by any other app.
 */
export const OP_JWT_APP_CLAIM = 'app_id';

/** Longest `jti` accepted, in UTF-8 bytes: it becomes part of a table key (`OPJWT#<app_id>#<jti>`). */
export const MAX_JTI_BYTES = 255;

/** Tolerated clock difference between a token's issuer (the IdP, the op_jwt minter) and us. */
const CLOCK_SKEW_SECONDS = 30;
const OP_JWT_CLOCK_SKEW_SECONDS = CLOCK_SKEW_SECONDS;

export interface Identity {
  readonly iss: string;
  readonly sub: string;
}

/** A verified op_jwt: the identity it names, and what its single use is recorded by. */
export interface OpJwtIdentity extends Identity {
  readonly jti: string;
  readonly exp: number;
  /**
   * The door the signature came through, for the app's policy (issue 22), read from who signed
   * the token: the identity provider (the app itself) → `enclave`; a platform key (trusted_keys)
   * → `account` when the token says so in OP_JWT_CHANNEL_CLAIM, else `express`. An app cannot
   * reach `account` or `express`: it holds no platform key, and the claim is ignored on its tokens.
   */
  readonly channel: 'account' | 'enclave' | 'express';
}

/** Claim the account service's op_jwts carry (`"account"`): the policy channel of a platform-signed op_jwt. */
export const OP_JWT_CHANNEL_CLAIM = 'channel';

type KeySetKind = 'idp' | 'op';
const keySets = new Map<string, JWTVerifyGetKey>();

/**
 * The app's identity-provider key set (`idp`), or that set plus the app's trusted op_jwt
 * signing keys (`op`). Cached per container; keyed by the app's key material so a changed
 * key set is picked up.
 */
function keySetFor(app: Application, kind: KeySetKind): JWTVerifyGetKey {
  const cacheKey = JSON.stringify([kind, app.app_id, app.oidc.jwks_uri, app.oidc.jwks, kind === 'op' ? app.trusted_keys : null]);
  let getKey = keySets.get(cacheKey);
  if (!getKey) {
    const idp = app.oidc.jwks_uri ? createRemoteJWKSet(new URL(app.oidc.jwks_uri)) : createLocalJWKSet(app.oidc.jwks ?? { keys: [] });
    if (kind === 'op' && app.trusted_keys.length > 0) {
      const trusted = createLocalJWKSet({ keys: [...app.trusted_keys] });
      const trustedKids = new Set(app.trusted_keys.map((key) => key.kid));
      getKey = (header, token) => (header.kid && trustedKids.has(header.kid) ? trusted(header, token) : idp(header, token));
    } else {
      getKey = idp;
    }
    keySets.set(cacheKey, getKey);
  }
  return getKey;
}

function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'token has expired';
  if (error instanceof errors.JWTClaimValidationFailed) return `claim "${error.claim}" is invalid: ${error.reason}`;
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'signature verification failed';
  if (error instanceof errors.JWKSNoMatchingKey) return 'no trusted key matches the token';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'signing algorithm is not accepted';
  if (error instanceof errors.JOSEError) return 'token is malformed or not verifiable';
  return 'token could not be verified';
}

async function verify(app: Application, token: string, kind: KeySetKind, code: string, what: string, now?: Date) {
  try {
    const { payload, protectedHeader } = await jwtVerify(token, keySetFor(app, kind), {
      issuer: app.oidc.issuer,
      // Always set (registration requires it): a token for another client of a shared issuer is refused.
      audience: audiencesOf(app.oidc),
      algorithms: ACCEPTED_ALGORITHMS,
      // A token without `exp` would never expire; without `iat` its age is unknown.
      requiredClaims: ['exp', 'iat'],
      currentDate: now,
    });
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) {
      throw new UnauthorizedError(code, `${what} has no "sub" claim`);
    }
    if (Buffer.byteLength(payload.sub, 'utf8') > MAX_SUBJECT_BYTES) {
      throw new UnauthorizedError(code, `${what} "sub" claim is longer than ${MAX_SUBJECT_BYTES} bytes`);
    }
    const nowSeconds = Math.floor((now ?? new Date()).getTime() / 1000);
    if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp) || payload.exp > nowSeconds + MAX_EXP_AHEAD_SECONDS) {
      throw new UnauthorizedError(code, `${what} "exp" claim is more than ${MAX_EXP_AHEAD_SECONDS} seconds (10 years) ahead`);
    }
    return { payload: payload as JWTPayload & { sub: string; iss: string }, kid: protectedHeader.kid };
  } catch (error) {
    if (error instanceof UnauthorizedError) throw error;
    throw new UnauthorizedError(code, `${what} rejected: ${describe(error)}`);
  }
}

/** A user's identity-provider JWT (account service Bearer token, enclave `auth_jwt`). */
export async function verifyUserJwt(app: Application, token: string, now?: Date): Promise<Identity> {
  const { payload } = await verify(app, token, 'idp', 'INVALID_TOKEN', 'JWT', now);
  assertTokenAge(payload, maxTokenAgeOf(app.oidc), Math.floor((now ?? new Date()).getTime() / 1000));
  return { iss: payload.iss, sub: payload.sub };
}

/**
 * The app's maximum token age (DEFAULT_MAX_TOKEN_AGE_SECONDS, or the app's lower
 * `max_token_age_seconds`): the token must carry `iat`, not ahead of our clock (beyond the skew),
 * issued at most that long ago, and with a lifetime (`exp - iat`) of at most that long. So no
 * token it accepts is valid for longer than the limit after it was issued.
 */
function assertTokenAge(payload: JWTPayload, maxAge: number, nowSeconds: number): void {
  const iat = payload.iat;
  if (typeof iat !== 'number' || !Number.isFinite(iat)) {
    throw new UnauthorizedError('INVALID_TOKEN', 'JWT must carry "iat": token age is limited');
  }
  if (iat > nowSeconds + CLOCK_SKEW_SECONDS) throw new UnauthorizedError('INVALID_TOKEN', 'JWT "iat" is in the future');
  if (nowSeconds - iat > maxAge) throw new UnauthorizedError('INVALID_TOKEN', `JWT is older than the app's maximum token age (${maxAge} seconds)`);
  // verify() requires a finite "exp" before this runs.
  if (typeof payload.exp !== 'number') throw new Error('internal: assertTokenAge needs a verified token, which carries "exp"');
  if (payload.exp - iat > maxAge) throw new UnauthorizedError('INVALID_TOKEN', `JWT lifetime exceeds the app's maximum token age (${maxAge} seconds)`);
}

/**
 * An `op_jwt`: verified against the app's identity provider and trusted signing keys, and
 * short-lived: it must carry `iat` and `exp` no more than 300 seconds apart (spec, Limits). It
 * must carry a `jti` (its single use is recorded by the caller: op-jwt-replay.ts), and be for this
 * app: one signed by a trusted (platform) key names the app in `app_id`, and any `app_id` must match.
 */
export async function verifyOpJwt(app: Application, token: string, now?: Date): Promise<OpJwtIdentity> {
  const { payload, kid } = await verify(app, token, 'op', 'INVALID_OP_JWT', 'op_jwt', now);
  if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number') {
    throw new UnauthorizedError('INVALID_OP_JWT', 'op_jwt must carry "iat" and "exp"');
  }
  // exp - iat alone lets a future-dated token outlive the limit; iat must not be ahead of our clock.
  const nowSeconds = Math.floor((now ?? new Date()).getTime() / 1000);
  if (payload.iat > nowSeconds + OP_JWT_CLOCK_SKEW_SECONDS) {
    throw new UnauthorizedError('INVALID_OP_JWT', 'op_jwt "iat" is in the future');
  }
  if (payload.exp - payload.iat > MAX_OP_JWT_LIFETIME_SECONDS) {
    const help = app.op_jwt_help ? `; ${app.op_jwt_help}` : '';
    throw new UnauthorizedError(
      'INVALID_OP_JWT',
      `op_jwt lifetime exceeds ${MAX_OP_JWT_LIFETIME_SECONDS} seconds (exp - iat is ${payload.exp - payload.iat}): mint one that expires at most ${MAX_OP_JWT_LIFETIME_SECONDS} seconds after its iat${help}`,
    );
  }
  const jti = payload.jti;
  if (typeof jti !== 'string' || jti.length === 0 || Buffer.byteLength(jti, 'utf8') > MAX_JTI_BYTES) {
    throw new UnauthorizedError('INVALID_OP_JWT', `op_jwt must carry a "jti" of 1 to ${MAX_JTI_BYTES} bytes, fresh for every signing call`);
  }
  const platformSigned = kid !== undefined && app.trusted_keys.some((key) => key.kid === kid);
  const forApp = payload[OP_JWT_APP_CLAIM];
  if ((platformSigned || forApp !== undefined) && forApp !== app.app_id) {
    throw new UnauthorizedError('INVALID_OP_JWT', 'op_jwt was issued for another application');
  }
  const channel = !platformSigned ? 'enclave' : payload[OP_JWT_CHANNEL_CLAIM] === 'account' ? 'account' : 'express';
  return { iss: payload.iss, sub: payload.sub, jti, exp: payload.exp, channel };
}
