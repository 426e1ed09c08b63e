import { randomBytes } from 'node:crypto';
import { hashSecret } from '../apps/app-registry.ts';
import type { Application } from '../apps/application.ts';
import type { Identity } from '../auth/jwt.ts';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import type { Table } from '../db/client.ts';
import { familyOf } from '../wallets/networks.ts';
import { walletIntegrityFailure } from './wallet-integrity-error.ts';
import { addressOf, generateSecret } from './wallet-keys.ts';
import { type AnyWalletRecord, deriveWalletId, getWallet, putWalletIfAbsent, type WalletRecord } from './wallet-record.ts';
import { openWallet, sealWallet } from './wallet-seal.ts';

export interface EnclaveDeps {
  readonly table: Table;
  readonly keyWrapper: KeyWrapper;
  readonly now: () => Date;
  /** The instant v1 is retired (spec, Versioning): v1 requests and migrations stop. */
  readonly v1RetiresAt: Date;
}

export interface CreatedWallet {
  readonly wallet_id: string;
  readonly access_key: string;
  readonly public_address: string;
  readonly network: string;
  readonly wallet_group_id: string;
}

/**
 * v2 wallet creation (spec: Enclave wallet binding). Get-or-create: the same identity, group and
 * key family always yield the same wallet and the same access key, so retries are safe.
 */
export async function createWallet(
  deps: EnclaveDeps,
  input: { app: Application; identity: Identity; network: string; walletGroupId: string },
): Promise<CreatedWallet> {
  const family = familyOf(input.network);
  const walletId = deriveWalletId(input.app.app_id, input.identity, input.walletGroupId, family);
  const existing = await getWallet(deps.table, walletId);
  const wallet = existing ?? (await storeNewWallet(deps, input, walletId, family));
  if (wallet.version !== 2) throw walletIntegrityFailure(walletId, 'record'); // derived ids are only ever v2
  // The seal authenticates the record's binding: an edited item hands out no access key.
  const { access_key } = await openWallet(deps, wallet, ['access_key']);
  return {
    wallet_id: wallet.wallet_id,
    access_key: access_key.toString('utf8'),
    public_address: wallet.public_address,
    network: input.network,
    wallet_group_id: wallet.wallet_group_id,
  };
}

async function storeNewWallet(
  deps: EnclaveDeps,
  input: { app: Application; identity: Identity; walletGroupId: string },
  walletId: string,
  family: WalletRecord['family'],
): Promise<AnyWalletRecord> {
  const secret = generateSecret(family);
  const accessKey = randomBytes(32).toString('base64url');
  try {
    // Sealed with everything that decides who may use it (wallet-seal.ts walletBinding).
    const record: WalletRecord = await sealWallet(
      deps.keyWrapper,
      {
        wallet_id: walletId,
        version: 2,
        app_id: input.app.app_id,
        iss: input.identity.iss,
        sub: input.identity.sub,
        wallet_group_id: input.walletGroupId,
        family,
        public_address: addressOf(family, secret),
        access_key_hash: hashSecret(accessKey),
        created_at: deps.now().toISOString(),
      },
      { private_key: secret, access_key: Buffer.from(accessKey, 'utf8') },
    );
    // A concurrent create may have won; then its wallet is the wallet.
    return putWalletIfAbsent(deps.table, record);
  } finally {
    secret.fill(0);
  }
}
