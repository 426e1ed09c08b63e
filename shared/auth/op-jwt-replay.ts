import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { TABLE_TTL_ATTRIBUTE } from '../db/table-definition.ts';
import { UnauthorizedError } from '../errors.ts';

export interface OpJwtUse {
  readonly appId: string;
  /** The verified op_jwt's `jti` (at most 255 bytes: verifyOpJwt). */
  readonly jti: string;
  /** Its `exp` (epoch seconds): the record is needed until then, and DynamoDB TTL removes it after. */
  readonly exp: number;
}

/**
 * Records an op_jwt's first use; a second use of the same `jti` in the same app is 401
 * OP_JWT_REPLAYED. One conditional put holds it, so of concurrent uses exactly one wins. The
 * record lives until the token's `exp` (`ttl`): after that the token itself is refused as expired,
 * and DynamoDB's TTL deletion, which may lag by days, cannot reopen it.
 */
export async function recordOpJwtUse(table: Table, use: OpJwtUse): Promise<void> {
  try {
    await table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: { ...keys.opJwtUse(use.appId, use.jti), [TABLE_TTL_ATTRIBUTE]: use.exp },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (error) {
    if (isConditionalCheckFailed(error)) {
      throw new UnauthorizedError('OP_JWT_REPLAYED', 'op_jwt was already used: mint a fresh one (with a new "jti") for every signing call');
    }
    throw error;
  }
}
