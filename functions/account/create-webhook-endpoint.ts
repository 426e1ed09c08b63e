import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { accountKeyWrapperFromEnv } from '../../shared/deps/clients.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { CreateEndpointRequest } from '../../shared/events/endpoint-schemas.ts';
import { type CreateEndpointDeps, createEndpoint, toEndpointResource } from '../../shared/events/endpoints.ts';
import { loadWebhookUrlMode } from '../../shared/events/webhook-url.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/**
 * `POST /webhook-endpoints` (issue 24): a webhook endpoint of the app and its signing secret, shown
 * in this response only. App-level: the app's secret key alone, no user JWT.
 */
export const makeCreateWebhookEndpoint =
  (deps: CreateEndpointDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
    const { app } = await authenticateApp(deps.apps, event);
    const input = parseInput(CreateEndpointRequest, event.body, 'body');
    const { endpoint, secret } = await createEndpoint(deps, app.app_id, input);
    return jsonResponse(200, { success: true, ...toEndpointResource(endpoint), secret });
  };

/** Composition root (needs: table, WEBHOOKS# written; account key GenerateDataKey; WEBHOOK_URLS). */
export const handler = httpHandler(
  makeCreateWebhookEndpoint({ ...appsFromEnv(), keyWrapper: accountKeyWrapperFromEnv(), now: systemClock, urlMode: loadWebhookUrlMode() }),
  { jsonBody: true },
);
