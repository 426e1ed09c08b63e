import { BroadcastRejectedError, TransactionRevertedError } from '../errors.ts';

/**
 * What a failed send means for the logical operation that asked for it:
 * - `not_sent`: nothing left this service (failed before the journal record, or the node refused
 *   the broadcast): the operation may be tried again from scratch;
 * - `failed`: included and failed on chain: final;
 * - `unknown`: recorded and maybe broadcast (timeout, RPC trouble): retry by resuming.
 */
export type SendFailure = 'not_sent' | 'failed' | 'unknown';

export function classifySendFailure(error: unknown, recorded: boolean): SendFailure {
  if (!recorded || error instanceof BroadcastRejectedError) return 'not_sent';
  if (error instanceof TransactionRevertedError) return 'failed';
  return 'unknown';
}
