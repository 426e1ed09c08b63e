import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { createDocumentClient, type Table } from '../../../shared/db/client.ts';
import { localCreateTableInput } from '../../../shared/db/table-definition.ts';

/** An in-memory dynalite with the single table, for unit tests of code that stores things. */
export async function startDynaliteTable(name: string): Promise<{ table: Table; stop: () => Promise<void> }> {
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  const server = dynalite({ createTableMs: 0 });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new DynamoDBClient({ endpoint }).send(new CreateTableCommand(localCreateTableInput(name)));
  return {
    table: { doc: createDocumentClient(endpoint), name },
    stop: () => new Promise<void>((done) => server.close(() => done())),
  };
}
