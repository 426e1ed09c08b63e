import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository documents itself (issue 12: a fresh clone must be self-contained): every relative
 * Markdown link in README.md and docs/ (and every other Markdown file of ours) must reach a file
 * or directory inside the repository, an anchor must name a heading of its target as GitHub
 * renders it, and nothing may mention `../shared/` (the spec and research notes outside it), not even as text.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'cdk.out', '.data', '.git']);

function markdownFiles(directory: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry.name) && !entry.name.startsWith('.')) found.push(...markdownFiles(join(directory, entry.name)));
    } else if (entry.name.endsWith('.md')) {
      found.push(join(directory, entry.name));
    }
  }
  return found;
}

/** The text with fenced code blocks blanked (same lines): what is in them is an example, not Markdown. */
function withoutFences(markdown: string): string {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  const kept = lines.map((line) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker) {
      fence = marker;
      return '';
    }
    if (fence !== undefined) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      return '';
    }
    return line;
  });
  return kept.join('\n');
}

/** And inline code spans blanked too (same length): a link in code is an example, not a link. */
function withoutCode(markdown: string): string {
  return withoutFences(markdown).replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (span) => span.replace(/[^\n]/g, ' '));
}

interface MarkdownLink {
  readonly target: string;
  readonly line: number;
}

/** Inline links and images `[text](target "title")` and reference definitions `[id]: target`. */
function markdownLinks(markdown: string): MarkdownLink[] {
  const text = withoutCode(markdown);
  const links: MarkdownLink[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  for (const match of text.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)) {
    links.push({ target: match[1]!.replace(/^<|>$/g, ''), line: lineOf(match.index) });
  }
  for (const match of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/gm)) {
    links.push({ target: match[1]!.replace(/^<|>$/g, ''), line: lineOf(match.index) });
  }
  return links;
}

/** The anchors GitHub gives a Markdown file: its headings' slugs (github-slugger's rule) and explicit `<a id|name>`. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const rendered = heading
      .replace(/`/g, '')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '');
    const base = rendered
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

/** What is wrong with one relative link of `file` (absolute path), or undefined when it resolves. */
function brokenLink(file: string, target: string, read: (path: string) => string | undefined): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // http:, https:, mailto:: not ours to check here
  const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
  const path = decodeURIComponent(rawPath);
  const resolved = path === '' ? file : resolve(dirname(file), path);
  const inside = relative(ROOT, resolved);
  if (inside.startsWith(`..${sep}`) || inside === '..' || resolve(ROOT, inside) !== resolved) return 'points outside the repository';
  const content = read(resolved);
  if (content === undefined) return 'no such file or directory';
  if (anchor && resolved.endsWith('.md') && !headingAnchors(content).has(anchor)) return `no heading with the anchor #${anchor}`;
  return undefined;
}

/**
 * The lines (1-based) of `file` that mention a `../shared/…` path (in prose, code spans or fences
 * alike) that is not a file or directory of this repository relative to `file`: the team's spec and
 * research notes live in a `shared/` beside the repository, and a fresh clone does not have them.
 * `../../shared/client/README.md` from docs/guide/ is this repository's shared/ and passes.
 */
function outsideMentions(file: string, markdown: string, exists: (path: string) => boolean): number[] {
  return markdown.split('\n').flatMap((line, index) => {
    const paths = [...line.matchAll(/(?:\.\.\/)+shared\/[^\s)`'"<>\]]*/g)].map((match) => resolve(dirname(file), match[0].replace(/[.,;:]+$/, '')));
    const outside = paths.some((path) => relative(ROOT, path).startsWith('..') || !exists(path));
    return outside ? [index + 1] : [];
  });
}

const readIfPresent = (path: string): string | undefined => {
  if (!existsSync(path)) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return ''; // a directory: it exists, and has no anchors
  }
};

describe('documentation links', () => {
  const files = markdownFiles(ROOT);

  it('finds README.md and the guide', () => {
    const names = files.map((file) => relative(ROOT, file));
    expect(names).toContain('README.md');
    for (const page of ['README.md', 'getting-started.md', 'account.md', 'enclave.md', 'express.md', 'errors.md'])
      expect(names).toContain(join('docs', 'guide', page));
  });

  it('every relative link in every Markdown file resolves inside the repository, anchors included', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const link of markdownLinks(readFileSync(file, 'utf8'))) {
        checked += 1;
        const problem = brokenLink(file, link.target, readIfPresent);
        if (problem) broken.push(`${relative(ROOT, file)}:${link.line} (${link.target}): ${problem}`);
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });

  it('no document mentions a ../shared/ path outside the repository (the spec, the research notes), even as plain text or code', () => {
    const offenders = files.flatMap((file) => outsideMentions(file, readFileSync(file, 'utf8'), existsSync).map((line) => `${relative(ROOT, file)}:${line}`));
    expect(offenders).toEqual([]);
  });

  it('the checker catches what it is for', () => {
    const readme = join(ROOT, 'README.md');
    const pages: Record<string, string> = {
      [join(ROOT, 'docs/guide/a.md')]: '# Title\n## Run it\n### `POST /v2/api/wallet/sign_data`\n## Run it\n```sh\n# not a heading\n```\n<a id="custom"></a>',
    };
    const read = (path: string) => pages[path];
    expect(markdownLinks('[x](a.md#run-it) ![i](img.png "t") `[no](code.md)`\n```\n[no](fenced.md)\n```\n[ref]: <b.md>')).toEqual([
      { target: 'a.md#run-it', line: 1 },
      { target: 'img.png', line: 1 },
      { target: 'b.md', line: 5 },
    ]);
    expect([...headingAnchors(pages[join(ROOT, 'docs/guide/a.md')]!)]).toEqual(['title', 'run-it', 'post-v2apiwalletsign_data', 'run-it-1', 'custom']);
    expect(brokenLink(readme, 'docs/guide/a.md#run-it-1', read)).toBeUndefined();
    expect(brokenLink(readme, 'docs/guide/a.md#custom', read)).toBeUndefined();
    expect(brokenLink(readme, 'docs/guide/a.md#not-a-heading', read)).toBe('no heading with the anchor #not-a-heading');
    expect(brokenLink(readme, 'docs/guide/missing.md', read)).toBe('no such file or directory');
    expect(brokenLink(readme, '../shared/spec/service-interface.md', read)).toBe('points outside the repository');
    expect(brokenLink(readme, 'https://example.com/x', read)).toBeUndefined();
    const guidePage = join(ROOT, 'docs/guide/a.md');
    const inRepo = (path: string) => path === join(ROOT, 'shared/client/README.md');
    expect(outsideMentions(readme, 'see ../shared/spec/service-interface.md.', inRepo)).toEqual([1]);
    expect(
      outsideMentions(
        guidePage,
        '# T\nresearch `../shared/research/venues.md` §2\n```\ncat ../../../shared/spec/x.md\n```\n[client](../../shared/client/README.md), shared/x',
        inRepo,
      ),
    ).toEqual([2, 4]);
  });
});
