import type { AccountDeps } from '../accounts/account-service.ts';
import { AppRegistry } from '../apps/app-registry.ts';
import { Chains } from '../chains/chains.ts';
import { loadBaseConfig, loadChainsConfig, loadInclusionTimeoutMs, loadKeyProviderConfig, loadOpJwtSignerConfig, loadTeeUrl } from '../config.ts';
import { createDocumentClient, type Table } from '../db/client.ts';
import { HttpWalletEnclave } from '../wallets/enclave-client.ts';
import { EnclaveGasSponsor } from '../withdrawals/gas-sponsor.ts';
import type { WithdrawDeps } from '../withdrawals/withdraw.ts';
import { createKeyWrapper, createOpJwtSigner } from './clients.ts';

/** Composition root of the account service's functions: config parsed and clients built once. */
const base = loadBaseConfig();
const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };
const apps = new AppRegistry(table);
const opJwtSigner = createOpJwtSigner(loadOpJwtSignerConfig());
const enclave = new HttpWalletEnclave(loadTeeUrl());

export const accountDeps: AccountDeps & WithdrawDeps & { readonly apps: AppRegistry } = {
  table,
  keyWrapper: createKeyWrapper(loadKeyProviderConfig('ACCOUNT_KMS_KEY_ID'), 'account'),
  opJwtSigner,
  enclave,
  apps,
  chains: new Chains(loadChainsConfig()),
  sponsor: new EnclaveGasSponsor(enclave, opJwtSigner, apps),
  inclusionTimeoutMs: loadInclusionTimeoutMs(),
  now: () => new Date(),
};
