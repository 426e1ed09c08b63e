import { readFileSync } from 'node:fs';
import { App, Stack, type CfnResource } from 'aws-cdk-lib';
import * as v from 'valibot';
import { ChainsConfigSchema } from '../../shared/chains/chain-config.ts';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES, SERVICE_NEEDS, type ServiceName } from '../../functions/routes.ts';
import { ServicesStack, toHttpRouteKey } from '../../infra/services-stack.ts';
import { StatefulStack } from '../../infra/stateful-stack.ts';
import { TABLE_KEY_SCHEMA } from '../../shared/db/table-definition.ts';

type Resources = Record<string, { Properties?: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string }>;
type KeyName = 'enclaveKey' | 'accountKey' | 'opJwtKey';

const SERVICES: readonly ServiceName[] = ['account', 'enclave', 'express'];

// Synthesising bundles every handler with esbuild: do it once for the whole file.
let stateful: StatefulStack;
let services: ServicesStack;
let statefulTemplate: Template;
let servicesTemplate: Template;

beforeAll(() => {
  const app = new App();
  stateful = new StatefulStack(app, 'Stateful');
  services = new ServicesStack(app, 'Services', {
    table: stateful.table,
    enclaveKey: stateful.enclaveKey,
    accountKey: stateful.accountKey,
    opJwtKey: stateful.opJwtKey,
    chainsConfig: v.parse(ChainsConfigSchema, JSON.parse(readFileSync(new URL('../../infra/config/chains.mainnet.json', import.meta.url), 'utf8'))),
  });
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

/** How the services stack refers to a stateful resource's ARN: the import of the export holding it. */
function importedArn(resource: IConstruct): unknown {
  const id = logicalId(resource);
  const outputs = statefulTemplate.toJSON().Outputs as Record<string, { Value: unknown; Export?: { Name: string } }>;
  const exported = Object.values(outputs).find((o) => JSON.stringify(o.Value) === JSON.stringify({ 'Fn::GetAtt': [id, 'Arn'] }));
  if (!exported?.Export) throw new Error(`${resource.node.path} ARN is not exported`);
  return { 'Fn::ImportValue': exported.Export.Name };
}

const importedKeyArn = (key: KeyName) => importedArn(stateful[key]);

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

type Statement = Record<string, unknown>;
type PolicyDocument = { Statement: Statement[] };

/**
 * Role logical ids that some IAM statement allows `action` (or a wildcard covering it) on
 * `resource` (or `*`): standalone AWS::IAM::Policy resources and roles' inline policies.
 */
function rolesAllowed(action: string, resource: unknown): Set<string> {
  const service = action.split(':')[0];
  const allows = (document: PolicyDocument) =>
    document.Statement.some(
      (statement) =>
        statement.Effect === 'Allow' &&
        asArray(statement.Action).some((a) => a === action || a === '*' || a === `${service}:*`) &&
        asArray(statement.Resource).some((r) => r === '*' || JSON.stringify(r) === JSON.stringify(resource)),
    );
  const roles = new Set<string>();
  for (const policy of Object.values(servicesTemplate.findResources('AWS::IAM::Policy') as Resources)) {
    const props = policy.Properties as { PolicyDocument: PolicyDocument; Roles: Array<{ Ref: string }> };
    if (allows(props.PolicyDocument)) props.Roles.forEach((role) => roles.add(role.Ref));
  }
  for (const [roleId, role] of Object.entries(servicesTemplate.findResources('AWS::IAM::Role') as Resources)) {
    const inline = (role.Properties?.Policies ?? []) as Array<{ PolicyDocument: PolicyDocument }>;
    if (inline.some((policy) => allows(policy.PolicyDocument))) roles.add(roleId);
  }
  return roles;
}

function rolesOfServicesNeeding(key: KeyName | 'table'): Set<string> {
  return new Set(ROUTES.filter((route) => SERVICE_NEEDS[route.service][key]).map((route) => roleLogicalId(route.id)));
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
        Environment: { Variables: { NODE_OPTIONS: '--enable-source-maps', KEY_PROVIDER: 'kms', OP_JWT_SIGNER: 'kms' } },
      });
    }
  });

  it('keeps each function\'s logs for one month in its own log group', () => {
    servicesTemplate.resourceCountIs('AWS::Logs::LogGroup', ROUTES.length);
    servicesTemplate.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    for (const route of ROUTES) {
      const logGroupId = logicalId(services.functions.get(route.id)!.logGroup);
      expect(servicesTemplate.toJSON().Resources[functionLogicalId(route.id)].Properties.LoggingConfig).toEqual({ LogGroup: { Ref: logGroupId } });
    }
  });

  it('sets TEE_URL to the enclave API on the functions of services that call the enclave', () => {
    const enclaveApiId = logicalId(services.apis.enclave);
    for (const route of ROUTES) {
      const variables = servicesTemplate.toJSON().Resources[functionLogicalId(route.id)].Properties.Environment.Variables;
      if (SERVICE_NEEDS[route.service].enclaveUrl) expect(variables.TEE_URL).toEqual({ 'Fn::GetAtt': [enclaveApiId, 'ApiEndpoint'] });
      else expect(variables.TEE_URL).toBeUndefined();
    }
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

  it('outputs the three API URLs', () => {
    for (const name of ['AccountApiUrl', 'EnclaveApiUrl', 'ExpressApiUrl']) servicesTemplate.hasOutput(name, {});
  });

  it('rejects route keys API Gateway would not accept', () => {
    expect(() => toHttpRouteKey('FETCH /x')).toThrow(/Unsupported route key/);
    expect(() => toHttpRouteKey('GET account')).toThrow(/Unsupported route key/);
    expect(toHttpRouteKey('$default').key).toBe('$default');
  });
});

