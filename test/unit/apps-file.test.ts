import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAppsFile, toApplication } from '../../infra/local/applications.ts';

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
    oidc: { provider_id: 'acme-idp', issuer: 'https://idp.acme.com', jwks: { keys: [] }, ...oidc },
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

  it.each([0, 59, 1.5, 365 * 86400 + 1, 1e308, '3600'])('refuses %s', async (value) => {
    await expect(readAppsFile(await file([entry({ max_token_age_seconds: value })]))).rejects.toThrow(/oidc\.max_token_age_seconds/);
  });
});
