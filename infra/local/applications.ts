import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JWK } from 'jose';
import * as v from 'valibot';
import { hashSecret } from '../../shared/apps/app-registry.ts';
import { APP_ID_PATTERN, type Application, DEFAULT_WALLET_GROUP_ID, MAX_TOKEN_AGE_BOUNDS } from '../../shared/apps/application.ts';
import { generateEs256Jwk } from '../../shared/crypto/es256-jwk.ts';
import { PLATFORM_APP_ID } from '../../shared/withdrawals/gas-sponsor.ts';
import { LocalRuntimeError } from './local-runtime-error.ts';

/**
 * Applications for the local runtime: from `APPS_FILE` (a JSON array), or a dev app generated
 * once into DATA_DIR with its own dev issuer key (`npm run token` mints JWTs with it).
 */
const Jwks = v.object({ keys: v.array(v.looseObject({ kty: v.string() })) });

const AGE_RULE = `must be whole seconds from ${MAX_TOKEN_AGE_BOUNDS.min} to ${MAX_TOKEN_AGE_BOUNDS.max}`;
const NOT_EMPTY = 'must not be empty';
const AUDIENCE_RULE = 'must be the client id (a non-empty string, or a non-empty list of them) the identity provider puts in "aud"';

export const AppFileEntry = v.object({
  app_id: v.pipe(
    v.string(),
    v.regex(APP_ID_PATTERN, 'must be 1-64 letters, digits, ".", "_" or "-"'),
    v.check((id) => id !== PLATFORM_APP_ID, `"${PLATFORM_APP_ID}" is reserved for the platform application`),
  ),
  secret_key: v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters')),
  api_key: v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters')),
  created_at: v.pipe(
    v.string(),
    v.regex(/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/, 'must be an ISO 8601 date or timestamp'),
    v.check((value) => !Number.isNaN(Date.parse(value)), 'must be a valid date'),
  ),
  default_wallet_group_id: v.optional(v.pipe(v.string(), v.minLength(1, NOT_EMPTY))),
  /** Provider ids of the deprecated iframe-based login, still accepted by the express service. */
  legacy_provider_ids: v.optional(v.array(v.pipe(v.string(), v.minLength(1, NOT_EMPTY)))),
  oidc: v.pipe(
    v.object({
      provider_id: v.pipe(v.string(), v.minLength(1, NOT_EMPTY)),
      issuer: v.pipe(v.string(), v.minLength(1, NOT_EMPTY)),
      /** Required: the client id(s) the provider puts in "aud" (one string, or a list). */
      audience: v.union(
        [v.pipe(v.string(), v.minLength(1, AUDIENCE_RULE)), v.pipe(v.array(v.pipe(v.string(), v.minLength(1, NOT_EMPTY))), v.minLength(1, AUDIENCE_RULE))],
        AUDIENCE_RULE,
      ),
      jwks: v.optional(Jwks),
      jwks_uri: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
      max_token_age_seconds: v.optional(
        v.pipe(v.number(), v.integer(AGE_RULE), v.minValue(MAX_TOKEN_AGE_BOUNDS.min, AGE_RULE), v.maxValue(MAX_TOKEN_AGE_BOUNDS.max, AGE_RULE)),
      ),
    }),
    v.check((oidc) => Boolean(oidc.jwks) !== Boolean(oidc.jwks_uri), 'needs exactly one of "jwks" or "jwks_uri"'),
  ),
});
export type AppFileEntry = v.InferOutput<typeof AppFileEntry>;

const AppsFile = v.pipe(
  v.array(AppFileEntry),
  v.minLength(1, 'must list at least one application'),
  // Keys are looked up by their digest: a shared key would authenticate as whichever app was written last.
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    for (const field of ['app_id', 'secret_key', 'api_key'] as const) {
      const first = new Map<string, number>();
      dataset.value.forEach((app, index) => {
        const earlier = first.get(app[field]);
        if (earlier === undefined) first.set(app[field], index);
        else addIssue({ message: `is the same as [${earlier}].${field} (each application needs its own)`, path: pathTo(dataset.value, index, field) });
      });
    }
  }),
);

