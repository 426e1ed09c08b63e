import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devAppPaths, loadOrCreateDevApp, readAppsFile, toApplication } from '../../infra/local/applications.ts';
import { LocalRuntimeError } from '../../infra/local/local-runtime-error.ts';

/** APPS_FILE's `oidc.max_token_age_seconds`: optional, whole seconds from 60 to one year. */
describe('APPS_FILE max_token_age_seconds', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'apps-file-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const entry = (oidc: Record<string, unknown> = {}) => ({
    app_id: 'acme',
    secret_key: 'sk_acme_0123456789abcdef',
    api_key: 'ak_acme_0123456789abcdef',
    created_at: '2026-08-01',
    oidc: { provider_id: 'acme-idp', issuer: 'https://idp.acme.com', audience: 'acme-api', jwks: { keys: [] }, ...oidc },
  });
  async function file(content: unknown): Promise<string> {
    const path = join(dir, `${crypto.randomUUID()}.json`);
    await writeFile(path, JSON.stringify(content));
    return path;
  }

  it('is carried to the application when set, and absent by default', async () => {
    const [limited] = await readAppsFile(await file([entry({ max_token_age_seconds: 3600 })]));
    expect(toApplication(limited!, []).oidc.max_token_age_seconds).toBe(3600);
    const [plain] = await readAppsFile(await file([entry()]));
    expect(toApplication(plain!, []).oidc).not.toHaveProperty('max_token_age_seconds');
  });

  // An app may lower the 24-hour default, never raise it.
  it.each([0, 59, 1.5, 86400 + 1, 365 * 86400, 1e308, '3600'])('refuses %s', async (value) => {
    await expect(readAppsFile(await file([entry({ max_token_age_seconds: value })]))).rejects.toThrow(/oidc\.max_token_age_seconds/);
  });
});

/**
 * Every APPS_FILE problem is one LocalRuntimeError line naming the file, the place and the
 * problem (what `npm start` prints), and never quotes a value: most fields are secrets.
 */
