import { KMSClient } from '@aws-sdk/client-kms';
import { HttpWalletEnclave } from '../wallets/enclave-client.ts';
import type { AccountDeps } from '../accounts/account-service.ts';
import { AppRegistry } from '../apps/app-registry.ts';
import { loadBaseConfig, loadKeyProviderConfig, loadOpJwtSignerConfig, loadTeeUrl } from '../config.ts';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import { KmsKeyWrapper } from '../crypto/kms-key-wrapper.ts';
import { KmsOpJwtSigner } from '../crypto/kms-op-jwt-signer.ts';
import { LocalKeyWrapper } from '../crypto/local-key-wrapper.ts';
import { LocalOpJwtSigner } from '../crypto/local-op-jwt-signer.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { createDocumentClient, type Table } from '../db/client.ts';

/** Composition root of the account service's functions: config parsed and clients built once. */
const base = loadBaseConfig();
const keyConfig = loadKeyProviderConfig('ACCOUNT_KMS_KEY_ID');
const signerConfig = loadOpJwtSignerConfig();

let kms: KMSClient | undefined;
const kmsClient = () => (kms ??= new KMSClient({}));

const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };
const keyWrapper: KeyWrapper =
  keyConfig.KEY_PROVIDER === 'kms' ? new KmsKeyWrapper(kmsClient(), keyConfig.KMS_KEY_ID) : new LocalKeyWrapper(keyConfig.DATA_DIR, 'account');
const opJwtSigner: OpJwtSigner =
  signerConfig.OP_JWT_SIGNER === 'kms' ? new KmsOpJwtSigner(kmsClient(), signerConfig.OP_JWT_KMS_KEY_ID) : new LocalOpJwtSigner(signerConfig.DATA_DIR);

export const accountDeps: AccountDeps & { readonly apps: AppRegistry } = {
  table,
  keyWrapper,
  opJwtSigner,
  enclave: new HttpWalletEnclave(loadTeeUrl()),
  apps: new AppRegistry(table),
  now: () => new Date(),
};
