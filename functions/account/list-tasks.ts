import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { listUserTasks } from '../../shared/transfers/service.ts';
import { TASKS_DEFAULT_LIMIT, TasksQuery } from '../../shared/transfers/task-schemas.ts';

/** `GET /tasks?limit=`: the user's most recent tasks, newest first (a Query, never a Scan). */
export const makeListTasks = (deps: { readonly apps: AppRegistry; readonly table: Table }) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const { limit = TASKS_DEFAULT_LIMIT } = parseInput(TasksQuery, event.queryStringParameters ?? {}, 'query');
  return jsonResponse(200, await listUserTasks(deps, user, limit));
};

/** Composition root (needs: table read). */
export const handler = httpHandler(makeListTasks(appsFromEnv()));
