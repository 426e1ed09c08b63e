import { AppRegistry } from '../apps/app-registry.ts';
import { loadBaseConfig, loadOpJwtSignerConfig, loadTeeUrl } from '../config.ts';
import { createDocumentClient, type Table } from '../db/client.ts';
import type { ExpressDeps } from '../express/express-wallets.ts';
import { HttpWalletEnclave } from '../wallets/enclave-client.ts';
import { createOpJwtSigner } from './clients.ts';

/** Composition root of the express wallet service's functions. */
const base = loadBaseConfig();
const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };

export const expressDeps: ExpressDeps & { readonly table: Table; readonly apps: AppRegistry } = {
  table,
  apps: new AppRegistry(table),
  enclave: new HttpWalletEnclave(loadTeeUrl()),
  opJwtSigner: createOpJwtSigner(loadOpJwtSignerConfig()),
  now: () => new Date(),
};
