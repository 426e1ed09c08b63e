import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { EndpointPathParams } from '../../shared/events/endpoint-schemas.ts';
import { deleteEndpoint, type EndpointStoreDeps } from '../../shared/events/endpoints.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/** `DELETE /webhook-endpoints/{id}`: nothing more is delivered to it; 404 for an id the app does not have (another app's included). */
export const makeDeleteWebhookEndpoint = (deps: EndpointStoreDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const { app } = await authenticateApp(deps.apps, event);
  const { id } = parseInput(EndpointPathParams, event.pathParameters, 'path');
  await deleteEndpoint(deps, app.app_id, id);
  return jsonResponse(200, { success: true, id });
};

/** Composition root (needs: table, WEBHOOKS# written). */
export const handler = httpHandler(makeDeleteWebhookEndpoint(appsFromEnv()));
