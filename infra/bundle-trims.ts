import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * One copy of each @solana/kit building block per bundle.
 *
 * npm hoists @solana/web3.js 1.x's older @solana/errors and codecs (5.x) to the top of
 * node_modules (the local sandbox and the tests still use web3.js 1.x), so every kit package gets
 * its own nested copy of the 8.x ones: 14 identical copies of @solana/errors (36 KB each) in a
 * bundle. esbuild's `alias` points every import of such a package at one copy of the version the
 * kit line uses. Computed from node_modules, so it disappears by itself once the tree is deduped.
 */
const NODE_MODULES = fileURLToPath(new URL('../node_modules/', import.meta.url));

const versionAt = (dir: string): string | undefined => {
  try {
    return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return undefined;
  }
};

function kitAliases(): Record<string, string> {
  const scope = path.join(NODE_MODULES, '@solana');
  const kitVersion = versionAt(path.join(scope, 'kit'));
  if (!kitVersion) return {};
  const aliases: Record<string, string> = {};
  for (const parent of readdirSync(scope)) {
    const nested = path.join(scope, parent, 'node_modules', '@solana');
    let names: string[];
    try {
      names = readdirSync(nested);
    } catch {
      continue;
    }
    for (const name of names) {
      const packageName = `@solana/${name}`;
      if (aliases[packageName] || versionAt(path.join(scope, name)) === kitVersion) continue;
      if (versionAt(path.join(nested, name)) === kitVersion) aliases[packageName] = path.join(nested, name);
    }
  }
  return aliases;
}

/** Package name -> the directory every import of it resolves to (esbuild `alias`). */
export const BUNDLE_ALIASES: Readonly<Record<string, string>> = kitAliases();

/**
 * The AWS SDK's credential providers that never run in Lambda, left out of the bundles.
 * Lambda puts the execution role's credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN, and the default chain (credential-provider-node) answers from those first;
 * it reaches SSO, ini files, credential processes, web identity, the container/IMDS endpoints
 * only through dynamic `import()`s after the environment had none. Bundled, those bring the
 * STS/SSO clients along: 132 KB in every function that calls AWS (bench:bundles), parsed on
 * every cold start and never executed. Left external, the `import()` stays in the bundle and
 * only a Lambda without credentials in its environment (none exists) would reach it.
 */
export const UNREACHED_IN_LAMBDA: readonly string[] = [
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/credential-provider-http',
  '@smithy/credential-provider-imds',
];
