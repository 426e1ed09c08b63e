import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * npm 11 warns on `npm ci` about every dependency whose install script `allowScripts` does not
 * decide, and suggests `npm install-scripts approve`. Each one is decided in package.json (README,
 * "Run it" says why for the denied ones), so a new dependency with an install script fails here
 * instead of surprising a newcomer with that warning.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };

/** The names of the locked packages that have an install script (`node_modules/a/node_modules/@s/b` is `@s/b`). */
const withInstallScripts = [
  ...new Set(
    Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  ),
].sort();

describe('install scripts', () => {
  it('the lock file has packages with install scripts (the check below is not vacuous)', () => {
    expect(withInstallScripts).toContain('esbuild');
    expect(withInstallScripts).toContain('vue-demi');
  });

  it('every package with an install script is decided in package.json allowScripts', () => {
    expect(withInstallScripts.filter((name) => typeof manifest.allowScripts[name] !== 'boolean')).toEqual([]);
  });

  it('vue-demi is denied: its postinstall only re-copies its Vue 3 files, which it already ships, for a page that loads a prebuilt bundle', () => {
    expect(manifest.allowScripts['vue-demi']).toBe(false);
  });
});
