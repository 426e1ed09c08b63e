import { App, Stack, type CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES, type RouteDefinition, type ServiceName } from '../../functions/routes.ts';
import { keyUseTag } from '../../infra/constructs/key-use.ts';
import { ServicesStack, toHttpRouteKey } from '../../infra/services-stack.ts';
import { DEFAULT_RPC_URLS_SECRET_NAME, StatefulStack } from '../../infra/stateful-stack.ts';
import { buildStacks } from './support/stacks.ts';
import { TABLE_KEY_SCHEMA } from '../../shared/db/table-definition.ts';
import { RPC_URLS_PLACEHOLDER_KEY } from '../../shared/chains/rpc-urls.ts';

type Resources = Record<string, { Properties?: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string }>;
type KeyName = 'enclaveKey' | 'accountKey' | 'opJwtKey';
/** The `needs` field of each key. */
const KEY_NEED = { enclaveKey: 'enclaveWalletKey', accountKey: 'accountAccessKey', opJwtKey: 'opJwtKey' } as const;
const KEY_PURPOSE = { enclaveKey: 'enclave-wallet', accountKey: 'account-access-keys', opJwtKey: 'op-jwt' } as const;

const SERVICES: readonly ServiceName[] = ['account', 'enclave', 'express'];

// Synthesising bundles every handler with esbuild: do it once for the whole file.
let stateful: StatefulStack;
let services: ServicesStack;
let statefulTemplate: Template;
let servicesTemplate: Template;

beforeAll(() => {
  const app = new App();
  ({ stateful, services } = buildStacks(app));
  statefulTemplate = Template.fromStack(stateful);
  servicesTemplate = Template.fromStack(services);
}, 120_000);

function logicalId(construct: IConstruct): string {
  return Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnResource);
}

function functionLogicalId(routeId: string): string {
  const fn = services.functions.get(routeId);
  if (!fn) throw new Error(`no function for route ${routeId}`);
  return logicalId(fn.lambda);
}

function roleLogicalId(routeId: string): string {
  const role = services.functions.get(routeId)?.lambda.role;
  if (!role) throw new Error(`no role for route ${routeId}`);
  return logicalId(role);
}

/**
 * How the services stack refers to a stateful resource's ARN: the import of the export holding it
 * (`Fn::GetAtt … Arn`, or `Ref` for a secret, whose Ref is its ARN).
 */
function importedArn(resource: IConstruct, via: 'GetAtt' | 'Ref' = 'GetAtt'): unknown {
  const id = logicalId(resource);
  const value = via === 'Ref' ? { Ref: id } : { 'Fn::GetAtt': [id, 'Arn'] };
  const outputs = statefulTemplate.toJSON().Outputs as Record<string, { Value: unknown; Export?: { Name: string } }>;
  const exported = Object.values(outputs).find((o) => JSON.stringify(o.Value) === JSON.stringify(value));
  if (!exported?.Export) throw new Error(`${resource.node.path} ARN is not exported`);
  return { 'Fn::ImportValue': exported.Export.Name };
}

const importedKeyArn = (key: KeyName) => importedArn(stateful[key]);

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

type Statement = Record<string, unknown>;
type PolicyDocument = { Statement: Statement[] };

/** Every IAM statement attached to a role of the services stack, with that role's logical id. */
function roleStatements(): Array<{ role: string; statement: Statement }> {
  const out: Array<{ role: string; statement: Statement }> = [];
  for (const policy of Object.values(servicesTemplate.findResources('AWS::IAM::Policy') as Resources)) {
    const props = policy.Properties as { PolicyDocument: PolicyDocument; Roles: Array<{ Ref: string }> };
    for (const statement of props.PolicyDocument.Statement) for (const role of props.Roles) out.push({ role: role.Ref, statement });
  }
  for (const [roleId, role] of Object.entries(servicesTemplate.findResources('AWS::IAM::Role') as Resources)) {
    const inline = (role.Properties?.Policies ?? []) as Array<{ PolicyDocument: PolicyDocument }>;
    for (const policy of inline) for (const statement of policy.PolicyDocument.Statement) out.push({ role: roleId, statement });
  }
  return out;
}

