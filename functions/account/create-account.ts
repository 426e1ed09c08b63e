import type { APIGatewayProxyEvent } from 'aws-lambda';
import { toAccountResource } from '../../shared/accounts/account-record.ts';
import { type AccountDeps, getOrCreateAccount } from '../../shared/accounts/account-service.ts';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { accountKeyWrapperFromEnv, enclaveClientFromEnv } from '../../shared/deps/clients.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

export type CreateAccountDeps = Pick<AccountDeps, 'table' | 'keyWrapper' | 'enclave' | 'now'> & { readonly apps: AppRegistry };

/** `POST /account`: create the caller's account if missing, otherwise return it. No body. */
export const makeCreateAccount = (deps: CreateAccountDeps) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const account = await getOrCreateAccount(deps, user);
  return jsonResponse(200, { success: true, ...toAccountResource(account) });
};

/** Composition root (needs: table read-write, account access key GenerateDataKey, enclave URL). */
export const handler = httpHandler(
  makeCreateAccount({ ...appsFromEnv(), keyWrapper: accountKeyWrapperFromEnv(), enclave: enclaveClientFromEnv(), now: systemClock }),
);
