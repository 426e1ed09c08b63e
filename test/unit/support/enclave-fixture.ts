import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JWK } from 'jose';
import type { Application } from '../../../shared/apps/application.ts';
import { generateEs256Jwk } from '../../../shared/crypto/es256-jwk.ts';
import { LocalKeyWrapper } from '../../../shared/crypto/local-key-wrapper.ts';
import type { Table } from '../../../shared/db/client.ts';
import { startDynaliteTable } from './dynalite-table.ts';

export interface EnclaveFixture {
  readonly table: Table;
  readonly stop: () => Promise<void>;
  readonly keyWrapper: LocalKeyWrapper;
  /** The app's identity provider's private key (signTestOpJwt). */
  readonly issuerKey: JWK;
  readonly app: Application;
}

/**
 * What the enclave's unit tests stand on: a dynalite table named `name`, a local key wrapper, and
 * one application whose identity provider is a fresh ES256 key (inline JWKS, no trusted keys).
 */
export async function startEnclaveFixture(name: string, oidc: { appId: string; issuer: string; audience: string }): Promise<EnclaveFixture> {
  const { table, stop: stopTable } = await startDynaliteTable(name);
  const keyDir = await mkdtemp(join(tmpdir(), `${name}-`));
  const keyWrapper = new LocalKeyWrapper(keyDir, 'enclave');
  const stop = async () => {
    await stopTable();
    await rm(keyDir, { recursive: true, force: true });
  };
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  const app: Application = {
    app_id: oidc.appId,
    created_at: '2026-01-01T00:00:00Z',
    oidc: { provider_id: 'idp', issuer: oidc.issuer, audience: oidc.audience, jwks: { keys: [publicJwk] } },
    secret_key_hash: '00',
    api_key_hash: '00',
    trusted_keys: [],
    default_wallet_group_id: 'default',
  };
  return { table, stop, keyWrapper, issuerKey: privateJwk, app };
}
