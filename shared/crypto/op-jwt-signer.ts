import type { JWK } from 'jose';

/**
 * The account service's own op_jwt signing key (spec, Authentication: op_jwt of at most
 * 5 minutes, minted just before each signing call). Its public JWK is registered as a trusted
 * key of each app, so the enclave verifies op_jwt offline. KMS asymmetric key in AWS
 * (kms-op-jwt-signer.ts); an ES256 key in DATA_DIR locally (local-op-jwt-signer.ts).
 */
export interface OpJwtClaims {
  readonly iss: string;
  readonly sub: string;
  /** The app's audience (one or more): the enclave checks `aud` as it does for the identity provider's tokens. */
  readonly aud: string | readonly string[];
  /** The app the token is for (`app_id` claim): every app trusts this key, so the token says which one (verifyOpJwt). */
  readonly app_id: string;
  /**
   * `"account"` on the account service's tokens (wallet-signer.ts, the gas sponsor): the enclave's
   * policy channel (shared/auth/jwt.ts OP_JWT_CHANNEL_CLAIM). Absent on the express service's, which
   * the enclave then reads as `express`.
   */
  readonly channel?: 'account';
}

export interface OpJwtSigner {
  /** A compact ES256 JWT with `iat`, `exp` (lifetime ≤ 300 s), `jti` and `kid`. */
  sign(claims: OpJwtClaims): Promise<string>;
  /** The public key (with `kid`, `alg`, `use`) to register as trusted. */
  publicJwk(): Promise<JWK>;
}

/**
 * Minted tokens live 2 minutes: ample for one call, well under the 5-minute ceiling. Each carries
 * a fresh random `jti`: the enclave accepts an op_jwt once (shared/auth/op-jwt-replay.ts).
 */
export const OP_JWT_TTL_SECONDS = 120;

export function opJwtPayload(claims: OpJwtClaims, now = Date.now()) {
  const iat = Math.floor(now / 1000);
  return {
    iss: claims.iss,
    sub: claims.sub,
    aud: typeof claims.aud === 'string' ? claims.aud : [...claims.aud],
    app_id: claims.app_id,
    ...(claims.channel === undefined ? {} : { channel: claims.channel }),
    iat,
    exp: iat + OP_JWT_TTL_SECONDS,
    jti: crypto.randomUUID(),
  };
}
