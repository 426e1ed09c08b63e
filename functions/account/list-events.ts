import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { listEvents } from '../../shared/events/log.ts';
import { EVENTS_DEFAULT_LIMIT, EventsQuery } from '../../shared/events/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/**
 * `GET /events?after=&types=&limit=` (issue 24): the app's event log, oldest first, from a
 * cursor. App-level: the app's secret key alone (every user's events).
 */
export const makeListEvents =
  (deps: { readonly apps: AppRegistry; readonly table: Table; readonly now: () => Date }) => async (event: APIGatewayProxyEvent) => {
    const { app } = await authenticateApp(deps.apps, event);
    const { after = 0, types, limit = EVENTS_DEFAULT_LIMIT } = parseInput(EventsQuery, event.queryStringParameters ?? {}, 'query');
    const page = await listEvents(deps.table, app.app_id, { after, limit, ...(types ? { types } : {}) }, deps.now());
    return jsonResponse(200, { success: true, ...page });
  };

/** Composition root (needs: table, EVENTS# read). */
export const handler = httpHandler(makeListEvents({ ...appsFromEnv(), now: systemClock }));
