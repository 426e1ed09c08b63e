import type { APIGatewayProxyEvent } from 'aws-lambda';
import { toAccountResource } from '../../shared/accounts/account-record.ts';
import { requireAccount } from '../../shared/accounts/account-service.ts';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

export interface GetAccountDeps {
  readonly apps: AppRegistry;
  readonly table: Table;
}

/** `GET /account`: the caller's account (without `success`); 404 before it is created. */
export const makeGetAccount = (deps: GetAccountDeps) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  return jsonResponse(200, toAccountResource(await requireAccount(deps, user)));
};

/** Composition root (needs: table read). */
export const handler = httpHandler(makeGetAccount(appsFromEnv()));
