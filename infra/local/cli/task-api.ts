import { CliError, type UserCredentials } from './sandbox.ts';

/**
 * The task calls of the account service the CLIs make (GET /tasks, GET /task/{id}, POST
 * /task/{id}/resume), all in this one place: plain fetch with the user's JWT and the app's
 * secret key. Answers are the documented Transfer task resource (docs/openapi/account.json).
 */
export interface TaskStep {
  readonly action: 'withdrawal' | 'bridge' | 'deposit';
  readonly status: 'pending' | 'submitted' | 'completed' | 'failed';
  readonly dex?: string;
  readonly tx_hashes: readonly string[];
}

export interface Task {
  readonly task_id: string;
  readonly user_id: string;
  readonly source: string;
  readonly destination: string;
  readonly amount: string;
  readonly chain: string;
  readonly token: string;
  readonly status: 'pending' | 'in_progress' | 'completed' | 'failed' | 'cancelled';
  readonly created_at: string;
  readonly updated_at: string;
  readonly progress: { readonly current_step: number; readonly total_steps: number; readonly steps: readonly TaskStep[] };
  readonly metadata: {
    readonly route?: Record<string, unknown>;
    readonly attempt?: number;
    readonly failure?: { readonly step: number; readonly code: string; readonly message: string };
    readonly cancel_reason?: string;
  };
}

/** An error answer of the account service: `{ success: false, error: { code, message } }`. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** A failure to reach the account service at all (refused, reset, timed out). */
export class UnreachableError extends CliError {}

export class TaskApi {
  private readonly credentials: UserCredentials;
  constructor(credentials: UserCredentials) {
    this.credentials = credentials;
  }

  listTasks(limit: number): Promise<{ user_id: string; tasks: Task[] }> {
    return this.request('GET', `/tasks?limit=${limit}`);
  }

  getTask(taskId: string): Promise<Task> {
    return this.request('GET', `/task/${encodeURIComponent(taskId)}`);
  }

  resumeTask(taskId: string): Promise<{ task_id: string; message: string }> {
    return this.request('POST', `/task/${encodeURIComponent(taskId)}/resume`);
  }

  private async request<T>(method: string, path: string): Promise<T> {
    const url = `${this.credentials.accountUrl}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${this.credentials.token}`, 'x-service-secret-key': this.credentials.secretKey },
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
      throw new UnreachableError(`cannot reach the account service at ${this.credentials.accountUrl} (${cause}): is the sandbox running (npm start)?`);
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!response.ok) {
      const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
      throw new ApiError(response.status, typeof error?.code === 'string' ? error.code : `HTTP_${response.status}`, typeof error?.message === 'string' ? error.message : text.slice(0, 200));
    }
    if (body === undefined) throw new ApiError(response.status, 'NOT_JSON', `${method} ${path} answered ${response.status} with a body that is not JSON`);
    return body as T;
  }
}
