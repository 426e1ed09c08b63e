import { UnprocessableError } from '../../errors.ts';
import { formatAmount } from '../../money.ts';

/** 422 INSUFFICIENT_FUNDS naming what is missing, in the token's own units. */
export function insufficient(what: string, needed: bigint, available: bigint, decimals: number): UnprocessableError {
  return new UnprocessableError(
    'INSUFFICIENT_FUNDS',
    `Insufficient ${what}: needs ${formatAmount(needed, decimals)}, available ${formatAmount(available, decimals)}`,
  );
}
