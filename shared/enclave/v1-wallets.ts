import { hkdf, randomBytes, scrypt } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { digestsEqual, hashSecret } from '../apps/app-registry.ts';
import type { Application } from '../apps/application.ts';
import type { Identity } from '../auth/jwt.ts';
import { DecryptionError, open, seal } from '../crypto/aead.ts';
import { canonicalContext } from '../crypto/key-wrapper.ts';
import { ConflictError, ForbiddenError, GoneError } from '../errors.ts';
import { familyOf } from '../wallets/networks.ts';
import type { EnclaveDeps } from './create-wallet.ts';
import { walletIntegrityFailure } from './wallet-integrity-error.ts';
import { addressOf, generateSecret } from './wallet-keys.ts';
import { getWallet, putWalletIfAbsent, replaceV1Wallet, type V1WalletRecord, WALLET_SEAL_VERSION, type WalletRecord } from './wallet-record.ts';
import { sealWallet } from './wallet-seal.ts';

/**
 * Legacy v1 wallets (spec, Versioning and Enclave wallet binding): created with an
 * `encryption_context` (a user secret) instead of a JWT; usable with it until the retirement
 * instant; migrated to v2 on the first v2 call that brings it together with op_jwt and access_key.
 */
// Plain promise wrappers, not util.promisify: importing node:util in an ES module evaluates its
// whole namespace (worker_threads and more), a few ms on every enclave cold start.
const scryptAsync = (password: string, salt: Buffer, keylen: number, options: { N: number; r: number; p: number; maxmem: number }) =>
  new Promise<Buffer>((resolve, reject) => scrypt(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))));
const hkdfAsync = (digest: string, key: string | Buffer, salt: Buffer, info: string, keylen: number) =>
  new Promise<ArrayBuffer>((resolve, reject) => hkdf(digest, key, salt, info, keylen, (error, derived) => (error ? reject(error) : resolve(derived))));

/** scrypt at N = 2^15, r = 8 (32 MiB, ~0.1 s here): slow enough to make guessing a context costly. */
const KDF = { name: 'scrypt' as const, N: 2 ** 15, r: 8, p: 1 };

export function assertV1Open(deps: Pick<EnclaveDeps, 'now' | 'v1RetiresAt'>): void {
  if (deps.now() >= deps.v1RetiresAt) {
    throw new GoneError(
      'V1_RETIRED',
      `v1 (encryption_context) wallet access was retired at ${deps.v1RetiresAt.toISOString()}; wallets not migrated to v2 by then are inaccessible`,
    );
  }
}

async function contextKey(encryptionContext: string, kdf: V1WalletRecord['v1']['kdf']): Promise<Buffer> {
  return scryptAsync(encryptionContext, Buffer.from(kdf.salt, 'base64'), 32, { N: kdf.N, r: kdf.r, p: kdf.p, maxmem: 64 * 1024 * 1024 });
}

async function recoveryKeyMaterial(recoveryKey: string, salt: Buffer): Promise<Buffer> {
  // The recovery key is 256 random bits: a fast KDF suffices.
  return Buffer.from(await hkdfAsync('sha256', recoveryKey, salt, 'v1-wallet-recovery', 32));
}

export interface CreatedV1Wallet {
  readonly wallet_id: string;
  readonly access_key: string;
  readonly recovery_key: string;
  readonly public_address: string;
  readonly network: string;
  readonly wallet_group_id: string;
}

/**
 * What a v1 wallet created for an identity authenticates under its context key (issue 21 §8): the
 * owner it may migrate to, and the rest of what decides who may use it. A v1 record's associated
 * data is its wallet id alone (so a wrong encryption_context stays a 403), plus `binding_tag`, an
 * empty blob whose associated data is this: an edited owner no longer matches it.
 */
function v1Binding(wallet: Omit<V1WalletRecord, 'v1' | 'created_at'>): string {
  return canonicalContext({
    purpose: 'enclave-wallet-v1',
    seal_version: String(WALLET_SEAL_VERSION),
    version: '1',
    app_id: wallet.app_id,
    wallet_id: wallet.wallet_id,
    iss: wallet.iss ?? '',
    sub: wallet.sub ?? '',
    access_key_hash: wallet.access_key_hash,
    wallet_group_id: wallet.wallet_group_id,
    family: wallet.family,
    public_address: wallet.public_address,
  });
}

/**
 * `POST /v1/api/wallet`: a new wallet sealed under the encryption context (before retirement only).
 * With `identity` (the request's optional `auth_jwt`, verified by the adapter) the wallet is created
 * for that user and can later migrate to v2 for that user only; without, it names no user and can
 * only ever be used through v1.
 */
