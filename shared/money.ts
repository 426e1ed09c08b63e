import { formatUnits, parseUnits } from 'viem';
import { ValidationError } from './errors.ts';

/**
 * Money on the wire is a decimal string; inside it is a bigint of base units. Never a JS float.
 */
const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/** A positive decimal string with at most `decimals` fractional digits, as base units. */
export function parseAmount(value: string, decimals: number, field = 'body.amount'): bigint {
  if (!DECIMAL.test(value)) throw new ValidationError(`${field}: must be a positive decimal string such as "12.5"`);
  const fraction = value.split('.')[1] ?? '';
  if (fraction.length > decimals) throw new ValidationError(`${field}: has more than ${decimals} decimal places`);
  const units = parseUnits(value, decimals);
  if (units <= 0n) throw new ValidationError(`${field}: must be greater than zero`);
  return units;
}

/** Base units as a decimal string, without trailing zeros ("1.5", "0.000001", "3"). */
export function formatAmount(units: bigint, decimals: number): string {
  return formatUnits(units, decimals);
}
