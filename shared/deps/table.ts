import { AppRegistry } from '../apps/app-registry.ts';
import { loadBaseConfig } from '../config.ts';
import { createDocumentClient, type Table } from '../db/client.ts';

/**
 * The single table from TABLE_NAME (and DYNAMODB_ENDPOINT locally). Builders here and in the
 * sibling modules construct one client each from its own variables; a handler's composition root
 * calls exactly the ones its route needs (functions/routes.ts `needs`), once, at cold start.
 */
export function tableFromEnv(): Table {
  const base = loadBaseConfig();
  return { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };
}

/** The table and the application registry over it: every authenticated route starts here. */
export function appsFromEnv(): { readonly table: Table; readonly apps: AppRegistry } {
  const table = tableFromEnv();
  return { table, apps: new AppRegistry(table) };
}

export const systemClock = (): Date => new Date();
