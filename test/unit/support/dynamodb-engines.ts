import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { createDocumentClient, type Table } from '../../../shared/db/client.ts';
import { localCreateTableInput } from '../../../shared/db/table-definition.ts';
import { startDynaliteTable } from './dynalite-table.ts';

/**
 * The single table on either local engine, for unit tests whose claim must hold on both:
 * dynalite (in process) and DynamoDB Local (the Java engine from amplify-dynamodb-simulator). The
 * unit project starts one DynamoDB Local for all its files (test/unit/support/global-setup.ts);
 * each caller gets a table of its own there, deleted when it stops.
 */
export type DynamoEngine = 'dynalite' | 'dynamodb-local';
export const DYNAMO_ENGINES: readonly DynamoEngine[] = ['dynalite', 'dynamodb-local'];

export function startEngineTable(engine: DynamoEngine, name: string): Promise<{ table: Table; stop: () => Promise<void> }> {
  return engine === 'dynalite' ? startDynaliteTable(name) : startDynamoDbLocalTable(name);
}

async function startDynamoDbLocalTable(prefix: string): Promise<{ table: Table; stop: () => Promise<void> }> {
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  const endpoint = inject('dynamodbLocalEndpoint');
  if (!endpoint) throw new Error('no DynamoDB Local: this file must run in the unit project (its globalSetup starts the engine)');
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  const client = new DynamoDBClient({ endpoint });
  await client.send(new CreateTableCommand(localCreateTableInput(name)));
  return {
    table: { doc: createDocumentClient(endpoint), name },
    stop: async () => {
      await client.send(new DeleteTableCommand({ TableName: name }));
      client.destroy();
    },
  };
}
