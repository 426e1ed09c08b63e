import { CliError, parseCli, runCli, USER_HELP, USER_OPTIONS, USER_USAGE, usageError, userCredentials, wholeNumber } from './sandbox.ts';
import { ApiError, type Task, TaskApi, UnreachableError } from './task-api.ts';
import { changes, failureLine, progressLine, routeSummary, TERMINAL_STATUSES } from './task-view.ts';

/**
 * `npm run task:watch -- <task_id> [--sub alice] [--resume]`: follows a transfer task (GET
 * /task/{id} every 500 ms) with a live progress line on a terminal, plain lines otherwise. Exit 0
 * when it completes; 1 when it fails or is cancelled (with the command that resumes it); 2 for an
 * unknown task or bad arguments. `--resume` first calls POST /task/{id}/resume, then watches.
 */
const spec = {
  name: 'task:watch',
  usage: `npm run task:watch -- <task id> ${USER_USAGE} [--resume] [--interval <ms>]`,
  help: [
    'Follows a transfer task until it completes (exit 0), fails or is cancelled (exit 1, with the resume command).',
    '  --resume             resume a failed or cancelled task first (POST /task/{id}/resume), then follow it',
    '  --interval <ms>      how often to poll (default 500)',
    USER_HELP,
  ].join('\n'),
  options: { ...USER_OPTIONS, resume: { type: 'boolean', default: false }, interval: { type: 'string', default: '500' } },
  allowPositionals: true,
} as const;

/** How long the watcher keeps polling through network errors (a restarting sandbox) before it gives up. */
const UNREACHABLE_GRACE_MS = 30_000;
/** Without a terminal, a line at least this often while nothing changes. */
const HEARTBEAT_MS = 30_000;

/** The command that resumes and follows this task, with the flags this run was given (never a token or key). */
function resumeCommand(taskId: string, values: { sub: string; 'account-url'?: string; token?: string; 'secret-key'?: string }): string {
  const parts = ['npm run task:watch --', shellWord(taskId), '--resume'];
  if (values.sub !== 'alice') parts.push('--sub', shellWord(values.sub));
  if (values['account-url']) parts.push('--account-url', shellWord(values['account-url']));
  if (values.token) parts.push('--token "$TOKEN"');
  if (values['secret-key']) parts.push('--secret-key "$SECRET_KEY"');
  return parts.join(' ');
}

function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * A terminal gets lines above one live line that is redrawn in place; a pipe or file gets the
 * lines only (the live line would be noise there).
 */
class Output {
  private liveShown = false;
  readonly tty: boolean;
  constructor(tty: boolean) {
    this.tty = tty;
  }

  line(text: string): void {
    this.clearLive();
    process.stdout.write(`${text}\n`);
  }

  live(text: string): void {
    if (!this.tty) return;
    this.clearLive();
    const width = process.stdout.columns || 120;
    process.stdout.write(text.length > width - 1 ? `${text.slice(0, width - 2)}…` : text);
    this.liveShown = true;
  }

  /** Leaves the last live line on screen. */
  end(): void {
    if (this.tty && this.liveShown) process.stdout.write('\n');
    this.liveShown = false;
  }

  private clearLive(): void {
    if (this.tty && this.liveShown) process.stdout.write('\r\x1b[2K');
    this.liveShown = false;
  }
}

