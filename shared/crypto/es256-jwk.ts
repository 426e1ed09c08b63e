import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';

/**
 * An ES256 signing key as a JWK pair: the private half with `kid` and `alg`, the public half
 * (no `d`) with `kid`, `alg` and `use`, ready for a JWKS. `kid` is the RFC 7638 thumbprint.
 */
export interface Es256Jwk {
  readonly privateJwk: JWK;
  readonly publicJwk: JWK;
}

export async function describeEs256Jwk(privateJwk: JWK): Promise<Es256Jwk> {
  const { d: _d, kid: _kid, alg: _alg, use: _use, ...publicPart } = privateJwk;
  const kid = await calculateJwkThumbprint(publicPart);
  return { privateJwk: { ...privateJwk, kid, alg: 'ES256' }, publicJwk: { ...publicPart, kid, alg: 'ES256', use: 'sig' } };
}

export async function generateEs256Jwk(): Promise<Es256Jwk> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return describeEs256Jwk(await exportJWK(privateKey));
}
