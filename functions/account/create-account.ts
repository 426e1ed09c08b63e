import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { getOrCreateAccount } from '../../shared/accounts/account-service.ts';
import { toAccountResource } from '../../shared/accounts/account-record.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { accountDeps } from '../../shared/deps/account.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `POST /account`: create the caller's account if missing, otherwise return it. No body. */
export const adapter = async (event: APIGatewayProxyEventV2) => {
  const user = await authenticateUser(accountDeps.apps, event);
  const account = await getOrCreateAccount(accountDeps, user);
  return jsonResponse(200, { success: true, ...toAccountResource(account) });
};

export const handler = httpHandler(adapter);
