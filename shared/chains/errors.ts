import { BaseError as ViemError } from 'viem';
import { DomainError, UnprocessableError, UpstreamError } from '../errors.ts';

/**
 * Errors the chain adapters throw instead of their clients' own. A viem error's `message` carries
 * the RPC URL (hosted RPC URLs hold API keys in the path) and the request body, so no such
 * message leaves an adapter: what is kept is viem's `shortMessage` or a node's reason, redacted.
 */

/**
 * The node answered with a refusal (RPC error response, failed simulation): the transaction is in
 * no mempool and nothing was sent. Chain adapters throw it from `broadcast`; a timeout or a lost
 * connection is not a refusal ("maybe sent") and is a ChainUnavailableError.
 * `detail` must be a short, redacted reason (never an RPC URL or a request body).
 */
export class BroadcastRejectedError extends UpstreamError {
  constructor(detail: string) {
    super('BROADCAST_REJECTED', `The chain refused the transaction: ${detail}`);
  }
}

/** The chain's RPC failed or did not answer (502). After a broadcast this means "maybe sent". */
export class ChainUnavailableError extends UpstreamError {
  constructor(chain: string, detail: string) {
    super('CHAIN_UNAVAILABLE', `The ${chain} RPC failed: ${detail}`);
  }
}

/** Simulating or estimating the call failed on chain (it would revert): nothing was signed. */
export class CallWouldFailError extends Error {}

const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;
const LONG_HEX = /0x[0-9a-f]{80,}/gi;

/** A text safe to log or to answer with: no URL, no long hex payload, at most 300 characters. */
export function redact(text: string): string {
  const cleaned = text.replace(URL_PATTERN, '[url]').replace(LONG_HEX, '[data]').replace(/\s+/g, ' ').trim();
  return cleaned.length > 300 ? `${cleaned.slice(0, 297)}...` : cleaned;
}

/**
 * A loggable description of any error from a chain client: viem's `shortMessage` (plus a node's
 * own reason from `details`), never viem's full `message`; for other errors the first line, redacted.
 */
export function describeChainError(error: unknown): string {
  if (error instanceof ViemError) {
    const reason = error.details && !error.shortMessage.includes(error.details) ? ` ${error.details}` : '';
    return redact(`${error.shortMessage}${reason}`);
  }
  if (error instanceof Error) return redact(`${error.name}: ${error.message.split('\n')[0] ?? ''}`);
  return 'unknown error';
}

/** Included, but the transaction failed on chain (reverted): nothing moved, and it is final. */
export class TransactionRevertedError extends UnprocessableError {
  constructor(txHash: string, detail = 'was included but reverted; nothing was sent', code = 'TRANSACTION_REVERTED') {
    super(code, `Transaction ${txHash} ${detail}`);
  }
}

/**
 * Included and successful, but without the effect it was sent for (no token Transfer of the amount
 * to the recipient, no Executed event of a sponsored call): nothing moved, and it is final. It is
 * never reported sent nor counted as spent.
 */
export class TransactionNoEffectError extends TransactionRevertedError {
  constructor(txHash: string) {
    super(txHash, 'was included but moved nothing; nothing was sent', 'TRANSACTION_NO_EFFECT');
  }
}

/** Broadcast, not included within the bound: the outcome is unknown; a retry resumes the same transaction. */
export class InclusionTimeoutError extends DomainError {
  constructor(txHash: string, timeoutMs: number, what = 'included') {
    super(
      504,
      'INCLUSION_TIMEOUT',
      `Transaction ${txHash} was broadcast but not ${what} within ${timeoutMs} ms; retry with the same Idempotency-Key to get its outcome`,
    );
  }
}
