import { type BundlingOptions, LogLevel, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';
import { BUNDLE_ALIASES, UNREACHED_IN_LAMBDA } from './bundle-trims.ts';

/**
 * How every Lambda is bundled, in one place: CDK's NodejsFunction uses LAMBDA_BUNDLING,
 * bench/bundle-size.ts and the cold-start test (test/infra/stacks.test.ts) use ESBUILD_OPTIONS to
 * reproduce the same bundle with esbuild directly. Keep the two in step: each line of one has its
 * counterpart in the other; that test fails when CDK's bundles and these differ by a byte.
 */

const NODE_TARGET = 'node24';

/** Prefer a package's ESM build: tree-shaking works on ES modules, not on CommonJS. */
const MAIN_FIELDS = ['module', 'main'];

/**
 * The sources are ES modules and are tree-shaken as such; the *output* is CommonJS. An ES-module
 * bundle that imports a Node built-in (`import { STATUS_CODES } from 'node:http'` in @middy/util,
 * `node:crypto`, …) makes Node build that built-in's whole module namespace, which runs its lazy
 * getters (node:http's pull in undici): about 40 ms more per cold start here. A CommonJS bundle
 * `require`s the same built-ins and leaves those getters lazy. Measured with bench:bundles: every
 * function's fresh-process import 25-35 ms faster (GetAccount 83 -> 50 ms, Withdraw 110 -> 92 ms).
 * No Lambda code path uses top-level await or import.meta (esbuild would refuse or warn).
 */
const OUTPUT_FORMAT = 'cjs';

/**
 * The AWS SDK is bundled too: the version we test against is the one in package-lock.json, not
 * whatever the Lambda runtime ships that month, and tree-shaken ESM clients load faster on a
 * cold start than the runtime's full CommonJS SDK. External only: the credential providers a
 * Lambda never reaches (bundle-trims.ts).
 */
const EXTERNAL_MODULES: string[] = [...UNREACHED_IN_LAMBDA];

export const LAMBDA_BUNDLING: BundlingOptions = {
  format: OutputFormat.CJS,
  minify: true,
  // Linked source map next to index.js; NODE_OPTIONS=--enable-source-maps makes stack traces use it.
  sourceMap: true,
  // File and line are enough for stack traces; embedding the sources would double the asset.
  sourcesContent: false,
  target: NODE_TARGET,
  mainFields: MAIN_FIELDS,
  externalModules: EXTERNAL_MODULES,
  // One copy of each @solana/kit package (bundle-trims.ts).
  esbuildArgs: Object.fromEntries(Object.entries(BUNDLE_ALIASES).map(([name, dir]) => [`--alias:${name}`, dir])),
  // Per-bundle size tables drown synth and test output; `npm run bench:bundles` prints sizes.
  logLevel: LogLevel.WARNING,
};

/** The same build for esbuild's JS API (NodejsFunction adds bundle + platform itself). */
export const ESBUILD_OPTIONS: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: OUTPUT_FORMAT,
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  target: NODE_TARGET,
  mainFields: MAIN_FIELDS,
  external: EXTERNAL_MODULES,
  alias: { ...BUNDLE_ALIASES },
};
