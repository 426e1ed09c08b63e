import type { AppRegistry } from '../apps/app-registry.ts';
import type { ExpressDeps } from '../express/express-wallets.ts';
import { enclaveClientFromEnv, opJwtSignerFromEnv } from './clients.ts';
import { appsFromEnv, systemClock } from './table.ts';

export type ExpressRouteDeps = ExpressDeps & { readonly apps: AppRegistry };

/** The express routes that go through the enclave (needs: table read, op_jwt key, enclave URL). */
export function expressDepsFromEnv(): ExpressRouteDeps {
  return { apps: appsFromEnv().apps, enclave: enclaveClientFromEnv(), opJwtSigner: opJwtSignerFromEnv(), now: systemClock };
}
