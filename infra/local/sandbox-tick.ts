import { LocalRuntimeError } from './local-runtime-error.ts';

/**
 * The sandbox's clock: one tick (SANDBOX_TICK_MS, 200 ms by default) sets how often the sandbox
 * venues' and the sandbox bridge's pollers look at the chains (venue_e's proxy mover every half
 * tick, a venue's payer at least every five), how often the price feeds' heartbeat looks at their
 * rounds (infra/local/price-feeds.ts), and how long each Wait of the local transfer machine
 * lasts (SANDBOX_STEP_WAIT_MS overrides just that). Tests run the sandbox on a short tick: only the
 * clock changes, not what happens nor how many transitions it takes.
 */
export const DEFAULT_SANDBOX_TICK_MS = 200;

export function sandboxTickMs(env: NodeJS.ProcessEnv = process.env): number {
  return wholeMs(env, 'SANDBOX_TICK_MS', 1) ?? DEFAULT_SANDBOX_TICK_MS;
}

/** Each local Wait: SANDBOX_STEP_WAIT_MS when set (0 allowed), else one tick. */
export function stepWaitMs(tickMs: number, env: NodeJS.ProcessEnv = process.env): number {
  return wholeMs(env, 'SANDBOX_STEP_WAIT_MS', 0) ?? tickMs;
}

function wholeMs(env: NodeJS.ProcessEnv, name: string, min: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const ms = Number(raw);
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(ms) || ms < min || ms > 60_000) {
    throw new LocalRuntimeError(`${name} must be a whole number of milliseconds from ${min} to 60000, not ${JSON.stringify(raw)}`);
  }
  return ms;
}
