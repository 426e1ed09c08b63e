import { vi } from 'vitest';

/**
 * Everything the process writes to stdout and stderr while `run` runs (Powertools writes there
 * directly, not through `console`), as parsed JSON lines.
 */
export async function captureJsonLines(run: () => unknown): Promise<Record<string, any>[]> {
  const written: string[] = [];
  const grab = (chunk: unknown) => {
    written.push(String(chunk));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(grab);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(grab);
  try {
    await run();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return written
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}
