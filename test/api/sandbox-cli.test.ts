import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { keccak256, recoverAddress, stringToBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.ts';
import { accountHeaders, appOne, call, mintToken, sandbox, uniqueUser } from './support/client.ts';
import { type RuntimeProcess, startRuntimeProcess, stopProcess } from './support/global-setup.ts';
import { POLL_TICKS, SANDBOX_TICK_MS } from './support/sandbox-clock.ts';

/**
 * The sandbox CLIs as a user runs them (child processes on Node 24): `npm run token`, `npm run
 * tasks`, `npm run task:watch`. Against the suite's APPS_FILE sandbox (refusals, --token mode), and
 * against a dev-app sandbox of their own (tokens the services accept; a transfer watched to
 * completion; a failed one, its resume command, and --resume).
 */
const ROOT = resolve(import.meta.dirname, '../..');
/** How often the watchers poll here: the sandbox's pace (the CLI's default, 500 ms, is a person's). */
const POLL_MS = String(POLL_TICKS * SANDBOX_TICK_MS);
const SCRIPTS = { token: 'infra/local/token.ts', tasks: 'infra/local/cli/tasks.ts', 'task:watch': 'infra/local/cli/task-watch.ts' } as const;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a CLI with none of the shell's sandbox variables, so only the flags given count. */
function cli(script: keyof typeof SCRIPTS, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [SCRIPTS[script], ...args],
      { cwd: ROOT, env: { ...process.env, DATA_DIR: '', ACCOUNT_URL: '', ACCOUNT_PORT: '', TOKEN: '', SECRET_KEY: '', ...env }, timeout: 90_000 },
      (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

/** A one-line refusal: exactly one line on stderr, no stack trace. */
function expectOneLine(run: Run, code: number, pattern: RegExp) {
  expect(run.code, run.stderr).toBe(code);
  expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
  expect(run.stderr).toMatch(pattern);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

async function closedUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

describe.runIf(sandbox.appsFile !== undefined)('CLIs against an APPS_FILE sandbox', () => {
  const accountUrl = sandbox.urls.account;

  it('npm run token refuses: the apps trust their own identity providers, not the dev issuer', async () => {
    const run = await cli('token', ['--sub', 'alice', '--account-url', accountUrl]);
    expectOneLine(
      run,
      1,
      new RegExp(
        `the running sandbox uses APPS_FILE=${sandbox.appsFile!.replaceAll('.', '\\.')}: its apps trust your identity providers, not the dev issuer; mint tokens with your provider`,
      ),
    );
    expect(run.stdout).toBe('');
  });

  it('npm run tasks without --token refuses in one line; with --token and --secret-key it asks the service', async () => {
    expectOneLine(await cli('tasks', ['--account-url', accountUrl]), 1, /uses APPS_FILE=.*pass --token .* and --secret-key/);
    const sub = uniqueUser('cli-tasks');
    const token = await mintToken(appOne, sub, { ttlSeconds: 300 });
    const env = { TOKEN: token, SECRET_KEY: appOne.secret_key };
    expectOneLine(await cli('tasks', ['--account-url', accountUrl], env), 1, /GET \/tasks answered 404 ACCOUNT_NOT_FOUND: .*create it with POST \/account/);
    expect((await call('account', 'POST', '/account', { headers: await accountHeaders(appOne, sub) })).status).toBe(200);
    const listed = await cli('tasks', ['--account-url', accountUrl], env);
    expect(listed, listed.stderr).toMatchObject({ code: 0, stdout: 'no tasks for the user of this token\n' });
    // A wrong secret key is the service's 401, not a crash.
    expectOneLine(
      await cli('tasks', ['--account-url', accountUrl, '--token', token, '--secret-key', 'sk_wrong_0123456789abcdef']),
      1,
      /GET \/tasks answered 401 /,
    );
    const unknown = await cli('task:watch', [crypto.randomUUID(), '--account-url', accountUrl, '--token', token, '--secret-key', appOne.secret_key]);
    expectOneLine(unknown, 2, /no task .* for the user of this token \(GET \/task\/.*: 404 TASK_NOT_FOUND\)/);
  });
});

describe('CLI arguments', () => {
  it('the npm scripts run these files (other parts and the README name them)', async () => {
    const { scripts } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    for (const [name, file] of Object.entries(SCRIPTS)) expect(scripts[name]).toBe(`node ${file}`);
  });

  it.each([
    ['token', ['--help'], /^usage: npm run token -- --sub <user id>/],
    ['tasks', ['--help'], /^usage: npm run tasks -- /],
    ['task:watch', ['-h'], /^usage: npm run task:watch -- <task id> /],
  ] as const)('%s %s prints the usage line and exits 0', async (script, args, pattern) => {
    const run = await cli(script, [...args]);
    expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(pattern);
  });

  it.each([
    ['token', ['--sub', 'alice', '--bogus'], 'unknown flag --bogus'],
    ['token', ['--sub'], 'flag --sub needs a value'],
    ['token', ['--sub', 'alice', '--ttl', '1h'], '--ttl must be a positive whole number, not "1h"'],
    ['token', ['--ttl', '60'], '--sub <user id> is required'],
    ['tasks', ['--limit', '0'], '--limit must be a positive whole number, not "0"'],
    ['task:watch', [], 'the task id is missing'],
    ['task:watch', ['a', 'b'], 'one task id, not 2 arguments'],
    ['task:watch', ['x', '--resume=yes'], 'flag --resume takes no value'],
  ] as const)('%s %j: one line naming the problem, the usage line, exit 2', async (script, args, problem) => {
    const run = await cli(script, [...args]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toBe(`npm run ${script}: ${problem}\n${run.stderr.split('\n')[1]}\n`);
    expect(run.stderr.split('\n')[1]).toMatch(new RegExp(`^usage: npm run ${script} -- `));
    expect(run.stdout).toBe('');
  });

  // `npm run token --sub alice` (no `--`): npm keeps --sub as its own config (npm_config_sub=true)
  // and hands the script only `alice`.
  it.each([
    ['token', ['alice'], { npm_config_sub: 'true' }, "npm took --sub for itself (the script's flags go after a lone --): run npm run token -- --sub alice"],
    ['token', [], { npm_config_sub: 'alice' }, "npm took --sub for itself (the script's flags go after a lone --): run npm run token -- --sub alice"],
    ['token', ['alice'], {}, '"alice" alone is not a flag: run npm run token -- --sub alice'],
    ['tasks', ['bob'], { npm_config_sub: 'true' }, "npm took --sub for itself (the script's flags go after a lone --): run npm run tasks -- --sub bob"],
    [
      'task:watch',
      ['0190a5c4-0000-7000-8000-000000000000'],
      { npm_config_resume: 'true' },
      "npm took --resume for itself (the script's flags go after a lone --): run npm run task:watch -- 0190a5c4-0000-7000-8000-000000000000 --resume",
    ],
    [
      'token',
      ['alice', '60'],
      { npm_config_sub: 'true', npm_config_ttl: 'true' },
      "npm took --sub, --ttl for itself (the script's flags go after a lone --): run it as npm run token -- --sub <user id> [--ttl <seconds>] [--op] [--account-url <url>] [--data-dir <dir>]",
    ],
  ] as const)('%s %j with %j (flags npm kept for itself): one line saying what to run, exit 2', async (script, args, env, problem) => {
    const run = await cli(script, [...args], env);
    expect(run, run.stderr).toMatchObject({ code: 2, stdout: '', stderr: `npm run ${script}: ${problem}\n` });
  });

  it('through npm itself: npm run token --sub alice says to run npm run token -- --sub alice', async () => {
    const run = await new Promise<Run>((done) => {
      execFile(
        'npm',
        ['run', '--silent', 'token', '--sub', 'alice'],
        { cwd: ROOT, env: { ...process.env, DATA_DIR: '', ACCOUNT_URL: '', ACCOUNT_PORT: '' }, timeout: 60_000 },
        (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      );
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain("npm run token: npm took --sub for itself (the script's flags go after a lone --): run npm run token -- --sub alice\n");
  });

  it('token --op refuses a lifetime over 300 s (the enclave would refuse the op_jwt)', async () => {
    expectOneLine(await cli('token', ['--sub', 'alice', '--op', '--ttl', '301']), 2, /an op_jwt lives at most 300 seconds .*--ttl 301 is too long/);
  });

  it('with no sandbox running and no dev app in the data dir: "start the sandbox first", and nothing is created', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'cli-no-dev-app-'));
    try {
      const run = await cli('token', ['--sub', 'alice', '--account-url', await closedUrl(), '--data-dir', empty]);
      expectOneLine(run, 1, new RegExp(`no dev app in ${empty.replaceAll('.', '\\.')} .*: start the sandbox first: npm start`));
      expect(await readdir(empty)).toEqual([]);
      // DATA_DIR as the data dir, and the default ACCOUNT_PORT when no URL is given.
      const byEnv = await cli('token', ['--sub', 'alice'], { DATA_DIR: empty, ACCOUNT_PORT: String(await freePort()) });
      expectOneLine(byEnv, 1, /no dev app in .*: start the sandbox first: npm start/);
      expect(await readdir(empty)).toEqual([]);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('a task CLI with no sandbox answering and no --token says so in one line', async () => {
    const url = await closedUrl();
    expectOneLine(await cli('tasks', ['--account-url', url]), 1, new RegExp(`no sandbox answers at ${url}: start it \\(npm start\\)`));
  });
});

/** The dev-app sandbox of these tests: started once (dynalite project only, as local-runtime.test.ts). */
describe.runIf(process.env.TEST_DYNAMODB === 'dynalite')('CLIs against a dev-app sandbox', () => {
  let dataDir = '';
  let runtime: RuntimeProcess;
  let accountUrl = '';
  let secretKey = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cli-dev-sandbox-'));
    runtime = await startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: '' }, ['--quiet']);
    accountUrl = runtime.urls.account;
    secretKey = JSON.parse(await readFile(join(dataDir, 'dev-app.json'), 'utf8')).secret_key;
  }, 90_000);
  afterAll(async () => {
    if (runtime) await stopProcess(runtime.child);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function api(method: string, path: string, token: string, body?: unknown, service: 'account' | 'enclave' = 'account') {
    const response = await fetch(`${runtime.urls[service]}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'x-service-secret-key': secretKey, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  async function token(sub: string, ...args: string[]): Promise<string> {
    const run = await cli('token', ['--sub', sub, '--account-url', accountUrl, ...args]);
    expect(run.code, run.stderr).toBe(0);
    return run.stdout.trim();
  }

  it('GET /sandbox/info names the data dir, the URLs and the dev app, and no secret', async () => {
    const info = await (await fetch(`${accountUrl}/sandbox/info`)).json();
    expect(info).toEqual({
      sandbox: true,
      data_dir: dataDir,
      urls: runtime.urls,
      applications: 'dev',
      dev_app: { app_id: 'dev-app', provider_id: 'dev-idp', issuer: 'https://dev-idp.sandbox.local' },
    });
    expect(JSON.stringify(info)).not.toContain(secretKey);
  });

  it('npm run token follows the sandbox: its token opens an account; --op mints an op_jwt the enclave signs with', async () => {
    const sub = uniqueUser('cli-token');
    const bearer = await token(sub);
    const account = await api('POST', '/account', bearer);
    expect(account.status, JSON.stringify(account.body)).toBe(200);
    expect(account.body.app_user_id).toBe(sub);
    const payload = JSON.parse(Buffer.from(bearer.split('.')[1]!, 'base64url').toString());
    expect(payload.exp - payload.iat).toBe(3600);

    const wallet = await fetch(`${runtime.urls.enclave}/v2/api/wallet`, {
      method: 'POST',
      headers: { 'x-service-secret-key': secretKey, 'content-type': 'application/json' },
      body: JSON.stringify({ auth_jwt: bearer, network: 'ETH', wallet_group_id: 'default' }),
    });
    const { wallet_id, access_key, public_address } = (await wallet.json()) as { wallet_id: string; access_key: string; public_address: `0x${string}` };
    expect(wallet.status).toBe(200);
    const hash = keccak256(stringToBytes('signed with an op_jwt from npm run token -- --op'));
    const sign = (opJwt: string) =>
      fetch(`${runtime.urls.enclave}/v2/api/wallet/sign_data`, {
        method: 'POST',
        headers: { 'x-service-secret-key': secretKey, 'content-type': 'application/json' },
        body: JSON.stringify({ op_jwt: opJwt, access_key, wallet_id, raw_data_hash: hash }),
      });
    const opJwt = await token(sub, '--op');
    const opPayload = JSON.parse(Buffer.from(opJwt.split('.')[1]!, 'base64url').toString());
    expect(opPayload.exp - opPayload.iat).toBe(300);
    const signed = await sign(opJwt);
    const { signature } = (await signed.json()) as { signature: `0x${string}` };
    expect(signed.status).toBe(200);
    expect(await recoverAddress({ hash, signature })).toBe(public_address);
    // The same user's one-hour token is not an op_jwt: what --op is for.
    const refused = await sign(bearer);
    expect(refused.status).toBe(401);
    // The dev app's refusal says how to mint a valid one.
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toEqual({
      code: 'INVALID_OP_JWT',
      message:
        'op_jwt lifetime exceeds 300 seconds (exp - iat is 3600): mint one that expires at most 300 seconds after its iat; in this sandbox: npm run token -- --sub <user> --op',
    });
  });

  it("npm run token refuses another data dir than the running sandbox's, creating nothing there", async () => {
    const other = await mkdtemp(join(tmpdir(), 'cli-other-data-'));
    try {
      const run = await cli('token', ['--sub', 'alice', '--account-url', accountUrl, '--data-dir', other]);
      expectOneLine(
        run,
        1,
        new RegExp(
          `the data dir ${other.replaceAll('.', '\\.')} \\(--data-dir or DATA_DIR\\) is not the running sandbox's \\(${dataDir.replaceAll('.', '\\.')}, at ${accountUrl}\\)`,
        ),
      );
      const byEnv = await cli('token', ['--sub', 'alice', '--account-url', accountUrl], { DATA_DIR: other });
      expectOneLine(byEnv, 1, /is not the running sandbox's/);
      expect(await readdir(other)).toEqual([]);
      // The sandbox's own data dir, named explicitly, is fine.
      expect((await cli('token', ['--sub', 'alice', '--account-url', accountUrl, '--data-dir', dataDir])).code).toBe(0);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('npm run tasks for a user without an account, or without tasks, says to pass --sub <user>', async () => {
    const sub = uniqueUser('cli-no-tasks');
    expectOneLine(
      await cli('tasks', ['--sub', sub, '--account-url', accountUrl]),
      1,
      new RegExp(
        `GET /tasks answered 404 ACCOUNT_NOT_FOUND: .* \\(user ${sub}; tasks are per user: pass --sub <user> for another user's \\(npm run demo prints its user\\)\\)\n$`,
      ),
    );
    expect((await api('POST', '/account', await token(sub))).status).toBe(200);
    const empty = await cli('tasks', ['--sub', sub, '--account-url', accountUrl]);
    expect(empty, empty.stderr).toMatchObject({
      code: 0,
      stdout: `no tasks for user ${sub} (tasks are per user: pass --sub <user> for another user's (npm run demo prints its user))\n`,
    });
  });

  it('with no sandbox answering, --data-dir with a dev app still mints (the token works once that sandbox answers)', async () => {
    const bearer = (await cli('token', ['--sub', 'offline-mint', '--account-url', await closedUrl(), '--data-dir', dataDir])).stdout.trim();
    expect((await api('POST', '/account', bearer)).status).toBe(200);
  });

  it('a transfer watched to completion: each step, its status and tx hash, exit 0; npm run tasks lists it', async () => {
    const sub = uniqueUser('cli-watch');
    const bearer = await token(sub);
    const user = await api('POST', '/account', bearer);
    const address = user.body.public_address.ETH as string;
    for (const [asset, amount] of [
      ['USDC', '30'],
      ['ETH', '0.05'],
    ]) {
      const credited = await fetch(`${accountUrl}/sandbox/faucet`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chain: 'ARB', address, token: asset, amount }),
      });
      expect(credited.status).toBe(200);
    }
    expect((await api('POST', '/account/init-perp-dex', bearer, { dex: 'venue_b' })).status).toBe(200);
    const created = await api('POST', '/transfer', bearer, { source: 'self', destination: 'venue_b', amount: '12' });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const taskId = created.body.task_id as string;

    const watched = await cli('task:watch', [taskId, '--sub', sub, '--account-url', accountUrl, '--interval', POLL_MS]);
    expect(watched.code, watched.stdout + watched.stderr).toBe(0);
    const task = (await api('GET', `/task/${taskId}`, bearer)).body;
    expect(task.status).toBe('completed');
    const out = watched.stdout;
    expect(out).toContain(`task ${taskId}: self → venue_b: 12 USDC on ARB, 1 step`);
    expect(out).toMatch(/step 1\/1 deposit \(venue_b\): completed/);
    expect(task.progress.steps[0].tx_hashes.length).toBeGreaterThan(0);
    for (const hash of task.progress.steps[0].tx_hashes) expect(out).toContain(`step 1/1 deposit (venue_b): tx ${hash}`);
    expect(out).toMatch(/completed in \d+\.\d s: self → venue_b: 12 USDC on ARB\n$/);
    // Not a terminal: plain lines, no live line's escape codes.
    expect(out).not.toContain('\x1b[');

    const listed = await cli('tasks', ['--sub', sub, '--account-url', accountUrl]);
    expect(listed.code, listed.stderr).toBe(0);
    const [header, row] = listed.stdout.split('\n');
    expect(header).toMatch(/^TASK ID\s+CREATED \(UTC\)\s+STATUS\s+ROUTE\s+STEP$/);
    expect(row).toMatch(new RegExp(`^${taskId}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d  completed\\s+self → venue_b: 12 USDC on ARB  1/1$`));
    expect(listed.stdout).toContain(`follow one: npm run task:watch -- <task id> --sub ${sub}`);

    // A failed venue withdrawal (this user's only: other test files share the sandbox): exit 1 with
    // the failure and the resume command; that command completes it.
    const fault = await fetch(`${accountUrl}/sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 1, address }),
    });
    expect(fault.status).toBe(200);
    const back = await api('POST', '/transfer', bearer, { source: 'venue_b', destination: 'self', amount: '6', chain: 'ARB' });
    expect(back.status, JSON.stringify(back.body)).toBe(202);
    const failedId = back.body.task_id as string;
    const failed = await cli('task:watch', [failedId, '--sub', sub, '--account-url', accountUrl, '--interval', POLL_MS]);
    expect(failed.code, failed.stdout + failed.stderr).toBe(1);
    const failure = (await api('GET', `/task/${failedId}`, bearer)).body.metadata.failure;
    expect(failed.stdout).toContain(`task failed at step 1 of 1, withdrawal (venue_b): ${failure.code}: ${failure.message}\n`);
    const resumeCommand = `npm run task:watch -- ${failedId} --resume --sub ${sub} --account-url ${accountUrl}`;
    expect(failed.stdout).toContain(`resume it: ${resumeCommand}\n`);
    expect(failed.stdout).toContain(
      `curl -X POST ${accountUrl}/task/${failedId}/resume -H "Authorization: Bearer $(npm run -s token -- --sub ${sub} --account-url ${accountUrl})"`,
    );

    const resumed = await cli('task:watch', [...resumeCommand.split(' ').slice(4), '--interval', POLL_MS]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^resume: Resuming from step 1 of 1 \(withdrawal\)/);
    const done = (await api('GET', `/task/${failedId}`, bearer)).body;
    expect(done.status).toBe('completed');
    for (const hash of done.progress.steps[0].tx_hashes) expect(resumed.stdout).toContain(`step 1/1 withdrawal (venue_b): tx ${hash}`);
    // Resuming a completed task is refused by the service; the watcher says so and reports it completed.
    const again = await cli('task:watch', [failedId, '--resume', '--sub', sub, '--account-url', accountUrl]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^resume: not resumed \(TASK_NOT_RESUMABLE: The task is completed/);
  }, 120_000);

  it('an unknown or malformed task id: one line, exit 2; not found says to pass --sub (a task is seen by its own user only)', async () => {
    const unknown = crypto.randomUUID();
    expectOneLine(
      await cli('task:watch', [unknown, '--account-url', accountUrl]),
      2,
      new RegExp(
        `no task ${unknown} for user alice \\(GET /task/${unknown}: 404 TASK_NOT_FOUND\\): a task is seen only by its own user: pass --sub <user> \\(npm run demo prints its user and the whole command\\)\n$`,
      ),
    );
    expectOneLine(
      await cli('task:watch', ['not-a-task', '--account-url', accountUrl, '--resume']),
      2,
      /"not-a-task" is not a task id \(POST \/task\/not-a-task\/resume: 400 /,
    );
  });
});