/** Does `statement` allow `action` (or a wildcard covering it) on `resource` (`undefined`: on anything)? */
function allows(statement: Statement, action: string, resource?: unknown): boolean {
  const service = action.split(':')[0];
  return (
    statement.Effect === 'Allow' &&
    asArray(statement.Action).some((a) => a === action || a === '*' || a === `${service}:*`) &&
    (resource === undefined || asArray(statement.Resource).some((r) => r === '*' || JSON.stringify(r) === JSON.stringify(resource)))
  );
}

/**
 * Role logical ids that some IAM statement allows `action` (or a wildcard covering it) on
 * `resource` (or `*`): standalone AWS::IAM::Policy resources and roles' inline policies.
 */
function rolesAllowed(action: string, resource?: unknown): Set<string> {
  return new Set(roleStatements().filter(({ statement }) => allows(statement, action, resource)).map(({ role }) => role));
}

const rolesOf = (routes: readonly RouteDefinition[]) => new Set(routes.map((route) => roleLogicalId(route.id)));

/** Roles of the routes whose `needs` list `operation` for `key`. */
function rolesNeedingKey(key: KeyName, operation: string): Set<string> {
  return rolesOf(ROUTES.filter((route) => (route.needs[KEY_NEED[key]] as readonly string[] | undefined)?.includes(operation)));
}

const HEALTH_AND_NOT_FOUND = ROUTES.filter((route) => route.routeKey === 'GET /health' || route.routeKey === '$default');

function environmentOf(routeId: string): Record<string, unknown> {
  return servicesTemplate.toJSON().Resources[functionLogicalId(routeId)].Properties.Environment.Variables;
}

describe('services stack: functions', () => {
  it('makes one function per route and nothing else', () => {
    const functions = servicesTemplate.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions).sort()).toEqual(ROUTES.map((route) => functionLogicalId(route.id)).sort());
  });

  it('runs every function on nodejs24.x, arm64, traced, with source maps and the API timeout', () => {
    for (const fn of Object.values(servicesTemplate.findResources('AWS::Lambda::Function') as Resources)) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        MemorySize: 512,
        Timeout: 29,
        TracingConfig: { Mode: 'Active' },
        Environment: { Variables: { NODE_OPTIONS: '--enable-source-maps', POWERTOOLS_METRICS_NAMESPACE: 'PerpWallet', LOG_LEVEL: 'INFO' } },
      });
    }
  });

  it('keeps each function\'s logs for one month in its own log group', () => {
    // One per function, one access log per API.
    servicesTemplate.resourceCountIs('AWS::Logs::LogGroup', ROUTES.length + 3);
    servicesTemplate.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    for (const route of ROUTES) {
      const logGroupId = logicalId(services.functions.get(route.id)!.logGroup);
      expect(servicesTemplate.toJSON().Resources[functionLogicalId(route.id)].Properties.LoggingConfig).toEqual({ LogGroup: { Ref: logGroupId } });
    }
  });

  it('names each function\'s service for Powertools', () => {
    for (const route of ROUTES) expect(environmentOf(route.id).POWERTOOLS_SERVICE_NAME, route.id).toBe(route.service);
  });

  it('gives each function exactly the environment its needs imply', () => {
    const enclaveApiId = logicalId(services.apis.enclave);
    for (const route of ROUTES) {
      const { needs } = route;
      const expected = ['NODE_OPTIONS', 'POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_METRICS_NAMESPACE', 'LOG_LEVEL'];
      if (needs.table) expected.push('TABLE_NAME');
      if (needs.enclaveWalletKey || needs.accountAccessKey) expected.push('KEY_PROVIDER');
      if (needs.enclaveWalletKey) expected.push('ENCLAVE_KMS_KEY_ID');
      if (needs.accountAccessKey) expected.push('ACCOUNT_KMS_KEY_ID');
      if (needs.opJwtKey) expected.push('OP_JWT_SIGNER', 'OP_JWT_KMS_KEY_ID');
      if (needs.enclaveUrl) expected.push('TEE_URL');
      if (needs.chains) expected.push('CHAINS_CONFIG', 'RPC_URLS_SECRET');
      if (needs.delegates) expected.push('ALLOWED_7702_DELEGATES');
      const variables = environmentOf(route.id);
      expect(Object.keys(variables).sort(), route.id).toEqual(expected.sort());
      if (needs.enclaveUrl) expect(variables.TEE_URL).toEqual({ 'Fn::GetAtt': [enclaveApiId, 'ApiEndpoint'] });
      if (needs.enclaveWalletKey || needs.accountAccessKey) expect(variables.KEY_PROVIDER).toBe('kms');
      if (needs.opJwtKey) expect(variables.OP_JWT_SIGNER).toBe('kms');
    }
  });

  it('keeps RPC URLs out of the templates: no URL in any environment, CHAINS_CONFIG without rpc_url, the secret\'s ARN instead', () => {
    for (const route of ROUTES) {
      const variables = environmentOf(route.id);
      for (const [name, value] of Object.entries(variables)) {
        if (typeof value === 'string') expect(value, `${route.id} ${name}`).not.toMatch(/https?:|wss?:|rpc_url/i);
      }
      if (route.needs.chains) {
        expect(variables.RPC_URLS_SECRET).toEqual(importedArn(stateful.rpcUrlsSecret, 'Ref'));
        expect(Object.keys(JSON.parse(variables.CHAINS_CONFIG as string))).toEqual(expect.arrayContaining(['ETH', 'ARB', 'POL', 'INK', 'SOL']));
      }
    }
    for (const template of [servicesTemplate, statefulTemplate]) expect(JSON.stringify(template.toJSON())).not.toMatch(/publicnode|arbitrum\.io|polygon-rpc|inkonchain|solana\.com|https?:\/\/[^"]*(rpc|mainnet)/);
  });
});

