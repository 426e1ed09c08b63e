/**
 * Cold-start weight of every Lambda (issue 7, item 5). Usage: npm run bench:bundles
 * (BENCH_RUNS=n sets the import-time runs per bundle, default 7).
 *
 * Each handler is bundled exactly as CDK bundles it (ESBUILD_OPTIONS mirrors the NodejsFunction
 * bundling of infra/bundling.ts). Per route (and per transfer step function) it prints:
 * - min / gzip: the minified bundle's bytes, and gzip -9 of it;
 * - libs / x libs: the bundle's size over a bundle of just the libraries its code calls. That
 *   twin (bench/bundles/library-entry.ts) imports exactly the package symbols the function's own
 *   files import (as the metafile lists the files esbuild kept) and re-exports them. The ratio
 *   shows what the bundle carries beyond those libraries: our own code, and anything reached only
 *   by how we import (a duplicated package copy, CommonJS that does not tree-shake). It cannot
 *   see a client that our code constructs but the route never calls: that is what the per-route
 *   `needs` check below is for;
 * - own: bytes of our own code (functions/, shared/) in the bundle, from the metafile;
 * - import ms / x floor: a fresh `node` process importing the bundle (module evaluation
 *   included, so config parsing and client construction count, as in a Lambda INIT), median of
 *   the runs, and that median over the FLOOR bundle's, measured in the same rounds. The floor
 *   (bench/bundles/floor-handler.ts) is the least a function here can be that does one
 *   authenticated DynamoDB read with our libraries: middy + jose + the DynamoDB document client.
 *   The ratio cancels most of the machine's speed and load; the absolute numbers do not.
 *
 * Targets (issue 7): functions that only read the table <= 400 KB; median over all functions
 * <= 450 KB; every function <= 700 KB; median import-time ratio <= 1.2x; no bundle carries
 * @solana/web3.js 1.x or its heavy dependencies, nor imports node:http / node:util statically; a
 * route bundles no AWS/chain client its `needs` (functions/routes.ts) do not name. PASS/FAIL is printed per target; the exit code is non-zero
 * only when a bundle fails to build (a missed target is a finding, not a broken bench).
 * Functions are counted per route (a shared handler module counts once per route, as deployed).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { ROUTES, type RouteDefinition, tableAccess } from '../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../functions/transfer-steps.ts';
import { ESBUILD_OPTIONS } from '../infra/bundling.ts';
import { importMs, median } from './bundles/import-time.ts';
import { libraryEntrySource, libraryUse, ownInputs } from './bundles/library-entry.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const FLOOR_ENTRY = 'bench/bundles/floor-handler.ts';
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const KB = 1000;

const TARGETS = { tableReaderBytes: 400 * KB, medianBytes: 450 * KB, maxBytes: 700 * KB, medianImportRatio: 1.2 };

/**
 * Built-ins no bundle may import as an ES module: that evaluates the built-in's whole namespace
 * (node:http pulls undici, node:util worker_threads), tens of ms per cold start. The bundles are
 * CommonJS (infra/bundling.ts), which `require`s them instead; this guards against going back.
 */
const SLOW_BUILTINS = ['node:http', 'node:util', 'node:worker_threads'];

/** In no Lambda bundle (issue 7: @solana/web3.js 1.x and what it drags in). */
const FORBIDDEN_PACKAGES = ['@solana/web3.js', '@solana/spl-token', 'bn.js', 'rpc-websockets', 'tr46', 'whatwg-url'];

/**
 * An AWS-like environment for importing any handler: every variable some route reads, with
 * placeholder values (nothing is called at import). Extra variables do not matter to a route.
 */
