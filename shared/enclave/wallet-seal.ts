import { digestsEqual, hashSecret } from '../apps/app-registry.ts';
import { DecryptionError } from '../crypto/aead.ts';
import type { EncryptionContext, KeyWrapper } from '../crypto/key-wrapper.ts';
import { openSecrets, sealSecrets } from '../crypto/secret-box.ts';
import type { Table } from '../db/client.ts';
import { walletIntegrityFailure } from './wallet-integrity-error.ts';
import { addressOf } from './wallet-keys.ts';
import { deriveWalletId, isDerivedWalletId, resealWallet, WALLET_SEAL_VERSION, type WalletRecord, walletEncryptionContext } from './wallet-record.ts';

/**
 * The wallet-to-identity binding, sealed with the key (issue 21 §3). The KMS encryption context
 * stays {purpose, app_id, wallet_id}; everything else that decides who may use a wallet is AES-GCM
 * associated data of each sealed secret, so an item whose owner, access-key hash, group, key
 * family, address or version was edited in the table no longer opens, and nothing is signed.
 * Associated data rather than more KMS context: KMS context lands in CloudTrail in the clear (a
 * user's `sub` is personal data) and the key policies allow exactly the three context keys.
 */
export type WalletSecretName = 'private_key' | 'access_key';
type Bound = Pick<WalletRecord, 'version' | 'app_id' | 'wallet_id' | 'iss' | 'sub' | 'access_key_hash' | 'wallet_group_id' | 'family' | 'public_address'>;
type Unsealed = Omit<WalletRecord, 'sealed' | 'seal_version'>;

/** What the seal authenticates besides purpose, app and wallet (all strings, like a KMS context). */
export function walletBinding(wallet: Bound): EncryptionContext {
  return {
    seal_version: String(WALLET_SEAL_VERSION),
    version: String(wallet.version),
    app_id: wallet.app_id,
    wallet_id: wallet.wallet_id,
    iss: wallet.iss,
    sub: wallet.sub,
    access_key_hash: wallet.access_key_hash,
    wallet_group_id: wallet.wallet_group_id,
    family: wallet.family,
    public_address: wallet.public_address,
  };
}

/** Seals a wallet's private key and access key under a fresh data key, bound to its record. */
export async function sealWallet(keyWrapper: KeyWrapper, wallet: Unsealed, secrets: Record<WalletSecretName, Uint8Array>): Promise<WalletRecord> {
  const sealed = await sealSecrets(keyWrapper, walletEncryptionContext(wallet), secrets, walletBinding(wallet));
  return { ...wallet, seal_version: WALLET_SEAL_VERSION, sealed };
}

/** A secret-box failure that means "does not authenticate" becomes the integrity error. */
async function authenticated<T>(wallet: WalletRecord, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    if (error instanceof DecryptionError) throw walletIntegrityFailure(wallet.wallet_id, 'seal');
    throw error;
  }
}

/**
 * Opens the named secrets of a v2 wallet, for one operation (the caller zeroes them). A wallet
 * sealed before the binding (no seal_version) is checked against what its old seal does
 * authenticate, then re-sealed with the binding; see openLegacyWallet.
 */
export async function openWallet<const N extends WalletSecretName>(
  deps: { readonly table: Table; readonly keyWrapper: KeyWrapper },
  wallet: WalletRecord,
  names: readonly N[],
): Promise<Record<N, Buffer>> {
  if (wallet.seal_version === WALLET_SEAL_VERSION) {
    return authenticated(wallet, () => openSecrets(deps.keyWrapper, walletEncryptionContext(wallet), wallet.sealed, names, walletBinding(wallet)));
  }
  const secrets = await openLegacyWallet(deps, wallet);
  for (const name of ['private_key', 'access_key'] as const) if (!(names as readonly string[]).includes(name)) secrets[name].fill(0);
  return secrets;
}

/**
 * Seal 1 authenticated only purpose, app and wallet id (KMS context), and the sealed access key.
 * Before trusting the plain attributes once more, check each against something authenticated:
 * - `access_key_hash` against the sealed access key;
 * - `public_address` (and so `family`) against the address of the sealed private key;
 * - `iss`, `sub`, `wallet_group_id`, `family` against the wallet id, which is derived from them
 *   for every wallet v2 created (UUIDv8). A wallet migrated from v1 before this change has a random
 *   id: its `iss`/`sub` cannot be checked, and are trusted as stored (README, Security notes).
 * Then re-seal with the binding, so the next use is an ordinary one.
 */
async function openLegacyWallet(
  deps: { readonly table: Table; readonly keyWrapper: KeyWrapper },
  wallet: WalletRecord,
): Promise<Record<WalletSecretName, Buffer>> {
  const secrets = await authenticated(wallet, () =>
    openSecrets(deps.keyWrapper, walletEncryptionContext(wallet), wallet.sealed, ['private_key', 'access_key'] as const),
  );
  try {
    const derived = isDerivedWalletId(wallet.wallet_id);
    const consistent =
      digestsEqual(wallet.access_key_hash, hashSecret(secrets.access_key.toString('utf8'))) &&
      addressOf(wallet.family, secrets.private_key) === wallet.public_address &&
      (derived ? deriveWalletId(wallet.app_id, wallet, wallet.wallet_group_id, wallet.family) === wallet.wallet_id : wallet.migrated_at !== undefined);
    if (!consistent) throw walletIntegrityFailure(wallet.wallet_id, 'legacy-check');
    const { sealed: _old, seal_version: _none, ...unsealed } = wallet;
    const resealed = await sealWallet(deps.keyWrapper, unsealed, secrets);
    // Lost to a concurrent first use: that call re-sealed the same checked record.
    await resealWallet(deps.table, resealed, wallet.sealed.wrapped_key);
    return secrets;
  } catch (error) {
    secrets.private_key.fill(0);
    secrets.access_key.fill(0);
    throw error;
  }
}
