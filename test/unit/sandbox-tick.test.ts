import { describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX_TICK_MS, sandboxTickMs, stepWaitMs } from '../../infra/local/sandbox-tick.ts';

/** The sandbox's clock (infra/local/sandbox-tick.ts): SANDBOX_TICK_MS, and SANDBOX_STEP_WAIT_MS for the Waits alone. */
describe('sandbox tick', () => {
  it('is 200 ms unless SANDBOX_TICK_MS says otherwise; the Waits follow it unless SANDBOX_STEP_WAIT_MS is set', () => {
    expect(DEFAULT_SANDBOX_TICK_MS).toBe(200);
    expect(sandboxTickMs({})).toBe(200);
    expect(sandboxTickMs({ SANDBOX_TICK_MS: '' })).toBe(200);
    expect(sandboxTickMs({ SANDBOX_TICK_MS: '20' })).toBe(20);
    expect(stepWaitMs(20, {})).toBe(20);
    expect(stepWaitMs(20, { SANDBOX_STEP_WAIT_MS: '0' })).toBe(0);
    expect(stepWaitMs(20, { SANDBOX_STEP_WAIT_MS: '300' })).toBe(300);
  });

  it.each(['0', '-5', '1.5', '2e1', 'fast', '60001'])('SANDBOX_TICK_MS=%s is refused in one line naming the variable', (raw) => {
    expect(() => sandboxTickMs({ SANDBOX_TICK_MS: raw })).toThrow(`SANDBOX_TICK_MS must be a whole number of milliseconds from 1 to 60000, not "${raw}"`);
  });

  it('SANDBOX_STEP_WAIT_MS takes 0 but nothing negative or fractional', () => {
    expect(() => stepWaitMs(200, { SANDBOX_STEP_WAIT_MS: '-1' })).toThrow(/^SANDBOX_STEP_WAIT_MS must be a whole number of milliseconds from 0 to 60000/);
    expect(() => stepWaitMs(200, { SANDBOX_STEP_WAIT_MS: '0.5' })).toThrow(/SANDBOX_STEP_WAIT_MS/);
  });
});
