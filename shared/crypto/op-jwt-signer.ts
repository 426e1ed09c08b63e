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
  readonly aud?: string;
}

export interface OpJwtSigner {
  /** A compact ES256 JWT with `iat`, `exp` (lifetime ≤ 300 s), `jti` and `kid`. */
  sign(claims: OpJwtClaims): Promise<string>;
  /** The public key (with `kid`, `alg`, `use`) to register as trusted. */
  publicJwk(): Promise<JWK>;
}

/** Minted tokens live 2 minutes: ample for one call, well under the 5-minute ceiling. */
export const OP_JWT_TTL_SECONDS = 120;

export function opJwtPayload(claims: OpJwtClaims, now = Date.now()) {
  const iat = Math.floor(now / 1000);
  return {
    iss: claims.iss,
    sub: claims.sub,
    ...(claims.aud ? { aud: claims.aud } : {}),
    iat,
    exp: iat + OP_JWT_TTL_SECONDS,
    jti: crypto.randomUUID(),
  };
}