describe('least privilege on the stateful resources', () => {
  it('lets only enclave functions decrypt with the enclave key', () => {
    const enclaveRoles = new Set(ROUTES.filter((route) => route.service === 'enclave').map((route) => roleLogicalId(route.id)));
    expect(enclaveRoles.size).toBeGreaterThan(0);
    expect(rolesAllowed('kms:Decrypt', importedKeyArn('enclaveKey'))).toEqual(enclaveRoles);
  });

  it('grants each key exactly to the services SERVICE_NEEDS lists', () => {
    for (const key of ['enclaveKey', 'accountKey'] as const) {
      expect(rolesAllowed('kms:GenerateDataKey', importedKeyArn(key)), key).toEqual(rolesOfServicesNeeding(key));
      expect(rolesAllowed('kms:Decrypt', importedKeyArn(key)), key).toEqual(rolesOfServicesNeeding(key));
      expect(rolesAllowed('kms:Sign', importedKeyArn(key)), key).toEqual(new Set());
    }
    expect(rolesAllowed('kms:Sign', importedKeyArn('opJwtKey'))).toEqual(rolesOfServicesNeeding('opJwtKey'));
    expect(rolesAllowed('kms:GetPublicKey', importedKeyArn('opJwtKey'))).toEqual(rolesOfServicesNeeding('opJwtKey'));
    expect(rolesAllowed('kms:Decrypt', importedKeyArn('opJwtKey'))).toEqual(new Set());
  });

  it('grants item reads and writes on the table to the services that need it, and Scan to none', () => {
    const tableArn = importedArn(stateful.table);
    for (const action of ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']) {
      expect(rolesAllowed(action, tableArn), action).toEqual(rolesOfServicesNeeding('table'));
    }
    expect(rolesAllowed('dynamodb:Scan', tableArn)).toEqual(new Set());
    expect(rolesAllowed('dynamodb:DeleteTable', tableArn)).toEqual(new Set());
  });

  it('leaves the key policies at the account default (no per-role statements)', () => {
    for (const key of Object.values(statefulTemplate.findResources('AWS::KMS::Key') as Resources)) {
      const statements = (key.Properties?.KeyPolicy as { Statement: unknown[] }).Statement;
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatchObject({ Effect: 'Allow', Action: 'kms:*', Principal: { AWS: expect.anything() } });
      expect(JSON.stringify(statements[0])).toContain(':root');
    }
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

  it('outputs the table name and key ids', () => {
    for (const name of ['TableName', 'EnclaveKeyId', 'AccountKeyId', 'OpJwtKeyId']) statefulTemplate.hasOutput(name, {});
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
    try {
      await Promise.all(
        ROUTES.map(async (route) => {
          const outfile = join(outDir, route.id, 'index.mjs');
          await build({ ...ESBUILD_OPTIONS, absWorkingDir: new URL('../..', import.meta.url).pathname, entryPoints: [route.entry], outfile, logLevel: 'silent' });
          const variables = servicesTemplate.toJSON().Resources[functionLogicalId(route.id)].Properties.Environment.Variables as Record<string, unknown>;
          const env = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, placeholder(value)]));
          const script = `const m = await import(${JSON.stringify(outfile)}); if (typeof m.handler !== 'function') process.exit(3);`;
          await expect(
            run(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1', ...env } }),
            route.id,
          ).resolves.toBeDefined();
        }),
      );
    } finally {
      await rm(outDir, { recursive: true, force: true });
    }
  }, 120_000);
});