/** A valibot issue path to `apps[index][field]`, for the duplicate check. */
function pathTo(apps: AppFileEntry[], index: number, field: string): [v.ArrayPathItem, v.ObjectPathItem] {
  const app = apps[index]!;
  return [
    { type: 'array', origin: 'value', input: apps, key: index, value: app },
    { type: 'object', origin: 'value', input: app as Record<string, unknown>, key: field, value: app[field as keyof AppFileEntry] },
  ];
}

/**
 * Reads APPS_FILE. Every problem is a LocalRuntimeError of one line naming the file, where in it,
 * and what is wrong (`APPS_FILE ./apps.json: [0].secret_key: must be at least 16 characters`);
 * values are never quoted, since most fields are secrets.
 */
export async function readAppsFile(path: string): Promise<AppFileEntry[]> {
  return parseApps(await readConfigFile(path, `APPS_FILE ${path}`), `APPS_FILE ${path}`, AppsFile);
}

async function readConfigFile(path: string, label: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES' || code === 'EPERM'
          ? 'cannot be read (permission denied)'
          : code === 'EISDIR'
            ? 'is a directory, not a file'
            : `cannot be read (${code ?? (error as Error).message})`;
    throw new LocalRuntimeError(`${label}: ${reason}`);
  }
}

function parseApps<T extends v.GenericSchema>(text: string, label: string, schema: T): v.InferOutput<T> {
  const source = text.replace(/^\uFEFF/, ''); // editors on Windows write a byte-order mark
  let raw: unknown;
  try {
    raw = JSON.parse(source);
  } catch (error) {
    throw new LocalRuntimeError(`${label}: ${describeJsonError(source, (error as Error).message)}`);
  }
  const result = v.safeParse(schema, raw);
  if (result.success) return result.output;
  // The first problem of each field (a bad date is not also "not a valid date").
  const byPath = new Map<string, string>();
  for (const issue of result.issues) if (!byPath.has(issuePath(issue))) byPath.set(issuePath(issue), issueMessage(issue));
  const problems = [...byPath].map(([path, message]) => `${path}: ${message}`);
  const shown = problems.slice(0, 3).join('; ');
  throw new LocalRuntimeError(`${label}: ${shown}${problems.length > 3 ? ` (and ${problems.length - 3} more)` : ''}`);
}

/** `[0].oidc.jwks_uri`; the whole file is `(top level)`. */
function issuePath(issue: v.BaseIssue<unknown>): string {
  const path = (issue.path ?? []).map((item) => (typeof item.key === 'number' ? `[${item.key}]` : `.${String(item.key)}`)).join('');
  return path.replace(/^\./, '') || '(top level)';
}

const TYPE_NAMES: Record<string, string> = { string: 'a string', number: 'a number', object: 'an object', array: 'an array', loose_object: 'an object' };

/** Our own messages for rules; for a wrong type, what was expected (valibot's default quotes the value, which may be a secret). */
function issueMessage(issue: v.BaseIssue<unknown>): string {
  if (issue.kind !== 'schema') return issue.message;
  const last = issue.path?.at(-1);
  if (issue.input === undefined && last && last.type === 'object') return 'is required';
  if (!issue.path?.length && issue.type === 'array') return `must be a JSON array of applications, not ${jsonKind(issue.input)}`;
  return `must be ${TYPE_NAMES[issue.type] ?? issue.expected ?? issue.type}, not ${jsonKind(issue.input)}`;
}

function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return TYPE_NAMES[typeof value] ?? (typeof value === 'boolean' ? 'a boolean' : typeof value);
}

/**
 * "not valid JSON: <reason> at line L column C". V8 gives a position for most syntax errors but
 * quotes the text around an unexpected token instead, which could be part of a secret: that case
 * is located by our own scan and described without the text.
 */
export function describeJsonError(text: string, message: string): string {
  if (text.trim() === '') return 'is empty (expected a JSON array of applications)';
  const positioned = /^(.*?)(?: in JSON)? at position (\d+)/.exec(message);
  const offset = positioned ? Number(positioned[2]) : jsonErrorOffset(text);
  const reason = positioned ? positioned[1]! : /^Unexpected end/.test(message) ? 'unexpected end of file' : 'unexpected character';
  if (offset === undefined) return `not valid JSON: ${reason}`;
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `not valid JSON: ${reason.charAt(0).toLowerCase()}${reason.slice(1)} at line ${line} column ${column}`;
}

