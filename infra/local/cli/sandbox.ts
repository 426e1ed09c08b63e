import { readFile, realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { importJWK, type JWK, SignJWT } from 'jose';
import * as v from 'valibot';
import { SandboxInfo } from '../../../shared/sandbox/sandbox-info.ts';

export type { SandboxInfo } from '../../../shared/sandbox/sandbox-info.ts';

/**
 * What the sandbox CLIs share (`npm run token`, `npm run tasks`, `npm run task:watch`, `npm run
 * demo`): finding the running sandbox (`GET /sandbox/info`), the dev app's credentials in its
 * DATA_DIR (read, never created), dev JWTs, and arguments with a usage line instead of a stack trace.
 */

/** A fatal problem the user can fix: printed as one line (`npm run <name>: <message>`), no stack trace. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/** Longest op_jwt lifetime the enclave accepts (spec, Limits; shared/auth/jwt.ts MAX_OP_JWT_LIFETIME_SECONDS). */
export const MAX_OP_JWT_TTL_SECONDS = 300;

/** `--account-url`, else `ACCOUNT_URL`, else the sandbox's default `http://127.0.0.1:${ACCOUNT_PORT || 3000}`. */
export function accountUrlFrom(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  const url = flag || env.ACCOUNT_URL || `http://127.0.0.1:${env.ACCOUNT_PORT || 3000}`;
  return url.replace(/\/+$/, '');
}

/**
 * Asks `GET <account>/sandbox/info`. Undefined when nothing answers there (no sandbox running);
 * a CliError when something answers but is not a local sandbox (a deployed stack, another program).
 */
export async function discoverSandbox(options: { accountUrl?: string; timeoutMs?: number } = {}): Promise<SandboxInfo | undefined> {
  const accountUrl = accountUrlFrom(options.accountUrl);
  let response: Response;
  try {
    response = await fetch(`${accountUrl}/sandbox/info`, { signal: AbortSignal.timeout(options.timeoutMs ?? 5000) });
  } catch {
    return undefined;
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (response.status === 503 && (json as { error?: { code?: unknown } } | undefined)?.error?.code === 'SANDBOX_STARTING') {
    throw new CliError(`the sandbox at ${accountUrl} is still starting: run this again once npm start prints its banner`);
  }
  const parsed = v.safeParse(SandboxInfo, json);
  if (response.status !== 200 || !parsed.success) {
    throw new CliError(
      `${accountUrl} answers, but not as a local sandbox (GET /sandbox/info: HTTP ${response.status}); point --account-url (or ACCOUNT_URL) at the sandbox started by npm start`,
    );
  }
  return parsed.output;
}

/** The dev app as `npm start` wrote it to DATA_DIR/dev-app.json (keys included: never print them). */
export interface DevCredentials {
  readonly data_dir: string;
  readonly app_id: string;
  readonly secret_key: string;
  readonly api_key: string;
  readonly provider_id: string;
  readonly issuer: string;
  readonly audience?: string;
}

const DevAppFile = v.object({
  app_id: v.string(),
  secret_key: v.string(),
  api_key: v.string(),
  oidc: v.object({ provider_id: v.string(), issuer: v.string(), audience: v.optional(v.string()) }),
});

const devAppFile = (dataDir: string) => resolve(dataDir, 'dev-app.json');
const devIssuerKeyFile = (dataDir: string) => resolve(dataDir, 'keys', 'dev-issuer.jwk.json');

/** Reads DATA_DIR/dev-app.json; never creates it (only `npm start` does). */
export async function loadDevCredentials(dataDir: string): Promise<DevCredentials> {
  const path = devAppFile(dataDir);
  let raw: string;
  try {
    raw = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new CliError(`no dev app in ${resolve(dataDir)} (${path} does not exist): start the sandbox first: npm start`);
    }
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    json = undefined;
  }
  const parsed = v.safeParse(DevAppFile, json);
  if (!parsed.success) throw new CliError(`${path} is not a dev app written by npm start: move it away and start the sandbox again`);
  const app = parsed.output;
  return {
    data_dir: resolve(dataDir),
    app_id: app.app_id,
    secret_key: app.secret_key,
    api_key: app.api_key,
    provider_id: app.oidc.provider_id,
    issuer: app.oidc.issuer,
    ...(app.oidc.audience ? { audience: app.oidc.audience } : {}),
  };
}

/**
 * A JWT from the dev app's identity provider (DATA_DIR/keys/dev-issuer.jwk.json): `iss`, `aud`,
 * `sub`, `iat`, `exp`. With `ttlSeconds` ≤ 300 it is also an op_jwt the enclave accepts.
 */
export async function mintDevToken(dataDir: string, options: { sub: string; ttlSeconds: number }): Promise<string> {
  if (!options.sub) throw new CliError('the token needs a subject (--sub <user id>)', 2);
  if (!Number.isSafeInteger(options.ttlSeconds) || options.ttlSeconds <= 0)
    throw new CliError(`the lifetime must be a positive whole number of seconds, not ${options.ttlSeconds}`, 2);
  const app = await loadDevCredentials(dataDir);
  let jwk: JWK;
  try {
    jwk = JSON.parse(await readFile(devIssuerKeyFile(dataDir), 'utf8')) as JWK;
  } catch {
    throw new CliError(`the dev issuer key ${devIssuerKeyFile(dataDir)} is missing or unreadable: start the sandbox first: npm start`);
  }
  const iat = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', ...(jwk.kid ? { kid: jwk.kid } : {}) })
    .setIssuer(app.issuer)
    .setSubject(options.sub)
    .setIssuedAt(iat)
    .setExpirationTime(iat + options.ttlSeconds)
    // A fresh jti on every token: the enclave accepts an op_jwt once.
    .setJti(crypto.randomUUID());
  if (app.audience) jwt.setAudience(app.audience);
  return jwt.sign(await importJWK(jwk, 'ES256'));
}

/** Whether two paths name the same directory (symlinks resolved where they exist). */
export async function sameDirectory(a: string, b: string): Promise<boolean> {
  const canonical = (path: string) => realpath(path).catch(() => resolve(path));
  return (await canonical(a)) === (await canonical(b));
}

/**
 * The data dir whose dev app mints tokens the running sandbox accepts. Follows the sandbox
 * (`GET /sandbox/info`); refuses when it serves APPS_FILE or when `requested` (--data-dir or
 * DATA_DIR) is another directory. With no sandbox answering, `requested` (else `.data`) is used.
 */
export async function devDataDir(info: SandboxInfo | undefined, requested: string | undefined, accountUrl: string): Promise<string> {
  if (!info) return resolve(requested || '.data');
  if (info.applications === 'apps_file') {
    throw new CliError(
      `the running sandbox uses APPS_FILE=${info.apps_file ?? '(unknown)'}: its apps trust your identity providers, not the dev issuer; mint tokens with your provider`,
    );
  }
  if (requested && !(await sameDirectory(requested, info.data_dir))) {
    throw new CliError(
      `the data dir ${resolve(requested)} (--data-dir or DATA_DIR) is not the running sandbox's (${info.data_dir}, at ${accountUrl}): drop it, or point --account-url at the sandbox that uses it`,
    );
  }
  return info.data_dir;
}

export interface CliSpec<O extends NonNullable<ParseArgsConfig['options']>> {
  /** The script's name: `token` in `npm run token`. */
  readonly name: string;
  /** The usage line after `usage: `, e.g. `npm run token -- --sub <user> [--ttl <s>]`. */
  readonly usage: string;
  /** More lines printed by --help under the usage line. */
  readonly help?: string;
  readonly options: O;
  readonly allowPositionals?: boolean;
  /**
   * The flag a lone bare word most likely meant, for a CLI that takes none: `npm run token alice`
   * is refused with `run npm run token -- --sub alice` rather than "unexpected argument".
   */
  readonly bareWordMeans?: string;
  readonly argv?: string[];
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * node:util parseArgs with a usage line: `--help` prints it to stdout and exits 0; an unknown flag,
 * a flag without its value or a stray argument prints one line naming it and the usage line to
 * stderr, and exits 2. Flags that npm took for itself (`npm run token --sub alice`, without the
 * `--`) are one line saying how to run it instead, exit 2.
 */
export function parseCli<O extends NonNullable<ParseArgsConfig['options']>>(spec: CliSpec<O>) {
  const options = { ...spec.options, help: { type: 'boolean', short: 'h' } } as O & { help: { type: 'boolean'; short: 'h' } };
  const args = spec.argv ?? process.argv.slice(2);
  const took = flagsNpmTook(spec.options, spec.env ?? process.env);
  if (took.length > 0) {
    const { positionals } = parseArgs({ args, options, allowPositionals: true, strict: false });
    oneLineUsageError(spec, npmTookFlagsProblem(spec, took, positionals));
  }
  const parse = () => parseArgs({ args, options, allowPositionals: true, strict: true });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (error) {
    usageError(spec, describeParseError(error));
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(`usage: ${spec.usage}\n${spec.help ? `${spec.help.replace(/\n?$/, '\n')}` : ''}`);
    process.exit(0);
  }
  if (!spec.allowPositionals && parsed.positionals.length > 0) {
    const [word] = parsed.positionals as [string];
    const means = spec.bareWordMeans;
    if (means && parsed.positionals.length === 1 && (parsed.values as Record<string, unknown>)[means] === undefined) {
      oneLineUsageError(spec, `"${word}" alone is not a flag: run npm run ${spec.name} -- --${means} ${shellWord(word)}`);
    }
    usageError(spec, `unexpected argument ${word}`);
  }
  return parsed;
}

/**
 * The CLI's flags that npm kept as its own configuration: `npm run token --sub alice` (no `--`)
 * sets npm_config_sub (`true`, or `alice` for `--sub=alice`) and passes only `alice` to the script.
 */
export function flagsNpmTook(options: NonNullable<ParseArgsConfig['options']>, env: NodeJS.ProcessEnv): { name: string; value?: string }[] {
  return Object.keys(options).flatMap((name) => {
    const value = env[`npm_config_${name.replaceAll('-', '_')}`];
    if (value === undefined) return [];
    return [{ name, ...(value === 'true' ? {} : { value }) }];
  });
}

/** `npm took --sub for itself …: run npm run token -- --sub alice` (the exact command when it is certain). */
function npmTookFlagsProblem(
  spec: { readonly name: string; readonly usage: string; readonly allowPositionals?: boolean; readonly options: NonNullable<ParseArgsConfig['options']> },
  took: { name: string; value?: string }[],
  positionals: string[],
): string {
  const names = took.map(({ name }) => `--${name}`).join(', ');
  const problem = `npm took ${names} for itself (the script's flags go after a lone --)`;
  // npm passed the values of the string flags on as bare words; which word is whose is certain
  // only for one such flag and a CLI that takes no bare words.
  const needValue = took.filter(({ name, value }) => spec.options[name]?.type === 'string' && value === undefined);
  const certain = spec.allowPositionals ? needValue.length === 0 : needValue.length === positionals.length && needValue.length <= 1;
  if (!certain) return `${problem}: run it as ${spec.usage}`;
  const words = spec.allowPositionals ? positionals.map(shellWord) : [];
  for (const { name, value } of took) {
    words.push(`--${name}`);
    if (spec.options[name]?.type === 'string') words.push(shellWord(value ?? positionals[0]!));
  }
  return `${problem}: run npm run ${spec.name} -- ${words.join(' ')}`;
}

/** Prints `npm run <name>: <problem>` (one line, no usage line: the problem says what to run) and exits 2. */
function oneLineUsageError(spec: Pick<CliSpec<never>, 'name'>, problem: string): never {
  process.stderr.write(`npm run ${spec.name}: ${problem}\n`);
  process.exit(2);
}

function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Prints `npm run <name>: <problem>` and the usage line to stderr, then exits 2. */
export function usageError(spec: Pick<CliSpec<never>, 'name' | 'usage'>, problem: string): never {
  process.stderr.write(`npm run ${spec.name}: ${problem}\nusage: ${spec.usage}\n`);
  process.exit(2);
}

function describeParseError(error: unknown): string {
  const code = (error as { code?: string }).code;
  const message = (error as Error).message ?? String(error);
  const quoted = /'([^']+)'/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown flag ${quoted ?? message}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    return `flag ${(quoted ?? message).replace(/ <value>$/, '')} ${/argument missing/.test(message) ? 'needs a value' : 'takes no value'}`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument ${quoted ?? message}`;
  return message.split('\n')[0]!;
}

