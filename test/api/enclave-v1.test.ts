import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keccak256, recoverAddress, stringToBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appOne, mintToken, sandbox, uniqueUser } from './support/client.ts';
import { type RuntimeProcess, startRuntimeProcess, stopProcess } from './support/global-setup.ts';

/**
 * Enclave v1 and migration (spec, Versioning; Enclave wallet binding). Runs a runtime of its own
 * whose V1_RETIREMENT_AT lies in the future ("before"), then restarts it on the same data with
 * the default instant, end of 2026-07-31 UTC, which today is past ("after").
 */
const secret = { 'x-service-secret-key': appOne.secret_key };
const hash = keccak256(stringToBytes('legacy payload'));

async function post(runtime: RuntimeProcess, path: string, json: unknown) {
  const response = await fetch(`${runtime.urls.enclave}${path}`, {
    method: 'POST',
    headers: { ...secret, 'content-type': 'application/json' },
    body: JSON.stringify(json),
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe.runIf(sandbox.appsFile)('enclave v1 wallets and migration', () => {
  const dataDir = mkdtemp(join(tmpdir(), 'sandbox-v1-'));
  const env = async (retirement?: string): Promise<Record<string, string>> => ({
    DATA_DIR: await dataDir,
    APPS_FILE: sandbox.appsFile!,
    TABLE_NAME: 'v1-migration-tests',
    ...(sandbox.dynamodbEndpoint ? { DYNAMODB_ENDPOINT: sandbox.dynamodbEndpoint } : {}),
    ...(retirement ? { V1_RETIREMENT_AT: retirement } : {}),
  });
  let before: RuntimeProcess;
  const alice = uniqueUser('alice');
  const context = 'alice-user-secret-passphrase';
  let evm: { wallet_id: string; access_key: string; recovery_key: string; public_address: `0x${string}` };
  let unmigrated: { wallet_id: string; access_key: string };

  beforeAll(async () => {
    before = await startRuntimeProcess(await env('2099-01-01T00:00:00Z'), ['--quiet']);
  });
  afterAll(async () => {
    if (before) await stopProcess(before.child);
    await rm(await dataDir, { recursive: true, force: true });
  });

  it('before retirement: creates v1 wallets with a recovery key and signs with encryption_context', async () => {
    // Created for alice (the optional auth_jwt): the only user it may migrate to (issue 21 §8).
    const created = await post(before, '/v1/api/wallet', {
      encryption_context: context,
      auth_jwt: await mintToken(appOne, alice),
      network: 'ETH',
      wallet_group_id: 'legacy',
    });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(['access_key', 'network', 'public_address', 'recovery_key', 'success', 'wallet_group_id', 'wallet_id']);
    evm = created.body;
    unmigrated = (await post(before, '/v1/api/wallet', { encryption_context: 'other-secret', network: 'SOL', wallet_group_id: 'legacy' })).body;

    const signed = await post(before, '/v1/api/wallet/sign_data', {
      encryption_context: context,
      access_key: evm.access_key,
      wallet_id: evm.wallet_id,
      raw_data_hash: hash,
    });
    expect(signed.status).toBe(200);
    expect(await recoverAddress({ hash, signature: signed.body.signature })).toBe(evm.public_address);

    const wrongContext = await post(before, '/v1/api/wallet/sign_data', {
      encryption_context: 'guess',
      access_key: evm.access_key,
      wallet_id: evm.wallet_id,
      raw_data_hash: hash,
    });
    expect(wrongContext.status).toBe(403);
    expect(wrongContext.body.error.code).toBe('INVALID_ENCRYPTION_CONTEXT');
    const wrongKey = await post(before, '/v1/api/wallet/sign_data', {
      encryption_context: context,
      access_key: 'nope',
      wallet_id: evm.wallet_id,
      raw_data_hash: hash,
    });
    expect(wrongKey.status).toBe(403);
  });

  it('a v2 call on a v1 wallet without encryption_context fails with MIGRATION_REQUIRED', async () => {
    const response = await post(before, '/v2/api/wallet/sign_data', {
      op_jwt: await mintToken(appOne, alice, { ttlSeconds: 120 }),
      access_key: evm.access_key,
      wallet_id: evm.wallet_id,
      raw_data_hash: hash,
    });
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('MIGRATION_REQUIRED');
  });

  it("migration is bound to the user the v1 wallet was created for: alice's v1 credentials with mallory's op_jwt are 403; a wallet created for no one is 409 V1_OWNER_UNKNOWN", async () => {
    const mallory = await post(before, '/v2/api/wallet/sign_data', {
      op_jwt: await mintToken(appOne, uniqueUser('mallory'), { ttlSeconds: 120 }),
      access_key: evm.access_key,
      wallet_id: evm.wallet_id,
      encryption_context: context,
      raw_data_hash: hash,
    });
    expect(mallory.status).toBe(403);
    expect(mallory.body.error.code).toBe('WALLET_IDENTITY_MISMATCH');
    expect(mallory.body).not.toHaveProperty('signature');
    const unowned = await post(before, '/v2/api/wallet/sign_data', {
      op_jwt: await mintToken(appOne, uniqueUser('anyone'), { ttlSeconds: 120 }),
      access_key: unmigrated.access_key,
      wallet_id: unmigrated.wallet_id,
      encryption_context: 'other-secret',
      raw_data_hash: hash,
    });
    expect(unowned.status).toBe(409);
    expect(unowned.body.error.code).toBe('V1_OWNER_UNKNOWN');
    // Neither was migrated: both still answer v1.
    for (const [wallet, secret] of [
      [evm, context],
      [unmigrated, 'other-secret'],
    ] as const) {
      const v1 = await post(before, '/v1/api/wallet/sign_data', {
        encryption_context: secret,
        access_key: wallet.access_key,
        wallet_id: wallet.wallet_id,
        raw_data_hash: hash,
      });
      expect(v1.status).toBe(200);
    }
  });

  it('concurrent first v2 calls migrate the wallet once, bound to the identity it was created for', async () => {
    // One op_jwt per call: the enclave accepts each once.
    const opJwt = () => mintToken(appOne, alice, { ttlSeconds: 120 });
    const body = { access_key: evm.access_key, wallet_id: evm.wallet_id, encryption_context: context, raw_data_hash: hash };
    const responses = await Promise.all(Array.from({ length: 10 }, async () => post(before, '/v2/api/wallet/sign_data', { ...body, op_jwt: await opJwt() })));
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    for (const response of responses) expect(await recoverAddress({ hash, signature: response.body.signature })).toBe(evm.public_address);

    const v2Only = { access_key: evm.access_key, wallet_id: evm.wallet_id, raw_data_hash: hash };
    expect((await post(before, '/v2/api/wallet/sign_data', { ...v2Only, op_jwt: await opJwt() })).status).toBe(200);
    // A straggler of the same first use (within 30 s of the migration) still succeeds; past that
    // window encryption_context is refused (test/unit/v1-wallets.test.ts, with an injected clock).
    const straggler = await post(before, '/v2/api/wallet/sign_data', { ...v2Only, op_jwt: await opJwt(), encryption_context: context });
    expect(straggler.status).toBe(200);
    const otherUser = await post(before, '/v2/api/wallet/sign_data', { ...v2Only, op_jwt: await mintToken(appOne, uniqueUser('mallory'), { ttlSeconds: 60 }) });
    expect(otherUser.status).toBe(403);
    const v1Again = await post(before, '/v1/api/wallet/sign_data', {
      encryption_context: context,
      access_key: evm.access_key,
      wallet_id: evm.wallet_id,
      raw_data_hash: hash,
    });
    expect(v1Again.status).toBe(409);
    expect(v1Again.body.error.code).toBe('WALLET_MIGRATED');
  });

  it('after retirement: v1 and migration are refused with V1_RETIRED; migrated wallets keep working', async () => {
    await stopProcess(before.child);
    const after = await startRuntimeProcess(await env(), ['--quiet']);
    try {
      const create = await post(after, '/v1/api/wallet', { encryption_context: context, network: 'ETH', wallet_group_id: 'legacy' });
      expect(create.status).toBe(410);
      expect(create.body.error.code).toBe('V1_RETIRED');
      const v1Sign = await post(after, '/v1/api/wallet/sign_data', {
        encryption_context: 'other-secret',
        access_key: unmigrated.access_key,
        wallet_id: unmigrated.wallet_id,
        raw_data_hash: hash,
      });
      expect(v1Sign.status).toBe(410);
      const bob = uniqueUser('bob');
      for (const extra of [{ encryption_context: 'other-secret' }, {}]) {
        const migrate = await post(after, '/v2/api/wallet/sign_data', {
          op_jwt: await mintToken(appOne, bob, { ttlSeconds: 60 }),
          access_key: unmigrated.access_key,
          wallet_id: unmigrated.wallet_id,
          raw_data_hash: hash,
          ...extra,
        });
        expect(migrate.status).toBe(410);
        expect(migrate.body.error.code).toBe('V1_RETIRED');
      }
      const migrated = await post(after, '/v2/api/wallet/sign_data', {
        op_jwt: await mintToken(appOne, alice, { ttlSeconds: 60 }),
        access_key: evm.access_key,
        wallet_id: evm.wallet_id,
        raw_data_hash: hash,
      });
      expect(migrated.status).toBe(200);
      expect(await recoverAddress({ hash, signature: migrated.body.signature })).toBe(evm.public_address);
    } finally {
      await stopProcess(after.child);
    }
  });
});
