/**
 * The single table's key schema: the one source used by CDK (infra/) and by the local
 * runtime when it creates the table in dynalite or DynamoDB Local.
 * Generic key names (`pk`, `sk`) with `ENTITY#id` prefixes; see shared/db/keys.ts.
 */
export const TABLE_KEY_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
} as const;

/** Items with this attribute (epoch seconds) expire: idempotency records after a day. */
export const TABLE_TTL_ATTRIBUTE = 'ttl';

/** CreateTable input for a local engine (on-demand billing, same keys as the deployed table). */
export function localCreateTableInput(tableName: string) {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: [
      { AttributeName: TABLE_KEY_SCHEMA.partitionKey, AttributeType: 'S' as const },
      { AttributeName: TABLE_KEY_SCHEMA.sortKey, AttributeType: 'S' as const },
    ],
    KeySchema: [
      { AttributeName: TABLE_KEY_SCHEMA.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: TABLE_KEY_SCHEMA.sortKey, KeyType: 'RANGE' as const },
    ],
  };
}
