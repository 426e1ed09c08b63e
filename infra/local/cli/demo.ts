import { decodeJwt } from 'jose';
import { type Address, formatUnits, getAddress, keccak256, parseUnits, recoverAddress, stringToBytes } from 'viem';
import {
  type AccountClient,
  ApiError,
  createAccountClient,
  createEnclaveClient,
  type EnclaveClient,
  type Middleware,
  unwrap,
} from '../../../shared/client/index.ts';
import { CliError, discoverSandbox, parseCli, runCli, usageError, userCredentials } from './sandbox.ts';
import { changes, failureLine } from './task-view.ts';

/**
 * `npm run demo`: a guided walk through the product against the running sandbox, with the typed
 * client (shared/client/) for every call: an account and its wallets, a signature, faucet USDC, a
 * withdrawal, venue_b onboarding, a transfer to the venue watched to completion, and back; on the
 * dev app also a signing policy (a denial, shadow mode, the previous policy put back). Each
 * request is printed (method, path, body; credentials masked) with the essential part of its answer.
 * Any unexpected answer ends it with one line naming the section and the answer, and exit code 1.
 */
const SPEC = {
  name: 'demo',
  usage: 'npm run demo -- [--sub <user>] [--account-url <url>] [--token <jwt> --secret-key <key>]',
  help: [
    '  --sub <user>          the user to act as (default: a fresh demo-<random>, so every run starts clean)',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: help text showing the shell default ${ACCOUNT_PORT:-3000} literally
    "  --account-url <url>   the sandbox's account service (default: ACCOUNT_URL, else http://127.0.0.1:${ACCOUNT_PORT:-3000})",
    "  --token, --secret-key a user JWT and the app's secret key (or TOKEN and SECRET_KEY), for a sandbox started with",
    '                        APPS_FILE; without them the dev app of the running sandbox is used (npm start without APPS_FILE)',
  ].join('\n'),
  options: {
    sub: { type: 'string' },
    'account-url': { type: 'string' },
    token: { type: 'string' },
    'secret-key': { type: 'string' },
  },
} as const;

/** Where the demo withdraws to: an address nobody holds the key of. */
const EXTERNAL_ADDRESS = '0x000000000000000000000000000000000000dEaD';
const VENUE = 'venue_b';
const TASK_TIMEOUT_MS = 180_000;

// ---------- printing ----------

const out = (line = '') => process.stdout.write(`${line}\n`);

/** Enough of a credential to recognise it, never enough to use it. */
function mask(secret: string): string {
  return `${secret.slice(0, 6)}…(${secret.length} chars, masked)`;
}

/** Body fields that hold a credential (`token` alone is a coin, e.g. USDC). */
const SECRET_FIELD =
  /^(access_key|secret_key|api_key|private_key|secret|passphrase|service_token|[a-z_]*_jwt|[a-z_]*_secret|[a-z_]*_private_key|[a-z_]*_passphrase)$/i;

/** A request body as one line, any credential-like field masked. */
function bodyLine(text: string): string {
  if (!text) return '';
  try {
    return JSON.stringify(JSON.parse(text), (key, value) => (typeof value === 'string' && SECRET_FIELD.test(key) ? mask(value) : value));
  } catch {
    return `(${text.length} bytes)`;
  }
}

let sectionNumber = 0;
let sectionTitle = '';

function section(title: string, explanation: string): void {
  sectionNumber += 1;
  sectionTitle = title;
  out();
  out(`${sectionNumber}. ${title}`);
  out(`   ${explanation}`);
}

/** One line of an answer: `label  value`, aligned. */
function show(label: string, value: string | number | boolean | null): void {
  out(`     ${label.padEnd(22)} ${value}`);
}

function ok(line: string): void {
  out(`     ✓ ${line}`);
}

