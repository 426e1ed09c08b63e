import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { KMSClient } from '@aws-sdk/client-kms';
import type { JSONWebKeySet } from 'jose';
import { DEFAULT_WALLET_GROUP_ID, type Application } from '../../shared/apps/application.ts';
import { getApplication, hashSecret, putApplication } from '../../shared/apps/app-registry.ts';
import { KmsOpJwtSigner } from '../../shared/crypto/kms-op-jwt-signer.ts';
import { createDocumentClient } from '../../shared/db/client.ts';

/**
 * `npm run app:create -- --app-id acme --provider-id acme-idp --issuer https://idp.acme.com
 *   [--audience acme-api] (--jwks-uri https://idp.acme.com/.well-known/jwks.json | --jwks-file jwks.json)
 *   --table <TableName output> --op-jwt-key <OpJwtKeyId output> [--created-at ISO]`
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
    audience: { type: 'string' },
    'jwks-uri': { type: 'string' },
    'jwks-file': { type: 'string' },
    table: { type: 'string', default: process.env.TABLE_NAME },
    'op-jwt-key': { type: 'string', default: process.env.OP_JWT_KMS_KEY_ID },
    'created-at': { type: 'string' },
  },
});

function fail(message: string): never {
  process.stderr.write(`app:create: ${message}\n`);
  process.exit(2);
}

const appId = values['app-id'] ?? fail('--app-id is required');
if (!/^[A-Za-z0-9._-]{1,64}$/.test(appId)) fail('--app-id must be 1-64 letters, digits, ".", "_" or "-"');
const providerId = values['provider-id'] ?? fail('--provider-id is required');
const issuer = values.issuer ?? fail('--issuer is required');
const tableName = values.table ?? fail('--table (or TABLE_NAME) is required: the stateful stack\'s TableName output');
const opJwtKeyId = values['op-jwt-key'] ?? fail('--op-jwt-key (or OP_JWT_KMS_KEY_ID) is required: the stateful stack\'s op_jwt key output');
if (Boolean(values['jwks-uri']) === Boolean(values['jwks-file'])) fail('give exactly one of --jwks-uri or --jwks-file');
const createdAt = values['created-at'] ? new Date(values['created-at']) : new Date();
if (Number.isNaN(createdAt.getTime())) fail('--created-at must be an ISO 8601 timestamp');

const jwks = values['jwks-file'] ? (JSON.parse(await readFile(values['jwks-file'], 'utf8')) as JSONWebKeySet) : undefined;
if (jwks && !Array.isArray(jwks.keys)) fail('--jwks-file must hold a JWKS ({"keys": [...]})');

const table = { doc: createDocumentClient(process.env.DYNAMODB_ENDPOINT), name: tableName };
if (await getApplication(table, appId)) fail(`an application "${appId}" already exists`);

const secretKey = `sk_${randomBytes(32).toString('base64url')}`;
const apiKey = `ak_${randomBytes(32).toString('base64url')}`;
const trustedKey = await new KmsOpJwtSigner(new KMSClient({}), opJwtKeyId).publicJwk();
const app: Application = {
  app_id: appId,
  created_at: createdAt.toISOString(),
  oidc: {
    provider_id: providerId,
    issuer,
    ...(values.audience ? { audience: values.audience } : {}),
    ...(jwks ? { jwks } : { jwks_uri: values['jwks-uri'] }),
  },
  secret_key_hash: hashSecret(secretKey),
  api_key_hash: hashSecret(apiKey),
  trusted_keys: [trustedKey],
  default_wallet_group_id: DEFAULT_WALLET_GROUP_ID,
};
await putApplication(table, app);

process.stdout.write(`Application "${appId}" registered. These keys are shown once and stored only as digests:\n`);
process.stdout.write(`  X-SERVICE-SECRET-KEY  ${secretKey}\n`);
process.stdout.write(`  X-SERVICE-API-KEY     ${apiKey}\n`);
