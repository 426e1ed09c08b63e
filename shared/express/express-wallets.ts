import { ServiceTokenCache } from '../auth/service-token.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { ForbiddenError } from '../errors.ts';
import type { EnclaveCredentials, EnclaveWallet, SignOperation, WalletEnclave } from '../wallets/enclave-client.ts';
import type { ExpressCaller } from './express-caller.ts';

export interface ExpressDeps {
  readonly enclave: WalletEnclave;
  readonly opJwtSigner: OpJwtSigner;
  readonly now: () => Date;
}

const serviceTokens = new ServiceTokenCache();

function enclaveCredentials(deps: ExpressDeps, appId: string): Promise<EnclaveCredentials> {
  return serviceTokens.get(deps.opJwtSigner, appId, deps.now().getTime()).then((serviceToken) => ({ serviceToken }));
}

/**
 * `POST /v2/wallet`: the user's wallet for the chain, from the enclave's get-or-create in the app's
 * default group, so it is the same wallet the account service and the enclave give this user.
 */
export async function getOrCreateExpressWallet(deps: ExpressDeps, caller: ExpressCaller): Promise<EnclaveWallet> {
  return deps.enclave.createWallet(await enclaveCredentials(deps, caller.app.app_id), {
    authJwt: caller.token,
    network: caller.chain,
    walletGroupId: caller.app.default_wallet_group_id,
  });
}

/**
 * `POST /v2/wallet/sign/*`: server-side signing with the user's wallet for the chain. The user is
 * authenticated by their JWT; the express service mints the op_jwt for the enclave call.
 */
export async function signWithExpressWallet(
  deps: ExpressDeps,
  caller: ExpressCaller,
  operation: SignOperation,
  body: Record<string, unknown> & { wallet_id?: string },
): Promise<Record<string, unknown>> {
  const wallet = await getOrCreateExpressWallet(deps, caller);
  if (body.wallet_id !== undefined && body.wallet_id !== wallet.wallet_id) {
    throw new ForbiddenError('WALLET_MISMATCH', `wallet_id is not this user's ${caller.chain} wallet`);
  }
  const opJwt = await deps.opJwtSigner.sign({
    iss: caller.identity.iss,
    sub: caller.identity.sub,
    aud: caller.app.oidc.audience,
    app_id: caller.app.app_id,
  });
  return deps.enclave.sign(await enclaveCredentials(deps, caller.app.app_id), operation, {
    ...body,
    op_jwt: opJwt,
    access_key: wallet.access_key,
    wallet_id: wallet.wallet_id,
  });
}