/**
 * Runs a CLI's main: a CliError becomes one line on stderr (`npm run <name>: …`) and its exit
 * code; a network failure names the URL. Anything else is a bug and keeps its stack trace.
 */
export async function runCli(name: string, main: () => Promise<number> | Promise<void>): Promise<void> {
  try {
    const code = await main();
    process.exitCode = code ?? 0;
  } catch (error) {
    if (error instanceof CliError) {
      process.stderr.write(`npm run ${name}: ${error.message}\n`);
      process.exitCode = error.exitCode;
      return;
    }
    throw error;
  }
}

/** A positive whole number from a flag, or a usage error naming the flag. */
export function wholeNumber(spec: Pick<CliSpec<never>, 'name' | 'usage'>, flag: string, raw: string): number {
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(value) || value <= 0) usageError(spec, `--${flag} must be a positive whole number, not "${raw}"`);
  return value;
}

/** What a user-facing call to the account service needs. */
export interface UserCredentials {
  readonly accountUrl: string;
  /** The user's JWT (`Authorization: Bearer`). */
  readonly token: string;
  /** The app's secret key (`X-SERVICE-SECRET-KEY`). */
  readonly secretKey: string;
}

/**
 * Credentials for `sub`: `--token` and `--secret-key` (or TOKEN and SECRET_KEY) when given, which
 * works with any account service; else, from a running dev-app sandbox, its secret key and a dev
 * token minted for `sub`. An APPS_FILE sandbox needs the former: its apps trust your providers.
 */