describe('APPS_FILE problems', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'apps-file-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const SECRET = 'sk_very_secret_0123456789';
  const app = (overrides: Record<string, unknown> = {}) => ({
    app_id: 'acme',
    secret_key: SECRET,
    api_key: 'ak_acme_0123456789abcdef',
    created_at: '2026-08-01',
    oidc: { provider_id: 'acme-idp', issuer: 'https://idp.acme.com', audience: 'acme-api', jwks: { keys: [] } },
    ...overrides,
  });
  async function written(text: string): Promise<string> {
    const path = join(dir, `${crypto.randomUUID()}.json`);
    await writeFile(path, text);
    return path;
  }
  async function problem(text: string): Promise<string> {
    const path = await written(text);
    const error = await readAppsFile(path).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(LocalRuntimeError);
    const message = (error as Error).message;
    expect(message.startsWith(`APPS_FILE ${path}: `)).toBe(true);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('very_secret');
    return message.slice(`APPS_FILE ${path}: `.length);
  }

  it('names a missing file, a directory and an unreadable file', async () => {
    await expect(readAppsFile(join(dir, 'absent.json'))).rejects.toThrow(new LocalRuntimeError(`APPS_FILE ${join(dir, 'absent.json')}: no such file`));
    await expect(readAppsFile(dir)).rejects.toThrow(`APPS_FILE ${dir}: is a directory, not a file`);
    if (process.getuid?.() !== 0) {
      const path = await written('[]');
      await chmod(path, 0o000);
      await expect(readAppsFile(path)).rejects.toThrow(`APPS_FILE ${path}: cannot be read (permission denied)`);
    }
  });

  it.each([
    ['', 'is empty (expected a JSON array of applications)'],
    ['[{"secret_key": "sk_very_secret_0123456789" x}]', "not valid JSON: expected ',' or '}' after property value at line 1 column 45"],
    ['[\n  {"secret_key": sk_very_secret_0123456789}\n]', 'not valid JSON: unexpected character at line 2 column 18'],
    ['[{"secret_key": "sk_very_secret_0123456789"', "not valid JSON: expected ',' or '}' after property value at line 1 column 44"],
    ['[{"secret_key": ', 'not valid JSON: unexpected end of file at line 1 column 17'],
    ['[{"secret_key": "sk_very_secret_01', 'not valid JSON: unterminated string at line 1 column 35'],
    ['[{"app_id": "acme",}]', 'not valid JSON: expected double-quoted property name at line 1 column 20'],
    ['[1] 2', 'not valid JSON: unexpected non-whitespace character after JSON at line 1 column 5'],
  ])('names the line and column of a JSON syntax error without quoting the text: %j', async (text, expected) => {
    expect(await problem(text)).toBe(expected);
  });

  it('accepts a byte-order mark', async () => {
    await expect(readAppsFile(await written(`\uFEFF${JSON.stringify([app()])}`))).resolves.toHaveLength(1);
  });

  it.each<[string, unknown, string]>([
    ['an object', { apps: [] }, '(top level): must be a JSON array of applications, not an object'],
    ['an empty array', [], '(top level): must list at least one application'],
    ['a missing field', [app({ secret_key: undefined })], '[0].secret_key: is required'],
    ['a short secret key', [app({ secret_key: 'sk_short' })], '[0].secret_key: must be at least 16 characters'],
    ['a short API key', [app({ api_key: 'ak_short' })], '[0].api_key: must be at least 16 characters'],
    ['a secret key of the wrong type', [app({ secret_key: Number(123456789012345678n) })], '[0].secret_key: must be a string, not a number'],
    ['the reserved id', [app({ app_id: 'platform' })], '[0].app_id: "platform" is reserved for the platform application'],
    ['a bad id', [app({ app_id: 'a b' })], '[0].app_id: must be 1-64 letters, digits, ".", "_" or "-"'],
    ['a bad date', [app({ created_at: 'yesterday' })], '[0].created_at: must be an ISO 8601 date or timestamp'],
    ['no key set', [app({ oidc: { provider_id: 'p', issuer: 'i', audience: 'a' } })], '[0].oidc: needs exactly one of "jwks" or "jwks_uri"'],
    ['a bad jwks_uri', [app({ oidc: { provider_id: 'p', issuer: 'i', audience: 'a', jwks_uri: 'nope' } })], '[0].oidc.jwks_uri: must be a URL'],
    ['an empty provider id', [app({ oidc: { provider_id: '', issuer: 'i', audience: 'a', jwks: { keys: [] } } })], '[0].oidc.provider_id: must not be empty'],
    ['a string entry', ['acme'], '[0]: must be an object, not a string'],
    [
      'a duplicate app id',
      [app(), app({ secret_key: 'sk_other_0123456789ab', api_key: 'ak_other_0123456789ab' })],
      '[1].app_id: is the same as [0].app_id (each application needs its own)',
    ],
    [
      'a shared secret key',
      [app(), app({ app_id: 'other', api_key: 'ak_other_0123456789ab' })],
      '[1].secret_key: is the same as [0].secret_key (each application needs its own)',
    ],
  ])('names the field: %s', async (_case, content, expected) => {
    expect(await problem(JSON.stringify(content))).toBe(expected);
  });

  it('requires an audience (one or more client ids): missing, empty, an empty list or a wrong type names oidc.audience', async () => {
    const oidc = { provider_id: 'acme-idp', issuer: 'https://idp.acme.com', jwks: { keys: [] } };
    expect(await problem(JSON.stringify([app({ oidc })]))).toBe('[0].oidc.audience: is required');
    for (const audience of ['', [], [''], 42]) {
      expect(await problem(JSON.stringify([app({ oidc: { ...oidc, audience } })]))).toMatch(/^\[0\]\.oidc\.audience(\[0\])?: /);
    }
    const [both] = await readAppsFile(await written(JSON.stringify([app({ oidc: { ...oidc, audience: ['web', 'mobile'] } })])));
    expect(toApplication(both!, []).oidc.audience).toEqual(['web', 'mobile']);
  });

  it('lists at most three problems on its one line', async () => {
    const message = await problem(JSON.stringify([{}]));
    expect(message).toBe('[0].app_id: is required; [0].secret_key: is required; [0].api_key: is required (and 2 more)');
  });

  it('describes a corrupted dev app file the same way', async () => {
    const dataDir = await mkdtemp(join(dir, 'data-'));
    await writeFile(devAppPaths(dataDir).app, '{"app_id": "dev-app",');
    await expect(loadOrCreateDevApp(dataDir)).rejects.toThrow(
      new LocalRuntimeError(`dev app ${devAppPaths(dataDir).app}: not valid JSON: expected double-quoted property name at line 1 column 22`),
    );
  });
});
