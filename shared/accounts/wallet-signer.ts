import type { Audience } from '../apps/application.ts';
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

/**
 * Who signs, without a request: the op_jwt's claims and the enclave credentials. A request has an
 * AuthenticatedUser (the app's secret key); a transfer step has none and uses a platform service
 * token for the app (shared/express/express-wallets.ts does the same), with iss and app_user_id
 * from the stored task.
 */
export interface SigningIdentity {
  readonly iss: string;
  readonly sub: string;
  readonly audience: Audience;
  /** The app the op_jwt is for (its `app_id` claim). */
  readonly appId: string;
  credentials(): Promise<EnclaveCredentials>;
}

/** The signing identity of an authenticated request. */
export function signingIdentityOf(user: AuthenticatedUser): SigningIdentity {
  return {
    iss: user.identity.iss,
    sub: user.identity.sub,
    audience: user.app.oidc.audience,
    appId: user.app.app_id,
    credentials: async () => ({ secretKey: user.secretKey }),
  };
}

export async function walletSigner(
  deps: WalletSignerDeps,
  user: AuthenticatedUser | SigningIdentity,
  account: AccountRecord,
  family: 'evm' | 'sol',
): Promise<WalletSigner> {
  const identity = 'credentials' in user ? user : signingIdentityOf(user);
  const name = family === 'evm' ? 'evm_access_key' : 'sol_access_key';
  const secrets = await openSecrets(deps.keyWrapper, accountEncryptionContext(account), account.sealed, [name]);
  const accessKey = secrets[name].toString('utf8');
  const walletId = account.wallets[family].wallet_id;
  return {
    walletId,
    sign: async (operation, fields) => {
      // A fresh op_jwt (fresh jti) per enclave call: the enclave accepts each once. `channel`:
      // the app's policy sees this signature as the account service's (issue 22).
      const opJwt = await deps.opJwtSigner.sign({ iss: identity.iss, sub: identity.sub, aud: identity.audience, app_id: identity.appId, channel: 'account' });
      return deps.enclave.sign(await identity.credentials(), operation, { ...fields, op_jwt: opJwt, access_key: accessKey, wallet_id: walletId });
    },
  };
}
