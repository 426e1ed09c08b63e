import { AppRegistry } from '../apps/app-registry.ts';
import { loadBaseConfig } from '../config.ts';
import { createDocumentClient, type Table } from '../db/client.ts';

/** Composition root of the express wallet service's functions. */
const base = loadBaseConfig();
const table: Table = { doc: createDocumentClient(base.DYNAMODB_ENDPOINT), name: base.TABLE_NAME };

export const expressDeps = {
  table,
  apps: new AppRegistry(table),
};
