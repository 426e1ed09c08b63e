import type { AccountDeps } from '../accounts/account-service.ts';
import { AppRegistry } from '../apps/app-registry.ts';
import { loadBaseConfig, loadKeyProviderConfig, loadOpJwtSignerConfig, loadTeeUrl } from '../config.ts';
import { createDocumentClient, type Table } from '../db/client.ts';
import { HttpWalletEnclave } from '../wallets/enclave-client.ts';
import { createKeyWrapper, createOpJwtSigner } from './clients.ts';

/**
 * Composition root of the account service's functions: config parsed and clients built once.
 * The chain clients live in account-chains.ts, so functions that never touch a chain do not
 * bundle viem's clients, @solana/web3.js and spl-token.
 */
const base = loadBaseConfig();
const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };

export const accountDeps: AccountDeps & { readonly apps: AppRegistry } = {
  table,
  keyWrapper: createKeyWrapper(loadKeyProviderConfig('ACCOUNT_KMS_KEY_ID'), 'account'),
  opJwtSigner: createOpJwtSigner(loadOpJwtSignerConfig()),
  enclave: new HttpWalletEnclave(loadTeeUrl()),
  apps: new AppRegistry(table),
  now: () => new Date(),
};
