import { CliError, parseCli, runCli, USER_HELP, USER_OPTIONS, USER_USAGE, userCredentials, wholeNumber } from './sandbox.ts';
import { ApiError, TaskApi } from './task-api.ts';
import { taskTable } from './task-view.ts';

/** `npm run tasks -- [--sub alice] [--limit 10]`: the user's most recent transfer tasks, newest first. */
const spec = {
  name: 'tasks',
  usage: `npm run tasks -- ${USER_USAGE} [--limit <1-50>]`,
  help: ["Lists the user's most recent transfer tasks (GET /tasks), newest first.", '  --limit <n>          how many (default 10, at most 50)', USER_HELP].join(
    '\n',
  ),
  options: { ...USER_OPTIONS, limit: { type: 'string', default: '10' } },
} as const;

await runCli(spec.name, async () => {
  const { values } = parseCli(spec);
  const limit = wholeNumber(spec, 'limit', values.limit);
  if (limit > 50) throw new CliError('--limit is at most 50', 2);
  const byToken = Boolean(values.token || process.env.TOKEN);
  // Tasks are per user, and --sub defaults to alice: a newcomer's tasks are often another user's (npm run demo's demo-…).
  const otherUser = `tasks are per user: pass --sub <user> for another user's (npm run demo prints its user)`;
  const api = new TaskApi(
    await userCredentials({
      accountUrl: values['account-url'],
      sub: values.sub,
      token: values.token,
      secretKey: values['secret-key'],
      dataDir: values['data-dir'],
    }),
  );
  let listing: Awaited<ReturnType<TaskApi['listTasks']>>;
  try {
    listing = await api.listTasks(limit);
  } catch (error) {
    if (error instanceof ApiError)
      throw new CliError(
        `GET /tasks answered ${error.status} ${error.code}: ${error.detail}${error.status === 404 && !byToken ? ` (user ${values.sub}; ${otherUser})` : ''}`,
      );
    throw error;
  }
  if (listing.tasks.length === 0) {
    process.stdout.write(byToken ? 'no tasks for the user of this token\n' : `no tasks for user ${values.sub} (${otherUser})\n`);
    return;
  }
  process.stdout.write(`${taskTable(listing.tasks)}\n`);
  process.stdout.write(`follow one: npm run task:watch -- <task id>${values.sub === 'alice' ? '' : ` --sub ${values.sub}`}\n`);
});
