import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layering the code promises, checked on its static import graph:
 * - the wallet enclave's own domain (shared/enclave/) is imported only by itself and by the
 *   enclave's handlers (functions/enclave/); the account and express services reach the enclave
 *   through its HTTP client (shared/wallets/enclave-client.ts). The one exception is the OpenAPI
 *   writer (infra/openapi/), which documents the enclave's wire schemas (shared/enclave/schemas.ts);
 * - no other service's handler imports an enclave handler (infra/local/ may: it hosts every
 *   service's handlers in one process, as Lambda hosts each one);
 * - shared/ depends on neither functions/ nor infra/;
 * - no import cycle among shared/ and functions/ modules.
 * test/ and bench/ are not scanned: they exercise every layer on purpose.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const SCANNED = ['functions', 'shared', 'infra'];

type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** Relative specifiers of static `import … from`, `export … from` and side-effect `import '…'`. */
function importSpecifiers(source: string): string[] {
  const specifiers: string[] = [];
  const patterns = [/\b(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/g, /^\s*import\s*['"]([^'"]+)['"]/gm];
  for (const pattern of patterns) {
    for (const match of source.matchAll(pattern)) specifiers.push(match[1]!);
  }
  return specifiers.filter((specifier) => specifier.startsWith('.'));
}

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The repository's import graph: repo-relative file -> repo-relative files it imports. */
function repositoryGraph(): { graph: ImportGraph; missing: string[] } {
  const graph = new Map<string, string[]>();
  const missing: string[] = [];
  for (const file of SCANNED.flatMap(tsFiles)) {
    const targets = importSpecifiers(readFileSync(join(ROOT, file), 'utf8')).map((specifier) =>
      relative(ROOT, resolve(ROOT, dirname(file), specifier))
        .split('\\')
        .join('/'),
    );
    for (const target of targets) if (!existsSync(join(ROOT, target))) missing.push(`${file} -> ${target}`);
    graph.set(file, targets);
  }
  return { graph, missing };
}

const under = (file: string, ...dirs: string[]) => dirs.some((dir) => file.startsWith(`${dir}/`));

/** Imports that cross a boundary, as `importer -> imported: reason`. */
function boundaryViolations(graph: ImportGraph): string[] {
  const violations: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const edge = `${from} -> ${to}`;
      if (under(to, 'shared/enclave') && !under(from, 'shared/enclave', 'functions/enclave')) {
        const documentsWireSchemas = under(from, 'infra/openapi') && to === 'shared/enclave/schemas.ts';
        if (!documentsWireSchemas) violations.push(`${edge}: only the enclave imports shared/enclave/ (others use shared/wallets/enclave-client.ts)`);
      }
      if (under(to, 'functions/enclave') && under(from, 'functions') && !under(from, 'functions/enclave')) {
        violations.push(`${edge}: another service's handler imports an enclave handler`);
      }
      if (under(from, 'shared') && under(to, 'functions', 'infra')) {
        violations.push(`${edge}: shared/ must not depend on ${to.split('/')[0]}/`);
      }
    }
  }
  return violations;
}

/**
 * Import cycles among the modules `inScope` selects: each strongly connected component with more
 * than one module (or a module importing itself), reported as one concrete cycle of files.
 */
function importCycles(graph: ImportGraph, inScope: (file: string) => boolean): string[][] {
  const successors = (file: string) => (graph.get(file) ?? []).filter(inScope);
  const nodes = [...graph.keys()].filter(inScope).sort();
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of successors(node)) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component);
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);

  return components
    .filter((component) => component.length > 1 || successors(component[0]!).includes(component[0]!))
    .map((component) => shortestCycle(component.sort()[0]!, (file) => successors(file).filter((next) => component.includes(next))));
}

/** Breadth-first from `start` back to itself: the files of one shortest cycle, start first. */
function shortestCycle(start: string, successors: (file: string) => string[]): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of successors(node)) {
      if (next === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return path;
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start];
}

const sharedOrFunctions = (file: string) => under(file, 'shared', 'functions');

