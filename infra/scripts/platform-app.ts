import type { JWK } from 'jose';
import { AppRegistry, getApplication, putApplication } from '../../shared/apps/app-registry.ts';
import { type Application, ApplicationRecordError } from '../../shared/apps/application.ts';
import { platformApplication } from '../../shared/apps/register-application.ts';
import type { OpJwtSigner } from '../../shared/crypto/op-jwt-signer.ts';
import { createDocumentClient, type Table } from '../../shared/db/client.ts';
import { createSponsorSigner } from '../../shared/deps/clients.ts';
import { HttpWalletEnclave } from '../../shared/wallets/enclave-client.ts';
import { EnclaveGasSponsor, EnclaveSponsorPool, PLATFORM_APP_ID } from '../../shared/withdrawals/gas-sponsor.ts';

/**
 * The platform application (whose enclave wallet is the gas sponsor), as the operator scripts
 * `npm run app:create -- --platform` and `npm run sponsor:setup` set it up. Its identity provider
 * and trusted key are the gas sponsor's own signing key (the stateful stack's SponsorKeyId), never
 * the op_jwt key: the op_jwt key's many signers cannot act as the sponsor (docs/deploy.md, "Keys").
 */

/** The deployed table (credentials from the usual AWS environment; DYNAMODB_ENDPOINT for LocalStack or a local engine). */
export function scriptTable(tableName: string): Table {
  return { doc: createDocumentClient(process.env.DYNAMODB_ENDPOINT), name: tableName };
}

/**
 * The gas sponsor's signer: the KMS key `--sponsor-key` names, or, with none given and
 * SPONSOR_SIGNER=local, the local sandbox's sponsor key under DATA_DIR (as the local runtime's functions use).
 */
export function scriptSponsorSigner(keyId: string | undefined, env = process.env): OpJwtSigner | undefined {
  if (keyId) return createSponsorSigner({ SPONSOR_SIGNER: 'kms', SPONSOR_KMS_KEY_ID: keyId });
  if (env.SPONSOR_SIGNER === 'local' && env.DATA_DIR) return createSponsorSigner({ SPONSOR_SIGNER: 'local', DATA_DIR: env.DATA_DIR });
  return undefined;
}

/**
 * Registers the platform application unless it is there, trusting the sponsor key's public half
 * alone. Idempotent. A platform application registered before the sponsor had its own key (it
 * trusted the op_jwt key) is moved to the sponsor key: the sponsor wallet keeps its address (its
 * identity is the issuer and subject, not the key that signs them).
 */
export async function ensurePlatformApplication(table: Table, sponsorSigner: OpJwtSigner): Promise<'registered' | 'existing' | 'rekeyed'> {
  const key = await sponsorSigner.publicJwk();
  // A record from before audiences were required is refused at load: registered afresh (same issuer
  // and subject, so the same sponsor wallet).
  const existing = await getApplication(table, PLATFORM_APP_ID).catch((error: unknown) => {
    if (error instanceof ApplicationRecordError) return undefined;
    throw error;
  });
  if (!existing) {
    await putApplication(table, platformApplication(key));
    return 'registered';
  }
  if (trustsOnly(existing, key)) return 'existing';
  await putApplication(table, { ...existing, oidc: { ...existing.oidc, jwks: { keys: [key] } }, trusted_keys: [key] });
  return 'rekeyed';
}

/** True when the app's identity provider and trusted keys are exactly `key`. */
function trustsOnly(app: Application, key: JWK): boolean {
  const only = (keys: readonly JWK[] | undefined) => keys?.length === 1 && keys[0]?.kid === key.kid && keys[0]?.x === key.x && keys[0]?.y === key.y;
  return app.oidc.jwks_uri === undefined && only(app.oidc.jwks?.keys) && only(app.trusted_keys);
}

/** The gas sponsor: the platform application's enclave wallet, reached through the enclave API, its tokens signed with the sponsor key. */
export function platformGasSponsor(enclaveUrl: string, sponsorSigner: OpJwtSigner, table: Table): EnclaveGasSponsor {
  return new EnclaveGasSponsor(new HttpWalletEnclave(enclaveUrl.replace(/\/+$/, '')), sponsorSigner, new AppRegistry(table));
}

/** The treasury and `size` pool sponsors (issue 25): enclave wallets of the platform application, as the functions open them. */
export function platformSponsorPool(enclaveUrl: string, sponsorSigner: OpJwtSigner, table: Table, size: number): EnclaveSponsorPool {
  return new EnclaveSponsorPool(new HttpWalletEnclave(enclaveUrl.replace(/\/+$/, '')), sponsorSigner, new AppRegistry(table), size);
}
