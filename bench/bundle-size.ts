/**
 * Bundle size of every Lambda, built exactly as CDK builds it (ESBUILD_OPTIONS mirrors the
 * NodejsFunction bundling in infra/bundling.ts). Prints minified and gzip bytes per route.
 * Usage: npm run bench:bundles
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { ROUTES, type RouteDefinition } from '../functions/routes.ts';
import { ESBUILD_OPTIONS } from '../infra/bundling.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

type Built = { route: RouteDefinition; bytes: number; gzipBytes: number };
type Failed = { route: RouteDefinition; error: string };
type Row = Built | Failed;

async function measure(route: RouteDefinition, outDir: string): Promise<Row> {
  const outfile = path.join(outDir, route.id, 'index.mjs');
  try {
    const result = await build({
      ...ESBUILD_OPTIONS,
      absWorkingDir: REPO_ROOT,
      entryPoints: [path.join(REPO_ROOT, route.entry)],
      outfile,
      metafile: true,
      logLevel: 'silent',
    });
    const output = result.metafile.outputs[path.relative(REPO_ROOT, outfile)];
    if (!output) throw new Error('esbuild metafile has no entry for the bundle');
    return { route, bytes: output.bytes, gzipBytes: gzipSync(await readFile(outfile), { level: 9 }).length };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] ?? error.message : String(error);
    return { route, error: message };
  }
}

const formatBytes = (n: number) => n.toLocaleString('en-US');

const outDir = await mkdtemp(path.join(tmpdir(), 'bundle-size-'));
try {
  const rows = await Promise.all(ROUTES.map((route) => measure(route, outDir)));

  const header = ['route', 'entry', 'bytes (min)', 'gzip bytes'];
  const body = rows.map((row) =>
    'error' in row
      ? [row.route.id, row.route.entry, 'FAILED', '-']
      : [row.route.id, row.route.entry, formatBytes(row.bytes), formatBytes(row.gzipBytes)],
  );
  const built = rows.filter((row): row is Built => !('error' in row));
  const total = [
    'TOTAL',
    `${built.length} of ${rows.length} bundles`,
    formatBytes(built.reduce((sum, row) => sum + row.bytes, 0)),
    formatBytes(built.reduce((sum, row) => sum + row.gzipBytes, 0)),
  ];

  // Text columns left-aligned, byte columns right-aligned.
  const lines = [header, ...body, total];
  const widths = header.map((_, col) => Math.max(...lines.map((line) => line[col]!.length)));
  const render = (line: string[]) =>
    line.map((cell, col) => (col < 2 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join('  ');
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');

  console.log([render(header), rule, ...body.map(render), rule, render(total)].join('\n'));
  for (const row of rows) if ('error' in row) console.error(`${row.route.id} (${row.route.entry}): ${row.error}`);

  if (built.length < rows.length) process.exitCode = 1;
} finally {
  await rm(outDir, { recursive: true, force: true });
}