await runCli(spec.name, async () => {
  const { values, positionals } = parseCli(spec);
  if (positionals.length !== 1) usageError(spec, positionals.length === 0 ? 'the task id is missing' : `one task id, not ${positionals.length} arguments`);
  const taskId = positionals[0]!;
  const interval = wholeNumber(spec, 'interval', values.interval);
  const credentials = await userCredentials({
    accountUrl: values['account-url'],
    sub: values.sub,
    token: values.token,
    secretKey: values['secret-key'],
    dataDir: values['data-dir'],
  });
  const api = new TaskApi(credentials);
  const out = new Output(process.stdout.isTTY === true);

  const byToken = Boolean(values.token || process.env.TOKEN);
  const refused = (error: ApiError, call: string) => {
    // A task is visible to its own user only: the usual cause is the wrong user (npm run demo acts as a fresh demo-… user).
    if (error.status === 404 && byToken)
      return new CliError(`no task ${taskId} for the user of this token (${call}: 404 ${error.code}): it is another user's, or none`, 2);
    if (error.status === 404) {
      return new CliError(
        `no task ${taskId} for user ${values.sub} (${call}: 404 ${error.code}): a task is seen only by its own user: pass --sub <user> (npm run demo prints its user and the whole command)`,
        2,
      );
    }
    if (error.status === 400) return new CliError(`"${taskId}" is not a task id (${call}: 400 ${error.code}: ${error.detail})`, 2);
    return new CliError(`${call} answered ${error.status} ${error.code}: ${error.detail}`);
  };

  if (values.resume) {
    try {
      const resumed = await api.resumeTask(taskId);
      out.line(`resume: ${resumed.message}`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.status !== 409) throw refused(error, `POST /task/${taskId}/resume`);
      out.line(`resume: not resumed (${error.code}: ${error.detail})`);
    }
  }

  const started = Date.now();
  let previous: Task | undefined;
  let unreachableSince: number | undefined;
  let quietSince = 0;
  const stop = () => {
    out.end();
    process.exit(130);
  };
  process.once('SIGINT', stop);
  for (;;) {
    let task: Task;
    try {
      task = await api.getTask(taskId);
      unreachableSince = undefined;
    } catch (error) {
      if (error instanceof ApiError) throw refused(error, `GET /task/${taskId}`);
      if (!(error instanceof UnreachableError)) throw error;
      unreachableSince ??= Date.now();
      if (Date.now() - unreachableSince > UNREACHABLE_GRACE_MS) throw error;
      out.live(`(${error.message}; retrying)`);
      await sleep(interval);
      continue;
    }
    const elapsed = Date.now() - started;
    if (!previous) out.line(`task ${task.task_id}: ${routeSummary(task)}, ${task.progress.total_steps} step${task.progress.total_steps === 1 ? '' : 's'}`);
    const news = changes(previous, task);
    for (const line of news) out.line(`[${(elapsed / 1000).toFixed(1).padStart(5)} s] ${line}`);
    if (news.length > 0) quietSince = elapsed;
    // Without a live line, a long wait (a venue crediting a deposit) still shows signs of life.
    if (!out.tty && elapsed - quietSince >= HEARTBEAT_MS) {
      out.line(`[${(elapsed / 1000).toFixed(1).padStart(5)} s] still ${progressLine(task, elapsed).replace(/^\[[^\]]*\] /, '')}`);
      quietSince = elapsed;
    }
    out.live(progressLine(task, elapsed));
    previous = task;
    if (TERMINAL_STATUSES.has(task.status)) break;
    await sleep(interval);
  }
  process.off('SIGINT', stop);
  out.end();
  const task = previous!;
  if (task.status === 'completed') {
    out.line(`completed in ${((Date.now() - started) / 1000).toFixed(1)} s: ${routeSummary(task)}`);
    return 0;
  }
  out.line(failureLine(task));
  out.line(`resume it: ${resumeCommand(taskId, values)}`);
  const bearer =
    values.token || process.env.TOKEN
      ? '$TOKEN'
      : `$(npm run -s token -- --sub ${shellWord(values.sub)}${values['account-url'] ? ` --account-url ${shellWord(values['account-url'])}` : ''})`;
  out.line(
    `     or:    curl -X POST ${credentials.accountUrl}/task/${taskId}/resume -H "Authorization: Bearer ${bearer}" -H "X-SERVICE-SECRET-KEY: $SK"   (SK: the app's secret key), then watch it again`,
  );
  return 1;
});
