import { type AttributeValue, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { sandbox } from './client.ts';

/** Whether the table can be read from the tests: DynamoDB Local only (dynalite runs inside the runtime). */
export const tableReadable = sandbox.dynamodbEndpoint !== undefined;

/** Every item of the local table whose JSON contains `marker` (none when the table cannot be read). */
export async function scanItems(marker: string): Promise<string[]> {
  if (!sandbox.dynamodbEndpoint) return [];
  // DynamoDB Local keeps one database per access key id and region: the runtime's (infra/local/runtime.ts).
  const client = new DynamoDBClient({
    endpoint: sandbox.dynamodbEndpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'sandbox', secretAccessKey: 'sandbox' },
  });
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
