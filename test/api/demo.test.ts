import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDevCredentials } from '../../infra/local/cli/sandbox.ts';
import { createAccountClient, unwrap } from '../../shared/client/index.ts';
import { sandboxChains } from './support/chains.ts';
import { appOne, mintToken, registerPublicHashes, sandbox, uniqueUser } from './support/client.ts';
import { startRuntimeProcess, stopProcess } from './support/global-setup.ts';

/**
 * `npm run demo` (infra/local/cli/demo.ts) against the suite's sandbox, so the walk cannot rot: it
 * must exit 0, print every section and both completed transfer tasks, never print the credentials
 * it was given, and what it reports must be what the services hold. The suite's sandbox serves
 * APPS_FILE test apps, so the demo gets a test app's token and secret key (TOKEN, SECRET_KEY),
 * as a user of an APPS_FILE sandbox would; and, once (embedded engine), the newcomer's own path:
 * `npm start` without APPS_FILE, then `npm run demo` with no credentials at all (the sandbox is
 * found by GET /sandbox/info and the dev app's token minted from its DATA_DIR). Needs the sandbox
 * (faucet, venues): skipped against a deployed stack.
 */
const isSandbox = (await sandboxChains()) !== undefined;
const ROOT = resolve(import.meta.dirname, '../..');

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function runDemo(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return runCli('infra/local/cli/demo.ts', args, env);
}

