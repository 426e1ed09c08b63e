import { createLocalJWKSet, decodeJwt, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { AppRegistry } from '../apps/app-registry.ts';
import type { Application } from '../apps/application.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { UnauthorizedError } from '../errors.ts';
import { ACCEPTED_ALGORITHMS, MAX_OP_JWT_LIFETIME_SECONDS } from './jwt.ts';

/**
 * Platform service → enclave authentication, for callers that do not hold the app's secret key
 * (the express wallet service knows apps by their API key). The caller signs a short-lived JWT
 * with the platform's op_jwt key, which every app lists in `trusted_keys`; the enclave verifies it
 * against that app's trusted keys only (never the identity provider's), so neither a user's JWT nor
 * an op_jwt can stand in for it: issuer and audience differ.
 */
export const SERVICE_TOKEN_HEADER = 'x-service-token';
export const PLATFORM_ISSUER = 'urn:perp-wallet:platform';
export const ENCLAVE_AUDIENCE = 'urn:perp-wallet:enclave';

export function mintServiceToken(signer: OpJwtSigner, appId: string): Promise<string> {
  return signer.sign({ iss: PLATFORM_ISSUER, sub: appId, aud: ENCLAVE_AUDIENCE, app_id: appId });
}

/** Service tokens live 2 minutes; this reuses one per app for a minute (each costs a KMS Sign in AWS). A failed mint is not kept. */
export class ServiceTokenCache {
  readonly #tokens = new Map<string, { token: Promise<string>; until: number }>();

  get(signer: OpJwtSigner, appId: string, now: number): Promise<string> {
    let cached = this.#tokens.get(appId);
    if (!cached || cached.until <= now) {
      cached = { token: mintServiceToken(signer, appId), until: now + 60_000 };
      cached.token.catch(() => this.#tokens.delete(appId));
      this.#tokens.set(appId, cached);
    }
    return cached.token;
  }
}

export async function verifyServiceToken(registry: AppRegistry, token: string, now?: Date): Promise<Application> {
  const invalid = (why: string) => new UnauthorizedError('INVALID_SERVICE_TOKEN', `service token rejected: ${why}`);
  let appId: unknown;
  try {
    appId = decodeJwt(token).sub;
  } catch {
    throw invalid('malformed');
  }
  const app = typeof appId === 'string' ? await registry.findById(appId) : undefined;
  if (!app || app.trusted_keys.length === 0) throw invalid('unknown application');
  try {
    const { payload } = await jwtVerify(token, trustedKeySet(app), {
      issuer: PLATFORM_ISSUER,
      audience: ENCLAVE_AUDIENCE,
      subject: app.app_id,
      algorithms: ACCEPTED_ALGORITHMS,
      requiredClaims: ['iat', 'exp'],
      currentDate: now,
    });
    // requiredClaims makes jose refuse a token without numeric iat and exp: this only narrows the types.
    if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number') throw invalid('"iat" and "exp" are required');
    if (payload.exp - payload.iat > MAX_OP_JWT_LIFETIME_SECONDS) throw invalid('lifetime too long');
  } catch (error) {
    if (error instanceof UnauthorizedError) throw error;
    throw invalid('not signed by a trusted platform key, expired, or not for the enclave');
  }
  return app;
}

const trustedKeySets = new Map<string, JWTVerifyGetKey>();

/**
 * The app's trusted platform keys as a key set, kept per container and keyed by the keys
 * themselves (a changed set is a new entry): jose imports a key set's keys on first use and keeps
 * them, so a set made per call imported its key on every call.
 */
function trustedKeySet(app: Application): JWTVerifyGetKey {
  const cacheKey = JSON.stringify(app.trusted_keys);
  let keySet = trustedKeySets.get(cacheKey);
  if (!keySet) {
    keySet = createLocalJWKSet({ keys: [...app.trusted_keys] });
    trustedKeySets.set(cacheKey, keySet);
  }
  return keySet;
}
