import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { DemoBalanceQuery, demoBalance } from '../../shared/accounts/demo-balance.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { accountChainDeps } from '../../shared/deps/account-chains.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/** `GET /demo/wallet/balance?chain=`: demo only, balances read from the chain. */
export const adapter = async (event: APIGatewayProxyEventV2) => {
  const user = await authenticateUser(accountChainDeps.apps, event);
  const query = parseInput(DemoBalanceQuery, event.queryStringParameters ?? {}, 'query');
  return jsonResponse(200, await demoBalance(accountChainDeps, user, query.chain));
};

export const handler = httpHandler(adapter);
