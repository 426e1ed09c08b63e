import { UpstreamError } from '../errors.ts';

/**
 * The node answered with a refusal (RPC error response, failed simulation): the transaction is in
 * no mempool and nothing was sent. Chain adapters throw it from `broadcast`; a timeout or a lost
 * connection is not a refusal ("maybe sent") and propagates as it is.
 * `detail` must be a short, redacted reason (never an RPC URL or a request body).
 */
export class BroadcastRejectedError extends UpstreamError {
  constructor(detail: string) {
    super('BROADCAST_REJECTED', `The chain refused the transaction: ${detail}`);
  }
}
