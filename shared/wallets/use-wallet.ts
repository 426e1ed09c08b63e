import type { Application } from '../apps/application.ts';
import { digestsEqual, hashSecret } from '../apps/app-registry.ts';
import { verifyOpJwt } from '../auth/jwt.ts';
import { openSecrets } from '../crypto/secret-box.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import type { EnclaveDeps } from './create-wallet.ts';
import { getWallet, type WalletRecord, walletEncryptionContext } from './wallet-record.ts';

export interface WalletAuthorization {
  readonly op_jwt: string;
  readonly access_key: string;
  readonly wallet_id: string;
  readonly encryption_context?: string;
}

/**
 * Authorises one v2 signing operation and runs it with the wallet's private key, which is
 * decrypted for this call only and zeroed afterwards. Checks, in order: op_jwt (signature,
 * expiry, lifetime ≤ 300 s), the wallet exists in this app, op_jwt names the wallet's
 * identity, the access key matches.
 */
export async function withWalletKey<T>(
  deps: EnclaveDeps,
  app: Application,
  auth: WalletAuthorization,
  operation: (wallet: WalletRecord, secret: Buffer) => Promise<T> | T,
): Promise<T> {
  const identity = await verifyOpJwt(app, auth.op_jwt, deps.now());
  const wallet = await getWallet(deps.table, auth.wallet_id);
  if (!wallet || wallet.app_id !== app.app_id) {
    throw new NotFoundError('WALLET_NOT_FOUND', `Wallet ${auth.wallet_id} does not exist`);
  }
  if (auth.encryption_context !== undefined) {
    // Spec, Enclave wallet binding: after migration encryption_context is neither required nor accepted.
    throw new ValidationError('body.encryption_context: is not accepted for a v2 wallet', 'ENCRYPTION_CONTEXT_NOT_ACCEPTED');
  }
  if (wallet.iss !== identity.iss || wallet.sub !== identity.sub) {
    throw new ForbiddenError('WALLET_IDENTITY_MISMATCH', 'op_jwt does not name the identity this wallet is bound to');
  }
  if (!digestsEqual(wallet.access_key_hash, hashSecret(auth.access_key))) {
    throw new ForbiddenError('INVALID_ACCESS_KEY', 'access_key does not match this wallet');
  }
  const { private_key } = await openSecrets(deps.keyWrapper, walletEncryptionContext(wallet), wallet.sealed, ['private_key']);
  try {
    return await operation(wallet, private_key);
  } finally {
    private_key.fill(0);
  }
}
