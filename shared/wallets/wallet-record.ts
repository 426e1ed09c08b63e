import { createHash } from 'node:crypto';
import type { SealedSecrets } from '../crypto/secret-box.ts';
import { getItem, putIfAbsent, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import type { KeyFamily } from './networks.ts';

/** A v2 enclave wallet: bound to an identity (`iss`, `sub`) of one app. */
export interface WalletRecord {
  readonly wallet_id: string;
  readonly version: 2;
  readonly app_id: string;
  readonly iss: string;
  readonly sub: string;
  readonly wallet_group_id: string;
  readonly family: KeyFamily;
  readonly public_address: string;
  /** Private key and access key, sealed under a data key whose context names app and wallet. */
  readonly sealed: SealedSecrets;
  /** sha256 (hex) of the access key, checked before anything is decrypted. */
  readonly access_key_hash: string;
  readonly created_at: string;
}

/**
 * The wallet id is derived from what the wallet is bound to, so concurrent creates for the same
 * identity, group and key family race for one item and a conditional put lets exactly one win.
 * Formatted as a UUID version 8 (custom) from sha256.
 */
export function deriveWalletId(appId: string, identity: { iss: string; sub: string }, walletGroupId: string, family: KeyFamily): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(['enclave-wallet', appId, identity.iss, identity.sub, walletGroupId, family]))
    .digest();
  digest[6] = (digest[6]! & 0x0f) | 0x80; // version 8
  digest[8] = (digest[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = digest.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function walletEncryptionContext(wallet: Pick<WalletRecord, 'app_id' | 'wallet_id'>) {
  return { purpose: 'enclave-wallet', app_id: wallet.app_id, wallet_id: wallet.wallet_id };
}

export async function getWallet(table: Table, walletId: string): Promise<WalletRecord | undefined> {
  return (await getItem(table, keys.wallet(walletId))) as WalletRecord | undefined;
}

/** Stores a new wallet unless one with that id exists; returns whichever wallet is stored. */
export async function putWalletIfAbsent(table: Table, wallet: WalletRecord): Promise<WalletRecord> {
  return (await putIfAbsent(table, keys.wallet(wallet.wallet_id), wallet)).item;
}
