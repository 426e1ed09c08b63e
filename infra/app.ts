import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import * as v from 'valibot';
import { ChainsConfigSchema } from '../shared/chains/chain-config.ts';
import { ServiceStacks } from './services-stack.ts';
import { StatefulStack } from './stateful-stack.ts';

/** `-c deletionProtection=false` arrives as a string; cdk.json may hold a boolean. */
function booleanContext(app: App, key: string, fallback: boolean): boolean {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined) return fallback;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`Context "${key}" must be true or false, got ${JSON.stringify(value)}`);
}

/**
 * `-c venueUrls='{"venue_b":"https://…"}'` (a JSON string on the command line, an object in
 * cdk.json): the venues' API base URLs. Absent: no venue configured.
 */
function venueUrlsContext(app: App): Record<string, string> | undefined {
  const value: unknown = app.node.tryGetContext('venueUrls');
  if (value === undefined || value === '') return undefined;
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('Context "venueUrls" must be a JSON object of venue id to URL');
  return parsed as Record<string, string>;
}

/**
 * `-c platformFee='{"bps":10,"recipients":{"EVM":"0x…"}}'` (a JSON string on the command line, an
 * object in cdk.json): PLATFORM_FEE, checked by the stack. Absent: no fee.
 */
function platformFeeContext(app: App): unknown {
  const value: unknown = app.node.tryGetContext('platformFee');
  if (value === undefined || value === '') return undefined;
  return typeof value === 'string' ? JSON.parse(value) : value;
}

/** `-c name=a,b` (or a list in cdk.json): the non-empty entries. */
function listContext(app: App, key: string): string[] | undefined {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined || value === '') return undefined;
  const items = Array.isArray(value) ? value.map(String) : String(value).split(',');
  return items.map((item) => item.trim()).filter(Boolean);
}

const app = new App();
// `-c chainsConfig=path/to/chains.json`: chain ids, tokens and delegates (once deployed). Validated
// here; its rpc_url fields never reach the template (they go to the RPC URLs secret, docs/deploy.md).
const chainsConfigPath = (app.node.tryGetContext('chainsConfig') as string | undefined) ?? 'infra/config/chains.mainnet.json';
const chainsConfig = v.parse(ChainsConfigSchema, JSON.parse(readFileSync(chainsConfigPath, 'utf8')));
// The account and region the CLI resolved from the current credentials/profile.
const env = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };

const stateful = new StatefulStack(app, 'PerpWallet-Stateful', {
  env,
  description: 'Perp wallet: table and KMS keys',
  deletionProtection: booleanContext(app, 'deletionProtection', true),
  // `-c rpcUrlsSecret=name`: the Secrets Manager secret the stack creates for the RPC URLs
  // (default perp-wallet/rpc-urls); the operator puts its value (docs/deploy.md).
  rpcUrlsSecretName: app.node.tryGetContext('rpcUrlsSecret') as string | undefined,
  // `-c sponsorOperatorRoles=arn:aws:iam::…:role/…[,…]`: roles that may sign as the gas sponsor
  // (npm run sponsor:setup); the functions that sponsor are named by the stack itself.
  sponsorOperatorRoleArns: listContext(app, 'sponsorOperatorRoles'),
});

// PerpWallet-ApiGatewayLogging, -Enclave, -Transfers, -Account, -Express (docs/deploy.md, "Stacks").
new ServiceStacks(app, {
  prefix: 'PerpWallet-',
  env,
  table: stateful.table,
  enclaveKey: stateful.enclaveKey,
  accountKey: stateful.accountKey,
  opJwtKey: stateful.opJwtKey,
  sponsorKey: stateful.sponsorKey,
  rpcUrlsSecret: stateful.rpcUrlsSecret,
  chainsConfig,
  // `-c webAclArn=arn:aws:wafv2:…:regional/webacl/…`: associate that web ACL with each API's stage.
  webAclArn: (app.node.tryGetContext('webAclArn') as string | undefined) || undefined,
  // `-c apiGatewayCloudWatchRole=false` where the account's API Gateway logging role is managed elsewhere (docs/deploy.md).
  apiGatewayCloudWatchRole: booleanContext(app, 'apiGatewayCloudWatchRole', true),
  // Checked at synth (venue ids, http(s) URLs).
  venueUrls: venueUrlsContext(app),
  // `-c bridgeUrl=https://…`: the bridge API (BRIDGE_URL). Absent: LI.FI's public API (https://li.quest).
  bridgeUrl: (app.node.tryGetContext('bridgeUrl') as string | undefined) || undefined,
  // `-c platformFee='{…}'` (docs/deploy.md, "Transfers in AWS"). Absent: no platform fee.
  platformFee: platformFeeContext(app),
  // `-c sponsorPoolSize=16`: gas sponsors per EVM chain (SPONSOR_POOL_SIZE; give sponsor:setup the same --pool-size). Absent: 8.
  sponsorPoolSize: (app.node.tryGetContext('sponsorPoolSize') as number | string | undefined) ?? undefined,
});

app.synth();
