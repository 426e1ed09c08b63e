import { KMSClient } from '@aws-sdk/client-kms';
import { AppRegistry } from '../apps/app-registry.ts';
import { loadBaseConfig, loadKeyProviderConfig, loadV1RetirementAt } from '../config.ts';
import { KmsKeyWrapper } from '../crypto/kms-key-wrapper.ts';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import { LocalKeyWrapper } from '../crypto/local-key-wrapper.ts';
import { createDocumentClient, type Table } from '../db/client.ts';
import type { EnclaveDeps } from '../wallets/create-wallet.ts';

/** Composition root of the wallet enclave's functions: config parsed and clients built once. */
const base = loadBaseConfig();
const keyConfig = loadKeyProviderConfig('ENCLAVE_KMS_KEY_ID');

const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };
const keyWrapper: KeyWrapper =
  keyConfig.KEY_PROVIDER === 'kms' ? new KmsKeyWrapper(new KMSClient({}), keyConfig.KMS_KEY_ID) : new LocalKeyWrapper(keyConfig.DATA_DIR, 'enclave');

export const enclaveDeps: EnclaveDeps & { readonly apps: AppRegistry } = {
  table,
  keyWrapper,
  apps: new AppRegistry(table),
  now: () => new Date(),
  v1RetiresAt: loadV1RetirementAt(),
};
