import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, type JWK, jwtVerify } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalOpJwtSigner } from '../../shared/crypto/local-op-jwt-signer.ts';

const CLAIMS = { iss: 'https://issuer.example', sub: 'user-42', aud: 'enclave', app_id: 'acme' };

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'local-op-jwt-signer-'));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('LocalOpJwtSigner', () => {
  it('mints an ES256 JWT that verifies against its public JWK', async () => {
    const signer = new LocalOpJwtSigner(dataDir);
    const token = await signer.sign(CLAIMS);
    const jwk = await signer.publicJwk();

    const { payload, protectedHeader } = await jwtVerify(token, await importJWK(jwk, 'ES256'), {
      issuer: CLAIMS.iss,
      audience: CLAIMS.aud,
      algorithms: ['ES256'],
    });
    expect(payload.sub).toBe(CLAIMS.sub);
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', kid: jwk.kid });
  });

  it('publishes only the public part, with kid = RFC 7638 thumbprint', async () => {
    const jwk = await new LocalOpJwtSigner(dataDir).publicJwk();
    expect(jwk).not.toHaveProperty('d');
    expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(jwk.kid).toBe(await calculateJwkThumbprint({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }));
  });

  it('persists the key with mode 0600 under <dir>/keys', async () => {
    await new LocalOpJwtSigner(dataDir).sign(CLAIMS);

    const path = join(dataDir, 'keys', 'op-jwt-signer.jwk.json');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(path, 'utf8')) as JWK;
    expect(stored).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(typeof stored.d).toBe('string');
  });

  it('keeps the same key and kid across instances (restart)', async () => {
    const before = new LocalOpJwtSigner(dataDir);
    const token = await before.sign(CLAIMS);
    const jwkBefore = await before.publicJwk();

    const after = new LocalOpJwtSigner(dataDir);
    const jwkAfter = await after.publicJwk();
    expect(jwkAfter.kid).toBe(jwkBefore.kid);
    expect(decodeProtectedHeader(await after.sign(CLAIMS)).kid).toBe(jwkBefore.kid);
    // A token from before the restart still verifies against the key published after it.
    await expect(jwtVerify(token, await importJWK(jwkAfter, 'ES256'))).resolves.toBeDefined();
  });

  it('uses a different key in a different data directory', async () => {
    const otherDir = await mkdtemp(join(tmpdir(), 'local-op-jwt-signer-'));
    try {
      const token = await new LocalOpJwtSigner(otherDir).sign(CLAIMS);
      const jwk = await new LocalOpJwtSigner(dataDir).publicJwk();
      await expect(jwtVerify(token, await importJWK(jwk, 'ES256'))).rejects.toThrow();
    } finally {
      await rm(otherDir, { recursive: true, force: true });
    }
  });

  it('two instances starting together over an empty directory agree on one key', async () => {
    const [a, b] = await Promise.all([new LocalOpJwtSigner(dataDir).publicJwk(), new LocalOpJwtSigner(dataDir).publicJwk()]);
    expect(a.kid).toBe(b.kid);
  });
});
