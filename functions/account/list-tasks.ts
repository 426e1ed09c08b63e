import type { APIGatewayProxyEvent } from 'aws-lambda';
import * as v from 'valibot';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import type { Table } from '../../shared/db/client.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { listUserTasks, TASKS_DEFAULT_LIMIT, TASKS_MAX_LIMIT } from '../../shared/transfers/service.ts';

export const TasksQuery = v.object({
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[0-9]{1,3}$/, `must be an integer from 1 to ${TASKS_MAX_LIMIT}`),
      v.transform(Number),
      v.minValue(1, `must be an integer from 1 to ${TASKS_MAX_LIMIT}`),
      v.maxValue(TASKS_MAX_LIMIT, `must be an integer from 1 to ${TASKS_MAX_LIMIT}`),
      v.description(`Default ${TASKS_DEFAULT_LIMIT}, at most ${TASKS_MAX_LIMIT}.`),
    ),
  ),
});

/** `GET /tasks?limit=`: the user's most recent tasks, newest first (a Query, never a Scan). */
export const makeListTasks = (deps: { readonly apps: AppRegistry; readonly table: Table }) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const { limit = TASKS_DEFAULT_LIMIT } = parseInput(TasksQuery, event.queryStringParameters ?? {}, 'query');
  return jsonResponse(200, await listUserTasks(deps, user, limit));
};

/** Composition root (needs: table read). */
export const handler = httpHandler(makeListTasks(appsFromEnv()));
