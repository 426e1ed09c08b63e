import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { taskDepsFromEnv } from '../../shared/deps/transfers.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseTaskId, resumeUserTask, type TaskDeps } from '../../shared/transfers/service.ts';

/** `POST /task/{task_id}/resume` (no body): 202 like POST /transfer; 409 TASK_NOT_RESUMABLE unless failed or cancelled. */
export const makeResumeTask = (deps: TaskDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const user = await authenticateUser(deps.apps, event);
  const taskId = parseTaskId(event.pathParameters?.task_id);
  const { status, body } = await resumeUserTask(deps, user, taskId);
  return jsonResponse(status, body, { 'x-task-id': body.task_id });
};

/** Composition root (needs: table read-write, transfers). */
export const handler = httpHandler(makeResumeTask(taskDepsFromEnv()));
