import type { APIGatewayProxyEvent } from 'aws-lambda';
import { type AccountDeps, signWithWallet } from '../../shared/accounts/account-service.ts';
import { SignRequest } from '../../shared/accounts/schemas.ts';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { accountKeyWrapperFromEnv, enclaveClientFromEnv, opJwtSignerFromEnv } from '../../shared/deps/clients.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

export type SignWithWalletDeps = AccountDeps & { readonly apps: AppRegistry };

/** `POST /wallet/sign`: sign a hash, or the keccak256 of a message, with the EVM wallet. */
export const makeSignWithWallet = (deps: SignWithWalletDeps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const user = await authenticateUser(deps.apps, event);
  const body = parseInput(SignRequest, event.body, 'body');
  const { signature, raw_data_hash } = await signWithWallet(deps, user, body);
  return jsonResponse(200, { success: true, signature, raw_data_hash, app_user_id: user.identity.sub });
};

/** Composition root (needs: table read, account access key Decrypt, op_jwt key, enclave URL). */
export const handler = httpHandler(
  makeSignWithWallet({
    ...appsFromEnv(),
    keyWrapper: accountKeyWrapperFromEnv(),
    opJwtSigner: opJwtSignerFromEnv(),
    enclave: enclaveClientFromEnv(),
    now: systemClock,
  }),
  { jsonBody: true },
);