const IMPORT_ENV: Record<string, string> = {
  AWS_REGION: 'us-east-1',
  TABLE_NAME: 'bench-table',
  KEY_PROVIDER: 'kms',
  ENCLAVE_KMS_KEY_ID: 'alias/bench-enclave',
  ACCOUNT_KMS_KEY_ID: 'alias/bench-account',
  OP_JWT_SIGNER: 'kms',
  OP_JWT_KMS_KEY_ID: 'alias/bench-op-jwt',
  SPONSOR_SIGNER: 'kms',
  SPONSOR_KMS_KEY_ID: 'alias/bench-sponsor',
  TEE_URL: 'https://enclave.example.com',
  CHAINS_CONFIG: await readFile(new URL('../infra/config/chains.mainnet.json', import.meta.url), 'utf8'),
  RPC_URLS_SECRET: 'bench/rpc-urls',
  ALLOWED_7702_DELEGATES: '',
  VENUE_URLS: '{}',
  BRIDGE_URL: 'https://bridge.example.com',
  PLATFORM_FEE: '{"bps":10,"recipients":{}}',
  TRANSFER_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:bench',
  TRANSFER_STEP_FUNCTIONS: JSON.stringify(
    Object.fromEntries(TRANSFER_STEP_FUNCTIONS.map((step) => [step.kind, `arn:aws:lambda:us-east-1:123456789012:function:bench-${step.kind}`])),
  ),
  POWERTOOLS_SERVICE_NAME: 'bench',
  LOG_LEVEL: 'ERROR',
};

/**
 * "Only reads the table": needs only a `table` that it reads and never writes, and not an enclave route (the enclave's
 * v1 signers read only the table too, but they sign: secp256k1/ed25519 and transaction encoding
 * are a library cost of their own).
 */
function onlyReadsTable(route: RouteDefinition): boolean {
  const { needs } = route;
  const named = Object.entries(needs).filter(([, value]) => value !== undefined);
  return route.service !== 'enclave' && named.length === 1 && needs.table !== undefined && tableAccess(needs.table) === 'read';
}

/** Packages a route must not bundle given its needs: a client it has no use (and no grant) for. */
function unneededPackages(route: RouteDefinition): string[] {
  const { needs } = route;
  const unneeded: string[] = [];
  if (!needs.table) unneeded.push('@aws-sdk/client-dynamodb');
  if (!needs.enclaveWalletKey && !needs.accountAccessKey && !needs.opJwtKey) unneeded.push('@aws-sdk/client-kms');
  // Without chains, no RPC client (kit's codecs alone are fine: the enclave decodes Solana messages).
  if (!needs.chains) unneeded.push('@aws-sdk/client-secrets-manager', '@aws-lambda-powertools/parameters', '@solana/rpc', '@solana/rpc-transport-http');
  return unneeded;
}

/** The package a bundled file belongs to (the innermost node_modules), or undefined for our code. */
function packageOf(file: string): string | undefined {
  const match = file.match(/.*node_modules\/((?:@[^/]+\/)?[^/]+)/);
  return match?.[1];
}

interface Built {
  readonly file: string;
  readonly bytes: number;
  readonly gzipBytes: number;
  readonly metafile: Metafile;
  readonly packages: ReadonlySet<string>;
  readonly ownBytes: number;
  /** SLOW_BUILTINS the bundle imports statically. */
  readonly slowBuiltins: readonly string[];
}

async function bundle(entry: string | { contents: string }, outfile: string): Promise<Built> {
  const result = await build({
    ...ESBUILD_OPTIONS,
    absWorkingDir: REPO_ROOT,
    ...(typeof entry === 'string'
      ? { entryPoints: [path.join(REPO_ROOT, entry)] }
      : { stdin: { contents: entry.contents, resolveDir: REPO_ROOT, loader: 'js' } }),
    outfile,
    metafile: true,
    logLevel: 'silent',
  });
  const output = result.metafile.outputs[path.relative(REPO_ROOT, outfile)];
  if (!output) throw new Error('esbuild metafile has no entry for the bundle');
  const packages = new Set<string>();
  let ownBytes = 0;
  for (const [file, input] of Object.entries(output.inputs)) {
    if (input.bytesInOutput === 0) continue;
    const name = packageOf(file);
    if (name) packages.add(name);
    else ownBytes += input.bytesInOutput;
  }
  const code = await readFile(outfile);
  const text = code.toString('utf8');
  const slowBuiltins = SLOW_BUILTINS.filter((name) => text.includes(`from"${name}"`) || text.includes(`from "${name}"`));
  return { file: outfile, bytes: output.bytes, gzipBytes: gzipSync(code, { level: 9 }).length, metafile: result.metafile, packages, ownBytes, slowBuiltins };
}

