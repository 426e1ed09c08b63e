import { createHash } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SealedSecrets } from '../crypto/secret-box.ts';
import { getItem, isConditionalCheckFailed, putIfAbsent, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import type { KeyFamily } from '../wallets/networks.ts';

interface WalletBase {
  readonly wallet_id: string;
  readonly app_id: string;
  readonly wallet_group_id: string;
  readonly family: KeyFamily;
  readonly public_address: string;
  /** sha256 (hex) of the access key, checked before anything is decrypted. */
  readonly access_key_hash: string;
  readonly created_at: string;
}

/** A v2 enclave wallet: bound to an identity (`iss`, `sub`) of one app. */
export interface WalletRecord extends WalletBase {
  readonly version: 2;
  readonly iss: string;
  readonly sub: string;
  /** Private key and access key, sealed under a KMS data key whose context names app and wallet. */
  readonly sealed: SealedSecrets;
  /** Set when the wallet was re-keyed from v1 (spec, Enclave wallet binding). */
  readonly migrated_at?: string;
}

/**
 * A legacy v1 wallet: its key is sealed under a key derived (scrypt, salted per wallet) from the
 * user's `encryption_context`, plus a copy under the `recovery_key`. Until it is migrated it is
 * bound to no identity.
 */
export interface V1WalletRecord extends WalletBase {
  readonly version: 1;
  readonly v1: {
    readonly kdf: { readonly name: 'scrypt'; readonly N: number; readonly r: number; readonly p: number; readonly salt: string };
    readonly sealed_key: string;
    readonly recovery: { readonly salt: string; readonly sealed_key: string };
  };
}

export type AnyWalletRecord = WalletRecord | V1WalletRecord;

/**
 * The wallet id is derived from what the wallet is bound to, so concurrent creates for the same
 * identity, group and key family race for one item and a conditional put lets exactly one win.
 * Formatted as a UUID version 8 (custom) from sha256.
 */
export function deriveWalletId(appId: string, identity: { iss: string; sub: string }, walletGroupId: string, family: KeyFamily): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(['enclave-wallet', appId, identity.iss, identity.sub, walletGroupId, family]))
    .digest();
  digest[6] = (digest.readUInt8(6) & 0x0f) | 0x80; // version 8
  digest[8] = (digest.readUInt8(8) & 0x3f) | 0x80; // RFC 9562 variant
  const hex = digest.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function walletEncryptionContext(wallet: Pick<WalletRecord, 'app_id' | 'wallet_id'>) {
  return { purpose: 'enclave-wallet', app_id: wallet.app_id, wallet_id: wallet.wallet_id };
}

export async function getWallet(table: Table, walletId: string): Promise<AnyWalletRecord | undefined> {
  return (await getItem(table, keys.wallet(walletId))) as AnyWalletRecord | undefined;
}

/** Stores a new wallet unless one with that id exists; returns whichever wallet is stored. */
export async function putWalletIfAbsent<W extends AnyWalletRecord>(table: Table, wallet: W): Promise<AnyWalletRecord> {
  return (await putIfAbsent(table, keys.wallet(wallet.wallet_id), wallet)).item;
}

/**
 * Replaces a v1 wallet by its migrated v2 record, on condition that it is still v1: of concurrent
 * first calls exactly one migrates. Returns false when another call migrated it first.
 */
export async function replaceV1Wallet(table: Table, migrated: WalletRecord): Promise<boolean> {
  try {
    await table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: { ...keys.wallet(migrated.wallet_id), ...migrated },
        ConditionExpression: 'version = :v1',
        ExpressionAttributeValues: { ':v1': 1 },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}
