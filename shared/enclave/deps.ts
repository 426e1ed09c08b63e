import { AppRegistry } from '../apps/app-registry.ts';
import { loadAllowedDelegates, loadBaseConfig, loadKeyProviderConfig, loadV1RetirementAt } from '../config.ts';
import { createDocumentClient, type Table } from '../db/client.ts';
import type { EnclaveDeps } from './create-wallet.ts';
import { createKeyWrapper } from '../deps/clients.ts';

/** Composition root of the wallet enclave's functions: config parsed and clients built once. */
const base = loadBaseConfig();
const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };

export const enclaveDeps: EnclaveDeps & { readonly apps: AppRegistry; readonly allowedDelegates: ReadonlySet<string> } = {
  table,
  keyWrapper: createKeyWrapper(loadKeyProviderConfig('ENCLAVE_KMS_KEY_ID'), 'enclave'),
  apps: new AppRegistry(table),
  now: () => new Date(),
  v1RetiresAt: loadV1RetirementAt(),
  allowedDelegates: loadAllowedDelegates(),
};
