import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { requireAccount } from '../../shared/accounts/account-service.ts';
import { toAccountResource } from '../../shared/accounts/account-record.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { accountDeps } from '../../shared/deps/account.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `GET /account`: the caller's account (without `success`); 404 before it is created. */
export const adapter = async (event: APIGatewayProxyEventV2) => {
  const user = await authenticateUser(accountDeps.apps, event);
  return jsonResponse(200, toAccountResource(await requireAccount(accountDeps, user)));
};

export const handler = httpHandler(adapter);
