import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KMSClient } from '@aws-sdk/client-kms';
import type { JWK } from 'jose';
import type { TestProject } from 'vitest/node';
import { registerApplication } from '../../../shared/apps/register-application.ts';
import { generateEs256Jwk } from '../../../shared/crypto/es256-jwk.ts';
import { KmsOpJwtSigner } from '../../../shared/crypto/kms-op-jwt-signer.ts';
import { createDocumentClient } from '../../../shared/db/client.ts';
import { sharedDynamoDbLocal, stopChild as stopProcess } from '../../support/dynamodb-local.ts';
import { countLogLines, type KnownSecret, scanLog } from './log-scan.ts';
import { SANDBOX_TICK_MS } from './sandbox-clock.ts';

/**
 * Boots the local runtime as a separate process (`node infra/local/start.ts`), exactly as
 * `npm start` does, with an APPS_FILE of three test applications whose identity providers are
 * keys made here. The `api-dynamodb-local` project points the runtime at the run's DynamoDB Local
 * (Java; one JVM shared with the unit project). The `api-deployed` project runs the same tests
 * against a deployed stack (AWS or LocalStack).
 */
export interface TestApp {
  readonly app_id: string;
  readonly created_at: string;
  readonly legacy_provider_ids: readonly string[];
  readonly secret_key: string;
  readonly api_key: string;
  readonly provider_id: string;
  readonly issuer: string;
  readonly audience: string;
  readonly privateJwk: JWK;
}

export interface Sandbox {
  readonly urls: { account: string; enclave: string; express: string };
  readonly apps: readonly TestApp[];
  readonly dataDir: string;
  /** Local modes: the APPS_FILE and DynamoDB endpoint (if external), for tests that start a runtime of their own. */
  readonly appsFile?: string;
  readonly dynamodbEndpoint?: string;
  /** Local modes: where tests register secrets they were handed (JSON lines), for the log scan. */
  readonly secretsFile?: string;
  /** Local modes: where tests register public 32-byte hashes (transaction hashes), one a line. */
  readonly publicValuesFile?: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    sandbox: Sandbox;
  }
}

const ROOT = resolve(import.meta.dirname, '../../..');

/** A test identity provider: an ES256 key whose public half the app's OIDC config carries. */
async function makeIdentityProvider(appId: string) {
  const { privateJwk, publicJwk } = await generateEs256Jwk();
  const oidc = {
    provider_id: `${appId}-idp`,
    issuer: `https://idp.${appId}.test`,
    audience: `${appId}-audience`,
    jwks: { keys: [publicJwk] },
  };
  return { oidc, privateJwk };
}

/**
 * app-one is a new app (created after 2026-07-31: banned from express v1); app-two is an older
 * app (redirected from express v1) that still has a legacy iframe-login provider id. app-policy
 * belongs to test/api/policies.test.ts alone: a signing policy is per app, and one set on a shared
 * app would refuse other files' signatures while they run alongside. app-policy-evaluate belongs to
 * test/api/policies-evaluate.test.ts alone, for the same reason (its policies would change the
 * decisions policies.test.ts asserts). app-webhooks belongs to test/api/webhook-endpoints.test.ts
 * alone: it fills the app up to its endpoint limit. app-events belongs to test/api/events.test.ts
 * alone: its receiver takes every event of the app, and only that file's transfers make them.
 */
const TEST_APPS = [
  { label: 'app-one', created_at: '2026-09-01T00:00:00.000Z', legacy_provider_ids: [] as string[] },
  { label: 'app-two', created_at: '2026-03-01T00:00:00.000Z', legacy_provider_ids: ['app-two-legacy-iframe'] },
  { label: 'app-policy', created_at: '2026-09-01T00:00:00.000Z', legacy_provider_ids: [] as string[] },
  { label: 'app-policy-evaluate', created_at: '2026-09-01T00:00:00.000Z', legacy_provider_ids: [] as string[] },
  { label: 'app-webhooks', created_at: '2026-09-01T00:00:00.000Z', legacy_provider_ids: [] as string[] },
  { label: 'app-events', created_at: '2026-09-01T00:00:00.000Z', legacy_provider_ids: [] as string[] },
];

function testApp(
  appId: string,
  spec: (typeof TEST_APPS)[number],
  idp: Awaited<ReturnType<typeof makeIdentityProvider>>,
  keys: { secret_key: string; api_key: string },
): TestApp {
  return {
    app_id: appId,
    created_at: spec.created_at,
    legacy_provider_ids: spec.legacy_provider_ids,
    ...keys,
    provider_id: idp.oidc.provider_id,
    issuer: idp.oidc.issuer,
    audience: idp.oidc.audience,
    privateJwk: idp.privateJwk,
  };
}

export interface RuntimeProcess {
  readonly child: ChildProcess;
  readonly urls: Sandbox['urls'];
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** Resolves once the process has exited and its log file (if any) is complete. */
  readonly logWritten: Promise<void>;
}

