import { v7 as uuidv7 } from 'uuid';
import { type Hex, keccak256, stringToBytes } from 'viem';
import type { AuthenticatedUser } from '../auth/authenticate.ts';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { sealSecrets } from '../crypto/secret-box.ts';
import type { Table } from '../db/client.ts';
import { NotFoundError, ValidationError } from '../errors.ts';
import { defaultPerpDexStatus } from '../venues/default-status.ts';
import type { WalletEnclave } from '../wallets/enclave-client.ts';
import { type AccountRecord, accountEncryptionContext, getAccount, putAccountIfAbsent } from './account-record.ts';
import { walletSigner } from './wallet-signer.ts';

export interface AccountDeps {
  readonly table: Table;
  readonly keyWrapper: KeyWrapper;
  readonly opJwtSigner: OpJwtSigner;
  readonly enclave: WalletEnclave;
  readonly now: () => Date;
}

export async function requireAccount(deps: Pick<AccountDeps, 'table'>, user: AuthenticatedUser): Promise<AccountRecord> {
  const account = await getAccount(deps.table, user.app.app_id, user.identity.sub);
  if (!account) throw new NotFoundError('ACCOUNT_NOT_FOUND', 'No account exists for this user; create it with POST /account');
  return account;
}

/**
 * `POST /account`: returns the user's account, creating it on first call. The EVM and Solana
 * wallets come from the enclave's get-or-create in the app's default wallet group, and the
 * account item is written conditionally, so concurrent first calls end with one account and one
 * pair of wallets.
 */
export async function getOrCreateAccount(deps: Pick<AccountDeps, 'table' | 'keyWrapper' | 'enclave' | 'now'>, user: AuthenticatedUser): Promise<AccountRecord> {
  const existing = await getAccount(deps.table, user.app.app_id, user.identity.sub);
  if (existing) return existing;

  const walletGroupId = user.app.default_wallet_group_id;
  const createWallet = (network: 'ETH' | 'SOL') => deps.enclave.createWallet({ secretKey: user.secretKey }, { authJwt: user.token, network, walletGroupId });
  const [evm, sol] = await Promise.all([createWallet('ETH'), createWallet('SOL')]);
  const userId = uuidv7();
  const sealed = await sealSecrets(deps.keyWrapper, accountEncryptionContext({ app_id: user.app.app_id, user_id: userId }), {
    evm_access_key: Buffer.from(evm.access_key, 'utf8'),
    sol_access_key: Buffer.from(sol.access_key, 'utf8'),
  });
  return putAccountIfAbsent(deps.table, {
    app_id: user.app.app_id,
    app_user_id: user.identity.sub,
    user_id: userId,
    public_address: { ETH: evm.public_address, SOL: sol.public_address },
    perp_dex_status: defaultPerpDexStatus(),
    wallets: { evm: { wallet_id: evm.wallet_id }, sol: { wallet_id: sol.wallet_id } },
    sealed,
    created_at: deps.now().toISOString(),
  });
}

/**
 * `POST /wallet/sign` (spec, Sign rules): `raw_data_hash` is signed when given, otherwise
 * keccak256(`message`) (no EIP-191 prefix). Signed by the EVM wallet through the enclave with a
 * freshly minted op_jwt.
 */
export async function signWithWallet(
  deps: AccountDeps,
  user: AuthenticatedUser,
  input: { raw_data_hash?: string; message?: string },
): Promise<{ signature: string; raw_data_hash: Hex }> {
  const hash = (input.raw_data_hash ?? (input.message !== undefined ? keccak256(stringToBytes(input.message)) : undefined)) as Hex | undefined;
  if (!hash) throw new ValidationError('body: one of raw_data_hash or message is required');
  const account = await requireAccount(deps, user);
  const signer = await walletSigner(deps, user, account, 'evm');
  const { signature } = await signer.sign('sign_data', { raw_data_hash: hash });
  return { signature: signature as string, raw_data_hash: hash };
}