export async function createV1Wallet(
  deps: Pick<EnclaveDeps, 'table' | 'now' | 'v1RetiresAt'>,
  input: { app: Application; encryptionContext: string; network: string; walletGroupId: string; identity?: Pick<Identity, 'iss' | 'sub'> },
): Promise<CreatedV1Wallet> {
  assertV1Open(deps);
  const family = familyOf(input.network);
  const walletId = uuidv7();
  const secret = generateSecret(family);
  const accessKey = randomBytes(32).toString('base64url');
  const recoveryKey = randomBytes(32).toString('base64url');
  const salt = randomBytes(16);
  const recoverySalt = randomBytes(16);
  const kdf = { ...KDF, salt: salt.toString('base64') };
  const key = await contextKey(input.encryptionContext, kdf);
  const recovery = await recoveryKeyMaterial(recoveryKey, recoverySalt);
  try {
    const plain = {
      wallet_id: walletId,
      version: 1 as const,
      app_id: input.app.app_id,
      ...(input.identity ? { seal_version: WALLET_SEAL_VERSION, iss: input.identity.iss, sub: input.identity.sub } : {}),
      wallet_group_id: input.walletGroupId,
      family,
      public_address: addressOf(family, secret),
      access_key_hash: hashSecret(accessKey),
    };
    const record: V1WalletRecord = {
      ...plain,
      created_at: deps.now().toISOString(),
      v1: {
        kdf,
        sealed_key: seal(key, secret, walletId).toString('base64'),
        recovery: { salt: recoverySalt.toString('base64'), sealed_key: seal(recovery, secret, walletId).toString('base64') },
        ...(input.identity ? { binding_tag: seal(key, Buffer.alloc(0), v1Binding(plain)).toString('base64') } : {}),
      },
    };
    await putWalletIfAbsent(deps.table, record);
    return {
      wallet_id: walletId,
      access_key: accessKey,
      recovery_key: recoveryKey,
      public_address: record.public_address,
      network: input.network,
      wallet_group_id: input.walletGroupId,
    };
  } finally {
    for (const material of [secret, key, recovery]) material.fill(0);
  }
}

/**
 * Opens a v1 wallet's private key with its encryption context, after checking the access key.
 * The caller zeroes the returned key.
 */
export async function openV1Key(wallet: V1WalletRecord, auth: { encryption_context: string; access_key: string }): Promise<Buffer> {
  if (!digestsEqual(wallet.access_key_hash, hashSecret(auth.access_key))) {
    throw new ForbiddenError('INVALID_ACCESS_KEY', 'access_key does not match this wallet');
  }
  const key = await contextKey(auth.encryption_context, wallet.v1.kdf);
  try {
    let secret: Buffer;
    try {
      secret = open(key, Buffer.from(wallet.v1.sealed_key, 'base64'), wallet.wallet_id);
    } catch (error) {
      if (error instanceof DecryptionError) throw new ForbiddenError('INVALID_ENCRYPTION_CONTEXT', 'encryption_context does not unlock this wallet');
      throw error;
    }
    // The right context opened the key: a binding that no longer authenticates is an edited item.
    if (wallet.v1.binding_tag !== undefined) {
      try {
        open(key, Buffer.from(wallet.v1.binding_tag, 'base64'), v1Binding(wallet));
      } catch (error) {
        secret.fill(0);
        if (error instanceof DecryptionError) throw walletIntegrityFailure(wallet.wallet_id, 'seal');
        throw error;
      }
    }
    return secret;
  } finally {
    key.fill(0);
  }
}

/**
 * The identity a v1 wallet may migrate to: the one it was created for (issue 21 §8). The v1
 * create request of the spec carries no user, only the app's secret key and the encryption
 * context, so the enclave cannot know whose a wallet created that way is; letting the first op_jwt
 * decide would let anyone holding its v1 credentials move it to themselves. Such a wallet is
 * refused (409 V1_OWNER_UNKNOWN); one created with `auth_jwt` migrates to that user only.
 */
export function assertMigrationIdentity(wallet: V1WalletRecord, identity: Pick<Identity, 'iss' | 'sub'>): { iss: string; sub: string } {
  if (wallet.seal_version !== WALLET_SEAL_VERSION || wallet.iss === undefined || wallet.sub === undefined) {
    throw new ConflictError(
      'V1_OWNER_UNKNOWN',
      'This v1 wallet was created without auth_jwt, so it names no user it could migrate to: it cannot be migrated to v2',
    );
  }
  if (wallet.iss !== identity.iss || wallet.sub !== identity.sub) {
    throw new ForbiddenError('WALLET_IDENTITY_MISMATCH', 'op_jwt does not name the identity this wallet is bound to');
  }
  return { iss: wallet.iss, sub: wallet.sub };
}

/**
 * Re-keys a v1 wallet to v2: check that the op_jwt names the identity the wallet was created for,
 * unwrap with the v1 secret, re-seal under the KMS key bound to that identity (wallet-seal.ts),
 * drop the recovery material. A conditional write on the version makes concurrent first calls
 * migrate once; a call that loses the race gets the winner's record.
 */
export async function migrateV1Wallet(
  deps: EnclaveDeps,
  wallet: V1WalletRecord,
  identity: Identity,
  auth: { encryption_context: string; access_key: string },
): Promise<WalletRecord> {
  assertV1Open(deps);
  const owner = assertMigrationIdentity(wallet, identity);
  const secret = await openV1Key(wallet, auth);
  try {
    const { v1: _legacy, version: _version, seal_version: _seal, iss: _iss, sub: _sub, ...base } = wallet;
    const migrated = await sealWallet(
      deps.keyWrapper,
      { ...base, version: 2, iss: owner.iss, sub: owner.sub, migrated_at: deps.now().toISOString() },
      { private_key: secret, access_key: Buffer.from(auth.access_key, 'utf8') },
    );
    if (await replaceV1Wallet(deps.table, migrated)) return migrated;
  } finally {
    secret.fill(0);
  }
  const winner = await getWallet(deps.table, wallet.wallet_id);
  if (winner?.version !== 2) throw new Error(`wallet ${wallet.wallet_id} lost a migration race but is not v2`);
  return winner;
}
