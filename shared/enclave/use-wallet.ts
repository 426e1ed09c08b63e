import { digestsEqual, hashSecret } from '../apps/app-registry.ts';
import type { Application } from '../apps/application.ts';
import { verifyOpJwt } from '../auth/jwt.ts';
import { recordOpJwtUse } from '../auth/op-jwt-replay.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import type { EnclaveDeps } from './create-wallet.ts';
import { checkSigningPolicy, type SigningRequest } from './policy-gate.ts';
import { currentPolicy } from './policy-store.ts';
import { assertV1Open, migrateV1Wallet, openV1Key } from './v1-wallets.ts';
import { type AnyWalletRecord, getWallet, type WalletRecord } from './wallet-record.ts';
import { openWallet } from './wallet-seal.ts';

export interface WalletAuthorization {
  readonly op_jwt: string;
  readonly access_key: string;
  readonly wallet_id: string;
  readonly encryption_context?: string;
}

/**
 * Concurrent first calls migrate once, and all of them should succeed: a call that read the
 * wallet after a concurrent call had migrated it still carries encryption_context. Within this
 * window after migration that is treated as the same first use; afterwards it is refused.
 */
const MIGRATION_RACE_WINDOW_MS = 30_000;

function justMigrated(wallet: WalletRecord, now: Date): boolean {
  return wallet.migrated_at !== undefined && now.getTime() - Date.parse(wallet.migrated_at) < MIGRATION_RACE_WINDOW_MS;
}

async function findWallet(deps: Pick<EnclaveDeps, 'table'>, app: Application, walletId: string): Promise<AnyWalletRecord> {
  const wallet = await getWallet(deps.table, walletId);
  if (!wallet || wallet.app_id !== app.app_id) throw new NotFoundError('WALLET_NOT_FOUND', 'body.wallet_id: no such wallet in this application');
  return wallet;
}

/** The value of a settled promise, or its reason thrown. */
function settledValue<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

/**
 * Authorises one v2 signing operation and runs it with the wallet's private key, which is
 * decrypted for this call only and zeroed afterwards. Checks, in order: op_jwt (signature,
 * expiry, lifetime ≤ 300 s, for this app), its first use (a replay is 401 OP_JWT_REPLAYED), the
 * wallet exists in this app, a v1 wallet is migrated first
 * (spec, Enclave wallet binding), op_jwt names the wallet's identity, the access key matches,
 * then the app's signing policy allows `request` on the op_jwt's channel (403 POLICY_DENIED,
 * issue 22) before anything is unwrapped. `request` is required: no v2 signature skips the policy.
 *
 * Round trips: the op_jwt's single-use put, the wallet read and the policy read go out together
 * (their errors are still reported in the order above); the decision's audit-log put overlaps the
 * key unwrap (a KMS Decrypt in AWS) and is awaited before the signature is returned. Measured by
 * `npm run bench:enclave`.
 */
export async function withWalletKey<T>(
  deps: EnclaveDeps,
  app: Application,
  auth: WalletAuthorization,
  operation: (wallet: WalletRecord, secret: Buffer) => Promise<T> | T,
  request: SigningRequest,
): Promise<T> {
  const identity = await verifyOpJwt(app, auth.op_jwt, deps.now());
  // Single use, recorded before anything is unwrapped or signed: a refused call spends it too.
  const [used, read, policy] = await Promise.allSettled([
    recordOpJwtUse(deps.table, { appId: app.app_id, jti: identity.jti, exp: identity.exp }),
    findWallet(deps, app, auth.wallet_id),
    currentPolicy(deps.table, app.app_id),
  ]);
  settledValue(used);
  const found = settledValue(read);
  let wallet: WalletRecord;
  if (found.version === 1) {
    assertV1Open(deps); // after retirement an unmigrated wallet stays inaccessible
    if (auth.encryption_context === undefined) {
      throw new ConflictError('MIGRATION_REQUIRED', 'This is a v1 wallet: send encryption_context with this first v2 call to migrate it');
    }
    wallet = await migrateV1Wallet(deps, found, identity, { encryption_context: auth.encryption_context, access_key: auth.access_key });
  } else {
    if (auth.encryption_context !== undefined && !justMigrated(found, deps.now())) {
      // Spec, Enclave wallet binding: after migration encryption_context is neither required nor accepted.
      throw new ValidationError('body.encryption_context: is not accepted for a v2 wallet', 'ENCRYPTION_CONTEXT_NOT_ACCEPTED');
    }
    wallet = found;
  }
  if (wallet.iss !== identity.iss || wallet.sub !== identity.sub) {
    throw new ForbiddenError('WALLET_IDENTITY_MISMATCH', 'op_jwt does not name the identity this wallet is bound to');
  }
  if (!digestsEqual(wallet.access_key_hash, hashSecret(auth.access_key))) {
    throw new ForbiddenError('INVALID_ACCESS_KEY', 'access_key does not match this wallet');
  }
  const { logged } = await checkSigningPolicy(deps.table, app.app_id, identity.channel, request, settledValue(policy), {
    sub: identity.sub,
    jti: identity.jti,
    now: deps.now,
  });
  // Opens only if the record's binding (owner, access-key hash, ...) is the one it was sealed with.
  const [opened, log] = await Promise.allSettled([openWallet(deps, wallet, ['private_key']), logged]);
  const privateKey = opened.status === 'fulfilled' ? opened.value.private_key : undefined;
  try {
    settledValue(log); // no signature without its audit-log entry
    return await operation(wallet, settledValue(opened).private_key);
  } finally {
    privateKey?.fill(0);
  }
}

/**
 * Authorises one v1 signing operation (`encryption_context` + `access_key`), before the
 * retirement instant only. A wallet already migrated to v2 is refused: v2 is its only door now.
 */
export async function withV1WalletKey<T>(
  deps: Pick<EnclaveDeps, 'table' | 'now' | 'v1RetiresAt'>,
  app: Application,
  auth: { encryption_context: string; access_key: string; wallet_id: string },
  operation: (wallet: AnyWalletRecord, secret: Buffer) => Promise<T> | T,
): Promise<T> {
  assertV1Open(deps);
  const wallet = await findWallet(deps, app, auth.wallet_id);
  if (wallet.version !== 1) throw new ConflictError('WALLET_MIGRATED', 'This wallet was migrated to v2: use the /v2/ endpoints with op_jwt and access_key');
  const secret = await openV1Key(wallet, auth);
  try {
    return await operation(wallet, secret);
  } finally {
    secret.fill(0);
  }
}
