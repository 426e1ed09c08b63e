import { describe, expect, it } from 'vitest';
import { ANY_ADDRESS, type FaultTable, faultTableOf, scopeOf, takeFault } from '../../infra/local/fault-scopes.ts';

/**
 * Faults by scope (infra/local/fault-scopes.ts), as the sandbox venues and bridge keep them: an
 * operation takes its own address's fault first, else the unscoped one; EVM addresses match
 * whatever their case, Solana addresses exactly; a state file from before scopes still works.
 */
const ALICE = '0x00000000000000000000000000000000000A11cE';
const BOB = '0x0000000000000000000000000000000000000B0b';
const SOL_USER = 'So11111111111111111111111111111111111111112';

describe('fault scopes', () => {
  it('a scoped fault is taken only by its address, whatever the EVM case, and counts down', () => {
    const table: FaultTable<'fail'> = { [scopeOf(ALICE)]: { mode: 'fail', remaining: 2 } };
    expect(takeFault(table, [BOB])).toBeUndefined();
    expect(takeFault(table, [ALICE.toLowerCase()])).toEqual({ mode: 'fail', scope: ALICE.toLowerCase() });
    expect(takeFault(table, [BOB, ALICE.toUpperCase().replace('0X', '0x')])).toEqual({ mode: 'fail', scope: ALICE.toLowerCase() });
    expect(table).toEqual({});
    expect(takeFault(table, [ALICE])).toBeUndefined();
  });

  it("several scopes at once; the operation's own address first, then the unscoped fault, which anyone takes", () => {
    const table: FaultTable<'fail' | 'stall' | 'refund'> = {
      [scopeOf(ALICE)]: { mode: 'stall', remaining: 1 },
      [scopeOf(SOL_USER)]: { mode: 'refund', remaining: 1 },
      [ANY_ADDRESS]: { mode: 'fail', remaining: 1 },
    };
    expect(takeFault(table, [SOL_USER.toLowerCase()])).toEqual({ mode: 'fail', scope: ANY_ADDRESS }); // base58 is case-sensitive
    expect(takeFault(table, [BOB])).toBeUndefined();
    expect(takeFault(table, [ALICE])).toEqual({ mode: 'stall', scope: ALICE.toLowerCase() });
    expect(takeFault(table, [SOL_USER])).toEqual({ mode: 'refund', scope: SOL_USER });
    expect(table).toEqual({});
  });

  it('scopeOf: no address is ANY_ADDRESS', () => {
    expect(scopeOf(undefined)).toBe(ANY_ADDRESS);
    expect(scopeOf(SOL_USER)).toBe(SOL_USER);
  });

  it("an earlier sandbox's single fault (no scope) reads as the unscoped entry", () => {
    expect(faultTableOf({ mode: 'stall', remaining: 3 })).toEqual({ [ANY_ADDRESS]: { mode: 'stall', remaining: 3 } });
    expect(faultTableOf(undefined)).toEqual({});
    const table = { [scopeOf(BOB)]: { mode: 'fail' as const, remaining: 1 } };
    expect(faultTableOf(table)).toBe(table);
  });
});
