import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { estimateDepsFromEnv } from '../../shared/deps/transfers.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { TransferRequest } from '../../shared/transfers/schemas.ts';
import { type EstimateRouteDeps, estimateTransfer } from '../../shared/transfers/service.ts';

/** `POST /transfer/estimate-transfer-cost`: the route and its computed costs; 422 below the effective minimum. */
export const makeEstimateTransferCost =
  (deps: EstimateRouteDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
    const user = await authenticateUser(deps.apps, event);
    const body = parseInput(TransferRequest, event.body, 'body');
    return jsonResponse(200, await estimateTransfer(deps, user, body));
  };

/** Composition root (needs: table read, chains, bridge, platformFee). */
export const handler = httpHandler(makeEstimateTransferCost(estimateDepsFromEnv()), { jsonBody: true });
