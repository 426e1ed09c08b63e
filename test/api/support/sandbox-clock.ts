/**
 * The clock of the sandbox the API tests run against: global-setup.ts starts every runtime (its
 * own and those tests start) with SANDBOX_TICK_MS at this value, so venues and the bridge look at
 * the chains, and the transfer machine's Waits pass, every tick. Only the clock is shorter: what
 * happens, and how many transitions it takes, stay the same. Tests pace their own polls by it, and
 * a wait for "nothing happens" lasts a few ticks, long enough for the sandbox to have acted.
 */
export const SANDBOX_TICK_MS = 50;

/** Waits `n` ticks of the sandbox. */
export function ticks(n: number): Promise<void> {
  return new Promise((wake) => setTimeout(wake, n * SANDBOX_TICK_MS));
}

/** The pause between two looks of a test polling the sandbox (a task, a venue balance). */
export const POLL_TICKS = 2;
