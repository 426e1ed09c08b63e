import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { DexQuery } from '../../shared/venues/schemas.ts';
import { venueCredentials } from '../../shared/venues/service.ts';

export interface GetPerpCredentialsDeps {
  readonly apps: AppRegistry;
  readonly table: Table;
}

/** `GET /account/perp-credentials?dex=`: the stored credential metadata; never a private key. */
export const makeGetPerpCredentials = (deps: GetPerpCredentialsDeps) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const { dex } = parseInput(DexQuery, event.queryStringParameters ?? {}, 'query');
  return jsonResponse(200, await venueCredentials(deps, user, dex));
};

/** Composition root (needs: table read). */
export const handler = httpHandler(makeGetPerpCredentials(appsFromEnv()));