/** Offset of the first syntax error in `text` under RFC 8259 (as JSON.parse reads it), or undefined. */
function jsonErrorOffset(text: string): number | undefined {
  let at = 0;
  const fail = (): never => {
    throw new JsonSyntaxAt(at);
  };
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++;
  };
  const expect = (char: string) => (text[at] === char ? at++ : fail());
  const string = () => {
    expect('"');
    for (;;) {
      const char = text[at];
      if (char === undefined || char < ' ') fail();
      if (char === '"') return void at++;
      if (char !== '\\') {
        at++;
        continue;
      }
      const escaped = text[at + 1];
      if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) at += 2;
      else if (escaped === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(at + 2, at + 6))) at += 6;
      else fail();
    }
  };
  const value = (): void => {
    space();
    const char = text[at];
    if (char === '"') {
      string();
      return;
    }
    if (char === '{' || char === '[') {
      const close = char === '{' ? '}' : ']';
      at++;
      space();
      if (text[at] === close) return void at++;
      for (;;) {
        if (close === '}') {
          space();
          string();
          space();
          expect(':');
        }
        value();
        space();
        if (text[at] === ',') at++;
        else return void expect(close);
      }
    }
    for (const literal of ['true', 'false', 'null']) {
      if (text.startsWith(literal, at)) {
        at += literal.length;
        return;
      }
    }
    const number = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    number.lastIndex = at;
    if (number.test(text)) at = number.lastIndex;
    else fail();
  };
  try {
    value();
    space();
    return at < text.length ? at : undefined;
  } catch (error) {
    if (error instanceof JsonSyntaxAt) return error.offset;
    return undefined; // nested too deep to scan: say no position rather than a wrong one
  }
}

class JsonSyntaxAt {
  readonly offset: number;
  constructor(offset: number) {
    this.offset = offset;
  }
}

export function toApplication(entry: AppFileEntry, trustedKeys: JWK[]): Application {
  return {
    app_id: entry.app_id,
    created_at: new Date(entry.created_at).toISOString(),
    oidc: entry.oidc as Application['oidc'],
    secret_key_hash: hashSecret(entry.secret_key),
    api_key_hash: hashSecret(entry.api_key),
    trusted_keys: trustedKeys,
    default_wallet_group_id: entry.default_wallet_group_id ?? DEFAULT_WALLET_GROUP_ID,
    ...(entry.legacy_provider_ids?.length ? { legacy_provider_ids: entry.legacy_provider_ids } : {}),
  };
}

export const DEV_ISSUER = 'https://dev-idp.sandbox.local';
export const DEV_AUDIENCE = 'perp-wallet-dev';

export function devAppPaths(dataDir: string) {
  return { app: join(dataDir, 'dev-app.json'), issuerKey: join(dataDir, 'keys', 'dev-issuer.jwk.json') };
}

/** The dev app and its issuer key, created on first start and kept in DATA_DIR. */
export async function loadOrCreateDevApp(dataDir: string): Promise<AppFileEntry> {
  const paths = devAppPaths(dataDir);
  const existing = await readFile(paths.app, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw new LocalRuntimeError(`dev app ${paths.app}: cannot be read (${error.code ?? error.message})`);
  });
  if (existing !== undefined) return parseApps(existing, `dev app ${paths.app}`, AppFileEntry);
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  const entry: AppFileEntry = {
    app_id: 'dev-app',
    secret_key: `sk_dev_${randomBytes(24).toString('base64url')}`,
    api_key: `ak_dev_${randomBytes(24).toString('base64url')}`,
    created_at: new Date().toISOString(),
    oidc: {
      provider_id: 'dev-idp',
      issuer: DEV_ISSUER,
      audience: DEV_AUDIENCE,
      jwks: { keys: [publicJwk as { kty: string }] },
    },
  };
  await mkdir(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
  await writeFile(paths.issuerKey, JSON.stringify(privateJwk), { mode: 0o600 });
  await writeFile(paths.app, JSON.stringify(entry, null, 2), { mode: 0o600 });
  return entry;
}
