import { DomainError } from '../errors.ts';
import { logger } from '../logger.ts';

type Part = 'record' | 'seal' | 'legacy-check';

/**
 * 500 WALLET_INTEGRITY_FAILED: a stored wallet does not authenticate (its sealed key does not open
 * under the binding its item states, or the item is not a wallet record at all), which means the
 * item was edited outside the enclave. Not the caller's fault, so a 5xx; the message names nothing
 * internal (no field, no cause), and nothing is signed.
 */
export class WalletIntegrityError extends DomainError {
  constructor() {
    super(
      500,
      'WALLET_INTEGRITY_FAILED',
      'This wallet failed its integrity check and cannot be used; nothing was signed. Quote the X-Request-Id to the operator.',
    );
  }
}

/** The error to throw, logged first for the operator (wallet id and which check; never a secret). */
export function walletIntegrityFailure(walletId: string, part: Part): WalletIntegrityError {
  logger.error('wallet integrity check failed: the item was changed outside the enclave', { wallet_id: walletId, check: part });
  return new WalletIntegrityError();
}
