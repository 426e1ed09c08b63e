import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importJWK, SignJWT } from 'jose';
import type { Application } from '../shared/apps/application.ts';
import { verifyOpJwt } from '../shared/auth/jwt.ts';
import { generateEs256Jwk } from '../shared/crypto/es256-jwk.ts';
import { LocalKeyWrapper } from '../shared/crypto/local-key-wrapper.ts';
import { createWallet } from '../shared/enclave/create-wallet.ts';
import { createV1Wallet, openV1Key } from '../shared/enclave/v1-wallets.ts';
import { signHash } from '../shared/enclave/wallet-keys.ts';
import { getWallet, type V1WalletRecord, type WalletRecord } from '../shared/enclave/wallet-record.ts';
import { openWallet } from '../shared/enclave/wallet-seal.ts';
import { startDynaliteTable } from '../test/unit/support/dynalite-table.ts';

/**
 * `npm run bench:enclave`: where the time of one enclave sign_data goes, step by step, in process
 * (no HTTP): op_jwt verification, the wallet read, key unwrapping (local provider: AES-GCM data
 * key unwrap + private key open; in AWS the unwrap is a KMS Decrypt round trip instead), the
 * signature itself; and the one-off v1 cost (scrypt) paid at v1 use and migration.
 */
const ROUNDS = Number(process.argv[2] ?? 2000);
const dataDir = await mkdtemp(join(tmpdir(), 'bench-enclave-'));
const { table, stop } = await startDynaliteTable('bench-enclave');
const keyWrapper = new LocalKeyWrapper(dataDir, 'enclave');
const { privateJwk, publicJwk } = await generateEs256Jwk();
const kid = publicJwk.kid!;
const app: Application = {
  app_id: 'bench',
  created_at: '2026-09-01T00:00:00Z',
  oidc: { provider_id: 'idp', issuer: 'https://idp.bench', audience: 'bench-api', jwks: { keys: [publicJwk] } },
  secret_key_hash: '00',
  api_key_hash: '00',
  trusted_keys: [],
  default_wallet_group_id: 'default',
};
const deps = { table, keyWrapper, now: () => new Date(), v1RetiresAt: new Date('2099-01-01T00:00:00Z') };
const created = await createWallet(deps, { app, identity: { iss: app.oidc.issuer, sub: 'bench' }, network: 'ETH', walletGroupId: 'g' });
const wallet = (await getWallet(table, created.wallet_id)) as WalletRecord;
const iat = Math.floor(Date.now() / 1000);
const opJwt = await new SignJWT({})
  .setProtectedHeader({ alg: 'ES256', kid })
  .setIssuer(app.oidc.issuer)
  .setAudience('bench-api')
  .setJti('bench')
  .setSubject('bench')
  .setIssuedAt(iat)
  .setExpirationTime(iat + 300)
  .sign(await importJWK(privateJwk, 'ES256'));
const hash = `0x${'ab'.repeat(32)}` as const;

async function time(name: string, rounds: number, step: () => Promise<unknown>) {
  for (let i = 0; i < Math.min(50, rounds); i++) await step();
  const started = performance.now();
  for (let i = 0; i < rounds; i++) await step();
  const ms = (performance.now() - started) / rounds;
  process.stdout.write(`${name.padEnd(52)} ${ms.toFixed(3).padStart(9)} ms/op\n`);
  return ms;
}

process.stdout.write(`enclave sign_data steps, ${ROUNDS} rounds each, Node ${process.version}\n`);
const steps = {
  verify: await time('verify op_jwt (ES256, jose)', ROUNDS, () => verifyOpJwt(app, opJwt)),
  read: await time('read wallet (dynalite GetItem)', ROUNDS, () => getWallet(table, wallet.wallet_id)),
  unwrap: await time('unwrap private key (local data key + AES-GCM)', ROUNDS, async () => {
    const { private_key } = await openWallet({ table, keyWrapper }, wallet, ['private_key']);
    private_key.fill(0);
  }),
  sign: await time('sign 32 bytes (secp256k1, viem)', ROUNDS, async () => {
    const { private_key } = await openWallet({ table, keyWrapper }, wallet, ['private_key']);
    await signHash('evm', private_key, hash);
  }),
};
const signOnly = steps.sign - steps.unwrap;
const total = steps.verify + steps.read + steps.unwrap + signOnly;
process.stdout.write(
  `sum of steps ${total.toFixed(3)} ms; unwrapping is ${((steps.unwrap / total) * 100).toFixed(1)}% of it (signing alone ${signOnly.toFixed(3)} ms)\n`,
);

const v1 = await createV1Wallet(deps, { app, encryptionContext: 'bench-context', network: 'ETH', walletGroupId: 'g' });
const v1Record = (await getWallet(table, v1.wallet_id)) as V1WalletRecord;
await time('v1 unwrap (scrypt N=2^15, r=8 + AES-GCM), per v1 call', 10, async () =>
  (await openV1Key(v1Record, { encryption_context: 'bench-context', access_key: v1.access_key })).fill(0),
);

await stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(0);