/**
 * Starts `node infra/local/start.ts` at the default log level, on the tests' sandbox clock
 * (SANDBOX_TICK_MS, sandbox-clock.ts; `env` may set another).
 *
 * With `logFile`, the process writes everything it prints (functions' JSON logs, the access log)
 * straight into that file, and readiness is read from there. A pipe to this process would make
 * the runtime wait on the test runner: on Linux a child's stdout pipe is written synchronously, so
 * each of its ~18,000 log lines blocked on vitest reading it (about 10 s of the runtime's 60 s busy
 * time, measured with --cpu-prof). `logWritten` resolves once the process has exited.
 */
export function startRuntimeProcess(env: Record<string, string>, args: string[] = [], logFile?: string): Promise<RuntimeProcess> {
  const logFd = logFile === undefined ? undefined : openSync(logFile, 'a', 0o600);
  const child = spawn(process.execPath, ['infra/local/start.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ACCOUNT_PORT: '0', ENCLAVE_PORT: '0', EXPRESS_PORT: '0', SANDBOX_TICK_MS: String(SANDBOX_TICK_MS), ...env },
    stdio: logFd === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', logFd, logFd],
  });
  if (logFd !== undefined) closeSync(logFd); // the child holds its own copy
  const logWritten: Promise<void> = new Promise((done) => child.once('close', () => done()));
  let piped = '';
  const output = logFile === undefined ? () => piped : () => readFileSync(logFile, 'utf8');
  return new Promise((done, fail) => {
    let settled = false;
    const settle = (action: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(poll);
      action();
    };
    const timer = setTimeout(() => settle(() => fail(new Error(`local runtime not ready within 60 s:\n${output()}`))), 60_000);
    const check = () => {
      const ready = /^ready (\{.*\})$/m.exec(output());
      if (ready) settle(() => done({ child, urls: JSON.parse(ready[1]!), output, logWritten }));
    };
    const poll = logFile === undefined ? undefined : setInterval(check, 20);
    if (logFile === undefined) {
      child.stdout!.on('data', (chunk: Buffer) => {
        piped += chunk.toString();
        if (!settled) check();
      });
      child.stderr!.on('data', (chunk: Buffer) => (piped += chunk.toString()));
    }
    child.once('exit', (code) => settle(() => fail(new Error(`local runtime exited with code ${code}:\n${output()}`))));
  });
}

export { stopProcess };

/**
 * Where a project run's runtime log is kept (overwritten by the next run of that project in this
 * checkout; one folder per checkout, so runs in two clones or worktrees never share a log).
 */
export function runtimeLogPath(projectName: string): string {
  const checkout = createHash('sha256').update(ROOT).digest('hex').slice(0, 12);
  return join(tmpdir(), 'perp-wallet-api-logs', checkout, `${projectName}.log`);
}

/**
 * Fails the run when the runtime's log holds a secret. It must have looked at a real log: many
 * function log lines and access lines, not the near-empty output of a silent runtime.
 */
