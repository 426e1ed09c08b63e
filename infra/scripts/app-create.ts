import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { KMSClient } from '@aws-sdk/client-kms';
import type { JSONWebKeySet } from 'jose';
import { audienceProblem, MAX_TOKEN_AGE_BOUNDS } from '../../shared/apps/application.ts';
import { registerApplication } from '../../shared/apps/register-application.ts';
import { KmsOpJwtSigner } from '../../shared/crypto/kms-op-jwt-signer.ts';
import { createDocumentClient } from '../../shared/db/client.ts';
import { ConflictError, ValidationError } from '../../shared/errors.ts';
import { PLATFORM_APP_ID } from '../../shared/withdrawals/gas-sponsor.ts';
import { ensurePlatformApplication, platformGasSponsor, scriptSponsorSigner, scriptTable } from './platform-app.ts';

/**
 * `npm run app:create -- --app-id acme --provider-id acme-idp --issuer https://idp.acme.com
 *   --audience acme-api [--audience acme-mobile ...] (the client id(s) the provider puts in "aud": required)
 *   [--max-token-age <seconds, at most the 86400 default: user JWTs older, or living longer, are refused>]
 *   (--jwks-uri https://idp.acme.com/.well-known/jwks.json | --jwks-file jwks.json)
 *   --table <TableName output> --op-jwt-key <OpJwtKeyId output> [--created-at ISO]
 *   [--legacy-provider-id <id of the deprecated iframe login> ...]`
 * `npm run app:create -- --platform --table … --sponsor-key <SponsorKeyId> [--enclave-url <EnclaveApiUrl>]`:
 *   the platform application (gas sponsorship), trusting the sponsor key alone (an existing one
 *   that trusted the op_jwt key is moved to it), printing the sponsor wallet's address. `npm run
 *   sponsor:setup` does this too, and the rest of a chain's gas sponsorship.
 *
 * Registers an application in the deployed table (credentials from the usual AWS environment;
 * DYNAMODB_ENDPOINT for LocalStack) and prints its secret key and API key once. Only their
 * sha256 digests are stored. The account service's KMS op_jwt key is registered as trusted.
 */
const { values } = parseArgs({
  options: {
    'app-id': { type: 'string' },
    'provider-id': { type: 'string' },
    issuer: { type: 'string' },
    audience: { type: 'string', multiple: true },
    'max-token-age': { type: 'string' },
    'jwks-uri': { type: 'string' },
    'jwks-file': { type: 'string' },
    table: { type: 'string', default: process.env.TABLE_NAME },
    'op-jwt-key': { type: 'string', default: process.env.OP_JWT_KMS_KEY_ID },
    'sponsor-key': { type: 'string', default: process.env.SPONSOR_KMS_KEY_ID },
    'created-at': { type: 'string' },
    'legacy-provider-id': { type: 'string', multiple: true },
    platform: { type: 'boolean', default: false },
    'enclave-url': { type: 'string' },
  },
});

function fail(message: string): never {
  process.stderr.write(`app:create: ${message}\n`);
  process.exit(2);
}

if (values.platform) await registerPlatform();

const appId = values['app-id'] ?? fail('--app-id is required');
if (!/^[A-Za-z0-9._-]{1,64}$/.test(appId)) fail('--app-id must be 1-64 letters, digits, ".", "_" or "-"');
const providerId = values['provider-id'] ?? fail('--provider-id is required');
const issuer = values.issuer ?? fail('--issuer is required');
const audiences = values.audience ?? [];
const audienceProblemText = audienceProblem(audiences);
if (audienceProblemText) fail(`--audience ${audienceProblemText} (repeat --audience for several)`);
const tableName = values.table ?? fail("--table (or TABLE_NAME) is required: the stateful stack's TableName output");
const opJwtKeyId = values['op-jwt-key'] ?? fail("--op-jwt-key (or OP_JWT_KMS_KEY_ID) is required: the stateful stack's op_jwt key output");
if (Boolean(values['jwks-uri']) === Boolean(values['jwks-file'])) fail('give exactly one of --jwks-uri or --jwks-file');
const maxTokenAge = values['max-token-age'] === undefined ? undefined : Number(values['max-token-age']);
if (maxTokenAge !== undefined && !(Number.isInteger(maxTokenAge) && maxTokenAge >= MAX_TOKEN_AGE_BOUNDS.min && maxTokenAge <= MAX_TOKEN_AGE_BOUNDS.max)) {
  fail(`--max-token-age must be whole seconds from ${MAX_TOKEN_AGE_BOUNDS.min} to ${MAX_TOKEN_AGE_BOUNDS.max}`);
}
const createdAt = values['created-at'] ? new Date(values['created-at']) : new Date();
if (Number.isNaN(createdAt.getTime())) fail('--created-at must be an ISO 8601 timestamp');

const jwks = values['jwks-file'] ? (JSON.parse(await readFile(values['jwks-file'], 'utf8')) as JSONWebKeySet) : undefined;
if (jwks && !Array.isArray(jwks.keys)) fail('--jwks-file must hold a JWKS ({"keys": [...]})');

const table = { doc: createDocumentClient(process.env.DYNAMODB_ENDPOINT), name: tableName };
const trustedKey = await new KmsOpJwtSigner(new KMSClient({}), opJwtKeyId).publicJwk();
try {
  const { secret_key, api_key } = await registerApplication(table, {
    app_id: appId,
    created_at: createdAt,
    oidc: {
      provider_id: providerId,
      issuer,
      audience: audiences.length === 1 ? audiences[0]! : audiences,
      ...(maxTokenAge !== undefined ? { max_token_age_seconds: maxTokenAge } : {}),
      ...(jwks ? { jwks } : { jwks_uri: values['jwks-uri'] }),
    },
    trusted_keys: [trustedKey],
    legacy_provider_ids: values['legacy-provider-id'] ?? [],
  });
  process.stdout.write(`Application "${appId}" registered. These keys are shown once and stored only as digests:\n`);
  process.stdout.write(`  X-SERVICE-SECRET-KEY  ${secret_key}\n`);
  process.stdout.write(`  X-SERVICE-API-KEY     ${api_key}\n`);
} catch (error) {
  if (error instanceof ConflictError || error instanceof ValidationError) fail(error.message);
  throw error;
}

/**
 * `--platform`: registers the platform application, whose enclave wallet is the gas sponsor
 * (shared/withdrawals/gas-sponsor.ts), and with `--enclave-url` prints that wallet's address so
 * it can be funded on each EVM chain. Idempotent.
 */
async function registerPlatform(): Promise<never> {
  const table = scriptTable(values.table ?? fail('--table (or TABLE_NAME) is required'));
  const signer =
    scriptSponsorSigner(values['sponsor-key']) ?? fail("--sponsor-key (or SPONSOR_KMS_KEY_ID) is required: the stateful stack's SponsorKeyId output");
  const registered = await ensurePlatformApplication(table, signer);
  process.stdout.write(`Platform application "${PLATFORM_APP_ID}" is ${registered === 'rekeyed' ? 'moved to the sponsor key' : 'registered'}.\n`);
  if (values['enclave-url']) {
    const sponsor = platformGasSponsor(values['enclave-url'], signer, table);
    process.stdout.write(`Gas sponsor address (fund it with native coin on every EVM chain): ${await sponsor.address()}\n`);
  }
  process.exit(0);
}
