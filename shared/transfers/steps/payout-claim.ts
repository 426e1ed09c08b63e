import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Hex } from 'viem';
import { isConditionalCheckFailed, type Table } from '../../db/client.ts';
import type { EvmChainCode } from '../../venues/driver.ts';
import type { PayoutClaim } from '../../venues/payouts.ts';
import type { TaskRef } from '../task.ts';

/**
 * A venue payout log held by one withdrawal (issue 23): `TASKS#<app_id>#<app_user_id>` /
 * `PAYOUT#<chain>#<tx hash>#<log index>`, listed in shared/db/keys.ts and built here, as the venue
 * lock is, so only the venue step bundles carry it. A payout goes to the user's own wallet, so only
 * that user's withdrawals can match it: the claim lives in the user's task partition (GET /tasks
 * reads `TASK#` items only). One conditional put takes it; the same withdrawal taking it again
 * (a later poll, a crash and redrive, a resume adopting the request) is the same holder.
 */
export const payoutClaimKey = (ref: Pick<TaskRef, 'app_id' | 'app_user_id'>, chain: EvmChainCode, txHash: Hex, logIndex: number) => ({
  pk: `TASKS#${ref.app_id}#${ref.app_user_id}`,
  sk: `PAYOUT#${chain}#${txHash.toLowerCase()}#${logIndex}`,
});

/** The claims of one withdrawal: the task's step `index` and the request's idempotency key (the holder, stable across tries that adopt it). */
export function payoutClaim(table: Table, ref: TaskRef, chain: EvmChainCode, index: number, idempotencyKey: string): PayoutClaim {
  const holder = `${ref.task_id}:${index}:${idempotencyKey}`;
  return async (log) => {
    try {
      await table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: { ...payoutClaimKey(ref, chain, log.txHash, log.logIndex), holder, tx_hash: log.txHash, log_index: log.logIndex },
          ConditionExpression: 'attribute_not_exists(pk) OR holder = :holder',
          ExpressionAttributeValues: { ':holder': holder },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  };
}