describe('services stack: HTTP APIs', () => {
  it('has three HTTP APIs carrying exactly the routes of ROUTES, each to its own function', () => {
    servicesTemplate.resourceCountIs('AWS::ApiGatewayV2::Api', 3);
    const resources = servicesTemplate.toJSON().Resources as Resources;
    const routes = Object.values(servicesTemplate.findResources('AWS::ApiGatewayV2::Route') as Resources);
    expect(routes).toHaveLength(ROUTES.length);

    for (const service of SERVICES) {
      const apiId = logicalId(services.apis[service]);
      const expected = ROUTES.filter((route) => route.service === service);
      const actual = routes.filter((route) => JSON.stringify(route.Properties?.ApiId) === JSON.stringify({ Ref: apiId }));
      expect(actual.map((route) => route.Properties?.RouteKey).sort()).toEqual(expected.map((route) => route.routeKey).sort());

      for (const route of expected) {
        const deployed = actual.find((r) => r.Properties?.RouteKey === route.routeKey)!;
        const target = JSON.stringify(deployed.Properties?.Target);
        const integrationId = /"Ref":"([^"]+)"/.exec(target)?.[1];
        expect(integrationId, `integration of ${route.id}`).toBeDefined();
        expect(resources[integrationId!]?.Properties?.IntegrationUri).toEqual({ 'Fn::GetAtt': [functionLogicalId(route.id), 'Arn'] });
      }
    }
  });

  it('throttles each API\'s default stage', () => {
    servicesTemplate.resourceCountIs('AWS::ApiGatewayV2::Stage', 3);
    servicesTemplate.allResourcesProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      DefaultRouteSettings: { ThrottlingRateLimit: Match.anyValue(), ThrottlingBurstLimit: Match.anyValue() },
    });
  });

  it('writes each API\'s access log as JSON request metadata (no headers, query or body) to its own log group', () => {
    const stages = Object.values(servicesTemplate.findResources('AWS::ApiGatewayV2::Stage') as Resources);
    const logGroups = servicesTemplate.toJSON().Resources as Resources;
    const destinations = new Set<string>();
    for (const stage of stages) {
      const settings = stage.Properties?.AccessLogSettings as { DestinationArn: { 'Fn::GetAtt': [string, string] }; Format: string };
      const [logGroupId] = settings.DestinationArn['Fn::GetAtt'];
      expect(logGroups[logGroupId]?.Properties?.RetentionInDays).toBe(30);
      destinations.add(logGroupId);
      const format = JSON.parse(settings.Format) as Record<string, string>;
      expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status', routeKey: '$context.routeKey' });
      expect(settings.Format).not.toMatch(/request\.header|querystring|\$input|authorizer|identity\.user|apiKey/i);
    }
    expect(destinations.size).toBe(3);
  });

  it('outputs the three API URLs', () => {
    for (const name of ['AccountApiUrl', 'EnclaveApiUrl', 'ExpressApiUrl']) servicesTemplate.hasOutput(name, {});
  });

  it('rejects route keys API Gateway would not accept', () => {
    expect(() => toHttpRouteKey('FETCH /x')).toThrow(/Unsupported route key/);
    expect(() => toHttpRouteKey('GET account')).toThrow(/Unsupported route key/);
    expect(toHttpRouteKey('$default').key).toBe('$default');
  });
});

