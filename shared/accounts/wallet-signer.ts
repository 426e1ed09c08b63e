import type { AuthenticatedUser } from '../auth/authenticate.ts';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { openSecrets } from '../crypto/secret-box.ts';
import type { EnclaveCredentials, SignOperation, WalletEnclave } from '../wallets/enclave-client.ts';
import { type AccountRecord, accountEncryptionContext } from './account-record.ts';

/**
 * Signing with one of the user's wallets through the enclave: opens the stored access key once,
 * and mints a fresh op_jwt (≤ 5 minutes, spec Authentication) for every enclave call.
 */
export interface WalletSigner {
  readonly walletId: string;
  sign(operation: SignOperation, fields: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** What signing needs of the account service's dependencies (AccountDeps satisfies it). */
export interface WalletSignerDeps {
  readonly keyWrapper: KeyWrapper;
  readonly opJwtSigner: OpJwtSigner;
  readonly enclave: WalletEnclave;
}

export async function walletSigner(deps: WalletSignerDeps, user: AuthenticatedUser, account: AccountRecord, family: 'evm' | 'sol'): Promise<WalletSigner> {
  const name = family === 'evm' ? 'evm_access_key' : 'sol_access_key';
  const secrets = await openSecrets(deps.keyWrapper, accountEncryptionContext(account), account.sealed, [name]);
  const accessKey = secrets[name].toString('utf8');
  const walletId = account.wallets[family].wallet_id;
  const credentials: EnclaveCredentials = { secretKey: user.secretKey };
  return {
    walletId,
    sign: async (operation, fields) => {
      const opJwt = await deps.opJwtSigner.sign({ iss: user.identity.iss, sub: user.identity.sub, aud: user.app.oidc.audience });
      return deps.enclave.sign(credentials, operation, { ...fields, op_jwt: opJwt, access_key: accessKey, wallet_id: walletId });
    },
  };
}
