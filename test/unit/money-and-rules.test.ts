import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.ts';
import { formatAmount, MAX_SOLANA_UNITS, parseAmount } from '../../shared/money.ts';
import { assertWithdrawable, normaliseRecipient, WITHDRAW_TOKENS } from '../../shared/withdrawals/withdraw-rules.ts';

describe('money', () => {
  it('parses decimal strings to exact base units', () => {
    expect(parseAmount('1', 6)).toBe(1_000_000n);
    expect(parseAmount('0.000001', 6)).toBe(1n);
    expect(parseAmount('123456789.123456', 6)).toBe(123_456_789_123_456n);
    expect(parseAmount('0.1', 18)).toBe(100_000_000_000_000_000n);
    expect(parseAmount('115792089237316195423570985008687907853269984665640564039457.584007913129639935', 18)).toBe(2n ** 256n - 1n);
  });

  it.each(['0', '0.000000', '-1', '1.', '.1', '01', '1e6', ' 1', '1,5', 'NaN', ''])('refuses %j', (value) => {
    expect(() => parseAmount(value, 6)).toThrow(ValidationError);
  });

  it('refuses more decimals than the token has', () => {
    expect(() => parseAmount('1.0000001', 6)).toThrow(/more than 6 decimal places/);
    expect(() => parseAmount('1.0000000001', 9)).toThrow(ValidationError);
  });

  it('refuses amounts beyond what the token can hold: uint256 by default, u64 for Solana', () => {
    const maxUint256At18 = '115792089237316195423570985008687907853269984665640564039457.584007913129639935';
    expect(() => parseAmount('115792089237316195423570985008687907853269984665640564039457.584007913129639936', 18)).toThrow(
      /body\.amount: is more than the token can hold/,
    );
    expect(() => parseAmount((2n ** 256n).toString(), 0)).toThrow(ValidationError);
    expect(() => parseAmount('9'.repeat(80), 6)).toThrow(/body\.amount: is more than the token can hold/);
    expect(parseAmount(maxUint256At18, 18)).toBe(2n ** 256n - 1n);
    expect(parseAmount('18446744073.709551615', 9, 'body.amount', MAX_SOLANA_UNITS)).toBe(2n ** 64n - 1n);
    expect(() => parseAmount('18446744073.709551616', 9, 'body.amount', MAX_SOLANA_UNITS)).toThrow(/at most 18446744073\.709551615/);
  });

  it('formats base units without floats or trailing zeros', () => {
    expect(formatAmount(1n, 6)).toBe('0.000001');
    expect(formatAmount(1_500_000n, 6)).toBe('1.5');
    expect(formatAmount(0n, 18)).toBe('0');
    expect(formatAmount(2n ** 64n, 9)).toBe('18446744073.709551616');
  });
});

describe('withdraw rules', () => {
  it('allows exactly the spec table of token/chain pairs', () => {
    const allowed: string[] = [];
    for (const chain of Object.keys(WITHDRAW_TOKENS) as (keyof typeof WITHDRAW_TOKENS)[]) {
      for (const token of ['ETH', 'USDC', 'USDC.E', 'POL', 'SOL'] as const) {
        try {
          assertWithdrawable(chain, token);
          allowed.push(`${chain}:${token}`);
        } catch (error) {
          expect(error).toBeInstanceOf(ValidationError);
        }
      }
    }
    expect(allowed.sort()).toEqual(
      ['ARB:ETH', 'ARB:USDC', 'ARB:USDC.E', 'ETH:ETH', 'ETH:USDC', 'INK:ETH', 'INK:USDC', 'POL:POL', 'POL:USDC', 'POL:USDC.E', 'SOL:SOL', 'SOL:USDC'].sort(),
    );
  });

  it('normalises EVM addresses to EIP-55 and accepts off-curve Solana keys', () => {
    expect(normaliseRecipient('ARB', '0x52908400098527886e0f7030069857d2e4169ee7')).toBe('0x52908400098527886E0F7030069857D2E4169EE7');
    // A program-derived address (off the ed25519 curve) is a valid recipient.
    expect(normaliseRecipient('SOL', 'So11111111111111111111111111111111111111112')).toBe('So11111111111111111111111111111111111111112');
    for (const [chain, address] of [
      ['ETH', '0x52908400098527886e0f7030069857d2e4169ee'],
      ['SOL', '0x52908400098527886e0f7030069857d2e4169ee7'],
      ['SOL', '1111'],
    ] as const) {
      expect(() => normaliseRecipient(chain, address)).toThrow(ValidationError);
    }
  });
});
