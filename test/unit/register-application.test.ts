import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppRegistry, getApplication } from '../../shared/apps/app-registry.ts';
import { registerApplication } from '../../shared/apps/register-application.ts';
import { createDocumentClient, type Table } from '../../shared/db/client.ts';
import { localCreateTableInput } from '../../shared/db/table-definition.ts';
import { ConflictError } from '../../shared/errors.ts';

/** `npm run app:create`'s core against a real (embedded) engine. */
const server = dynalite({ createTableMs: 0 });
let table: Table;

beforeAll(async () => {
  vi.stubEnv('AWS_REGION', 'us-east-1');
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new DynamoDBClient({ endpoint }).send(new CreateTableCommand(localCreateTableInput('apps-test')));
  table = { doc: createDocumentClient(endpoint), name: 'apps-test' };
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await new Promise<void>((done) => server.close(() => done()));
});

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
