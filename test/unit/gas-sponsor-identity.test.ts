import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import type { Application } from '../../shared/apps/application.ts';
import { platformApplication } from '../../shared/apps/register-application.ts';
import { verifyOpJwt, verifyUserJwt } from '../../shared/auth/jwt.ts';
import { mintServiceToken, verifyServiceToken } from '../../shared/auth/service-token.ts';
import { LOCAL_OP_JWT_KEY_FILE, LOCAL_SPONSOR_KEY_FILE, LocalOpJwtSigner } from '../../shared/crypto/local-op-jwt-signer.ts';
import { createSponsorSigner } from '../../shared/deps/clients.ts';
import { GAS_SPONSOR_SUB, PLATFORM_APP_ID } from '../../shared/withdrawals/gas-sponsor.ts';

/**
 * Issue 21, part 6 (the key half): the gas sponsor has its own key, and the platform application
 * (whose enclave wallet is the sponsor) trusts that key alone. So whoever may sign with the op_jwt
 * key (every signing route, the express functions among them) cannot mint the sponsor's service
 * token, auth_jwt or op_jwt: the enclave refuses them, as it accepts the sponsor key's. Locally the
 * two keys are two files under DATA_DIR/keys.
 */
let dataDir: string;
let opJwtKey: LocalOpJwtSigner;
let sponsorKey: LocalOpJwtSigner;
let platform: Application;
const registry = { findById: async (id: string) => (id === PLATFORM_APP_ID ? platform : undefined) } as unknown as AppRegistry;

afterAll(() => rm(dataDir, { recursive: true, force: true }));

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sponsor-identity-'));
  opJwtKey = new LocalOpJwtSigner(dataDir);
  sponsorKey = createSponsorSigner({ SPONSOR_SIGNER: 'local', DATA_DIR: dataDir }) as LocalOpJwtSigner;
  platform = platformApplication(await sponsorKey.publicJwk());
});

const sponsorClaims = () => ({ iss: platform.oidc.issuer, sub: GAS_SPONSOR_SUB, aud: platform.oidc.audience as string, app_id: PLATFORM_APP_ID });

describe("the gas sponsor's identity", () => {
  it('is a key of its own: a second key file under DATA_DIR/keys, not the op_jwt key', async () => {
    const [sponsor, opJwt] = await Promise.all([sponsorKey.publicJwk(), opJwtKey.publicJwk()]);
    expect(sponsor.kid).not.toBe(opJwt.kid);
    expect((await readdir(join(dataDir, 'keys'))).sort()).toEqual([LOCAL_SPONSOR_KEY_FILE, LOCAL_OP_JWT_KEY_FILE].sort());
    expect(platform.trusted_keys.map((key) => key.kid)).toEqual([sponsor.kid]);
    expect(platform.oidc.jwks?.keys.map((key) => key.kid)).toEqual([sponsor.kid]);
  });

  it('is accepted by the enclave when signed with the sponsor key: service token, auth_jwt and op_jwt', async () => {
    expect((await verifyServiceToken(registry, await mintServiceToken(sponsorKey, PLATFORM_APP_ID))).app_id).toBe(PLATFORM_APP_ID);
    expect(await verifyUserJwt(platform, await sponsorKey.sign(sponsorClaims()))).toMatchObject({ sub: GAS_SPONSOR_SUB });
    expect(await verifyOpJwt(platform, await sponsorKey.sign(sponsorClaims()))).toMatchObject({ sub: GAS_SPONSOR_SUB });
  });

  it('is refused when the same tokens are signed with the op_jwt key (401, nothing to sign with)', async () => {
    await expect(verifyServiceToken(registry, await mintServiceToken(opJwtKey, PLATFORM_APP_ID))).rejects.toMatchObject({
      status: 401,
      code: 'INVALID_SERVICE_TOKEN',
    });
    await expect(verifyUserJwt(platform, await opJwtKey.sign(sponsorClaims()))).rejects.toMatchObject({ status: 401, code: 'INVALID_TOKEN' });
    await expect(verifyOpJwt(platform, await opJwtKey.sign(sponsorClaims()))).rejects.toMatchObject({ status: 401, code: 'INVALID_OP_JWT' });
  });
});
