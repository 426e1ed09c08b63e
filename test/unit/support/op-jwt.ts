import { importJWK, type JWK, SignJWT } from 'jose';

/**
 * An op_jwt as an identity provider mints one for the enclave's unit tests: ES256 under `key`
 * (its `kid` in the header), a fresh `jti`, `iat` at `now`, expiring `ttlSeconds` later (120).
 */
export async function signTestOpJwt(
  key: JWK,
  claims: { iss: string; aud: string; sub: string; now?: Date; ttlSeconds?: number; extra?: Record<string, unknown> },
): Promise<string> {
  const iat = Math.floor((claims.now ?? new Date()).getTime() / 1000);
  return new SignJWT({ jti: crypto.randomUUID(), ...claims.extra })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid! })
    .setIssuer(claims.iss)
    .setAudience(claims.aud)
    .setSubject(claims.sub)
    .setIssuedAt(iat)
    .setExpirationTime(iat + (claims.ttlSeconds ?? 120))
    .sign(await importJWK(key, 'ES256'));
}
