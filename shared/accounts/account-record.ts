import type { SealedSecrets } from '../crypto/secret-box.ts';
import { getItem, putIfAbsent, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import type { VenueId, VenueStatus } from '../venues/default-status.ts';

/** One account per (app, app_user_id). Access keys are stored sealed; no user JWT is ever stored. */
export interface AccountRecord {
  readonly app_id: string;
  readonly app_user_id: string;
  readonly user_id: string;
  readonly public_address: { readonly ETH: string; readonly SOL: string };
  readonly perp_dex_status: Record<VenueId, VenueStatus>;
  readonly wallets: { readonly evm: { readonly wallet_id: string }; readonly sol: { readonly wallet_id: string } };
  /** `evm_access_key` and `sol_access_key`, sealed under the account key. */
  readonly sealed: SealedSecrets;
  readonly created_at: string;
}

export function accountEncryptionContext(account: Pick<AccountRecord, 'app_id' | 'user_id'>) {
  return { purpose: 'account-access-keys', app_id: account.app_id, user_id: account.user_id };
}

export async function getAccount(table: Table, appId: string, appUserId: string): Promise<AccountRecord | undefined> {
  return (await getItem(table, keys.account(appId, appUserId))) as AccountRecord | undefined;
}

/** One account per user is held by a conditional put: the first writer wins, the others get its item. */
export async function putAccountIfAbsent(table: Table, account: AccountRecord): Promise<AccountRecord> {
  return (await putIfAbsent(table, keys.account(account.app_id, account.app_user_id), account)).item;
}

/** The Account resource (spec, Resources): no wallet ids, no sealed material. */
export function toAccountResource(account: AccountRecord) {
  return {
    app_user_id: account.app_user_id,
    user_id: account.user_id,
    public_address: account.public_address,
    perp_dex_status: account.perp_dex_status,
  };
}