describe('least privilege per route', () => {
  it('gives health and not-found functions nothing beyond their own logs and X-Ray', () => {
    expect(HEALTH_AND_NOT_FOUND).toHaveLength(6);
    for (const route of HEALTH_AND_NOT_FOUND) {
      const role = roleLogicalId(route.id);
      const actions = roleStatements()
        .filter((entry) => entry.role === role)
        .flatMap(({ statement }) => asArray(statement.Action));
      expect(actions.sort(), route.id).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    }
    for (const action of ['kms:Decrypt', 'kms:GenerateDataKey', 'kms:Sign', 'kms:GetPublicKey', 'dynamodb:GetItem', 'secretsmanager:GetSecretValue']) {
      for (const route of HEALTH_AND_NOT_FOUND) expect(rolesAllowed(action).has(roleLogicalId(route.id)), `${route.id} ${action}`).toBe(false);
    }
  });

  it('lets only the enclave\'s creating and signing (v2) functions decrypt or wrap with the wallet key', () => {
    const expected = rolesOf(ROUTES.filter((route) => route.service === 'enclave' && /^(CreateWallet|Sign\w+)V2$/.test(route.id)));
    expect(expected.size).toBe(5);
    expect(rolesAllowed('kms:Decrypt', importedKeyArn('enclaveKey'))).toEqual(expected);
    expect(rolesAllowed('kms:GenerateDataKey', importedKeyArn('enclaveKey'))).toEqual(expected);
  });

  it('grants each key operation exactly to the routes whose needs list it, and nothing else on the keys', () => {
    const operations = { enclaveKey: ['GenerateDataKey', 'Decrypt'], accountKey: ['GenerateDataKey', 'Decrypt'], opJwtKey: ['Sign', 'GetPublicKey'] } as const;
    for (const key of ['enclaveKey', 'accountKey', 'opJwtKey'] as const) {
      for (const operation of operations[key]) {
        expect(rolesAllowed(`kms:${operation}`, importedKeyArn(key)), `${key} ${operation}`).toEqual(rolesNeedingKey(key, operation));
      }
      for (const other of ['kms:Encrypt', 'kms:ReEncryptFrom', 'kms:CreateGrant', 'kms:PutKeyPolicy', ...(key === 'opJwtKey' ? ['kms:Decrypt', 'kms:GenerateDataKey'] : ['kms:Sign'])]) {
        expect(rolesAllowed(other, importedKeyArn(key)), `${key} ${other}`).toEqual(new Set());
      }
    }
    // Spot checks against the code paths (functions/routes.ts explains each).
    expect(rolesNeedingKey('accountKey', 'GenerateDataKey')).toEqual(rolesOf(ROUTES.filter((r) => r.id === 'CreateAccount')));
    expect(rolesNeedingKey('accountKey', 'Decrypt')).toEqual(rolesOf(ROUTES.filter((r) => r.id === 'SignWithWallet' || r.id === 'Withdraw')));
    expect(rolesNeedingKey('opJwtKey', 'Sign').has(roleLogicalId('CreateAccount'))).toBe(false);
    expect(rolesNeedingKey('opJwtKey', 'Sign').has(roleLogicalId('ExpressSignData'))).toBe(true);
  });

  it('conditions every wrapping-key grant on its purpose\'s encryption context, and op_jwt Sign on ES256 over a raw message', () => {
    const contexts = { enclaveKey: ['enclave-wallet', 'wallet_id'], accountKey: ['account-access-keys', 'user_id'] } as const;
    for (const [key, [purpose, idKey]] of Object.entries(contexts) as Array<[keyof typeof contexts, readonly [string, string]]>) {
      const grants = roleStatements().filter(({ statement }) => JSON.stringify(statement.Resource) === JSON.stringify(importedKeyArn(key)));
      expect(grants.length, key).toBeGreaterThan(0);
      for (const { statement } of grants) {
        expect(statement.Condition, key).toEqual({
          StringEquals: { 'kms:EncryptionContext:purpose': purpose },
          Null: { 'kms:EncryptionContext:app_id': 'false', [`kms:EncryptionContext:${idKey}`]: 'false' },
          'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['purpose', 'app_id', idKey] },
        });
      }
    }
    const signs = roleStatements().filter(({ statement }) => allows(statement, 'kms:Sign', importedKeyArn('opJwtKey')));
    expect(signs.length).toBeGreaterThan(0);
    for (const { statement } of signs) expect(statement.Condition).toEqual({ StringEquals: { 'kms:SigningAlgorithm': 'ECDSA_SHA_256', 'kms:MessageType': 'RAW' } });
  });

  it('tags each role for exactly the key operations its route needs (what the key policies check)', () => {
    const roles = servicesTemplate.toJSON().Resources as Resources;
    for (const route of ROUTES) {
      const expected = (['enclaveKey', 'accountKey', 'opJwtKey'] as const).flatMap((key) =>
        ((route.needs[KEY_NEED[key]] ?? []) as readonly string[]).map((operation) => keyUseTag(KEY_PURPOSE[key], operation as never)),
      );
      const tags = ((roles[roleLogicalId(route.id)]?.Properties?.Tags ?? []) as Array<{ Key: string; Value: string }>);
      expect(tags.map((tag) => tag.Key).sort(), route.id).toEqual(expected.sort());
      for (const tag of tags) expect(tag.Value).toBe('allow');
    }
  });

  it('grants table reads to the routes that read, writes only to those that write, and Scan to none', () => {
    const tableArn = importedArn(stateful.table);
    const readers = rolesOf(ROUTES.filter((route) => route.needs.table));
    const writers = rolesOf(ROUTES.filter((route) => route.needs.table === 'read-write'));
    for (const action of ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query']) expect(rolesAllowed(action, tableArn), action).toEqual(readers);
    for (const action of ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem']) {
      expect(rolesAllowed(action, tableArn), action).toEqual(writers);
    }
    for (const readOnly of ['GetAccount', 'GetIdentityProvider', 'SignWithWallet', 'SignDataV1', 'ExpressSignData', 'ExpressWalletV1']) {
      expect(readers.has(roleLogicalId(readOnly)), readOnly).toBe(true);
      expect(writers.has(roleLogicalId(readOnly)), readOnly).toBe(false);
    }
    expect(rolesAllowed('dynamodb:Scan')).toEqual(new Set());
    expect(rolesAllowed('dynamodb:DeleteTable')).toEqual(new Set());
  });

  it('lets only the routes that read chains read the RPC URLs secret, and nothing else of Secrets Manager or SSM', () => {
    const chainRoutes = rolesOf(ROUTES.filter((route) => route.needs.chains));
    expect(chainRoutes).toEqual(rolesOf(ROUTES.filter((route) => route.id === 'Withdraw' || route.id === 'GetDemoBalance')));
    const secretArn = importedArn(stateful.rpcUrlsSecret, 'Ref');
    expect(rolesAllowed('secretsmanager:GetSecretValue', secretArn)).toEqual(chainRoutes);
    const secretStatements = roleStatements().filter(({ statement }) => asArray(statement.Action).some((a) => String(a).startsWith('secretsmanager:')));
    expect(new Set(secretStatements.map(({ role }) => role))).toEqual(chainRoutes);
    for (const { statement } of secretStatements) {
      expect(statement).toEqual({ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'], Resource: secretArn });
    }
    for (const action of ['secretsmanager:PutSecretValue', 'secretsmanager:ListSecrets', 'secretsmanager:UpdateSecret']) expect(rolesAllowed(action), action).toEqual(new Set());
    // The SSM parameter and its aws/ssm decrypt grant are gone: nothing may call SSM, nor use KMS on a wildcard key.
    expect(roleStatements().filter(({ statement }) => asArray(statement.Action).some((a) => String(a).startsWith('ssm:')))).toEqual([]);
    expect(roleStatements().filter(({ statement }) => asArray(statement.Action).some((a) => String(a).startsWith('kms:')) && JSON.stringify(statement.Resource).includes('key/*'))).toEqual([]);
  });

  it('uses Resource "*" only for X-Ray, which has no resource-level permissions', () => {
    const wildcards = roleStatements().filter(({ statement }) => asArray(statement.Resource).includes('*'));
    expect(wildcards).toHaveLength(ROUTES.length);
    for (const { statement } of wildcards) expect(asArray(statement.Action).sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
  });

  it('names the secret as given in rpcUrlsSecretName, and points the chain functions at it', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { stateful: own, services: stack } = buildStacks(app, { ids: ['OwnStateful', 'OwnServices'], stateful: { rpcUrlsSecretName: 'staging/rpc-urls' } });
    Template.fromStack(own).hasResourceProperties('AWS::SecretsManager::Secret', { Name: 'staging/rpc-urls' });
    const template = JSON.stringify(Template.fromStack(stack).toJSON());
    const secretExport = `"RPC_URLS_SECRET":{"Fn::ImportValue":"OwnStateful:ExportsOutputRef${own.getLogicalId(own.rpcUrlsSecret.node.defaultChild as CfnResource)}`;
    expect(template).toContain(secretExport);
    expect(JSON.stringify(Template.fromStack(own).toJSON())).not.toContain(DEFAULT_RPC_URLS_SECRET_NAME);
  });

  it('writes each function\'s logs only to its own log group, with no managed policy', () => {
    for (const route of ROUTES) {
      const role = roleLogicalId(route.id);
      const logs = roleStatements().filter((entry) => entry.role === role && asArray(entry.statement.Action).some((a) => String(a).startsWith('logs:')));
      expect(logs.map(({ statement }) => statement.Resource), route.id).toEqual([{ 'Fn::GetAtt': [logicalId(services.functions.get(route.id)!.logGroup), 'Arn'] }]);
    }
    for (const role of Object.values(servicesTemplate.findResources('AWS::IAM::Role') as Resources)) expect(role.Properties?.ManagedPolicyArns).toBeUndefined();
  });
});

describe('key policies', () => {
  const CRYPTO = ['kms:Decrypt', 'kms:GenerateDataKey', 'kms:Encrypt', 'kms:ReEncryptFrom', 'kms:ReEncryptTo', 'kms:Sign', 'kms:CreateGrant'];
  const policyOf = (key: KeyName) => (statefulTemplate.toJSON().Resources as Resources)[logicalId(stateful[key])]!.Properties!.KeyPolicy as PolicyDocument;
  const covers = (statement: Statement, action: string) =>
    asArray(statement.Action).some((a) => a === action || a === '*' || a === 'kms:*' || (String(a).endsWith('*') && action.startsWith(String(a).slice(0, -1))));

  it('let the account administer each key but use it only through the tagged-role statements', () => {
    for (const key of ['enclaveKey', 'accountKey', 'opJwtKey'] as const) {
      const statements = policyOf(key).Statement;
      const admin = statements.find((statement) => statement.Sid === 'AdministerButNotUse')!;
      expect(JSON.stringify(admin.Principal)).toContain(':root');
      expect(admin.Condition).toBeUndefined();
      for (const action of CRYPTO) expect(covers(admin, action), `${key} admin ${action}`).toBe(false);
      expect(covers(admin, 'kms:PutKeyPolicy')).toBe(true); // KMS refuses a policy that locks the account out
      for (const statement of statements) {
        if (statement === admin) continue;
        expect(statement.Effect).toBe('Allow');
        expect(asArray(statement.Action)).toHaveLength(1);
        const [action] = asArray(statement.Action) as string[];
        const operation = action!.replace('kms:', '');
        expect((statement.Condition as { StringEquals: Record<string, string> }).StringEquals[`aws:PrincipalTag/${keyUseTag(KEY_PURPOSE[key], operation as never)}`], `${key} ${action}`).toBe('allow');
      }
    }
  });

  it('bind wallet-key and access-key use to their purpose\'s encryption context', () => {
    for (const [key, purpose, idKey] of [['enclaveKey', 'enclave-wallet', 'wallet_id'], ['accountKey', 'account-access-keys', 'user_id']] as const) {
      const uses = policyOf(key).Statement.filter((statement) => statement.Sid !== 'AdministerButNotUse');
      expect(uses.flatMap((statement) => asArray(statement.Action)).sort(), key).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
      for (const statement of uses) {
        expect(statement.Condition, key).toMatchObject({
          StringEquals: { 'kms:EncryptionContext:purpose': purpose },
          Null: { 'kms:EncryptionContext:app_id': 'false', [`kms:EncryptionContext:${idKey}`]: 'false' },
          'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['purpose', 'app_id', idKey] },
        });
      }
    }
  });

  it('allow op_jwt Sign only to tagged roles, ES256 over a raw message', () => {
    const sign = policyOf('opJwtKey').Statement.filter((statement) => covers(statement, 'kms:Sign'));
    expect(sign).toHaveLength(1);
    expect(sign[0]!.Condition).toEqual({
      StringEquals: { 'kms:SigningAlgorithm': 'ECDSA_SHA_256', 'kms:MessageType': 'RAW', [`aws:PrincipalTag/${keyUseTag('op-jwt', 'Sign')}`]: 'allow' },
    });
  });
});

describe('stateful stack', () => {
  it('has one on-demand table with pk/sk strings, PITR and deletion protection, retained', () => {
    statefulTemplate.resourceCountIs('AWS::DynamoDB::Table', 1);
    statefulTemplate.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: [
          { AttributeName: TABLE_KEY_SCHEMA.partitionKey, KeyType: 'HASH' },
          { AttributeName: TABLE_KEY_SCHEMA.sortKey, KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: TABLE_KEY_SCHEMA.partitionKey, AttributeType: 'S' },
          { AttributeName: TABLE_KEY_SCHEMA.sortKey, AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
        DeletionProtectionEnabled: true,
      },
    });
  });

  it('drops deletion protection only when asked', () => {
    const throwaway = Template.fromStack(new StatefulStack(new App(), 'Throwaway', { deletionProtection: false }));
    throwaway.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
    });
  });

  it('keeps two rotating symmetric wrapping keys and an ECC_NIST_P256 signing key, all retained', () => {
    statefulTemplate.resourceCountIs('AWS::KMS::Key', 3);
    const keys = statefulTemplate.toJSON().Resources as Resources;
    for (const key of ['enclaveKey', 'accountKey'] as const) {
      const props = keys[logicalId(stateful[key])]?.Properties;
      expect(props?.EnableKeyRotation, key).toBe(true);
      expect(props?.KeySpec ?? 'SYMMETRIC_DEFAULT', key).toBe('SYMMETRIC_DEFAULT');
    }
    expect(keys[logicalId(stateful.opJwtKey)]?.Properties).toMatchObject({ KeySpec: 'ECC_NIST_P256', KeyUsage: 'SIGN_VERIFY' });
    statefulTemplate.allResources('AWS::KMS::Key', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  it('outputs the table name, key ids and the RPC URLs secret\'s name', () => {
    for (const name of ['TableName', 'EnclaveKeyId', 'AccountKeyId', 'OpJwtKeyId', 'RpcUrlsSecretName']) statefulTemplate.hasOutput(name, {});
  });

  it('creates the RPC URLs secret with a generated placeholder (no value in the template), retained, on the AWS-managed key', () => {
    statefulTemplate.resourceCountIs('AWS::SecretsManager::Secret', 1);
    const [secret] = Object.values(statefulTemplate.findResources('AWS::SecretsManager::Secret') as Resources);
    expect(secret).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    expect(secret!.Properties).toEqual({
      Name: DEFAULT_RPC_URLS_SECRET_NAME,
      Description: expect.stringContaining('put-secret-value'),
      GenerateSecretString: { SecretStringTemplate: '{}', GenerateStringKey: RPC_URLS_PLACEHOLDER_KEY, ExcludePunctuation: true },
    });
    // No SecretString, no KmsKeyId, no rotation, no resource policy widening who may read it.
    statefulTemplate.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
    statefulTemplate.resourceCountIs('AWS::SecretsManager::ResourcePolicy', 0);
    servicesTemplate.resourceCountIs('AWS::SecretsManager::ResourcePolicy', 0);
  });
});

describe('services stack: function configuration', () => {
  /**
   * Each handler parses its configuration at module load and refuses to cold-start without it.
   * Load every handler module in a fresh Node process with exactly the environment the template
   * gives its function (CloudFormation references replaced by placeholders): a missing variable
   * fails here instead of in AWS.
   */
  it('every function bundle (built as CDK builds it) cold-starts with the environment its function is deployed with', async () => {
    const { execFile } = await import('node:child_process');
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { promisify } = await import('node:util');
    const { build } = await import('esbuild');
    const { ESBUILD_OPTIONS } = await import('../../infra/bundling.ts');
    const run = promisify(execFile);
    const outDir = await mkdtemp(join(tmpdir(), 'bundles-'));
    const placeholder = (value: unknown) =>
      typeof value === 'string' ? value : JSON.stringify(value).includes('ApiEndpoint') ? 'https://enclave.example.com' : 'placeholder-id';
    const failures: string[] = [];
    try {
      await Promise.all(
        ROUTES.map(async (route) => {
          const outfile = join(outDir, route.id, 'index.cjs');
          await build({ ...ESBUILD_OPTIONS, absWorkingDir: new URL('../..', import.meta.url).pathname, entryPoints: [route.entry], outfile, logLevel: 'silent' });
          const variables = environmentOf(route.id);
          const env = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, placeholder(value)]));
          const script = `const m = await import(${JSON.stringify(outfile)}); if (typeof m.handler !== 'function') process.exit(3);`;
          try {
            await run(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1', ...env } });
          } catch (error) {
            const stderr = String((error as { stderr?: string }).stderr ?? error);
            failures.push(`${route.id}: ${/(?:\[\w*Error\]|^\w*Error): .*$/m.exec(stderr)?.[0] ?? stderr.slice(0, 300)}`);
          }
        }),
      );
      // Every failing route at once, each with its first error line.
      expect(failures.sort()).toEqual([]);
    } finally {
      await rm(outDir, { recursive: true, force: true });
    }
  }, 120_000);
});
