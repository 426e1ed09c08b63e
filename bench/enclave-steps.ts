import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Application } from '../shared/apps/application.ts';
import { verifyOpJwt } from '../shared/auth/jwt.ts';
import { recordOpJwtUse } from '../shared/auth/op-jwt-replay.ts';
import { generateEs256Jwk } from '../shared/crypto/es256-jwk.ts';
import { LocalKeyWrapper } from '../shared/crypto/local-key-wrapper.ts';
import { createWallet } from '../shared/enclave/create-wallet.ts';
import { enforceSigningPolicy } from '../shared/enclave/policy-gate.ts';
import { signData } from '../shared/enclave/sign-operations.ts';
import { withWalletKey } from '../shared/enclave/use-wallet.ts';
import { createV1Wallet, openV1Key } from '../shared/enclave/v1-wallets.ts';
import { signHash } from '../shared/enclave/wallet-keys.ts';
import { getWallet, type V1WalletRecord, type WalletRecord } from '../shared/enclave/wallet-record.ts';
import { openWallet } from '../shared/enclave/wallet-seal.ts';
import { startDynaliteTable } from '../test/unit/support/dynalite-table.ts';
import { signTestOpJwt } from '../test/unit/support/op-jwt.ts';

/**
 * `npm run bench:enclave`: where the time of one enclave sign_data goes, step by step, in process
 * (no HTTP): op_jwt verification, the wallet read, key unwrapping (local provider: AES-GCM data
 * key unwrap + private key open; in AWS the unwrap is a KMS Decrypt round trip instead), the
 * signature itself; the whole v2 path (withWalletKey) against the same calls made one after
 * another; and the one-off v1 cost (scrypt) paid at v1 use and migration.
 *
 * `npm run bench:enclave -- 2000 --rtt 5` adds 5 ms to each table call and key unwrap (a network
 * round trip in AWS) so the path's depth in round trips shows.
 */
const ROUNDS = /^\d+$/.test(process.argv[2] ?? '') ? Number(process.argv[2]) : 2000;
const dataDir = await mkdtemp(join(tmpdir(), 'bench-enclave-'));
const { table, stop } = await startDynaliteTable('bench-enclave');
const keyWrapper = new LocalKeyWrapper(dataDir, 'enclave');
const { privateJwk, publicJwk } = await generateEs256Jwk();
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
const mintOpJwt = () => signTestOpJwt(privateJwk, { iss: app.oidc.issuer, aud: 'bench-api', sub: 'bench', ttlSeconds: 300 });
const opJwt = await mintOpJwt();
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

// The whole v2 path (withWalletKey: op_jwt single use, wallet + policy reads, policy decision and
// its audit log, unwrap, sign), and the same calls one after another as before issue 22's
// overlap. In process every round trip is a sub-millisecond dynalite call; `--rtt <ms>` adds that
// much to each table call and each key unwrap, the way a DynamoDB or KMS round trip does in AWS.
const RTT_MS = process.argv.includes('--rtt') ? Number(process.argv[process.argv.indexOf('--rtt') + 1]) || 0 : 0;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
if (RTT_MS > 0) {
  const send = table.doc.send.bind(table.doc) as (command: unknown) => Promise<unknown>;
  (table.doc as { send: unknown }).send = async (command: unknown) => {
    await sleep(RTT_MS);
    return send(command);
  };
  const decrypt = keyWrapper.decryptDataKey.bind(keyWrapper);
  keyWrapper.decryptDataKey = async (...args) => {
    await sleep(RTT_MS);
    return decrypt(...args);
  };
}
const PATH_ROUNDS = Math.max(20, Math.floor(ROUNDS / (RTT_MS > 0 ? 20 : 4)));
const freshTokens = (count: number) => Promise.all(Array.from({ length: count }, mintOpJwt));
const auth = { access_key: created.access_key, wallet_id: created.wallet_id };
const request = { operation: 'sign_data' as const, body: { raw_data_hash: hash } };
process.stdout.write(`\nthe whole v2 sign_data path, ${PATH_ROUNDS} rounds, ${RTT_MS} ms added per table call and unwrap\n`);
let tokens = await freshTokens(PATH_ROUNDS + 50);
const sequential = await time('one after another (before): 5 round trips', PATH_ROUNDS, async () => {
  const identity = await verifyOpJwt(app, tokens.pop()!);
  await recordOpJwtUse(table, { appId: app.app_id, jti: identity.jti, exp: identity.exp });
  const record = (await getWallet(table, wallet.wallet_id)) as WalletRecord;
  await enforceSigningPolicy(table, app.app_id, identity.channel, request, { sub: identity.sub, jti: identity.jti, now: () => new Date() });
  const { private_key } = await openWallet({ table, keyWrapper }, record, ['private_key']);
  await signData(record, private_key, { raw_data_hash: hash });
  private_key.fill(0);
});
tokens = await freshTokens(PATH_ROUNDS + 50);
const overlapped = await time('withWalletKey (now): 2 round trips deep', PATH_ROUNDS, () =>
  withWalletKey(deps, app, { ...auth, op_jwt: tokens.pop()! }, (record, secret) => signData(record, secret, { raw_data_hash: hash }), request),
);
process.stdout.write(`overlap saves ${(sequential - overlapped).toFixed(3)} ms per signature (${((1 - overlapped / sequential) * 100).toFixed(1)}%)\n\n`);

const v1 = await createV1Wallet(deps, { app, encryptionContext: 'bench-context', network: 'ETH', walletGroupId: 'g' });
const v1Record = (await getWallet(table, v1.wallet_id)) as V1WalletRecord;
await time('v1 unwrap (scrypt N=2^15, r=8 + AES-GCM), per v1 call', 10, async () =>
  (await openV1Key(v1Record, { encryption_context: 'bench-context', access_key: v1.access_key })).fill(0),
);

await stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(0);
