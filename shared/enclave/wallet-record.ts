import { createHash } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { SealedSecrets } from '../crypto/secret-box.ts';
import { getItem, isConditionalCheckFailed, putIfAbsent, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import type { KeyFamily } from '../wallets/networks.ts';
import { walletIntegrityFailure } from './wallet-integrity-error.ts';

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

/**
 * The current seal (issue 21 §3): the sealed secrets' associated data also carries everything that
 * decides who may use the wallet (wallet-seal.ts walletBinding). A record without `seal_version`
 * was sealed before that (only purpose, app and wallet authenticated) and is re-sealed on next use.
 */
export const WALLET_SEAL_VERSION = 2 as const;

/** A v2 enclave wallet: bound to an identity (`iss`, `sub`) of one app. */
export interface WalletRecord extends WalletBase {
  readonly version: 2;
  /** Absent: sealed before the binding (seal 1). */
  readonly seal_version?: typeof WALLET_SEAL_VERSION;
  readonly iss: string;
  readonly sub: string;
  /** Private key and access key, sealed under a KMS data key whose context names app and wallet. */
  readonly sealed: SealedSecrets;
  /** Set when the wallet was re-keyed from v1 (spec, Enclave wallet binding). */
  readonly migrated_at?: string;
}

/**
 * A legacy v1 wallet: its key is sealed under a key derived (scrypt, salted per wallet) from the
 * user's `encryption_context`, plus a copy under the `recovery_key`. A v1 create that carried an
 * `auth_jwt` records the identity it was created for (`iss`, `sub`, with `seal_version` 2 and a
 * `binding_tag` that authenticates them under the context key): the only identity it may migrate
 * to (issue 21 §8). One created without names no one and cannot be migrated.
 */
export interface V1WalletRecord extends WalletBase {
  readonly version: 1;
  readonly seal_version?: typeof WALLET_SEAL_VERSION;
  readonly iss?: string;
  readonly sub?: string;
  readonly v1: {
    readonly kdf: { readonly name: 'scrypt'; readonly N: number; readonly r: number; readonly p: number; readonly salt: string };
    readonly sealed_key: string;
    readonly recovery: { readonly salt: string; readonly sealed_key: string };
    /** seal_version 2: an empty AES-GCM blob under the context key whose associated data is the v1 binding. */
    readonly binding_tag?: string;
  };
}

export type AnyWalletRecord = WalletRecord | V1WalletRecord;

const Text = v.string();
const WalletBaseSchema = {
  wallet_id: Text,
  app_id: Text,
  wallet_group_id: Text,
  family: v.picklist(['evm', 'sol']),
  public_address: Text,
  access_key_hash: Text,
  created_at: Text,
};
const SealVersion = v.optional(v.literal(WALLET_SEAL_VERSION));
const WalletItem = v.variant('version', [
  v.object({
    ...WalletBaseSchema,
    version: v.literal(2),
    seal_version: SealVersion,
    iss: Text,
    sub: Text,
    sealed: v.object({ wrapped_key: Text, secrets: v.object({ private_key: Text, access_key: Text }) }),
    migrated_at: v.optional(Text),
  }),
  v.object({
    ...WalletBaseSchema,
    version: v.literal(1),
    seal_version: SealVersion,
    iss: v.optional(Text),
    sub: v.optional(Text),
    v1: v.object({
      kdf: v.object({ name: v.literal('scrypt'), N: v.number(), r: v.number(), p: v.number(), salt: Text }),
      sealed_key: Text,
      recovery: v.object({ salt: Text, sealed_key: Text }),
      binding_tag: v.optional(Text),
    }),
  }),
]);

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

/**
 * The wallet stored under `walletId`, parsed: an item that is not a wallet record of a known
 * version (edited in the table, say) is a WalletIntegrityError, never a half-read record.
 */
export async function getWallet(table: Table, walletId: string): Promise<AnyWalletRecord | undefined> {
  const item = await getItem(table, keys.wallet(walletId));
  if (item === undefined) return undefined;
  const parsed = v.safeParse(WalletItem, item);
  if (!parsed.success || parsed.output.wallet_id !== walletId) throw walletIntegrityFailure(walletId, 'record');
  const record = parsed.output;
  // seal_version 2 on a v1 record means it names its owner: both fields or neither (valibot cannot say "together").
  if (
    record.version === 1 &&
    (record.seal_version === WALLET_SEAL_VERSION) !== (record.iss !== undefined && record.sub !== undefined && record.v1.binding_tag !== undefined)
  ) {
    throw walletIntegrityFailure(walletId, 'record');
  }
  return record as AnyWalletRecord;
}

/** Stores a new wallet unless one with that id exists; returns whichever wallet is stored. */
export async function putWalletIfAbsent<W extends AnyWalletRecord>(table: Table, wallet: W): Promise<AnyWalletRecord> {
  const { item, created } = await putIfAbsent(table, keys.wallet(wallet.wallet_id), wallet);
  if (created) return item;
  // Another writer's item: read it as any stored wallet is read.
  const stored = await getWallet(table, wallet.wallet_id);
  if (!stored) throw new Error(`wallet ${wallet.wallet_id} vanished after a conditional put lost to it`);
  return stored;
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

/** Whether a wallet id is one deriveWalletId makes (UUID version 8), not a v1 wallet's UUIDv7. */
export function isDerivedWalletId(walletId: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(walletId);
}

/**
 * Replaces a wallet sealed before the binding (no seal_version) by its re-sealed record, on
 * condition that it still holds the sealed key that was checked: a concurrent first use re-seals
 * once. Returns false when another call re-sealed it first (its record is as good).
 */
export async function resealWallet(table: Table, resealed: WalletRecord, checkedWrappedKey: string): Promise<boolean> {
  try {
    await table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: { ...keys.wallet(resealed.wallet_id), ...resealed },
        ConditionExpression: 'attribute_not_exists(#seal) AND #sealed.#wrapped = :checked AND #version = :v2',
        ExpressionAttributeNames: { '#seal': 'seal_version', '#sealed': 'sealed', '#wrapped': 'wrapped_key', '#version': 'version' },
        ExpressionAttributeValues: { ':checked': checkedWrappedKey, ':v2': 2 },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}
