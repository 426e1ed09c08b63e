import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { accountKeyWrapperFromEnv } from '../../shared/deps/clients.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { EndpointPathParams } from '../../shared/events/endpoint-schemas.ts';
import { type EndpointSealDeps, rotateSecret } from '../../shared/events/endpoints.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/**
 * `POST /webhook-endpoints/{id}/rotate-secret`: a new signing secret, shown in this response only;
 * the previous one keeps signing beside it for 24 hours.
 */
export const makeRotateWebhookEndpointSecret = (deps: EndpointSealDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const { app } = await authenticateApp(deps.apps, event);
  const { id } = parseInput(EndpointPathParams, event.pathParameters, 'path');
  const { secret, previousSecretExpiresAt } = await rotateSecret(deps, app.app_id, id);
  return jsonResponse(200, { success: true, id, secret, previous_secret_expires_at: previousSecretExpiresAt });
};

/** Composition root (needs: table, WEBHOOKS# written; account key GenerateDataKey). */
export const handler = httpHandler(makeRotateWebhookEndpointSecret({ ...appsFromEnv(), keyWrapper: accountKeyWrapperFromEnv(), now: systemClock }));
