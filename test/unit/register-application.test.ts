import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppRegistry, getApplication } from '../../shared/apps/app-registry.ts';
import { registerApplication } from '../../shared/apps/register-application.ts';
import type { Table } from '../../shared/db/client.ts';
import { ConflictError } from '../../shared/errors.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

/** `npm run app:create`'s core against a real (embedded) engine. */
let table: Table;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('apps-test'));
});
afterAll(() => stop());

const oidc = { provider_id: 'acme-idp', issuer: 'https://idp.acme.test', jwks_uri: 'https://idp.acme.test/jwks.json' };

describe('registerApplication', () => {
  it('stores digests only, and the keys it returns resolve the app', async () => {
    const { app, secret_key, api_key } = await registerApplication(table, { app_id: 'acme', oidc, trusted_keys: [{ kty: 'EC', kid: 'k1' }] });
    expect(secret_key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(api_key).toMatch(/^ak_[A-Za-z0-9_-]{43}$/);
    const stored = await getApplication(table, 'acme');
    expect(stored).toEqual(app);
    expect(JSON.stringify(stored)).not.toContain(secret_key);
    expect(JSON.stringify(stored)).not.toContain(api_key);

    const registry = new AppRegistry(table);
    expect((await registry.findBySecretKey(secret_key))?.app_id).toBe('acme');
    expect((await registry.findByApiKey(api_key))?.app_id).toBe('acme');
    expect(await registry.findBySecretKey(api_key)).toBeUndefined();
  });

  it('refuses an app id that exists, keeping its credentials', async () => {
    const first = await registerApplication(table, { app_id: 'twice', oidc, trusted_keys: [] });
    await expect(registerApplication(table, { app_id: 'twice', oidc, trusted_keys: [] })).rejects.toBeInstanceOf(ConflictError);
    expect((await new AppRegistry(table).findBySecretKey(first.secret_key))?.app_id).toBe('twice');
  });
});
