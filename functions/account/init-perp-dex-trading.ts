import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { venueSigningDepsFromEnv } from '../../shared/deps/venues.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { InitPerpDexTradingRequest } from '../../shared/venues/schemas.ts';
import { initPerpDexTrading, type VenueSigningDeps } from '../../shared/venues/service.ts';

export type InitPerpDexTradingDeps = VenueSigningDeps & { readonly apps: AppRegistry };

/** `POST /account/init-perp-dex-trading`: the venue's trading setup; its one-time key is in this response only. */
export const makeInitPerpDexTrading = (deps: InitPerpDexTradingDeps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const user = await authenticateUser(deps.apps, event);
  const body = parseInput(InitPerpDexTradingRequest, event.body, 'body');
  const { status, message } = await initPerpDexTrading(deps, user, body);
  return jsonResponse(200, { success: true, dex: body.dex, message, status });
};

/** Composition root (needs: table read-write, account access key Decrypt, op_jwt key, enclave URL, chains, venues). */
export const handler = httpHandler(makeInitPerpDexTrading(venueSigningDepsFromEnv()), { jsonBody: true });
