import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { type EndpointStoreDeps, listEndpoints, toEndpointResource } from '../../shared/events/endpoints.ts';
import { MAX_ENDPOINTS_PER_APP } from '../../shared/events/types.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `GET /webhook-endpoints`: the app's endpoints, oldest first, with their delivery status; nothing of their secrets. */
export const makeListWebhookEndpoints = (deps: EndpointStoreDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const { app } = await authenticateApp(deps.apps, event);
  const endpoints = await listEndpoints(deps, app.app_id);
  return jsonResponse(200, { success: true, endpoints: endpoints.map(toEndpointResource), limit: MAX_ENDPOINTS_PER_APP });
};

/** Composition root (needs: table, WEBHOOKS# read). */
export const handler = httpHandler(makeListWebhookEndpoints(appsFromEnv()));
