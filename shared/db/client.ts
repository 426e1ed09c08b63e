import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { clientEndpoint } from '../deps/local-endpoints.ts';

/** The document client for the single table; built once per module scope (warm Lambdas reuse it). `endpoint`: a local engine (shared/deps/local-endpoints.ts). */
export function createDocumentClient(endpoint?: string): DynamoDBDocumentClient {
  const client = new DynamoDBClient(clientEndpoint(endpoint));
  // No SDK logger is configured (its NoOpLogger), yet the SDK's logger middleware builds a
  // sensitive-data-filtered copy of every command's input and output to hand it: for a GetItem,
  // a walk over the whole item. Our logs are Powertools' (shared/observability), not the SDK's.
  client.middlewareStack.remove('loggerMiddleware');
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
}

export interface Table {
  readonly doc: DynamoDBDocumentClient;
  readonly name: string;
}

/** A conditional write lost (the SDK's own exception class; `Item` holds the item when ALL_OLD was asked for). */
export function isConditionalCheckFailed(error: unknown): error is ConditionalCheckFailedException {
  return error instanceof ConditionalCheckFailedException;
}

/**
 * Stores an item unless its key exists (the table's way of holding "exactly one": one account
 * per user, one wallet per binding). Returns whichever item is stored and whether it was ours.
 */
export async function putIfAbsent<T extends object>(table: Table, key: { pk: string; sk: string }, item: T): Promise<{ item: T; created: boolean }> {
  try {
    await table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: { ...key, ...item },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { item, created: true };
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    // The winner's item comes back with the failure, in wire (AttributeValue) form: the document
    // client does not unmarshall exceptions. Engines without ALL_OLD support (dynalite) send none.
    const existing = error.Item ? unmarshall(error.Item) : await getItem(table, key);
    if (!existing) throw error;
    return { item: stripKeys(existing) as T, created: false };
  }
}

export async function getItem(table: Table, key: { pk: string; sk: string }): Promise<Record<string, unknown> | undefined> {
  const out = await table.doc.send(new GetCommand({ TableName: table.name, Key: key, ConsistentRead: true }));
  return out.Item ? stripKeys(out.Item) : undefined;
}

function stripKeys(item: Record<string, unknown>): Record<string, unknown> {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest;
}
