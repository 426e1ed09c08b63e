import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, type Table } from '../../db/client.ts';
import type { Broadcast } from '../sender/ports.ts';

/**
 * Deletes the journal item at `key` while it still records `recorded` (its `tx_hash`): a send that
 * never left is forgotten, and one that another run replaced in the meantime is left alone.
 */
export async function discardBroadcastRecord(table: Table, key: { pk: string; sk: string }, recorded: Broadcast | undefined): Promise<void> {
  if (!recorded) return;
  await table.doc
    .send(
      new DeleteCommand({
        TableName: table.name,
        Key: key,
        ConditionExpression: 'tx_hash = :hash',
        ExpressionAttributeValues: { ':hash': recorded.tx_hash },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionalCheckFailed(error)) throw error;
    });
}