/** The first line of an error; for a failed child process, the error line of its stderr. */
function firstLine(error: unknown): string {
  const stderr = (error as { stderr?: string }).stderr;
  const thrown = stderr?.split('\n').find((line) => /^\w*Error\b|Error:/.test(line));
  if (thrown) return thrown.trim();
  return error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error);
}
const kb = (bytes: number) => (bytes / KB).toFixed(1);
const pass = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

interface EntryResult {
  readonly built?: Built;
  readonly libs?: Built;
  readonly error?: string;
  importMs: number[];
  importError?: string;
}

/** Every Lambda: one per route, and the transfer step functions (invoked by Step Functions; the account service's). */
const FUNCTIONS: readonly RouteDefinition[] = [
  ...ROUTES,
  ...TRANSFER_STEP_FUNCTIONS.map((step) => ({
    id: step.id,
    service: 'account' as const,
    routeKey: `(Step Functions) ${step.kind}`,
    entry: step.entry,
    needs: step.needs,
  })),
];

const outDir = await mkdtemp(path.join(tmpdir(), 'bundle-size-'));
try {
  // One build per handler module; routes sharing a module share its numbers.
  const entries = [...new Set(FUNCTIONS.map((route) => route.entry))];
  const results = new Map<string, EntryResult>();
  const floorFile = path.join(outDir, 'floor', 'index.cjs');
  const [floor] = await Promise.all([
    bundle(FLOOR_ENTRY, floorFile),
    ...entries.map(async (entry, index) => {
      const result: EntryResult = { importMs: [] };
      results.set(entry, result);
      try {
        const built = await bundle(entry, path.join(outDir, `fn-${index}`, 'index.cjs'));
        Object.assign(result, { built });
        const output = built.metafile.outputs[path.relative(REPO_ROOT, built.file)]!;
        const use = libraryUse(ownInputs(output.inputs, REPO_ROOT));
        Object.assign(result, { libs: await bundle({ contents: libraryEntrySource(use) }, path.join(outDir, `libs-${index}`, 'index.cjs')) });
      } catch (error) {
        Object.assign(result, { error: firstLine(error) });
      }
    }),
  ]);

  // Import times: every bundle once per round, the floor first, so load drifts hit all alike.
  const floorMs: number[] = [];
  for (let round = 0; round < RUNS; round++) {
    floorMs.push(await importMs(floor.file, IMPORT_ENV));
    for (const result of results.values()) {
      if (!result.built || result.importError) continue;
      try {
        result.importMs.push(await importMs(result.built.file, IMPORT_ENV));
      } catch (error) {
        result.importError = firstLine(error);
      }
    }
  }
  const floorMedian = median(floorMs);

  const header = ['route', 'min KB', 'gzip KB', 'libs KB', 'x libs', 'own KB', 'import ms', 'x floor'];
  const rows: string[][] = [];
  const perRoute: { route: RouteDefinition; bytes: number; ratio?: number; packages: ReadonlySet<string>; slowBuiltins: readonly string[] }[] = [];
  for (const route of FUNCTIONS) {
    const result = results.get(route.entry)!;
    if (!result.built) {
      rows.push([route.id, 'FAILED', '-', '-', '-', '-', '-', '-']);
      continue;
    }
    const { built, libs } = result;
    const ms = result.importError || result.importMs.length === 0 ? undefined : median(result.importMs);
    const ratio = ms === undefined ? undefined : ms / floorMedian;
    perRoute.push({ route, bytes: built.bytes, ratio, packages: built.packages, slowBuiltins: built.slowBuiltins });
    rows.push([
      route.id,
      kb(built.bytes),
      kb(built.gzipBytes),
      libs ? kb(libs.bytes) : '-',
      libs ? `${(built.bytes / libs.bytes).toFixed(2)}x` : '-',
      kb(built.ownBytes),
      ms === undefined ? 'import failed' : ms.toFixed(1),
      ratio === undefined ? '-' : `${ratio.toFixed(2)}x`,
    ]);
  }
  const floorRow = ['FLOOR (middy+jose+DynamoDB read)', kb(floor.bytes), kb(floor.gzipBytes), '-', '-', kb(floor.ownBytes), floorMedian.toFixed(1), '1.00x'];

  const lines = [header, ...rows, floorRow];
  const widths = header.map((_, col) => Math.max(...lines.map((line) => line[col]!.length)));
  const render = (line: string[]) => line.map((cell, col) => (col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join('  ');
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  console.log(`Bundles as CDK builds them; import time: median of ${RUNS} fresh processes each. KB = 1000 bytes.\n`);
  console.log([render(header), rule, ...rows.map(render), rule, render(floorRow)].join('\n'));
  for (const [entry, result] of results) {
    if (result.error) console.error(`build failed: ${entry}: ${result.error}`);
    if (result.importError) console.error(`import failed: ${entry}: ${result.importError}`);
  }

  // Targets.
  const readers = perRoute.filter(({ route }) => onlyReadsTable(route));
  const largestReader = Math.max(...readers.map((r) => r.bytes));
  const medianBytes = median(perRoute.map((r) => r.bytes));
  const largest = perRoute.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const ratios = perRoute.map((r) => r.ratio).filter((r): r is number => r !== undefined);
  const medianRatio = ratios.length ? median(ratios) : Number.NaN;
  const forbidden = perRoute.flatMap(({ route, packages }) => FORBIDDEN_PACKAGES.filter((name) => packages.has(name)).map((name) => `${route.id}: ${name}`));
  const slow = perRoute.flatMap(({ route, slowBuiltins }) => slowBuiltins.map((name) => `${route.id}: ${name}`));
  const unneeded = perRoute.flatMap(({ route, packages }) =>
    unneededPackages(route)
      .filter((name) => packages.has(name))
      .map((name) => `${route.id}: ${name}`),
  );

  console.log('\nTargets');
  const targetLines = [
    [
      `functions that only read the table <= ${kb(TARGETS.tableReaderBytes)} KB (${readers.map((r) => r.route.id).join(', ')})`,
      `largest ${kb(largestReader)} KB`,
      pass(largestReader <= TARGETS.tableReaderBytes),
    ],
    [`median over all ${perRoute.length} functions <= ${kb(TARGETS.medianBytes)} KB`, `${kb(medianBytes)} KB`, pass(medianBytes <= TARGETS.medianBytes)],
    [`every function <= ${kb(TARGETS.maxBytes)} KB`, `largest ${largest.route.id} ${kb(largest.bytes)} KB`, pass(largest.bytes <= TARGETS.maxBytes)],
    [
      `median import time <= ${TARGETS.medianImportRatio}x the floor (${kb(floor.bytes)} KB, ${floorMedian.toFixed(1)} ms)`,
      `${medianRatio.toFixed(2)}x over ${ratios.length} functions`,
      pass(ratios.length === perRoute.length && medianRatio <= TARGETS.medianImportRatio),
    ],
    [`no bundle carries ${FORBIDDEN_PACKAGES.join(', ')}`, forbidden.length ? forbidden.join('; ') : 'none found', pass(forbidden.length === 0)],
    [`no bundle imports ${SLOW_BUILTINS.join(', ')} statically`, slow.length ? slow.join('; ') : 'none found', pass(slow.length === 0)],
    [
      'no route bundles a client its needs (functions/routes.ts) do not name',
      unneeded.length ? unneeded.join('; ') : 'none found',
      pass(unneeded.length === 0),
    ],
  ];
  for (const [target, measured, verdict] of targetLines) console.log(`  ${verdict!.padEnd(4)}  ${target}: ${measured}`);

  if ([...results.values()].some((result) => result.error || !result.libs)) process.exitCode = 1;
} finally {
  await rm(outDir, { recursive: true, force: true });
}
