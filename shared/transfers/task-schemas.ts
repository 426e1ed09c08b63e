import * as v from 'valibot';
import { LimitQuery } from '../http/schemas.ts';
import { TRANSFER_LOCATIONS } from './schemas.ts';

/**
 * Wire schemas of the task routes (GET /tasks query; responses for the OpenAPI documents). The
 * Transfer task resource is built by toTaskResource (task.ts).
 */
export const TASKS_DEFAULT_LIMIT = 5;
export const TASKS_MAX_LIMIT = 50;
export const TasksQuery = LimitQuery(TASKS_DEFAULT_LIMIT, TASKS_MAX_LIMIT, ' (our choice; the spec leaves the maximum open)');

export const TaskAccepted = v.object({
  success: v.literal(true),
  task_id: v.pipe(v.string(), v.description('UUIDv7; also in the X-Task-ID header.')),
  message: v.string(),
});

const TaskStatus = v.picklist(['pending', 'in_progress', 'completed', 'failed', 'cancelled']);
const Location = v.picklist(TRANSFER_LOCATIONS);

export const TaskResource = v.object({
  task_id: v.string(),
  user_id: v.string(),
  source: Location,
  destination: Location,
  amount: v.string(),
  chain: v.string(),
  token: v.string(),
  status: TaskStatus,
  created_at: v.string(),
  updated_at: v.string(),
  progress: v.object({
    current_step: v.pipe(v.number(), v.description('Index (0-based) of the step running or next to run.')),
    total_steps: v.number(),
    steps: v.array(
      v.object({
        action: v.picklist(['withdrawal', 'bridge', 'deposit']),
        status: v.picklist(['pending', 'submitted', 'completed', 'failed']),
        dex: v.optional(v.string()),
        tx_hashes: v.array(v.string()),
      }),
    ),
  }),
  metadata: v.pipe(
    v.object({
      route: v.pipe(v.record(v.string(), v.unknown()), v.description('The planned route and the estimate at creation.')),
      attempt: v.number(),
      execution_name: v.string(),
      checkpoints: v.array(v.record(v.string(), v.unknown())),
      failure: v.optional(v.object({ step: v.number(), code: v.string(), message: v.string() })),
      cancel_reason: v.optional(v.string()),
    }),
    v.description('Route and checkpoints; never auth_jwt, a signed transaction, an idempotency key or any secret.'),
  ),
});

export const TasksResponse = v.object({ user_id: v.string(), tasks: v.array(TaskResource) });
