import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { venueSigningDepsFromEnv } from '../../shared/deps/venues.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { DexQuery } from '../../shared/venues/schemas.ts';
import { type VenueSigningDeps, venueAssets } from '../../shared/venues/service.ts';

export type GetPerpDeps = VenueSigningDeps & { readonly apps: AppRegistry };

/** `GET /account/perp?dex=`: assets read from the venue and its transfer rules; a venue failure is `error`, not a 5xx. */
export const makeGetPerp = (deps: GetPerpDeps) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const { dex } = parseInput(DexQuery, event.queryStringParameters ?? {}, 'query');
  return jsonResponse(200, await venueAssets(deps, user, dex));
};

/** Composition root (needs: table read, account access key Decrypt, op_jwt key, enclave URL, chains, venues). */
export const handler = httpHandler(makeGetPerp(venueSigningDepsFromEnv()));