async function assertLogHoldsNoSecrets(logFile: string, known: KnownSecret[], files: { secrets: string; publicValues: string }, wholeSuite: boolean) {
  const lines = async (file: string) => (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const seen = (await lines(files.secrets)).map((line) => JSON.parse(line) as KnownSecret);
  const publicValues = new Set(await lines(files.publicValues));
  const log = await readFile(logFile, 'utf8');
  const counts = countLogLines(log);
  const problems: string[] = [];
  // A run of a few chosen files is scanned too, but only the whole suite must produce a thick log.
  if (wholeSuite && (counts.functionLines < 300 || counts.accessLines < 300)) {
    problems.push(`the log is too thin to prove anything: ${JSON.stringify(counts)}`);
  }
  if (wholeSuite && seen.length < 10) problems.push(`only ${seen.length} secrets were registered by the tests (client.ts registers those it receives)`);
  const findings = scanLog(log, [...known, ...seen], publicValues);
  for (const finding of findings.slice(0, 20)) problems.push(`line ${finding.line}: ${finding.kind}: ${finding.excerpt}`);
  if (problems.length) {
    throw new Error(`secrets scan of ${logFile} (${findings.length} findings, ${JSON.stringify(counts)}):\n  ${problems.join('\n  ')}`);
  }
  process.stdout.write(
    `secrets scan${wholeSuite ? '' : ' (some test files only)'}: ${counts.lines} log lines (${counts.functionLines} function, ${counts.accessLines} access), ${known.length + seen.length} known secrets (${publicValues.size} public hashes allowed), none found in ${logFile}\n`,
  );
}

/** Local: an APPS_FILE for a runtime process started here (dynalite, or DynamoDB Local first). */
async function setupLocal(project: TestProject) {
  const dataDir = await mkdtemp(join(tmpdir(), `sandbox-${project.name}-`));
  const apps: TestApp[] = [];
  const entries: object[] = [];
  for (const spec of TEST_APPS) {
    const appId = spec.label;
    const idp = await makeIdentityProvider(appId);
    const keys = { secret_key: `sk_test_${appId}_${crypto.randomUUID()}`, api_key: `ak_test_${appId}_${crypto.randomUUID()}` };
    apps.push(testApp(appId, spec, idp, keys));
    entries.push({ app_id: appId, ...keys, created_at: spec.created_at, legacy_provider_ids: spec.legacy_provider_ids, oidc: idp.oidc });
  }
  const appsFile = join(dataDir, 'apps.json');
  await writeFile(appsFile, JSON.stringify(entries), { mode: 0o600 });

  const dynamodb = project.name === 'api-dynamodb-local' ? await sharedDynamoDbLocal() : undefined;
  // The functions' RPC URLs carry this credential in their path, as hosted RPC URLs carry API keys.
  const rpcCredential = `rpc-key-${crypto.randomUUID().replaceAll('-', '')}`;
  const logFile = runtimeLogPath(project.name);
  await mkdir(join(logFile, '..'), { recursive: true });
  await writeFile(logFile, '', { mode: 0o600 });
  const secretsFile = join(dataDir, 'seen-secrets.jsonl');
  const publicValuesFile = join(dataDir, 'seen-public-hashes.txt');
  const runtime = await startRuntimeProcess(
    {
      DATA_DIR: join(dataDir, 'runtime'),
      APPS_FILE: appsFile,
      SANDBOX_RPC_CREDENTIAL: rpcCredential,
      // dynalite keeps the table in memory (infra/local/dynamodb-store.ts): this runtime runs once, on a fresh DATA_DIR.
      ...(dynamodb ? { DYNAMODB_ENDPOINT: dynamodb.endpoint } : { SANDBOX_DYNAMODB_STORE: 'memory' }),
    },
    [],
    logFile,
  );
  project.provide('sandbox', { urls: runtime.urls, apps, dataDir, appsFile, dynamodbEndpoint: dynamodb?.endpoint, secretsFile, publicValuesFile });

  const known: KnownSecret[] = [
    { label: 'RPC credential', value: rpcCredential },
    ...apps.flatMap((app) => [
      { label: `${app.app_id} secret key`, value: app.secret_key },
      { label: `${app.app_id} API key`, value: app.api_key },
      { label: `${app.app_id} IdP private key`, value: app.privateJwk.d! },
    ]),
  ];
  return async () => {
    try {
      await stopProcess(runtime.child);
      await runtime.logWritten;
      await dynamodb?.release();
      const all = (await project.globTestFiles()).testFiles.length;
      const ran = project.vitest.state.getFiles().filter((file) => file.projectName === project.name).length;
      await assertLogHoldsNoSecrets(logFile, known, { secrets: secretsFile, publicValues: publicValuesFile }, ran >= all);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  };
}

/**
 * Deployed (AWS or LocalStack via `npm run test:deployed`): the stack's URLs from the
 * environment, and two fresh test apps registered in its table as `npm run app:create` does.
 */
async function setupDeployed(project: TestProject) {
  const env = (name: string) =>
    process.env[name] ||
    (() => {
      throw new Error(`${name} is required for API_TEST_TARGET=deployed`);
    })();
  const urls = { account: env('ACCOUNT_URL'), enclave: env('ENCLAVE_URL'), express: env('EXPRESS_URL') };
  // A LocalStack deployment (either URL form its docs give): the table and key live in LocalStack
  // too, and without an endpoint the SDK would ask real AWS for them.
  if (/\.localhost\.localstack\.cloud[:/]|\/_aws\/execute-api\//.test(urls.account) && !process.env.AWS_ENDPOINT_URL) {
    throw new Error('ACCOUNT_URL is a LocalStack URL: set AWS_ENDPOINT_URL (and AWS_REGION, test credentials) as `npm run localstack:deploy` prints them');
  }
  const table = { doc: createDocumentClient(process.env.DYNAMODB_ENDPOINT), name: env('TABLE_NAME') };
  const trustedKey = await new KmsOpJwtSigner(new KMSClient({}), env('OP_JWT_KMS_KEY_ID')).publicJwk();
  const apps: TestApp[] = [];
  for (const spec of TEST_APPS) {
    const appId = `test-${spec.label}-${crypto.randomUUID().slice(0, 8)}`;
    const idp = await makeIdentityProvider(appId);
    const keys = await registerApplication(table, {
      app_id: appId,
      oidc: idp.oidc,
      created_at: new Date(spec.created_at),
      trusted_keys: [trustedKey],
      legacy_provider_ids: spec.legacy_provider_ids,
    });
    apps.push(testApp(appId, spec, idp, keys));
  }
  project.provide('sandbox', {
    urls: { account: urls.account.replace(/\/+$/, ''), enclave: urls.enclave.replace(/\/+$/, ''), express: urls.express.replace(/\/+$/, '') },
    apps,
    dataDir: '',
  });
}

export default async function setup(project: TestProject) {
  return project.name === 'api-deployed' ? setupDeployed(project) : setupLocal(project);
}
