import { DEFAULT_MAX_TOKEN_AGE_SECONDS } from '../../shared/apps/application.ts';
import {
  accountUrlFrom,
  CliError,
  devDataDir,
  discoverSandbox,
  MAX_OP_JWT_TTL_SECONDS,
  mintDevToken,
  parseCli,
  runCli,
  usageError,
  wholeNumber,
} from './cli/sandbox.ts';

/**
 * `npm run token -- --sub alice [--ttl 3600] [--op]`: a JWT from the running sandbox's dev app
 * identity provider (its DATA_DIR, found through GET /sandbox/info). `--op` mints an op_jwt for the
 * enclave's /v2/ signing calls (at most 300 s). Refuses, in one line, whatever the server would
 * refuse: an APPS_FILE sandbox, another data dir, no dev app.
 */
const spec = {
  name: 'token',
  usage: 'npm run token -- --sub <user id> [--ttl <seconds>] [--op] [--account-url <url>] [--data-dir <dir>]',
  help: [
    "Prints a JWT for <user id> from the running sandbox's dev app (Authorization: Bearer for the account service, auth_jwt for the enclave).",
    "  --sub <user id>      the token's subject (required)",
    '  --ttl <seconds>      lifetime (default 3600, at most 86400; with --op default 300, at most 300)',
    "  --op                 an op_jwt for the enclave /v2/ signing calls (with the wallet's access_key)",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: help text showing the shell default ${ACCOUNT_PORT:-3000} literally
    '  --account-url <url>  the sandbox to follow (default ACCOUNT_URL, else http://127.0.0.1:${ACCOUNT_PORT:-3000})',
    "  --data-dir <dir>     the dev app's DATA_DIR when no sandbox is running (default DATA_DIR, else .data); must match the running sandbox's",
  ].join('\n'),
  options: {
    sub: { type: 'string' },
    ttl: { type: 'string' },
    op: { type: 'boolean', default: false },
    'account-url': { type: 'string' },
    'data-dir': { type: 'string' },
  },
  // `npm run token alice`, or `npm run token --sub alice` where npm kept --sub for itself.
  bareWordMeans: 'sub',
} as const;

await runCli(spec.name, async () => {
  const { values } = parseCli(spec);
  if (!values.sub) usageError(spec, '--sub <user id> is required');
  const ttl = values.ttl === undefined ? (values.op ? MAX_OP_JWT_TTL_SECONDS : 3600) : wholeNumber(spec, 'ttl', values.ttl);
  if (values.op && ttl > MAX_OP_JWT_TTL_SECONDS) {
    throw new CliError(`an op_jwt lives at most ${MAX_OP_JWT_TTL_SECONDS} seconds (the enclave refuses a longer one): --ttl ${ttl} is too long`, 2);
  }
  if (ttl > DEFAULT_MAX_TOKEN_AGE_SECONDS) {
    throw new CliError(`a user JWT lives at most ${DEFAULT_MAX_TOKEN_AGE_SECONDS} seconds (the services refuse a longer one): --ttl ${ttl} is too long`, 2);
  }
  const accountUrl = accountUrlFrom(values['account-url']);
  const info = await discoverSandbox({ accountUrl });
  const dataDir = await devDataDir(info, values['data-dir'] || process.env.DATA_DIR || undefined, accountUrl);
  process.stdout.write(`${await mintDevToken(dataDir, { sub: values.sub, ttlSeconds: ttl })}\n`);
});