/** Runs one of the sandbox CLIs as `npm run` does, with none of the credentials the shell might hold. */
function runCli(script: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const started = performance.now();
  const clean = { TOKEN: '', SECRET_KEY: '', DATA_DIR: '', ACCOUNT_URL: '' };
  const child = spawn(process.execPath, [script, ...args], { cwd: ROOT, env: { ...process.env, ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

/** Every section printed, in order, and both transfer tasks completed. */
function expectWholeWalk(run: Run): void {
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  expect(run.stderr).toBe('');
  let at = 0;
  for (const title of SECTIONS) {
    const found = run.stdout.indexOf(`\n${title}\n`, at);
    expect(found, `section "${title}" in order`).toBeGreaterThan(at - 1);
    at = found;
  }
  expect(run.stdout.match(/task completed/g)).toHaveLength(2);
  expect(run.stdout.match(/✓ completed: 1 step\(s\)/g)).toHaveLength(2);
  expect(run.stdout).toContain('(Idempotent-Replayed: true)');
}

const SECTIONS = [
  '1. Create an account',
  '2. Sign a message',
  '3. Get test money from the faucet',
  '4. Withdraw to an external address',
  '5. Onboard a venue (venue_b)',
  '6. Estimate a transfer to the venue',
  '7. Transfer to the venue',
  '8. Watch the task',
  '9. Read the balance at venue_b',
  '10. Transfer back from venue_b',
  '11. Final balances',
];

describe.runIf(isSandbox)('npm run demo', () => {
  it("walks through every section against the sandbox and exits 0; its numbers are the services' own", { timeout: 180_000 }, async () => {
    const sub = uniqueUser('demo');
    const token = await mintToken(appOne, sub, { ttlSeconds: 600 });
    const run = await runDemo(['--account-url', sandbox.urls.account], { TOKEN: token, SECRET_KEY: appOne.secret_key });
    // The run's transaction hashes are public; the suite's log scan must not take them for keys.
    for (const hash of run.stdout.match(/0x[0-9a-fA-F]{64}/g) ?? []) registerPublicHashes({ tx_hash: hash });
    process.stdout.write(`npm run demo: ${(run.ms / 1000).toFixed(1)} s\n`);

    expectWholeWalk(run);
    expect(run.stdout).toContain(`acting as user "${sub}"`);
    // Policies are per app: with --token the demo leaves the app's policy alone (appOne keeps none).
    expect(run.stdout).not.toContain('Signing policies (the dev app)');
    expect(run.stdout).toContain("with --token the demo leaves your app's policy alone");
    // Credentials are masked, never printed.
    expect(run.stdout).not.toContain(token);
    expect(run.stdout).not.toContain(token.split('.')[2]!);
    expect(run.stdout).not.toContain(appOne.secret_key);

    // What it printed is what the services hold for that user.
    const client = createAccountClient({ baseUrl: sandbox.urls.account, token, secretKey: appOne.secret_key });
    const account = await unwrap(client.GET('/account'));
    expect(run.stdout).toContain(account.public_address.ETH);
    expect(account.perp_dex_status.venue_b.initialized).toBe(true);
    const perp = await unwrap(client.GET('/account/perp', { params: { query: { dex: 'venue_b' } } }));
    const balance = perp.assets?.balance ?? 'unreadable';
    expect(run.stdout).toMatch(new RegExp(`venue_b balance +${balance.replace('.', '\\.')} USDC\\n`));
    const tasks = await unwrap(client.GET('/tasks', { params: { query: { limit: '5' } } }));
    expect(tasks.tasks.map((task) => [task.source, task.destination, task.status])).toEqual([
      ['venue_b', 'self', 'completed'],
      ['self', 'venue_b', 'completed'],
    ]);
    for (const task of tasks.tasks) expect(run.stdout).toContain(task.task_id);
    // Each task comes with the whole command that follows it as this user (the credentials by name).
    const asUser = `--token "$TOKEN" --secret-key "$SECRET_KEY" --account-url ${sandbox.urls.account}`;
    for (const task of tasks.tasks)
      expect(run.stdout).toMatch(new RegExp(`\\n +follow it +npm run task:watch -- ${task.task_id} ${asUser.replaceAll('$', '\\$')}\\n`));
    expect(run.stdout).toContain(`This user's tasks: npm run tasks -- ${asUser}\n`);
  });

  it('ends with one line naming the section and the answer when a call is refused, exit 1', async () => {
    const run = await runDemo(['--account-url', sandbox.urls.account], {
      TOKEN: await mintToken(appOne, uniqueUser('demo-refused')),
      SECRET_KEY: `${appOne.secret_key}x`,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^npm run demo: section 1 \(Create an account\): answered 401 INVALID_SECRET_KEY: .*\(X-Request-Id [^)]+\)\n$/);
  });

  it('without credentials, refuses an APPS_FILE sandbox with one line saying what to pass', async () => {
    const run = await runDemo(['--account-url', sandbox.urls.account]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^npm run demo: the running sandbox uses APPS_FILE=.*pass --token .* and --secret-key .*\n$/);
  });

  it('prints a usage line for --help (exit 0) and for a bad flag (exit 2), not a stack trace', async () => {
    const help = await runDemo(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run demo -- \[--sub <user>\]/);
    const bad = await runDemo(['--subb', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'npm run demo: unknown flag --subb\nusage: npm run demo -- [--sub <user>] [--account-url <url>] [--token <jwt> --secret-key <key>]\n',
    );
  });
});

describe.runIf(isSandbox && process.env.TEST_DYNAMODB === 'dynalite')('npm run demo, as a newcomer runs it', () => {
  it('npm start without APPS_FILE, then npm run demo with no flag but the URL: the dev app, a fresh user, the whole walk', { timeout: 240_000 }, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'demo-dev-app-'));
    const runtime = await startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: '' }, ['--quiet']);
    try {
      const run = await runDemo(['--account-url', runtime.urls.account]);
      process.stdout.write(`npm run demo (dev app): ${(run.ms / 1000).toFixed(1)} s\n`);
      expectWholeWalk(run);
      expect(run.stdout).toMatch(/acting as user "demo-[0-9a-f]{8}" \(fresh for this run/);
      expect(run.stdout).toContain(`sandbox data in ${dataDir}; applications: the dev app`);
      // The dev app's signing policy: a denial with its rule, the shadow decision, then the default's rules put back.
      expect(run.stdout).toContain('\n12. Signing policies (the dev app)\n');
      expect(run.stdout).toMatch(/refused +403 POLICY_DENIED, rule_id demo\.no-account-signing\n/);
      expect(run.stdout).toMatch(/evaluate +allow \(shadow: true\), rule_id demo\.no-account-signing\n/);
      expect(run.stdout).toMatch(/restored +version 3: the built-in default's rules, now stored/);
      const devApp = await loadDevCredentials(dataDir);
      const policy = await fetch(`${runtime.urls.enclave}/v2/api/policies`, { headers: { 'x-service-secret-key': devApp.secret_key } });
      const current = (await policy.json()) as { version: number; mode: string; rules: { id: string }[]; built_in: boolean };
      expect(current).toMatchObject({ version: 3, mode: 'enforce', built_in: false });
      expect(current.rules.map((rule) => rule.id)).toContain('default.express-no-raw-hash');
      // The printed command follows the demo's task as the demo's user (without --sub it would be
      // alice's view: "no task"), and works as printed.
      const user = /acting as user "(demo-[0-9a-f]{8})"/.exec(run.stdout)![1]!;
      const follow = [...run.stdout.matchAll(/\n +follow it +npm run task:watch -- (.+)\n/g)].map((match) => match[1]!);
      expect(follow).toHaveLength(2);
      for (const args of follow) expect(args).toMatch(new RegExp(`^[0-9a-f-]{36} --sub ${user} --account-url ${runtime.urls.account}$`));
      const followed = await runCli('infra/local/cli/task-watch.ts', follow[0]!.split(' '));
      expect(followed.code, `${followed.stdout}\n${followed.stderr}`).toBe(0);
      expect(followed.stdout).toMatch(/task completed/);
      expect(run.stdout).toContain(`This user's tasks: npm run tasks -- --sub ${user} --account-url ${runtime.urls.account}\n`);

      // A failure on the way (this sandbox is the test's own, so a fault here touches no other
      // test): the venue refuses the next payout, the demo stops at the transfer back with the
      // command that resumes the task, and that command completes it.
      const faults = createAccountClient({ baseUrl: runtime.urls.account });
      await unwrap(faults.POST('/sandbox/faults', { body: { target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 1 } }));
      const failed = await runDemo(['--account-url', runtime.urls.account]);
      expect(failed.code, `${failed.stdout}\n${failed.stderr}`).toBe(1);
      const resume =
        /^npm run demo: section 10 \(Transfer back from venue_b\): task failed at step 1 of 1, withdrawal \(venue_b\): [A-Z_]+: .*; resume and follow it: npm run task:watch -- (.+)\n$/.exec(
          failed.stderr,
        );
      expect(resume, failed.stderr).not.toBeNull();
      const watched = await runCli('infra/local/cli/task-watch.ts', resume![1]!.split(' '));
      expect(watched.code, `${watched.stdout}\n${watched.stderr}`).toBe(0);
      expect(watched.stdout).toMatch(/task completed/);
    } finally {
      await stopProcess(runtime.child);
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
