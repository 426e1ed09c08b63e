import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { deliveryQueueFromEnv } from '../../shared/deps/events.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { EndpointPathParams } from '../../shared/events/endpoint-schemas.ts';
import { requireEndpoint } from '../../shared/events/endpoints.ts';
import type { DeliveryQueue } from '../../shared/events/publisher.ts';
import { replayEvents } from '../../shared/events/replay.ts';
import { ReplayRequest } from '../../shared/events/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/**
 * `POST /webhook-endpoints/{id}/replay` `{ after }` (issue 24): the logged events after the cursor
 * that the endpoint subscribes to are delivered again (same ids), at most REPLAY_MAX_EVENTS per
 * call; 200 once they are queued, with how many and where to continue.
 */
export const makeReplayWebhookEndpoint =
  (deps: { readonly apps: AppRegistry; readonly table: Table; readonly deliveries: DeliveryQueue; readonly now: () => Date }) =>
  async (event: APIGatewayProxyEvent & { body: unknown }) => {
    const { app } = await authenticateApp(deps.apps, event);
    const { id } = parseInput(EndpointPathParams, event.pathParameters, 'path');
    const { after } = parseInput(ReplayRequest, event.body ?? {}, 'body');
    const endpoint = await requireEndpoint(deps, app.app_id, id);
    const result = await replayEvents(deps, { app_id: app.app_id, endpoint_id: endpoint.id, ...(endpoint.events ? { events: endpoint.events } : {}) }, after);
    return jsonResponse(200, { success: true, id: endpoint.id, ...result });
  };

/** Composition root (needs: table, WEBHOOKS# and EVENTS# read; the delivery queue, SendMessage). */
export const handler = httpHandler(makeReplayWebhookEndpoint({ ...appsFromEnv(), deliveries: deliveryQueueFromEnv(), now: systemClock }), { jsonBody: true });
