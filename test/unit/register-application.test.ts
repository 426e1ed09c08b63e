import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppRegistry, getApplication } from '../../shared/apps/app-registry.ts';
import { ApplicationRecordError } from '../../shared/apps/application.ts';
import { registerApplication } from '../../shared/apps/register-application.ts';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { ConflictError, ValidationError } from '../../shared/errors.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

/** `npm run app:create`'s core against a real (embedded) engine. */
let table: Table;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ table, stop } = await startDynaliteTable('apps-test'));
});
afterAll(() => stop());

const oidc = { provider_id: 'acme-idp', issuer: 'https://idp.acme.test', audience: 'acme-api', jwks_uri: 'https://idp.acme.test/jwks.json' };

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

  it('refuses an application without an audience, naming the field, and stores nothing', async () => {
    const { audience: _none, ...withoutAudience } = oidc;
    for (const audience of [undefined, '', []]) {
      const refused = registerApplication(table, { app_id: 'no-aud', oidc: { ...withoutAudience, audience } as never, trusted_keys: [] });
      await expect(refused).rejects.toBeInstanceOf(ValidationError);
      await expect(refused).rejects.toThrow(/^oidc\.audience is required/);
    }
    expect(await getApplication(table, 'no-aud')).toBeUndefined();
  });

  it('refuses at load a stored record without an audience, with the same message, and its credentials resolve nothing', async () => {
    const { app, secret_key } = await registerApplication(table, { app_id: 'legacy-no-aud', oidc, trusted_keys: [] });
    const { audience: _none, ...withoutAudience } = app.oidc;
    await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.app(app.app_id), ...app, oidc: withoutAudience } }));
    const load = getApplication(table, 'legacy-no-aud');
    await expect(load).rejects.toBeInstanceOf(ApplicationRecordError);
    await expect(load).rejects.toThrow('application "legacy-no-aud" (stored record): oidc.audience is required');
    await expect(new AppRegistry(table).findBySecretKey(secret_key)).rejects.toThrow('oidc.audience is required');
  });
});
