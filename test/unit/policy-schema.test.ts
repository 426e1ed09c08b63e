import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { parseInput } from '../../shared/http/validate.ts';
import { PolicySchema } from '../../shared/policies/policy.ts';

const rule = (extra: Record<string, unknown> = {}) => ({ id: 'r1', action: 'allow', operations: ['sign_transaction'], ...extra });
const refusal = (body: unknown) => {
  try {
    parseInput(PolicySchema, body, 'body');
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the body was accepted');
};

describe('PolicySchema', () => {
  it('accepts a full rule and normalises EVM addresses to EIP-55 (Solana addresses as given)', () => {
    const policy = v.parse(PolicySchema, {
      mode: 'shadow',
      rules: [
        rule({
          channels: ['express'],
          chains: ['ETH', 'eip155:8453', 'SOL'],
          to: {
            allow: ['0xd8da6bf26964af9d7eed9e03e53415d37aa96045', 'So11111111111111111111111111111111111111112'],
            deny: ['0xAB5801A7D398351B8BE11C439E05C5B3259AEC9B'],
          },
          max_usd_per_tx: '10.5',
        }),
      ],
    });
    expect(policy.mode).toBe('shadow');
    expect(policy.rules[0]?.to?.allow).toEqual(['0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045', 'So11111111111111111111111111111111111111112']);
    expect(policy.rules[0]?.to?.deny).toEqual(['0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B']);
  });

  it('accepts an empty rule list (then everything is denied)', () => {
    expect(v.parse(PolicySchema, { mode: 'enforce', rules: [] }).rules).toEqual([]);
  });

  it.each([
    ['mode', { mode: 'audit', rules: [] }, 'body.mode: must be "enforce" or "shadow"'],
    ['rules', { mode: 'enforce' }, 'body.rules: is required'],
    ['unknown top-level field', { mode: 'enforce', rules: [], extra: 1 }, 'body.extra: is not allowed'],
    ['id pattern', { mode: 'enforce', rules: [rule({ id: 'has space' })] }, 'body.rules.0.id: must be 1-64 characters'],
    ['id length', { mode: 'enforce', rules: [rule({ id: 'x'.repeat(65) })] }, 'body.rules.0.id: must be 1-64 characters'],
    ['action', { mode: 'enforce', rules: [rule({ action: 'maybe' })] }, 'body.rules.0.action: must be "allow" or "deny"'],
    ['empty operations', { mode: 'enforce', rules: [rule({ operations: [] })] }, 'body.rules.0.operations: must list at least one operation'],
    ['unknown operation', { mode: 'enforce', rules: [rule({ operations: ['withdraw'] })] }, 'body.rules.0.operations.0: must be one of sign_data'],
    ['unknown channel', { mode: 'enforce', rules: [rule({ channels: ['web'] })] }, 'body.rules.0.channels.0: must be one of account, enclave, express'],
    [
      'unknown chain',
      { mode: 'enforce', rules: [rule({ chains: ['BTC'] })] },
      'body.rules.0.chains.0: must be one of ETH, ARB, POL, INK, SOL or eip155:<chain id>',
    ],
    ['bad address', { mode: 'enforce', rules: [rule({ to: { allow: ['0x1234'] } })] }, 'body.rules.0.to.allow.0: must be an EVM address'],
    [
      'wrong checksum',
      { mode: 'enforce', rules: [rule({ to: { deny: ['0xD8dA6BF26964aF9D7eEd9e03E53415D37aA96045'] } })] },
      'body.rules.0.to.deny.0: must be an EVM address',
    ],
    ['empty to', { mode: 'enforce', rules: [rule({ to: {} })] }, 'body.rules.0.to: must have allow or deny'],
    ['unknown to field', { mode: 'enforce', rules: [rule({ to: { only: [] } })] }, 'body.rules.0.to.only: is not allowed'],
    ['usd form', { mode: 'enforce', rules: [rule({ max_usd_per_tx: '1e3' })] }, 'body.rules.0.max_usd_per_tx: must be a decimal string of USD'],
    ['usd decimals', { mode: 'enforce', rules: [rule({ max_usd_per_tx: '0.1234567' })] }, 'body.rules.0.max_usd_per_tx: must be a decimal string of USD'],
    ['usd as number', { mode: 'enforce', rules: [rule({ max_usd_per_tx: 10 })] }, 'body.rules.0.max_usd_per_tx: must be a decimal string'],
    ['daily limit form', { mode: 'enforce', rules: [rule({ max_usd_per_day: '1e3' })] }, 'body.rules.0.max_usd_per_day: must be a decimal string of USD'],
    ['daily limit as number', { mode: 'enforce', rules: [rule({ max_usd_per_day: 10 })] }, 'body.rules.0.max_usd_per_day: must be a decimal string'],
    ['unknown rule field', { mode: 'enforce', rules: [rule({ priority: 1 })] }, 'body.rules.0.priority: is not allowed'],
    ['duplicate ids', { mode: 'enforce', rules: [rule(), rule()] }, 'body.rules: must not hold two rules with the same id'],
    ['too many rules', { mode: 'enforce', rules: Array.from({ length: 101 }, (_, i) => rule({ id: `r${i}` })) }, 'body.rules: must hold at most 100 rules'],
  ])('refuses %s, naming the field', (_, body, message) => {
    expect(refusal(body)).toContain(message);
  });

  it('accepts max_usd_per_day (issue 22, second increment)', () => {
    const parsed = v.safeParse(PolicySchema, { mode: 'enforce', rules: [rule({ max_usd_per_day: '10.25' })] });
    expect(parsed.success && parsed.output.rules[0]?.max_usd_per_day).toBe('10.25');
  });

  it('never echoes a refused value', () => {
    expect(refusal({ mode: 'enforce', rules: [rule({ id: 'secret-looking value!' })] })).not.toContain('secret-looking');
  });
});
