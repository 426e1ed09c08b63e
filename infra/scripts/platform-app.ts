import { AppRegistry, getApplication, putApplication } from '../../shared/apps/app-registry.ts';
import { ApplicationRecordError } from '../../shared/apps/application.ts';
import { platformApplication } from '../../shared/apps/register-application.ts';
import type { OpJwtSigner } from '../../shared/crypto/op-jwt-signer.ts';
import { createDocumentClient, type Table } from '../../shared/db/client.ts';
import { createOpJwtSigner } from '../../shared/deps/clients.ts';
import { HttpWalletEnclave } from '../../shared/wallets/enclave-client.ts';
import { EnclaveGasSponsor, PLATFORM_APP_ID } from '../../shared/withdrawals/gas-sponsor.ts';

/**
 * The platform application (whose enclave wallet is the gas sponsor), as the operator scripts
 * `npm run app:create -- --platform` and `npm run sponsor:setup` set it up.
 */

/** The deployed table (credentials from the usual AWS environment; DYNAMODB_ENDPOINT for LocalStack or a local engine). */
export function scriptTable(tableName: string): Table {
  return { doc: createDocumentClient(process.env.DYNAMODB_ENDPOINT), name: tableName };
}

/**
 * The account service's op_jwt signer: the KMS key `--op-jwt-key` names, or, with none given and
 * OP_JWT_SIGNER=local, the local sandbox's key under DATA_DIR (as the local runtime's functions use).
 */
export function scriptOpJwtSigner(keyId: string | undefined, env = process.env): OpJwtSigner | undefined {
  if (keyId) return createOpJwtSigner({ OP_JWT_SIGNER: 'kms', OP_JWT_KMS_KEY_ID: keyId });
  if (env.OP_JWT_SIGNER === 'local' && env.DATA_DIR) return createOpJwtSigner({ OP_JWT_SIGNER: 'local', DATA_DIR: env.DATA_DIR });
  return undefined;
}

/** Registers the platform application unless it is there; trusts the op_jwt key's public half. Idempotent. */
export async function ensurePlatformApplication(table: Table, signer: OpJwtSigner): Promise<'registered' | 'existing'> {
  // A record from before audiences were required is refused at load: registered afresh (same issuer
  // and subject, so the same sponsor wallet).
  const existing = await getApplication(table, PLATFORM_APP_ID).catch((error: unknown) => {
    if (error instanceof ApplicationRecordError) return undefined;
    throw error;
  });
  if (existing) return 'existing';
  await putApplication(table, platformApplication(await signer.publicJwk()));
  return 'registered';
}

/** The gas sponsor: the platform application's enclave wallet, reached through the enclave API. */
export function platformGasSponsor(enclaveUrl: string, signer: OpJwtSigner, table: Table): EnclaveGasSponsor {
  return new EnclaveGasSponsor(new HttpWalletEnclave(enclaveUrl.replace(/\/+$/, '')), signer, new AppRegistry(table));
}
