import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Milliseconds a fresh Node process spends importing `bundle` (module evaluation included: the
 * composition root's config parsing and client construction run at import, as in a Lambda
 * INIT). Node's own start-up is outside the measured span. Rejects when the import throws.
 */
export async function importMs(bundle: string, env: Record<string, string>): Promise<number> {
  const script = `const t0 = performance.now(); const m = await import(${JSON.stringify(pathToFileURL(bundle).href)}); const ms = performance.now() - t0; if (typeof m.handler !== 'function') process.exit(3); process.stdout.write(String(ms));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 });
  return Number(stdout);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
