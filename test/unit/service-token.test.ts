import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import type { Application } from '../../shared/apps/application.ts';
import { ENCLAVE_AUDIENCE, mintServiceToken, PLATFORM_ISSUER, verifyServiceToken } from '../../shared/auth/service-token.ts';
import { generateEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import { LocalOpJwtSigner } from '../../shared/crypto/local-op-jwt-signer.ts';
import { UnauthorizedError } from '../../shared/errors.ts';

/** Platform service tokens: how the express service identifies an app to the enclave. */
let platform: LocalOpJwtSigner;
let keyDir: string;
let idpKey: JWK;
let app: Application;
const registry = { findById: async (id: string) => (id === app.app_id ? app : undefined) } as unknown as AppRegistry;

afterAll(() => rm(keyDir, { recursive: true, force: true }));

beforeAll(async () => {
  keyDir = await mkdtemp(join(tmpdir(), 'service-token-'));
  platform = new LocalOpJwtSigner(keyDir);
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  idpKey = privateJwk;
  app = {
    app_id: 'acme',
    created_at: '2026-09-01T00:00:00Z',
    oidc: { provider_id: 'idp', issuer: 'https://idp.acme.test', audience: 'acme-api', jwks: { keys: [publicJwk] } },
    secret_key_hash: '00',
    api_key_hash: '00',
    trusted_keys: [await platform.publicJwk()],
    default_wallet_group_id: 'default',
  };
});

async function signWith(key: JWK, claims: { iss: string; sub: string; aud: string; ttl?: number }) {
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: key.kid! })
    .setIssuer(claims.iss)
    .setSubject(claims.sub)
    .setAudience(claims.aud)
    .setIssuedAt(iat)
    .setExpirationTime(iat + (claims.ttl ?? 60))
    .sign(await importJWK(key, 'ES256'));
}

describe('service tokens', () => {
  it('a token minted with the platform key identifies its app', async () => {
    expect((await verifyServiceToken(registry, await mintServiceToken(platform, 'acme'))).app_id).toBe('acme');
  });

  it('are refused when signed by the identity provider, for another app, or as an op_jwt', async () => {
    const forged = await signWith(idpKey, { iss: PLATFORM_ISSUER, sub: 'acme', aud: ENCLAVE_AUDIENCE });
    const opJwt = await platform.sign({ iss: app.oidc.issuer, sub: 'acme', aud: 'acme-api', app_id: 'acme' });
    const otherApp = await mintServiceToken(platform, 'someone-else');
    for (const token of [forged, opJwt, otherApp, 'not-a-jwt']) {
      await expect(verifyServiceToken(registry, token)).rejects.toBeInstanceOf(UnauthorizedError);
    }
  });
});
