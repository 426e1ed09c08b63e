import { isDeepStrictEqual } from 'node:util';

/**
 * Sets `<chain>.delegate` in the text of a chains config file, changing nothing else: the
 * member's value is replaced where it stands, or a new member is added after the chain's last
 * one with the indentation of its siblings. The result is checked to parse to the same document
 * with only that field changed.
 */
export function setChainDelegate(text: string, chain: string, delegate: string): string {
  const root = skipSpace(text, 0);
  if (text[root] !== '{') throw new Error('the chains config is not a JSON object');
  const chainMember = objectMembers(text, root).members.find((member) => member.key === chain);
  if (!chainMember || text[chainMember.valueStart] !== '{') throw new Error(`the chains config has no object for ${chain}`);
  const { members, close } = objectMembers(text, chainMember.valueStart);
  const quoted = JSON.stringify(delegate);
  const existing = members.find((member) => member.key === 'delegate');
  let updated: string;
  if (existing) {
    updated = text.slice(0, existing.valueStart) + quoted + text.slice(existing.valueEnd);
  } else if (members.length === 0) {
    updated = `${text.slice(0, chainMember.valueStart + 1)}"delegate": ${quoted}${text.slice(close)}`;
  } else {
    const last = members.at(-1)!;
    const lineStart = text.lastIndexOf('\n', last.keyStart) + 1;
    const indent = text.slice(lineStart, last.keyStart);
    // Members on lines of their own get a line of their own; one-line objects stay on one line.
    const newline = text.includes('\r\n') ? '\r\n' : '\n';
    const separator = /^[ \t]*$/.test(indent) && lineStart > chainMember.valueStart ? `,${newline}${indent}` : ', ';
    updated = `${text.slice(0, last.valueEnd)}${separator}"delegate": ${quoted}${text.slice(last.valueEnd)}`;
  }
  const expected = JSON.parse(text) as Record<string, Record<string, unknown>>;
  expected[chain] = { ...expected[chain], delegate };
  if (!isDeepStrictEqual(JSON.parse(updated), expected)) throw new Error('editing the chains config changed more than the delegate');
  return updated;
}

interface Member {
  readonly key: string;
  readonly keyStart: number;
  readonly valueStart: number;
  readonly valueEnd: number;
}

/** The members of the object whose `{` is at `open`, and the index of its `}`. */
function objectMembers(text: string, open: number): { members: Member[]; close: number } {
  const members: Member[] = [];
  let i = skipSpace(text, open + 1);
  if (text[i] === '}') return { members, close: i };
  for (;;) {
    const keyStart = i;
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(keyStart, keyEnd)) as string;
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') throw new Error(`expected ":" at offset ${i}`);
    const valueStart = skipSpace(text, i + 1);
    const valueEnd = skipValue(text, valueStart);
    members.push({ key, keyStart, valueStart, valueEnd });
    i = skipSpace(text, valueEnd);
    if (text[i] === '}') return { members, close: i };
    if (text[i] !== ',') throw new Error(`expected "," or "}" at offset ${i}`);
    i = skipSpace(text, i + 1);
  }
}

function skipSpace(text: string, start: number): number {
  let i = start;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  return i;
}

function skipString(text: string, start: number): number {
  if (text[start] !== '"') throw new Error(`expected a string at offset ${start}`);
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i + 1;
  }
  throw new Error('unterminated string');
}

function skipValue(text: string, start: number): number {
  const first = text[start];
  if (first === '"') return skipString(text, start);
  if (first === '{' || first === '[') {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (c === '"') i = skipString(text, i) - 1;
      else if (c === '{' || c === '[') depth++;
      else if ((c === '}' || c === ']') && --depth === 0) return i + 1;
    }
    throw new Error('unterminated object or array');
  }
  const literal = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(start, start + 64));
  if (!literal) throw new Error(`unexpected value at offset ${start}`);
  return start + literal[0].length;
}
