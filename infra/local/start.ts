import { parseArgs } from 'node:util';

/**
 * `npm start`: the three services on 127.0.0.1 with no AWS account. Configuration by environment:
 * ACCOUNT_PORT (3000), ENCLAVE_PORT (3001), EXPRESS_PORT (3002), DATA_DIR (.data),
 * DYNAMODB_ENDPOINT (embedded dynalite when unset; SANDBOX_DYNAMODB_STORE=memory keeps its table in memory), APPS_FILE (a generated dev app when unset),
 * TABLE_NAME (perp-wallet), V1_RETIREMENT_AT (read by the enclave functions; default end of 2026-07-31 UTC),
 * LOG_LEVEL (info; debug, warn, error, silent) for the functions' JSON logs, SANDBOX_RPC_CREDENTIAL
 * (random) the key the functions' RPC URLs carry. Access log: one JSON line per request on stdout
 * (`--quiet` turns it off).
 */
const { values } = parseArgs({ options: { quiet: { type: 'boolean', default: false } } });
const env = process.env;

function port(name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    process.stderr.write(`${name} must be a port number (0-65535), got "${raw}"\n`);
    process.exit(2);
  }
  return value;
}

const dataDir = env.DATA_DIR || '.data';
// First line, before the start-up's own log lines: nobody should mistake this for AWS.
process.stdout.write(`LOCAL SANDBOX starting (no AWS; data in ${dataDir})\n`);
// Imported after that line: loading the sandbox chains prints warnings of its own.
const { LocalRuntimeError, startLocalRuntime } = await import('./runtime.ts');
const runtime = await startLocalRuntime({
  dataDir,
  ports: { account: port('ACCOUNT_PORT', 3000), enclave: port('ENCLAVE_PORT', 3001), express: port('EXPRESS_PORT', 3002) },
  dynamodbEndpoint: env.DYNAMODB_ENDPOINT || undefined,
  appsFile: env.APPS_FILE || undefined,
  tableName: env.TABLE_NAME || undefined,
  rpcCredential: env.SANDBOX_RPC_CREDENTIAL || undefined,
  onRequest: values.quiet ? undefined : (record) => process.stdout.write(`${JSON.stringify({ type: 'access', ...record })}\n`),
}).catch((error: unknown) => {
  // What the user can fix gets one clear line; anything else keeps its stack trace.
  if (error instanceof LocalRuntimeError) {
    process.stderr.write(`npm start: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
});

const out = process.stdout;
/** The CLIs look for the sandbox at ACCOUNT_URL, else port 3000: on another port they need it said. */
const cli = runtime.urls.account === 'http://127.0.0.1:3000' ? '' : `ACCOUNT_URL=${runtime.urls.account} `;
out.write(`\nLOCAL SANDBOX (no AWS; data in ${dataDir}, DynamoDB at ${runtime.dynamodbEndpoint})\n`);
out.write(`  account service   ${runtime.urls.account}\n`);
out.write(`  wallet enclave    ${runtime.urls.enclave}\n`);
out.write(`  express wallet    ${runtime.urls.express}\n`);
out.write(`API reference: GET /docs on each service (${runtime.urls.account}/docs); the OpenAPI document at GET /openapi.json\n`);
out.write(`Sandbox chains (GET ${runtime.urls.account}/sandbox/chains; POST /sandbox/faucet credits an address):\n`);
for (const chain of runtime.chains.chains) {
  out.write(
    `  ${chain.chain.padEnd(4)} ${'chain_id' in chain ? `chain id ${String(chain.chain_id).padEnd(6)}` : 'litesvm        '} ${chain.rpc_url}  ${chain.tokens.map((t) => t.token).join(', ')}\n`,
  );
}
out.write(
  `Sandbox venues (GET ${runtime.urls.account}/sandbox/venues; POST /sandbox/faults): ${runtime.venues.venues.map((v) => `${v.dex} ${v.url}`).join(', ') || 'none'}\n`,
);
out.write(`Prices: Chainlink feeds (ETH, POL, SOL in USD) on the ETH chain; GET ${runtime.urls.account}/sandbox/prices reads them, POST sets them\n`);
out.write(
  `Transfers: Step Functions (local, same ASL) ${runtime.stepFunctions.endpoint} (GET /executions lists them with transition counts); sandbox bridge GET ${runtime.urls.account}/sandbox/bridge\n`,
);
out.write(
  `Events: GET ${runtime.urls.account}/events (the app's log); webhooks: POST /webhook-endpoints with an http://127.0.0.1 receiver (docs/guide/webhooks.md); the table's stream and the delivery queue (under ${dataDir}/sqs) run as in AWS\n`,
);
out.write(
  `IAM: ${runtime.iam.mode} (SANDBOX_IAM=enforce|warn|off): each function's DynamoDB, KMS, SQS and Step Functions calls are authorised as its synthesized role (docs/sandbox-iam.md)\n`,
);
out.write('\n');
if (env.APPS_FILE) {
  out.write(`Applications from ${env.APPS_FILE}: ${runtime.apps.map((app) => app.app_id).join(', ')}\n`);
} else {
  const [dev] = runtime.apps;
  out.write(`Dev app "${dev!.app_id}" (identity provider "${dev!.oidc.provider_id}", issuer ${dev!.oidc.issuer}):\n`);
  out.write(`  X-SERVICE-SECRET-KEY: ${dev!.secret_key}   (account service, wallet enclave, express GET /v1/identity/provider)\n`);
  out.write(`  X-SERVICE-API-KEY:    ${dev!.api_key}   (express wallet endpoints: /v2/wallet, /v2/wallet/sign/*)\n`);
  out.write(
    `Try:  curl -X POST ${runtime.urls.account}/account -H "Authorization: Bearer $(${cli}npm run -s token -- --sub alice)" -H "X-SERVICE-SECRET-KEY: ${dev!.secret_key}"\n`,
  );
}
// What to do next, in a second terminal (the CLIs find the sandbox at ACCOUNT_URL, else port 3000).
const userFlags = env.APPS_FILE ? ' --token <user jwt> --secret-key <secret key>' : '';
const next: Array<[string, string]> = [
  [`npm run demo${userFlags ? ` --${userFlags}` : ''}`, 'the main flows in one run'],
  ...(env.APPS_FILE ? [] : ([['npm run token -- --sub alice [--op]', 'a user JWT (--op: an enclave op_jwt, at most 300 s)']] as Array<[string, string]>)),
  [`npm run task:watch -- <task_id>${userFlags}`, 'follow a transfer task to its end'],
];
out.write(`Next, in a second terminal${cli ? ` (first: export ${cli.trim()})` : ''}:\n`);
const width = Math.max(...next.map(([command]) => command.length));
for (const [command, what] of next) out.write(`  ${command.padEnd(width)}   ${what}\n`);
out.write(`  API reference ${runtime.urls.account}/docs; walk-through docs/guide/getting-started.md\n`);
out.write(`ready ${JSON.stringify(runtime.urls)}\n`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    runtime.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
