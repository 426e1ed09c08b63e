import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * The "libraries only" twin of a function bundle: an entry that imports exactly the package
 * symbols the function's own code imports (from the files esbuild kept in its bundle) and
 * re-exports them, so esbuild keeps everything those symbols reach and nothing else.
 *
 * - `import { A, B as C } from 'pkg'`: A and B (type-only specifiers are skipped);
 * - `import d from 'pkg'`: pkg's default export;
 * - `import * as v from 'pkg'`: every `v.X` the file reads, or the whole namespace when `v`
 *   escapes as a value (passed, spread, indexed);
 * - `import 'pkg'` and `import('pkg')`: the whole module.
 * Node built-ins are skipped (never bundled). A file kept for one export may import symbols its
 * kept code never reaches; those count as "called", so the twin errs on the large side and the
 * ratio function / twin errs on the small side.
 */
export interface LibraryUse {
  /** package specifier -> imported names; '*' = the whole module namespace; '' = side effects only. */
  readonly symbols: ReadonlyMap<string, ReadonlySet<string>>;
}

const isBare = (specifier: string) => !specifier.startsWith('.') && !specifier.startsWith('/') && !specifier.startsWith('node:');
const BUILTINS = new Set([
  'crypto',
  'fs',
  'path',
  'os',
  'url',
  'util',
  'http',
  'https',
  'zlib',
  'stream',
  'events',
  'buffer',
  'module',
  'net',
  'child_process',
  'timers',
  'assert',
]);

export function libraryUse(files: readonly string[]): LibraryUse {
  const symbols = new Map<string, Set<string>>();
  const add = (specifier: string, name: string) => {
    if (!isBare(specifier) || BUILTINS.has(specifier.split('/')[0]!)) return;
    let set = symbols.get(specifier);
    if (!set) {
      set = new Set();
      symbols.set(specifier, set);
    }
    set.add(name);
  };
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const namespaces = new Map<string, string>(); // local name -> specifier
    for (const statement of source.statements) {
      if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
        const specifier = statement.moduleSpecifier.text;
        const clause = statement.importClause;
        if (!clause) {
          add(specifier, '');
          continue;
        }
        if (clause.isTypeOnly) continue;
        if (clause.name) add(specifier, 'default');
        const bindings = clause.namedBindings;
        if (bindings && ts.isNamespaceImport(bindings)) namespaces.set(bindings.name.text, specifier);
        if (bindings && ts.isNamedImports(bindings)) {
          for (const element of bindings.elements) if (!element.isTypeOnly) add(specifier, (element.propertyName ?? element.name).text);
        }
      } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier) && !statement.isTypeOnly) {
        const specifier = statement.moduleSpecifier.text;
        const clause = statement.exportClause;
        if (!clause || ts.isNamespaceExport(clause)) add(specifier, '*');
        else for (const element of clause.elements) if (!element.isTypeOnly) add(specifier, (element.propertyName ?? element.name).text);
      }
    }
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const [argument] = node.arguments;
        if (argument && ts.isStringLiteral(argument)) add(argument.text, '*');
      }
      if (ts.isIdentifier(node) && namespaces.has(node.text) && !isInTypePosition(node) && !ts.isNamespaceImport(node.parent)) {
        const parent = node.parent;
        if (ts.isPropertyAccessExpression(parent) && parent.expression === node) add(namespaces.get(node.text)!, parent.name.text);
        else if (!ts.isQualifiedName(parent)) add(namespaces.get(node.text)!, '*');
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { symbols };
}

function isInTypePosition(node: ts.Node): boolean {
  for (let current: ts.Node | undefined = node.parent; current; current = current.parent) {
    if (ts.isTypeNode(current) || ts.isTypeAliasDeclaration(current) || ts.isInterfaceDeclaration(current)) return true;
    if (ts.isExpression(current) || ts.isStatement(current)) return false;
  }
  return false;
}

/** JavaScript source of the twin entry (esbuild stdin, resolved from the repository root). */
export function libraryEntrySource(use: LibraryUse): string {
  const lines: string[] = [];
  const kept: string[] = [];
  let n = 0;
  for (const [specifier, names] of [...use.symbols].sort(([a], [b]) => a.localeCompare(b))) {
    const quoted = JSON.stringify(specifier);
    if (names.has('*')) {
      lines.push(`import * as s${n} from ${quoted};`);
      kept.push(`s${n++}`);
      continue;
    }
    const named = [...names].filter((name) => name !== '' && name !== 'default');
    if (names.has('default')) {
      lines.push(`import s${n} from ${quoted};`);
      kept.push(`s${n++}`);
    }
    if (named.length > 0) {
      const parts = named.map((name) => `${name} as s${n++}`);
      kept.push(...parts.map((part) => part.split(' as ')[1]!));
      lines.push(`import { ${parts.join(', ')} } from ${quoted};`);
    }
    if (names.has('') && names.size === 1) lines.push(`import ${quoted};`);
  }
  lines.push(`export default [${kept.join(', ')}];`);
  return lines.join('\n');
}

/** Own (non-node_modules) inputs esbuild kept in the bundle, as absolute paths. */
export function ownInputs(inputs: Record<string, { bytesInOutput: number }>, root: string): string[] {
  return Object.entries(inputs)
    .filter(([file, input]) => input.bytesInOutput > 0 && !file.includes('node_modules/') && /\.[cm]?tsx?$/.test(file))
    .map(([file]) => path.resolve(root, file));
}
