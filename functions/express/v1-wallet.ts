import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { ForbiddenError, NotFoundError } from '../../shared/errors.ts';
import { authenticateApiKey } from '../../shared/express/express-caller.ts';
import { callerPath, queryStringOf } from '../../shared/http/event.ts';
import { httpHandler } from '../../shared/http/handler.ts';

/**
 * `POST /v1/wallet` and `POST /v1/wallet/sign/*` (spec, Versioning): apps created before
 * 2026-07-31 are redirected to the same path under /v2/ (308 keeps method and body); apps
 * created on or after that date are banned from v1.
 */
export const V1_CUTOFF = new Date('2026-07-31T00:00:00Z');

const SIGN_OPERATIONS = new Set(['data', 'message', 'transaction']);

export const makeExpressV1Wallet = (deps: { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const operation = event.pathParameters?.operation;
  if (operation !== undefined && !SIGN_OPERATIONS.has(operation)) {
    throw new NotFoundError('ROUTE_NOT_FOUND', `No route for ${event.httpMethod} ${event.path}`);
  }
  const app = await authenticateApiKey(deps.apps, event);
  if (new Date(app.created_at) >= V1_CUTOFF) {
    throw new ForbiddenError('V1_BANNED', `Applications created on or after ${V1_CUTOFF.toISOString().slice(0, 10)} must use the /v2/ endpoints`);
  }
  const query = queryStringOf(event);
  const location = `${callerPath(event, event.path.replace(/^\/v1\//, '/v2/'))}${query ? `?${query}` : ''}`;
  return { statusCode: 308, headers: { location, 'content-type': 'application/json' }, body: JSON.stringify({ success: true, location }) };
};

/** Composition root (needs: table read). */
export const handler = httpHandler(makeExpressV1Wallet(appsFromEnv()));