export async function userCredentials(options: {
  readonly accountUrl?: string;
  readonly sub: string;
  readonly token?: string;
  readonly secretKey?: string;
  readonly dataDir?: string;
  readonly ttlSeconds?: number;
  readonly env?: NodeJS.ProcessEnv;
}): Promise<UserCredentials> {
  const env = options.env ?? process.env;
  const accountUrl = accountUrlFrom(options.accountUrl, env);
  const token = options.token || env.TOKEN || undefined;
  const secretKey = options.secretKey || env.SECRET_KEY || undefined;
  if (token && secretKey) return { accountUrl, token, secretKey };
  const info = await discoverSandbox({ accountUrl });
  if (!info) throw new CliError(`no sandbox answers at ${accountUrl}: start it (npm start), set --account-url, or pass --token and --secret-key`);
  if (info.applications === 'apps_file') {
    throw new CliError(
      `the running sandbox uses APPS_FILE=${info.apps_file ?? '(unknown)'}: pass --token <a JWT from your identity provider> and --secret-key <your app's secret key> (or TOKEN and SECRET_KEY)`,
    );
  }
  const dataDir = await devDataDir(info, options.dataDir || env.DATA_DIR || undefined, accountUrl);
  const dev = await loadDevCredentials(dataDir);
  return {
    accountUrl,
    token: token ?? (await mintDevToken(dataDir, { sub: options.sub, ttlSeconds: options.ttlSeconds ?? 3600 })),
    secretKey: secretKey ?? dev.secret_key,
  };
}

/** The credential flags of the user-facing CLIs (`npm run tasks`, `npm run task:watch`). */
export const USER_OPTIONS = {
  sub: { type: 'string', default: 'alice' },
  'account-url': { type: 'string' },
  token: { type: 'string' },
  'secret-key': { type: 'string' },
  'data-dir': { type: 'string' },
} as const;

export const USER_USAGE = '[--sub <user id>] [--account-url <url>] [--token <jwt> --secret-key <key>]';

export const USER_HELP = [
  "  --sub <user id>      whose tasks (default alice); a dev token is minted for them from the running sandbox's dev app",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: help text showing the shell default ${ACCOUNT_PORT:-3000} literally
  '  --account-url <url>  the account service (default ACCOUNT_URL, else http://127.0.0.1:${ACCOUNT_PORT:-3000})',
  "  --token <jwt>        the user's JWT instead of a dev token (env TOKEN); needed with an APPS_FILE sandbox",
  "  --secret-key <key>   the app's X-SERVICE-SECRET-KEY (env SECRET_KEY); needed with --token unless the sandbox runs the dev app",
  "  --data-dir <dir>     must be the running sandbox's DATA_DIR when given (default DATA_DIR)",
].join('\n');
