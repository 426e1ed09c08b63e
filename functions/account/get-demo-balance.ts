import type { APIGatewayProxyEvent } from 'aws-lambda';
import { DemoBalanceQuery, demoBalance } from '../../shared/accounts/demo-balance.ts';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import type { Chains } from '../../shared/chains/chains.ts';
import type { Table } from '../../shared/db/client.ts';
import { chainsFromEnv } from '../../shared/deps/chains.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

export interface GetDemoBalanceDeps {
  readonly apps: AppRegistry;
  readonly table: Table;
  readonly chains: Chains;
}

/** `GET /demo/wallet/balance?chain=`: demo only, balances read from the chain. */
export const makeGetDemoBalance = (deps: GetDemoBalanceDeps) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const query = parseInput(DemoBalanceQuery, event.queryStringParameters ?? {}, 'query');
  return jsonResponse(200, await demoBalance(deps, user, query.chain));
};

/** Composition root (needs: table read, chains). */
export const handler = httpHandler(makeGetDemoBalance({ ...appsFromEnv(), chains: chainsFromEnv() }));