/** Prints every request (method, path and query, Idempotency-Key, body) and its status and time. */
function printingMiddleware(): Middleware {
  const started = new Map<string, number>();
  return {
    async onRequest({ request, id }) {
      started.set(id, performance.now());
      const url = new URL(request.url);
      const key = request.headers.get('idempotency-key');
      const body = bodyLine(await request.clone().text());
      out(`   → ${request.method} ${url.pathname}${url.search}${key ? `  Idempotency-Key: ${key}` : ''}${body ? `  ${body}` : ''}`);
      return request;
    },
    onResponse({ response, id }) {
      const ms = Math.round(performance.now() - (started.get(id) ?? performance.now()));
      started.delete(id);
      const replayed = response.headers.get('idempotent-replayed') === 'true' ? '  (Idempotent-Replayed: true)' : '';
      out(`   ← ${response.status} in ${ms} ms${replayed}`);
      return response;
    },
  };
}

// ---------- checks ----------

/** An answer that is not what the walk expects: ends the demo with exit code 1. */
function unexpected(what: string): never {
  throw new CliError(`section ${sectionNumber} (${sectionTitle}): ${what}`);
}

/** The call's data, or a CliError naming the section and the service's error. */
async function expectOk<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  try {
    return await unwrap(call);
  } catch (error) {
    if (error instanceof ApiError) unexpected(`answered ${error.message}${error.requestId ? ` (X-Request-Id ${error.requestId})` : ''}`);
    throw error;
  }
}

const USDC = (amount: string) => parseUnits(amount, 6);

// ---------- the task watcher ----------

type Task = Awaited<ReturnType<typeof readTask>>;

async function readTask(client: AccountClient, taskId: string) {
  return expectOk(client.GET('/task/{task_id}', { params: { path: { task_id: taskId } } }));
}

/**
 * Polls GET /task/{id} every 0.5 s and prints what changed (task-view.ts, as `npm run task:watch`
 * prints it) until the task settles; a failed or cancelled task ends the demo with the command
 * that resumes it.
 */
