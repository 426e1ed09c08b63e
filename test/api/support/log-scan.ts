/**
 * The "logs carry no secrets" check over the local runtime's real output (functions' JSON logs
 * and the access log): patterns for secrets of any origin, and the exact values the test run
 * knows to be secret (app keys from APPS_FILE, the IdP private keys, the RPC credential, and the
 * access keys the tests were handed).
 */
export interface KnownSecret {
  readonly label: string;
  readonly value: string;
}

export interface LogFinding {
  readonly kind: string;
  /** 1-based line number in the log. */
  readonly line: number;
  /** The line around the match, with the match itself masked. */
  readonly excerpt: string;
}

const PATTERNS: readonly { kind: string; pattern: RegExp }[] = [
  // 32 bytes of hex: an EVM private key (or a wrapped one). Nothing we log carries a 32-byte hash.
  { kind: 'EVM private key (0x + 64 hex)', pattern: /(?<![0-9a-fA-F])0x[0-9a-fA-F]{64}(?![0-9a-fA-F])/g },
  { kind: 'JWT', pattern: /eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}/g },
  { kind: 'RPC credential', pattern: /rpc-key-[A-Za-z0-9]{6,}/g },
  { kind: 'PEM private key', pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----/g },
];

/** Known values shorter than this are too likely to occur by chance to be searched for. */
const MIN_KNOWN_LENGTH = 12;

/** The line with every match of every pattern and known value replaced, so a report leaks none. */
function maskAll(text: string, values: readonly KnownSecret[], publicValues: ReadonlySet<string>): string {
  let masked = text;
  for (const { value } of values) masked = masked.split(value).join(`[${value.length} chars masked]`);
  for (const { pattern } of PATTERNS)
    masked = masked.replace(pattern, (match) => (publicValues.has(match.toLowerCase()) ? match : `[${match.length} chars masked]`));
  return masked;
}

/**
 * `publicValues`: 32-byte hex values the tests saw in the open (transaction hashes in responses,
 * hashes they asked to have signed), which a log line may carry; any other 0x + 64 hex is a finding.
 */
export function scanLog(log: string, known: readonly KnownSecret[] = [], publicValues: ReadonlySet<string> = new Set()): LogFinding[] {
  const findings: LogFinding[] = [];
  const values = known.filter((secret) => secret.value.length >= MIN_KNOWN_LENGTH);
  log.split('\n').forEach((text, index) => {
    const kinds = new Map<string, number>();
    for (const { kind, pattern } of PATTERNS) {
      for (const match of text.matchAll(pattern)) {
        if (publicValues.has(match[0].toLowerCase())) continue;
        if (!kinds.has(kind)) kinds.set(kind, match.index);
      }
    }
    for (const { label, value } of values) {
      const at = text.indexOf(value);
      if (at >= 0 && !kinds.has(label)) kinds.set(label, at);
    }
    if (kinds.size === 0) return;
    const masked = maskAll(text, values, publicValues);
    for (const [kind, at] of kinds) {
      const start = Math.max(0, Math.min(at, masked.length) - 60);
      findings.push({ kind, line: index + 1, excerpt: masked.slice(start, start + 160) });
    }
  });
  return findings;
}

/** The kinds of line in the runtime's output, to prove a scan looked at something real. */
export function countLogLines(log: string) {
  let functionLines = 0;
  let accessLines = 0;
  let errorLines = 0;
  const lines = log.split('\n').filter((line) => line.trim() !== '');
  for (const line of lines) {
    let entry: { type?: string; function_request_id?: string; level?: string };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // the banner, or a library's plain-text warning
    }
    if (entry.type === 'access') accessLines++;
    if (entry.function_request_id) functionLines++;
    if (entry.level === 'ERROR' || entry.level === 'WARN') errorLines++;
  }
  return { lines: lines.length, functionLines, accessLines, errorLines };
}
