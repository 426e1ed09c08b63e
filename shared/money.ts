import { formatUnits, parseUnits } from 'viem';
import { ValidationError } from './errors.ts';

/**
 * Money on the wire is a decimal string; inside it is a bigint of base units. Never a JS float.
 */
const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/** The most base units an EVM token or native balance holds (uint256). */
export const MAX_EVM_UNITS = 2n ** 256n - 1n;
/** The most base units a Solana balance holds: lamports and SPL token amounts are u64. */
export const MAX_SOLANA_UNITS = 2n ** 64n - 1n;

/**
 * A positive decimal string with at most `decimals` fractional digits, as base units, at most
 * `maxUnits` (what the token can hold at all; beyond it no transfer can be encoded).
 */
export function parseAmount(value: string, decimals: number, field = 'body.amount', maxUnits = MAX_EVM_UNITS): bigint {
  if (!DECIMAL.test(value)) throw new ValidationError(`${field}: must be a positive decimal string such as "12.5"`);
  const fraction = value.split('.')[1] ?? '';
  if (fraction.length > decimals) throw new ValidationError(`${field}: has more than ${decimals} decimal places`);
  const units = parseUnits(value, decimals);
  if (units <= 0n) throw new ValidationError(`${field}: must be greater than zero`);
  if (units > maxUnits)
    throw new ValidationError(`${field}: is more than the token can hold (at most ${formatAmount(maxUnits, decimals)})`, 'AMOUNT_TOO_LARGE');
  return units;
}

/** Base units as a decimal string, without trailing zeros ("1.5", "0.000001", "3"). */
export function formatAmount(units: bigint, decimals: number): string {
  return formatUnits(units, decimals);
}
