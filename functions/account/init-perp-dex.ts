import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { initPerpDexDepsFromEnv } from '../../shared/deps/venues.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { InitPerpDexRequest } from '../../shared/venues/schemas.ts';
import { type InitPerpDexDeps, initPerpDex } from '../../shared/venues/service.ts';

export type InitPerpDexRouteDeps = InitPerpDexDeps & { readonly apps: AppRegistry };

/** `POST /account/init-perp-dex`: create the user's account at the venue and store its fields. */
export const makeInitPerpDex = (deps: InitPerpDexRouteDeps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const user = await authenticateUser(deps.apps, event);
  const body = parseInput(InitPerpDexRequest, event.body, 'body');
  const { status, message } = await initPerpDex(deps, user, body);
  return jsonResponse(200, { success: true, dex: body.dex, status, message });
};

/** Composition root (needs: table read-write, account access key Decrypt, op_jwt key, enclave URL, chains, venues). */
export const handler = httpHandler(makeInitPerpDex(initPerpDexDepsFromEnv()), { jsonBody: true });
