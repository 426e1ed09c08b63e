import { KMSClient } from '@aws-sdk/client-kms';
import { AppRegistry } from '../apps/app-registry.ts';
import { loadBaseConfig, loadOpJwtSignerConfig, loadTeeUrl } from '../config.ts';
import { KmsOpJwtSigner } from '../crypto/kms-op-jwt-signer.ts';
import { LocalOpJwtSigner } from '../crypto/local-op-jwt-signer.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { createDocumentClient, type Table } from '../db/client.ts';
import type { ExpressDeps } from '../express/express-wallets.ts';
import { HttpWalletEnclave } from '../wallets/enclave-client.ts';

/** Composition root of the express wallet service's functions. */
const base = loadBaseConfig();
const signerConfig = loadOpJwtSignerConfig();
const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };
const opJwtSigner: OpJwtSigner =
  signerConfig.OP_JWT_SIGNER === 'kms' ? new KmsOpJwtSigner(new KMSClient({}), signerConfig.OP_JWT_KMS_KEY_ID) : new LocalOpJwtSigner(signerConfig.DATA_DIR);

export const expressDeps: ExpressDeps & { readonly table: Table; readonly apps: AppRegistry } = {
  table,
  apps: new AppRegistry(table),
  enclave: new HttpWalletEnclave(loadTeeUrl()),
  opJwtSigner,
  now: () => new Date(),
};
