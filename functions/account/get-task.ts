import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { taskDepsFromEnv } from '../../shared/deps/transfers.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { getUserTask, parseTaskId, type TaskDeps } from '../../shared/transfers/service.ts';

/** `GET /task/{task_id}`: the caller's task; re-kicks a lost start once, records a closed execution's outcome. */
export const makeGetTask = (deps: TaskDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const taskId = parseTaskId(event.pathParameters?.task_id);
  return jsonResponse(200, await getUserTask(deps, user, taskId));
};

/** Composition root (needs: table read-write, transfers). */
export const handler = httpHandler(makeGetTask(taskDepsFromEnv()));
