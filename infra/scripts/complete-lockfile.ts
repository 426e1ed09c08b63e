import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';

/**
 * `npm run lock:platforms`, after any `npm install` that rewrites package-lock.json.
 *
 * Some dependencies ship their binaries as optional per-platform packages (anvil, litesvm). The
 * registry our machines reach serves only the linux-x64 ones, so npm writes no lock entry for the
 * others — and `npm ci` then refuses the lock ("Missing: … from lock file"). This adds an entry
 * for each missing optional platform package, with the os/cpu/libc its name states, so `npm ci`
 * skips it on other platforms exactly as it would with the real metadata.
 */
const path = resolve(import.meta.dirname, '../../package-lock.json');
const lock = JSON.parse(await readFile(path, 'utf8')) as { packages: Record<string, Record<string, unknown>> };
const packages = lock.packages;

function platformOf(name: string) {
  const os = ['darwin', 'linux', 'win32', 'freebsd', 'android'].find((candidate) => name.includes(candidate));
  const cpu = /arm64|aarch64/.test(name) ? 'arm64' : /x64|amd64|x86_64/.test(name) ? 'x64' : /ia32|x86/.test(name) ? 'ia32' : undefined;
  const libc = /musl/.test(name) ? 'musl' : /gnu/.test(name) ? 'glibc' : undefined;
  return os && cpu ? { os, cpu, libc } : undefined;
}

const added: string[] = [];
for (const entry of Object.values(packages)) {
  const optional = entry.optionalDependencies as Record<string, string> | undefined;
  if (!optional) continue;
  for (const [name, version] of Object.entries(optional)) {
    const key = `node_modules/${name}`;
    const platform = platformOf(name);
    if (packages[key] || !platform) continue;
    packages[key] = {
      version,
      cpu: [platform.cpu],
      ...(entry.dev ? { dev: true } : {}),
      ...(platform.libc ? { libc: [platform.libc] } : {}),
      optional: true,
      os: [platform.os],
    };
    added.push(`${name}@${version}`);
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
await writeFile(path, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(added.length ? `added lock entries: ${added.join(', ')}\n` : 'lock already complete\n');
