import { type AccountClient, type AccountPaths, ApiError, createAccountClient, unwrap } from '../../../shared/client/index.ts';
import { CliError, type UserCredentials } from './sandbox.ts';

/**
 * The task calls of the account service the CLIs make (GET /tasks, GET /task/{id}, POST
 * /task/{id}/resume), all in this one place, through the typed client (shared/client/): the types
 * are generated from docs/openapi/account.json, so the CLIs cannot drift from the documented
 * Transfer task resource.
 */
export type Task = AccountPaths['/task/{task_id}']['get']['responses'][200]['content']['application/json'];
export type TaskStep = Task['progress']['steps'][number];
export { ApiError };

/** A failure to reach the account service at all (refused, reset, timed out). */
export class UnreachableError extends CliError {}

export class TaskApi {
  private readonly accountUrl: string;
  private readonly client: AccountClient;
  constructor(credentials: UserCredentials) {
    this.accountUrl = credentials.accountUrl;
    const timedFetch = (request: Request) => fetch(request, { signal: AbortSignal.timeout(30_000) });
    this.client = createAccountClient({ baseUrl: credentials.accountUrl, token: credentials.token, secretKey: credentials.secretKey, fetch: timedFetch });
  }

  listTasks(limit: number) {
    return this.call(this.client.GET('/tasks', { params: { query: { limit: String(limit) } } }));
  }

  getTask(taskId: string) {
    return this.call(this.client.GET('/task/{task_id}', { params: { path: { task_id: taskId } } }));
  }

  resumeTask(taskId: string) {
    return this.call(this.client.POST('/task/{task_id}/resume', { params: { path: { task_id: taskId } } }));
  }

  /** The answer's data, an ApiError for an error answer, or UnreachableError when nothing answered. */
  private async call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    try {
      return await unwrap(request);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
      throw new UnreachableError(`cannot reach the account service at ${this.accountUrl} (${cause}): is the sandbox running (npm start)?`);
    }
  }
}