describe('the import scan and the checks (synthetic input)', () => {
  it('finds static imports and re-exports, multi-line and type-only, and ignores package imports and look-alikes', () => {
    const source = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      'import {',
      '  c,',
      '  type D,',
      "} from './c.ts';",
      "export { e } from './e.ts';",
      "export * from './f.ts';",
      "import './side-effect.ts';",
      "import middy from '@middy/core';",
      "const bytes = Buffer.from('not an import');",
      "export const x = Array.from('abc');",
    ].join('\n');
    expect(importSpecifiers(source).sort()).toEqual(['../b.ts', './a.ts', './c.ts', './e.ts', './f.ts', './side-effect.ts']);
  });

  it('flags the enclave domain imported from another service, shared importing functions, and cross-service handlers', () => {
    const graph: ImportGraph = new Map([
      ['functions/enclave/sign-data.ts', ['shared/enclave/sign-operations.ts']],
      ['shared/enclave/sign-operations.ts', ['shared/wallets/networks.ts']],
      ['functions/express/sign-data.ts', ['shared/wallets/enclave-client.ts', 'shared/enclave/use-wallet.ts']],
      ['shared/accounts/account-service.ts', ['shared/enclave/wallet-record.ts']],
      ['shared/openapi/document.ts', ['functions/routes.ts']],
      ['functions/account/sign.ts', ['functions/enclave/sign-data.ts']],
      ['infra/openapi/operations.ts', ['shared/enclave/schemas.ts', 'shared/enclave/wallet-keys.ts']],
      ['infra/local/runtime.ts', ['functions/enclave/sign-data.ts']],
    ]);
    expect(boundaryViolations(graph).map((violation) => violation.split(':')[0])).toEqual([
      'functions/express/sign-data.ts -> shared/enclave/use-wallet.ts',
      'shared/accounts/account-service.ts -> shared/enclave/wallet-record.ts',
      'shared/openapi/document.ts -> functions/routes.ts',
      'functions/account/sign.ts -> functions/enclave/sign-data.ts',
      'infra/openapi/operations.ts -> shared/enclave/wallet-keys.ts',
    ]);
  });

  it('reports each cycle as its files, including one through a type-only import, and nothing for a DAG', () => {
    const graph: ImportGraph = new Map([
      ['shared/http/handler.ts', ['shared/http/error-handler.ts', 'shared/http/response.ts']],
      ['shared/http/error-handler.ts', ['shared/http/handler.ts']],
      ['shared/a.ts', ['shared/b.ts']],
      ['shared/b.ts', ['shared/c.ts']],
      ['shared/c.ts', ['shared/a.ts', 'shared/d.ts']],
      ['shared/d.ts', []],
      ['shared/self.ts', ['shared/self.ts']],
      // A cycle through infra/ is out of scope (infra may import functions, functions never infra).
      ['infra/x.ts', ['shared/e.ts']],
      ['shared/e.ts', ['infra/x.ts']],
    ]);
    expect(importCycles(graph, sharedOrFunctions).sort()).toEqual([
      ['shared/a.ts', 'shared/b.ts', 'shared/c.ts'],
      ['shared/http/error-handler.ts', 'shared/http/handler.ts'],
      ['shared/self.ts'],
    ]);
    const acyclic: ImportGraph = new Map([
      ['shared/a.ts', ['shared/b.ts', 'shared/c.ts']],
      ['shared/b.ts', ['shared/c.ts']],
      ['shared/c.ts', []],
    ]);
    expect(importCycles(acyclic, sharedOrFunctions)).toEqual([]);
  });
});

describe('the repository keeps its layers', () => {
  const { graph, missing } = repositoryGraph();

  it('scans the real graph (every relative import resolves to a file)', () => {
    expect(missing).toEqual([]);
    // The scan is not vacuous: the enclave's handlers do reach its domain.
    expect(graph.get('functions/enclave/sign-data.ts')).toContain('shared/enclave/sign-operations.ts');
    expect([...graph.values()].flat().length).toBeGreaterThan(200);
  });

  it('only the enclave imports shared/enclave/; shared/ imports neither functions/ nor infra/', () => {
    expect(boundaryViolations(graph)).toEqual([]);
  });

  it('has no import cycle among shared/ and functions/ modules', () => {
    expect(importCycles(graph, sharedOrFunctions)).toEqual([]);
  });
});
