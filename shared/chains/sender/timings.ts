import type { SendTimings } from './ports.ts';

/** Phase timings for Server-Timing and the bench: added up across the calls of one send. */
export const newTimings = (): SendTimings => ({ sign: 0, broadcast: 0, inclusion: 0 });

export async function timed<T>(timings: SendTimings | undefined, phase: keyof SendTimings, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    if (timings) timings[phase] += performance.now() - started;
  }
}