async function watchTask(quiet: AccountClient, taskId: string, resumeFlags: string): Promise<Task> {
  out(`   → GET /task/${taskId}  (every 0.5 s until it settles; only changes are printed)`);
  const started = performance.now();
  let previous: Task | undefined;
  for (;;) {
    const task = await readTask(quiet, taskId);
    const seconds = ((performance.now() - started) / 1000).toFixed(1).padStart(5);
    for (const line of changes(previous, task)) out(`     ${seconds} s  ${line}`);
    previous = task;
    if (task.status === 'completed') return task;
    if (task.status === 'failed' || task.status === 'cancelled') {
      unexpected(`${failureLine(task)}; resume and follow it: npm run task:watch -- ${taskId} --resume${resumeFlags}`);
    }
    if (performance.now() - started > TASK_TIMEOUT_MS)
      unexpected(`task ${taskId} still ${task.status} after ${TASK_TIMEOUT_MS / 1000} s; follow it: npm run task:watch -- ${taskId}${resumeFlags}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// ---------- signing policies ----------

/** What the demo's policy refuses: the account service's message signatures (POST /wallet/sign). */
const DENY_RULE = 'demo.no-account-signing';
const demoRules = () => [
  { id: DENY_RULE, action: 'deny' as const, operations: ['sign_data' as const, 'sign_message' as const], channels: ['account' as const] },
  {
    id: 'demo.everything-else',
    action: 'allow' as const,
    operations: ['sign_data' as const, 'sign_message' as const, 'sign_transaction' as const, 'sign_authorization' as const],
  },
];

/**
 * Sets a policy on the dev app, shows a denial (403 POLICY_DENIED with rule_id) and the same policy
 * in shadow mode, then PUTs back the policy the app had: the built-in default's rules when it had
 * none (there is no DELETE; GET then shows them as a stored version, built_in false).
 */
async function policiesSection(api: AccountClient, enclave: EnclaveClient): Promise<void> {
  section(
    'Signing policies (the dev app)',
    "PUT {tee_url}/v2/api/policies (app secret key) sets what the app's wallets may sign; the enclave holds every signature to it before the key is opened. POST /v2/api/policies/evaluate says what it would decide, signing nothing.",
  );
  enclave.use(printingMiddleware());
  const before = await expectOk(enclave.GET('/v2/api/policies'));
  show('policy in force', before.built_in ? `the built-in default (version 0, ${before.rules.length} rules)` : `version ${before.version} (${before.mode})`);
  const set = await expectOk(enclave.PUT('/v2/api/policies', { body: { mode: 'enforce', rules: demoRules() } }));
  show('version', set.version);
  const message = `perp-wallet demo policy ${new Date().toISOString()}`;
  const refused = await api.POST('/wallet/sign', { body: { message } });
  const error = (refused.error as { error?: { code?: string; rule_id?: string | null; message?: string } } | undefined)?.error;
  if (refused.response.status !== 403 || error?.code !== 'POLICY_DENIED' || error.rule_id !== DENY_RULE) {
    unexpected(`POST /wallet/sign answered ${refused.response.status} ${JSON.stringify(refused.error ?? refused.data)}, not 403 POLICY_DENIED (${DENY_RULE})`);
  }
  show('refused', `403 ${error.code}, rule_id ${error.rule_id}`);
  show('reason', error.message ?? '');
  const asked = await expectOk(
    enclave.POST('/v2/api/policies/evaluate', {
      body: { sub: 'demo-user', operation: 'sign_data', raw_data_hash: keccak256(stringToBytes(message)), channel: 'account' },
    }),
  );
  show('evaluate', `${asked.decision} (rule_id ${asked.rule_id})`);
  if (asked.decision !== 'deny') unexpected(`evaluate said ${asked.decision}, not deny`);

  out('   The same rules in shadow mode: a would-be denial is signed, and logged at WARN.');
  await expectOk(enclave.PUT('/v2/api/policies', { body: { mode: 'shadow', rules: demoRules() } }));
  const shadowed = await expectOk(
    enclave.POST('/v2/api/policies/evaluate', {
      body: { sub: 'demo-user', operation: 'sign_data', raw_data_hash: keccak256(stringToBytes(message)), channel: 'account' },
    }),
  );
  show('evaluate', `${shadowed.decision}${shadowed.shadow ? ' (shadow: true)' : ''}, rule_id ${shadowed.rule_id}`);
  if (shadowed.decision !== 'allow' || !shadowed.shadow) unexpected(`evaluate in shadow mode said ${JSON.stringify(shadowed)}`);
  const signed = await expectOk(api.POST('/wallet/sign', { body: { message } }));
  show('signed anyway', `${signed.signature.slice(0, 20)}…${signed.signature.slice(-8)}`);

  const restored = await expectOk(enclave.PUT('/v2/api/policies', { body: { mode: before.mode, rules: before.rules } }));
  show(
    'restored',
    before.built_in
      ? `version ${restored.version}: the built-in default's rules, now stored (no DELETE: GET shows built_in false)`
      : `version ${restored.version}: the rules of version ${before.version}`,
  );
}

// ---------- the walk ----------

/** The user a given token names (shown, not trusted: the service checks the token). */
function tokenSubject(token: string): string {
  try {
    return decodeJwt(token).sub ?? '(no sub in the token)';
  } catch {
    usageError(SPEC, '--token (or TOKEN) is not a JWT');
  }
}

async function main(): Promise<void> {
  const { values } = parseCli(SPEC);
  const token = values.token || process.env.TOKEN || undefined;
  const secretKey = values['secret-key'] || process.env.SECRET_KEY || undefined;
  if (values.sub && token) usageError(SPEC, "--sub names the user of a dev token the demo mints; with --token (or TOKEN) the token's sub is the user");
  if (Boolean(token) !== Boolean(secretKey)) usageError(SPEC, '--token and --secret-key (or TOKEN and SECRET_KEY) go together');
  const sub = values.sub || `demo-${crypto.randomUUID().slice(0, 8)}`;

  const info = token ? undefined : await discoverSandbox({ accountUrl: values['account-url'] });
  const credentials = await userCredentials({ accountUrl: values['account-url'], sub, token, secretKey, ttlSeconds: 900 });
  const user = token ? tokenSubject(credentials.token) : sub;
  const options = { baseUrl: credentials.accountUrl, token: credentials.token, secretKey: credentials.secretKey };
  const api = createAccountClient(options);
  api.use(printingMiddleware());
  const quiet = createAccountClient(options);
  // The flags `npm run task:watch` and `npm run tasks` need to act as this user (the credentials by
  // name, never by value): without them they act as alice, who cannot see this user's tasks.
  const resumeFlags = `${token ? ' --token "$TOKEN" --secret-key "$SECRET_KEY"' : ` --sub ${sub}`}${values['account-url'] ? ` --account-url ${credentials.accountUrl}` : ''}`;
  const watchCommand = (taskId: string) => `npm run task:watch -- ${taskId}${resumeFlags}`;

  out(`npm run demo: the whole product in one run, against the sandbox at ${credentials.accountUrl}`);
  if (info) out(`  sandbox data in ${info.data_dir}; applications: ${info.applications === 'dev' ? 'the dev app' : 'APPS_FILE'}`);
  out(`  acting as user "${user}"${token ? " (the token's sub)" : values.sub ? '' : ' (fresh for this run; --sub <user> picks one)'}`);
  out(`  every account-service call carries Authorization: Bearer ${mask(credentials.token)}`);
  out(`  and X-SERVICE-SECRET-KEY: ${mask(credentials.secretKey)} (the app's secret key; keep it on your server)`);

  section(
    'Create an account',
    'One account per user of your app: an EVM wallet (the same address on ETH, ARB, POL, INK) and a Solana wallet; their keys stay in the wallet enclave.',
  );
  const account = await expectOk(api.POST('/account'));
  const evm: Address = getAddress(account.public_address.ETH);
  show('user_id', account.user_id);
  show('EVM address', evm);
  show('Solana address', account.public_address.SOL);

  section(
    'Sign a message',
    'The account signs keccak256(message) with the EVM wallet (no EIP-191 prefix): for venue logins and typed data your backend prepares.',
  );
  const message = `perp-wallet demo ${new Date().toISOString()}`;
  const signed = await expectOk(api.POST('/wallet/sign', { body: { message } }));
  show('signature', `${signed.signature.slice(0, 20)}…${signed.signature.slice(-8)}`);
  const hash = keccak256(stringToBytes(message));
  if (signed.raw_data_hash !== hash) unexpected(`raw_data_hash ${signed.raw_data_hash} is not keccak256 of the message (${hash})`);
  const signer = await recoverAddress({ hash, signature: signed.signature as `0x${string}` });
  if (signer !== evm) unexpected(`the signature recovers to ${signer}, not the account's ${evm}`);
  ok(`recovers to the account's EVM address (checked here with viem)`);

  section(
    'Get test money from the faucet',
    'Sandbox only: POST /sandbox/faucet credits an address on a sandbox chain (real chain ids, USDC at its real address). 50 USDC and a little ETH for gas on Arbitrum.',
  );
  await expectOk(api.POST('/sandbox/faucet', { body: { chain: 'ARB', address: evm, token: 'USDC', amount: '50' } }));
  await expectOk(api.POST('/sandbox/faucet', { body: { chain: 'ARB', address: evm, token: 'ETH', amount: '0.01' } }));
  const funded = await expectOk(api.GET('/demo/wallet/balance', { params: { query: { chain: 'ARB' } } }));
  show('ARB USDC', funded.assets.USDC ?? '(none)');
  show('ARB ETH', funded.assets.ETH ?? '(none)');
  if (USDC(funded.assets.USDC ?? '0') < USDC('50'))
    unexpected(`the wallet holds ${funded.assets.USDC} USDC on ARB after the faucet, less than the 50 credited`);

  section(
    'Withdraw to an external address',
    "POST /withdraw sends from the user's wallet and answers once the transaction is included. Idempotency-Key makes it exactly once: the same request again returns the first result. gas_sponsored: the platform pays the gas (EIP-7702).",
  );
  const withdrawal = { to_address: EXTERNAL_ADDRESS, amount: '5', chain: 'ARB', token: 'USDC', gas_sponsored: true } as const;
  const withdrawKey = crypto.randomUUID();
  const sent = await expectOk(api.POST('/withdraw', { body: withdrawal, headers: { 'Idempotency-Key': withdrawKey } }));
  show('tx_hash', sent.tx_hash);
  show('from → to', `${sent.from_address} → ${sent.to_address}`);
  show('message', sent.message);
  out('   The same request again (a client retrying after a timeout):');
  const replay = await expectOk(api.POST('/withdraw', { body: withdrawal, headers: { 'Idempotency-Key': withdrawKey } }));
  if (replay.tx_hash !== sent.tx_hash) unexpected(`the retry sent another transaction (${replay.tx_hash})`);
  ok('same tx_hash: nothing was sent twice');

  section(
    `Onboard a venue (${VENUE})`,
    `${VENUE} is the sandbox's Hyperliquid: check what it needs (a 5 USDC first deposit and gas on ARB), then create the user's account there (signed by the user's wallet through the enclave).`,
  );
  const check = await expectOk(api.POST('/account/check-perp-dex-requirements', { body: { dex: VENUE } }));
  show('requirements_met', check.requirements_met);
  show('USDC required / held', `${check.requirements.usdc_required} / ${check.requirements.usdc_available} on ${check.requirements.chain}`);
  show('gas required / held', `${check.requirements.eth_required} / ${check.requirements.eth_available} ${check.requirements.gas_token}`);
  if (!check.requirements_met) unexpected(`requirements not met: ${check.message}`);
  const init = await expectOk(api.POST('/account/init-perp-dex', { body: { dex: VENUE } }));
  show('initialized', init.status.initialized);
  show('message', init.message);
  if (!init.status.initialized) unexpected(`${VENUE} is not initialized: ${init.message}`);

  // What the venue held before (a re-run with --sub may find money there), to check what arrives.
  const venueBefore = await expectOk(quiet.GET('/account/perp', { params: { query: { dex: VENUE } } }));
  const deposit = { source: 'self', destination: VENUE, amount: '20', chain: 'ARB', token: 'USDC' } as const;
  section(
    'Estimate a transfer to the venue',
    'POST /transfer/estimate-transfer-cost plans the route and prices every step: gas, bridge, venue and platform fees, all computed, and charged exactly as estimated.',
  );
  const estimate = await expectOk(api.POST('/transfer/estimate-transfer-cost', { body: deposit }));
  show('route', estimate.route.route_id);
  show('steps', estimate.steps.map((step) => `${step.action} (${step.dex}) ${step.cost_usdc} USDC`).join(', '));
  show('total cost', `${estimate.total_cost_usdc} USDC (gas ${estimate.total_cost_eth} ETH)`);
  show('amount received', `${estimate.route.amount_received} USDC at ${VENUE}`);

  section(
    'Transfer to the venue',
    'POST /transfer answers 202 at once with a task id; the steps run in a Step Functions execution (locally: the same state machine, run in the sandbox).',
  );
  const created = await expectOk(api.POST('/transfer', { body: deposit, headers: { 'Idempotency-Key': crypto.randomUUID() } }));
  show('task_id', created.task_id);
  show('message', created.message);
  show('follow it', watchCommand(created.task_id));

  section(
    'Watch the task',
    `GET /task/{task_id} shows the status (pending → in_progress → completed) and each step with its transaction hashes; here it is polled until it settles (the "follow it" command above does the same in another terminal: a task is seen only by its own user, hence ${token ? '--token' : '--sub'}).`,
  );
  const inbound = await watchTask(quiet, created.task_id, resumeFlags);
  ok(`completed: ${inbound.progress.total_steps} step(s)`);

  section(`Read the balance at ${VENUE}`, "GET /account/perp reads the user's balance from the venue itself, with the venue's transfer rules.");
  const atVenue = await expectOk(api.GET('/account/perp', { params: { query: { dex: VENUE } } }));
  if (!atVenue.assets) unexpected(`the venue could not be read: ${atVenue.error}`);
  show('balance', `${atVenue.assets.balance} USDC`);
  show('available to withdraw', `${atVenue.assets.available_for_withdrawal} USDC`);
  if (atVenue.transfer_rules) show('withdrawal fee', `${atVenue.transfer_rules.withdrawal.fee.amount} ${atVenue.transfer_rules.withdrawal.fee.token}`);
  const arrived = USDC(atVenue.assets.balance) - USDC(venueBefore.assets?.balance ?? '0');
  if (arrived !== USDC(estimate.route.amount_received)) {
    unexpected(`${formatUnits(arrived, 6)} USDC arrived at the venue, not the ${estimate.route.amount_received} the estimate said`);
  }
  ok('exactly the amount the estimate said would arrive');

  section(
    `Transfer back from ${VENUE}`,
    "The same endpoint the other way: the venue pays out to the user's wallet (less its withdrawal fee and the platform fee).",
  );
  const walletBefore = await expectOk(quiet.GET('/demo/wallet/balance', { params: { query: { chain: 'ARB' } } }));
  const back = await expectOk(
    api.POST('/transfer', {
      body: { source: VENUE, destination: 'self', amount: '10', chain: 'ARB', token: 'USDC' },
      headers: { 'Idempotency-Key': crypto.randomUUID() },
    }),
  );
  show('task_id', back.task_id);
  show('follow it', watchCommand(back.task_id));
  const outbound = await watchTask(quiet, back.task_id, resumeFlags);
  ok(`completed: ${outbound.progress.total_steps} step(s)`);
  const walletAfter = await expectOk(quiet.GET('/demo/wallet/balance', { params: { query: { chain: 'ARB' } } }));
  const received = USDC(walletAfter.assets.USDC ?? '0') - USDC(walletBefore.assets.USDC ?? '0');
  if (received <= 0n) unexpected(`the task completed but the wallet's ARB USDC did not grow (${walletBefore.assets.USDC} → ${walletAfter.assets.USDC})`);
  show('arrived in the wallet', `${formatUnits(received, 6)} USDC (10 less the venue's withdrawal fee and the platform fee)`);

  section('Final balances', 'Where the money is now, read from the chain and from the venue.');
  const wallet = await expectOk(api.GET('/demo/wallet/balance', { params: { query: { chain: 'ARB' } } }));
  const venue = await expectOk(api.GET('/account/perp', { params: { query: { dex: VENUE } } }));
  show('wallet ARB USDC', wallet.assets.USDC ?? '(none)');
  show('wallet ARB ETH', wallet.assets.ETH ?? '(none)');
  show(`${VENUE} balance`, venue.assets ? `${venue.assets.balance} USDC` : `unreadable: ${venue.error}`);

  if (info?.applications === 'dev') await policiesSection(api, createEnclaveClient({ baseUrl: info.urls.enclave, secretKey: credentials.secretKey }));
  else out("\n(Signing policies are shown on the dev app only: with --token the demo leaves your app's policy alone.)");
  out();
  out(
    `Done: account, signature, faucet, withdrawal, venue onboarding and two transfers${info?.applications === 'dev' ? ', a signing policy' : ''}, all through the typed client (shared/client/).`,
  );
  out(`This user's tasks: npm run tasks --${resumeFlags}`);
  out('Next: docs/guide/ for each service, docs/openapi/ for the reference, GET /docs on each service for the rendered page.');
}

await runCli('demo', async () => {
  try {
    await main();
  } catch (error) {
    // The sandbox stopped mid-walk, or the URL is wrong: one line, not a stack trace.
    if (error instanceof TypeError && /fetch failed/.test(error.message)) {
      throw new CliError(
        `section ${sectionNumber} (${sectionTitle || 'start'}): the account service did not answer (${(error.cause as Error | undefined)?.message ?? error.message}); is the sandbox running (npm start)?`,
      );
    }
    throw error;
  }
});
