import { type AttributeValue, DynamoDBClient, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { sandbox } from './client.ts';

/** Whether the table can be read from the tests: DynamoDB Local only (dynalite runs inside the runtime). */
export const tableReadable = sandbox.dynamodbEndpoint !== undefined;

function tableClient(endpoint: string): DynamoDBClient {
  // DynamoDB Local keeps one database per access key id and region: the runtime's (infra/local/runtime.ts).
  return new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'sandbox', secretAccessKey: 'sandbox' },
  });
}

/** Every item of the local table whose JSON contains `marker` (none when the table cannot be read). */
export async function scanItems(marker: string): Promise<string[]> {
  if (!sandbox.dynamodbEndpoint) return [];
  const client = tableClient(sandbox.dynamodbEndpoint);
  const items: string[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: 'perp-wallet', ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      // Accounts, v2 wallets (they store `sub`) and idempotency items name the user.
      const text = JSON.stringify(Object.fromEntries(Object.entries(item).sort(([a], [b]) => a.localeCompare(b))));
      if (text.includes(marker)) items.push(text);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  client.destroy();
  return items.sort();
}

/** A value for editItem that removes the attribute. */
export const REMOVE_ATTRIBUTE = Symbol('remove');

/**
 * Edits top-level attributes of one item of the local table behind the runtime's back, as someone
 * with write access to the table could (DynamoDB Local only: check `tableReadable` first).
 */
export async function editItem(key: { pk: string; sk: string }, edits: Record<string, unknown>, tableName = 'perp-wallet'): Promise<void> {
  if (!sandbox.dynamodbEndpoint) throw new Error('editItem needs DynamoDB Local (tableReadable)');
  const entries = Object.entries(edits);
  const set = entries.flatMap(([, value], index) => (value === REMOVE_ATTRIBUTE ? [] : [`#a${index} = :v${index}`]));
  const remove = entries.flatMap(([, value], index) => (value === REMOVE_ATTRIBUTE ? [`#a${index}`] : []));
  const values = Object.fromEntries(entries.flatMap(([, value], index) => (value === REMOVE_ATTRIBUTE ? [] : [[`:v${index}`, value]])));
  const client = tableClient(sandbox.dynamodbEndpoint);
  try {
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: marshall(key),
        UpdateExpression: [set.length ? `SET ${set.join(', ')}` : '', remove.length ? `REMOVE ${remove.join(', ')}` : ''].filter(Boolean).join(' '),
        ExpressionAttributeNames: Object.fromEntries(entries.map(([name], index) => [`#a${index}`, name])),
        ...(set.length ? { ExpressionAttributeValues: marshall(values, { removeUndefinedValues: true }) } : {}),
        ConditionExpression: 'attribute_exists(pk)',
      }),
    );
  } finally {
    client.destroy();
  }
}
