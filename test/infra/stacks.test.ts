import { App, Stack, type CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES, type RouteDefinition, type RouteNeeds, type ServiceName } from '../../functions/routes.ts';
import { keyUseTag } from '../../infra/constructs/key-use.ts';
import { AccessLogField, RestApi } from 'aws-cdk-lib/aws-apigateway';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { parseRouteKey, resourceTree } from '../../infra/api-resources.ts';
import { API_FUNCTION_TIMEOUT, type ServiceFunction } from '../../infra/constructs/service-function.ts';
import { stepFunctionTimeout } from '../../infra/constructs/transfer-machine.ts';
import { API_INTEGRATION_TIMEOUT, API_STAGE_NAME, DEFAULT_API_THROTTLE, ServicesStack } from '../../infra/services-stack.ts';
import { DEFAULT_RPC_URLS_SECRET_NAME, StatefulStack } from '../../infra/stateful-stack.ts';
import { buildStacks } from './support/stacks.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import { TABLE_KEY_SCHEMA } from '../../shared/db/table-definition.ts';
import { RPC_URLS_PLACEHOLDER_KEY } from '../../shared/chains/rpc-urls.ts';

type Resources = Record<string, { Properties?: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string }>;
type KeyName = 'enclaveKey' | 'accountKey' | 'opJwtKey';
/** The `needs` field of each key. */
const KEY_NEED = { enclaveKey: 'enclaveWalletKey', accountKey: 'accountAccessKey', opJwtKey: 'opJwtKey' } as const;
const KEY_PURPOSE = { enclaveKey: 'enclave-wallet', accountKey: 'account-access-keys', opJwtKey: 'op-jwt' } as const;

const SERVICES: readonly ServiceName[] = ['account', 'enclave', 'express'];

/** Every function of the services stack and its needs: one per route, one per transfer step (functions/transfer-steps.ts). */
const FUNCTIONS: readonly { id: string; needs: RouteNeeds }[] = [...ROUTES, ...TRANSFER_STEP_FUNCTIONS];

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

/** A route's function (by route id) or a transfer step's (by step id). */
function functionOf(id: string): ServiceFunction {
  const fn = services.functions.get(id) ?? [...services.transfers.stepFunctions.values()].find((step) => step.node.id === id);
  if (!fn) throw new Error(`no function for ${id}`);
  return fn;
}

function functionLogicalId(id: string): string {
  return logicalId(functionOf(id).lambda);
}

function roleLogicalId(id: string): string {
  return logicalId(functionOf(id).role);
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

const rolesOf = (functions: readonly { id: string }[]) => new Set(functions.map((fn) => roleLogicalId(fn.id)));

/** Roles of the routes whose `needs` list `operation` for `key`. */
function rolesNeedingKey(key: KeyName, operation: string): Set<string> {
  return rolesOf(FUNCTIONS.filter((fn) => (fn.needs[KEY_NEED[key]] as readonly string[] | undefined)?.includes(operation)));
}

const HEALTH_AND_NOT_FOUND = ROUTES.filter((route) => route.routeKey === 'GET /health' || route.routeKey === '$default');

function environmentOf(routeId: string): Record<string, unknown> {
  return servicesTemplate.toJSON().Resources[functionLogicalId(routeId)].Properties.Environment.Variables;
}

describe('services stack: functions', () => {
  it('makes one function per route and per transfer step, and nothing else', () => {
    const functions = servicesTemplate.findResources('AWS::Lambda::Function');
    expect(TRANSFER_STEP_FUNCTIONS).toHaveLength(4);
    expect(Object.keys(functions).sort()).toEqual(FUNCTIONS.map((fn) => functionLogicalId(fn.id)).sort());
  });

  it('runs every function on nodejs24.x, arm64, traced, with source maps; the API timeout for routes, the step timeout for steps', () => {
    const steps = new Map(TRANSFER_STEP_FUNCTIONS.map((step) => [functionLogicalId(step.id), stepFunctionTimeout(step.kind).toSeconds()]));
    for (const [id, fn] of Object.entries(servicesTemplate.findResources('AWS::Lambda::Function') as Resources)) {
      expect(fn.Properties?.Timeout, id).toBe(steps.get(id) ?? API_FUNCTION_TIMEOUT.toSeconds());
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        MemorySize: 512,
        TracingConfig: { Mode: 'Active' },
        Environment: { Variables: { NODE_OPTIONS: '--enable-source-maps', POWERTOOLS_METRICS_NAMESPACE: 'PerpWallet', LOG_LEVEL: 'INFO' } },
      });
    }
  });

  it('keeps each function\'s logs for one month in its own log group', () => {
    // One per function, one access log per API, one for the transfer state machine.
    servicesTemplate.resourceCountIs('AWS::Logs::LogGroup', FUNCTIONS.length + 3 + 1);
    servicesTemplate.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    for (const route of FUNCTIONS) {
      const logGroupId = logicalId(functionOf(route.id).logGroup);
      expect(servicesTemplate.toJSON().Resources[functionLogicalId(route.id)].Properties.LoggingConfig).toEqual({ LogGroup: { Ref: logGroupId } });
    }
  });

  it('names each function\'s service for Powertools', () => {
    for (const route of ROUTES) expect(environmentOf(route.id).POWERTOOLS_SERVICE_NAME, route.id).toBe(route.service);
  });

  it('gives each function exactly the environment its needs imply', () => {
    const enclaveUrl = services.resolve(services.stageUrl('enclave'));
    for (const route of FUNCTIONS) {
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
      if (needs.venues) expected.push('VENUE_URLS');
      // No -c bridgeUrl / platformFee here: BRIDGE_URL and PLATFORM_FEE stay unset (test/infra/transfer-machine.test.ts sets them).
      if (needs.transfers) expected.push('TRANSFER_STATE_MACHINE_ARN', 'TRANSFER_STEP_FUNCTIONS');
      const variables = environmentOf(route.id);
      expect(Object.keys(variables).sort(), route.id).toEqual(expected.sort());
      if (needs.enclaveUrl) expect(variables.TEE_URL).toEqual(enclaveUrl);
      if (needs.enclaveWalletKey || needs.accountAccessKey) expect(variables.KEY_PROVIDER).toBe('kms');
      if (needs.opJwtKey) expect(variables.OP_JWT_SIGNER).toBe('kms');
    }
  });

  it('keeps RPC URLs out of the templates: no URL in any environment, CHAINS_CONFIG without rpc_url, the secret\'s ARN instead', () => {
    for (const route of FUNCTIONS) {
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

/** A REST API resource's or method's `ResourceId`/`ParentId`: the API's root, or another resource. */
type ResourceRef = { 'Fn::GetAtt': [string, 'RootResourceId'] } | { Ref: string };

/** Every REST API resource of the services stack by logical id, with its full path and API. */
function restResources(template: Template): Map<string, { api: string; path: string }> {
  const resources = template.findResources('AWS::ApiGateway::Resource') as Resources;
  const out = new Map<string, { api: string; path: string }>();
  const resolve = (id: string): { api: string; path: string } => {
    const known = out.get(id);
    if (known) return known;
    const props = resources[id]!.Properties as { ParentId: ResourceRef; PathPart: string; RestApiId: { Ref: string } };
    const parent = 'Ref' in props.ParentId ? resolve(props.ParentId.Ref).path : '';
    const entry = { api: props.RestApiId.Ref, path: `${parent === '/' ? '' : parent}/${props.PathPart}` };
    out.set(id, entry);
    return entry;
  };
  for (const id of Object.keys(resources)) resolve(id);
  return out;
}

/** `METHOD /path` -> logical id of the function its AWS_PROXY integration invokes, per API logical id. */
function restMethods(template: Template): Map<string, Map<string, string>> {
  const paths = restResources(template);
  const out = new Map<string, Map<string, string>>();
  for (const method of Object.values(template.findResources('AWS::ApiGateway::Method') as Resources)) {
    const props = method.Properties as {
      HttpMethod: string;
      ResourceId: ResourceRef;
      RestApiId: { Ref: string };
      AuthorizationType: string;
      Integration: { Type: string; IntegrationHttpMethod: string; TimeoutInMillis: number; Uri: unknown };
    };
    expect(props.Integration).toMatchObject({ Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST', TimeoutInMillis: API_INTEGRATION_TIMEOUT.toMilliseconds() });
    expect(props.AuthorizationType).toBe('NONE');
    const fn = /"Fn::GetAtt":\["([^"]+)","Arn"\]/.exec(JSON.stringify(props.Integration.Uri))?.[1];
    expect(JSON.stringify(props.Integration.Uri)).toMatch(/:lambda:path\/2015-03-31\/functions\/.*\/invocations/);
    const path = 'Ref' in props.ResourceId ? paths.get(props.ResourceId.Ref)!.path : '/';
    const api = props.RestApiId.Ref;
    if (!out.has(api)) out.set(api, new Map());
    const key = `${props.HttpMethod} ${path}`;
    expect(out.get(api)!.has(key), key).toBe(false);
    out.get(api)!.set(key, fn!);
  }
  return out;
}

/** The parts of an `Fn::Join ''`, e.g. a permission's SourceArn. */
function joinParts(value: unknown): unknown[] {
  const join = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  expect(join[0]).toBe('');
  return join[1];
}

/** Every argument-free `$context` variable CDK's AccessLogField offers. */
const REST_ACCESS_LOG_VARIABLES = Object.getOwnPropertyNames(AccessLogField)
  .map((name) => (AccessLogField as unknown as Record<string, unknown>)[name])
  .filter((member): member is () => string => typeof member === 'function' && member.length === 0)
  .map((member) => member())
  .filter((value) => typeof value === 'string' && value.startsWith('$context.'));

const routePath = (route: RouteDefinition) => parseRouteKey(route.routeKey).path;
const fallbackOf = (service: ServiceName) => ROUTES.find((route) => route.service === service && route.routeKey === '$default')!;

/** The SourceArn tails a route's function may be invoked for: its own method and resource, HEAD too for a GET, any for `$default`. */
function invokeTails(route: RouteDefinition): string[] {
  if (route.routeKey === '$default') return ['/*/*'];
  const { method, path } = parseRouteKey(route.routeKey);
  const resource = path.replace(/\{[^}]+\}/g, '*');
  return (method === 'GET' ? ['GET', 'HEAD'] : [method]).map((each) => `/${each}${resource}`);
}

/**
 * Everything wrong with a services stack's Lambda permissions: empty when each function has exactly
 * one per method it serves (a GET route's function two: GET and HEAD), for
 * `apigateway.amazonaws.com`, whose SourceArn is its own API's stage and its own method and
 * resource (`/*\/*` for the `$default` function), never a wildcard API id, another API, or the
 * console's test-invoke stage.
 */
function permissionProblems(stack: ServicesStack, template: Template): string[] {
  const id = (construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnResource);
  const problems: string[] = [];
  const counts = new Map<string, number>();
  const granted = new Map<string, Set<string>>();
  for (const permission of Object.values(template.findResources('AWS::Lambda::Permission') as Resources)) {
    const props = permission.Properties as { Action: string; Principal: string; FunctionName: unknown; SourceArn?: unknown };
    const fnId = /"Fn::GetAtt":\["([^"]+)","Arn"\]/.exec(JSON.stringify(props.FunctionName))?.[1];
    const route = ROUTES.find((r) => id(stack.functions.get(r.id)!.lambda) === fnId);
    if (!route) {
      problems.push(`permission for ${JSON.stringify(props.FunctionName)}, not a route's function`);
      continue;
    }
    counts.set(route.id, (counts.get(route.id) ?? 0) + 1);
    if (props.Action !== 'lambda:InvokeFunction' || props.Principal !== 'apigateway.amazonaws.com') problems.push(`${route.id}: ${props.Action} for ${props.Principal}`);
    const api = stack.apis[route.service];
    const prefix = ['arn:', { Ref: 'AWS::Partition' }, ':execute-api:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':', { Ref: id(api) }, '/', { Ref: id(api.deploymentStage) }];
    const join = (props.SourceArn as { 'Fn::Join'?: [string, unknown[]] } | undefined)?.['Fn::Join'];
    const parts = join?.[0] === '' ? join[1] : undefined;
    const tail = parts?.slice(prefix.length).join('') ?? '';
    const ok = parts !== undefined && JSON.stringify(parts.slice(0, prefix.length)) === JSON.stringify(prefix) && invokeTails(route).includes(tail);
    if (!ok) problems.push(`${route.id}: SourceArn ${JSON.stringify(props.SourceArn)}`);
    else granted.set(route.id, new Set([...(granted.get(route.id) ?? []), tail]));
  }
  for (const route of ROUTES) {
    const expected = invokeTails(route);
    if (counts.get(route.id) !== expected.length) problems.push(`${route.id} has ${counts.get(route.id) ?? 0} permissions`);
    for (const tail of expected) if (!granted.get(route.id)?.has(tail)) problems.push(`${route.id}: no permission for ${tail}`);
  }
  return problems;
}

describe('services stack: REST APIs', () => {
  it('has three REGIONAL REST APIs and nothing of API Gateway v2 (HTTP APIs) in either stack', () => {
    servicesTemplate.resourceCountIs('AWS::ApiGateway::RestApi', 3);
    servicesTemplate.allResourcesProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
    for (const template of [servicesTemplate, statefulTemplate]) {
      const types = Object.values(template.toJSON().Resources as Resources).map((resource) => (resource as { Type: string }).Type);
      expect(types.filter((type) => type.startsWith('AWS::ApiGatewayV2::'))).toEqual([]);
    }
    for (const service of SERVICES) expect(services.apis[service]).toBeInstanceOf(RestApi);
  });

  it('creates each service\'s resources: every route path and its prefixes, and the {proxy+} catch-alls', () => {
    const resources = [...restResources(servicesTemplate).values()];
    for (const service of SERVICES) {
      const apiId = logicalId(services.apis[service]);
      const paths = resources.filter((resource) => resource.api === apiId).map((resource) => resource.path);
      expect(new Set(paths).size, service).toBe(paths.length);
      expect(paths.sort(), service).toEqual(resourceTree(ROUTES.filter((route) => route.service === service)).resources.map((r) => r.path).filter((p) => p !== '/').sort());
      // Independently of resourceTree: every route's path and each of its prefixes exists.
      for (const route of ROUTES.filter((r) => r.service === service && r.routeKey !== '$default')) {
        const segments = routePath(route).split('/').slice(1);
        for (let i = 1; i <= segments.length; i++) expect(paths, `${route.id}`).toContain(`/${segments.slice(0, i).join('/')}`);
      }
      expect(paths, service).toContain('/{proxy+}');
      expect(paths, service).toContain('/health/{proxy+}');
    }
    const express = resources.filter((resource) => resource.api === logicalId(services.apis.express)).map((resource) => resource.path);
    // A greedy variable may not sit beside another variable: /v1/wallet/sign has {operation}, so no {proxy+}.
    expect(express).toContain('/v1/wallet/sign/{operation}');
    expect(express).toContain('/v1/wallet/sign/{operation}/{proxy+}');
    expect(express).not.toContain('/v1/wallet/sign/{proxy+}');
    const account = resources.filter((resource) => resource.api === logicalId(services.apis.account)).map((resource) => resource.path);
    expect(account).toContain('/account/{proxy+}');
    expect(account).toContain('/demo/wallet/balance/{proxy+}');
  });

  it('puts every route on its resource as a method invoking its own function, and ANY on every resource (root included) for $default', () => {
    const methods = restMethods(servicesTemplate);
    expect(methods.size).toBe(3);
    const resources = [...restResources(servicesTemplate).values()];
    for (const service of SERVICES) {
      const apiId = logicalId(services.apis[service]);
      const fallback = functionLogicalId(fallbackOf(service).id);
      const expected = new Map<string, string>();
      for (const route of ROUTES.filter((r) => r.service === service && r.routeKey !== '$default')) {
        expected.set(route.routeKey, functionLogicalId(route.id));
        // HEAD beside every GET, by the GET route's own function (no function of its own).
        if (route.routeKey.startsWith('GET ')) expected.set(route.routeKey.replace(/^GET /, 'HEAD '), functionLogicalId(route.id));
      }
      for (const path of ['/', ...resources.filter((resource) => resource.api === apiId).map((resource) => resource.path)]) expected.set(`ANY ${path}`, fallback);
      expect(Object.fromEntries([...methods.get(apiId)!].sort()), service).toEqual(Object.fromEntries([...expected].sort()));
    }
    // Spot checks, spelled out.
    const account = methods.get(logicalId(services.apis.account))!;
    expect(account.get('POST /account')).toBe(functionLogicalId('CreateAccount'));
    expect(account.get('GET /account')).toBe(functionLogicalId('GetAccount'));
    expect(account.get('ANY /account')).toBe(functionLogicalId('AccountNotFound'));
    expect(account.get('ANY /')).toBe(functionLogicalId('AccountNotFound'));
    expect(account.get('HEAD /account')).toBe(functionLogicalId('GetAccount'));
    expect(account.get('HEAD /health')).toBe(functionLogicalId('AccountHealth'));
    expect(account.get('HEAD /task/{task_id}')).toBe(functionLogicalId('GetTask'));
    // Only where GET is: a POST-only resource has none.
    expect(account.get('HEAD /withdraw')).toBeUndefined();
    expect([...account.keys()].filter((key) => key.startsWith('HEAD ')).length).toBe(ROUTES.filter((r) => r.service === 'account' && r.routeKey.startsWith('GET ')).length);
    expect(methods.get(logicalId(services.apis.express))!.get('POST /v1/wallet/sign/{operation}')).toBe(functionLogicalId('ExpressSignV1'));
  });

  it('answers in the services\' JSON error shape wherever API Gateway itself answers (413, 429, 504, 4XX, 5XX)', () => {
    const responses = servicesTemplate.findResources('AWS::ApiGateway::GatewayResponse');
    for (const service of SERVICES) {
      const apiId = services.getLogicalId(services.apis[service].node.defaultChild as CfnResource);
      const mine = Object.values(responses).filter((r) => JSON.stringify(r.Properties.RestApiId) === JSON.stringify({ Ref: apiId }));
      const byType: Record<string, { StatusCode?: string; ResponseTemplates: Record<string, string> }> = Object.fromEntries(mine.map((r) => [r.Properties.ResponseType, r.Properties]));
      expect(Object.keys(byType).sort()).toEqual(['DEFAULT_4XX', 'DEFAULT_5XX', 'INTEGRATION_TIMEOUT', 'MISSING_AUTHENTICATION_TOKEN', 'REQUEST_TOO_LARGE', 'THROTTLED']);
      expect(byType.REQUEST_TOO_LARGE!.StatusCode).toBe('413');
      expect(byType.THROTTLED!.StatusCode).toBe('429');
      expect(byType.DEFAULT_4XX!.StatusCode).toBeUndefined(); // keeps API Gateway's own 4xx status
      for (const [type, properties] of Object.entries(byType)) {
        const template = properties.ResponseTemplates['application/json'] as string;
        // A valid JSON document once API Gateway substitutes its variables (each a JSON string).
        const body = JSON.parse(template.replace('$context.error.messageString', '"Unsupported Media Type"'));
        expect(body, type).toMatchObject({ success: false, error: { code: expect.stringMatching(/^[A-Z_]+$/), message: expect.any(String), request_id: '$context.requestId' } });
      }
    }
  });

  it('ends every function before API Gateway stops waiting for it', () => {
    expect(API_FUNCTION_TIMEOUT.toMilliseconds()).toBeLessThan(API_INTEGRATION_TIMEOUT.toMilliseconds());
    expect(API_INTEGRATION_TIMEOUT.toMilliseconds()).toBeLessThanOrEqual(29_000);
  });

  it('deploys one throttled, traced stage per API, execution logs at ERROR without bodies', () => {
    servicesTemplate.resourceCountIs('AWS::ApiGateway::Stage', 3);
    servicesTemplate.resourceCountIs('AWS::ApiGateway::Deployment', 3);
    for (const stage of Object.values(servicesTemplate.findResources('AWS::ApiGateway::Stage') as Resources)) {
      expect(stage.Properties).toMatchObject({ StageName: API_STAGE_NAME, TracingEnabled: true });
      expect(stage.Properties?.MethodSettings).toEqual([
        {
          ResourcePath: '/*',
          HttpMethod: '*',
          ThrottlingRateLimit: DEFAULT_API_THROTTLE.rateLimit,
          ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit,
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          MetricsEnabled: false,
        },
      ]);
    }
  });

  it('throttles the stages as the throttle prop says', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: stack } = buildStacks(app, { ids: ['SlowStateful', 'SlowServices'], services: { throttle: { rateLimit: 5, burstLimit: 7 } } });
    const stages = Object.values(Template.fromStack(stack).findResources('AWS::ApiGateway::Stage') as Resources);
    expect(stages).toHaveLength(3);
    for (const stage of stages) expect(stage.Properties?.MethodSettings).toEqual([expect.objectContaining({ ResourcePath: '/*', HttpMethod: '*', ThrottlingRateLimit: 5, ThrottlingBurstLimit: 7 })]);
  });

  it('writes each API\'s access log as JSON request metadata (no headers, query or body) to its own log group', () => {
    const stages = Object.values(servicesTemplate.findResources('AWS::ApiGateway::Stage') as Resources);
    const logGroups = servicesTemplate.toJSON().Resources as Resources;
    const destinations = new Set<string>();
    for (const stage of stages) {
      const settings = stage.Properties?.AccessLogSetting as { DestinationArn: { 'Fn::GetAtt': [string, string] }; Format: string };
      const [logGroupId] = settings.DestinationArn['Fn::GetAtt'];
      expect(logGroups[logGroupId]?.Properties?.RetentionInDays).toBe(30);
      destinations.add(logGroupId);
      const format = JSON.parse(settings.Format) as Record<string, string>;
      expect(format).toMatchObject({ requestId: '$context.requestId', extendedRequestId: '$context.extendedRequestId', status: '$context.status', resourcePath: '$context.resourcePath' });
      // Only variables API Gateway documents for REST API access logs (CDK's AccessLogField list; routeKey is HTTP/WebSocket only).
      for (const value of Object.values(format)) expect(REST_ACCESS_LOG_VARIABLES, value).toContain(value);
      expect(settings.Format).not.toContain('$context.routeKey');
      expect(settings.Format).not.toMatch(/request\.header|querystring|\$input|authorizer|identity\.(user|caller|apiKey|cognito)|apiKey|clientCert/i);
    }
    expect(destinations.size).toBe(3);
  });

  it('lets API Gateway invoke each function only from its own API\'s stage, for its own method (one permission per method it serves)', () => {
    servicesTemplate.resourceCountIs('AWS::Lambda::Permission', ROUTES.flatMap(invokeTails).length);
    expect(permissionProblems(services, servicesTemplate)).toEqual([]);
    // Spelled out for two functions.
    const sourceArnOf = (routeId: string) =>
      Object.values(servicesTemplate.findResources('AWS::Lambda::Permission') as Resources).find(
        (p) => JSON.stringify(p.Properties?.FunctionName) === JSON.stringify({ 'Fn::GetAtt': [functionLogicalId(routeId), 'Arn'] }),
      )!.Properties!.SourceArn;
    expect(joinParts(sourceArnOf('ExpressSignV1')).slice(6)).toEqual([':', { Ref: logicalId(services.apis.express) }, '/', { Ref: logicalId(services.apis.express.deploymentStage) }, '/POST/v1/wallet/sign/*']);
    expect(joinParts(sourceArnOf('EnclaveNotFound')).slice(6)).toEqual([':', { Ref: logicalId(services.apis.enclave) }, '/', { Ref: logicalId(services.apis.enclave.deploymentStage) }, '/*/*']);
  });

  it('would catch a function invocable from another API, from any API, or twice (the permission check is not vacuous)', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: widened } = buildStacks(app, { ids: ['WidenedStateful', 'WidenedServices'] });
    const apigateway = new ServicePrincipal('apigateway.amazonaws.com');
    widened.functions.get('AccountNotFound')!.lambda.addPermission('FromEnclaveApi', { principal: apigateway, sourceArn: widened.apis.enclave.arnForExecuteApi() });
    widened.functions.get('GetAccount')!.lambda.addPermission('FromAnyApi', { principal: apigateway, sourceArn: `arn:aws:execute-api:${widened.region}:${widened.account}:*/prod/*/*` });
    widened.functions.get('AccountHealth')!.lambda.addPermission('TestInvoke', { principal: apigateway, sourceArn: widened.apis.account.arnForExecuteApi('GET', '/health', 'test-invoke-stage') });
    const problems = permissionProblems(widened, Template.fromStack(widened));
    expect(problems.filter((problem) => problem.startsWith('AccountNotFound: SourceArn'))).toHaveLength(1);
    expect(problems.filter((problem) => problem.startsWith('GetAccount: SourceArn'))).toHaveLength(1);
    expect(problems.filter((problem) => problem.startsWith('AccountHealth: SourceArn'))).toHaveLength(1);
    expect(problems.filter((problem) => / has [2-9] permissions$/.test(problem)).sort()).toEqual(['AccountHealth has 3 permissions', 'AccountNotFound has 2 permissions', 'GetAccount has 3 permissions']);
    expect(problems).toHaveLength(6);
  });

  it('outputs the three stage URLs (with the stage name, without a trailing slash) and gives the enclave\'s to TEE_URL', () => {
    const outputs = servicesTemplate.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs).sort()).toEqual(['AccountApiUrl', 'EnclaveApiUrl', 'ExpressApiUrl', 'TransferStateMachineArn']);
    for (const service of SERVICES) {
      const id = `${service[0]!.toUpperCase()}${service.slice(1)}ApiUrl`;
      const parts = joinParts(outputs[id]!.Value);
      expect(parts).toEqual(['https://', { Ref: logicalId(services.apis[service]) }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, `/${API_STAGE_NAME}`]);
    }
    const teeUrl = services.resolve(services.stageUrl('enclave'));
    expect(JSON.stringify(teeUrl)).toMatch(/"\/prod"\]\]\}$/);
    for (const route of FUNCTIONS.filter((r) => r.needs.enclaveUrl)) expect(environmentOf(route.id).TEE_URL, route.id).toEqual(teeUrl);
  });

  it('sets API Gateway\'s account-level CloudWatch Logs role once, retained, with the AWS-managed push policy, before any stage', () => {
    servicesTemplate.resourceCountIs('AWS::ApiGateway::Account', 1);
    const [accountId, account] = Object.entries(servicesTemplate.findResources('AWS::ApiGateway::Account') as Resources)[0]!;
    const roleId = (account.Properties?.CloudWatchRoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const role = (servicesTemplate.toJSON().Resources as Resources)[roleId]!;
    expect(role).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    expect(role.Properties?.AssumeRolePolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [{ Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'apigateway.amazonaws.com' } }],
    });
    expect(role.Properties?.ManagedPolicyArns).toEqual([
      { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs']] },
    ]);
    expect(role.Properties?.Policies).toBeUndefined();
    expect(roleStatements().filter((entry) => entry.role === roleId)).toEqual([]);
    for (const stage of Object.values(servicesTemplate.findResources('AWS::ApiGateway::Stage')) as Array<{ DependsOn?: string[] }>) expect(stage.DependsOn).toContain(accountId);
  });

  it('leaves the account-level CloudWatch role out when apiGatewayCloudWatchRole is false', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: stack } = buildStacks(app, { ids: ['NoRoleStateful', 'NoRoleServices'], services: { apiGatewayCloudWatchRole: false } });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::ApiGateway::Account', 0);
    // One per function and the transfer state machine's.
    template.resourceCountIs('AWS::IAM::Role', FUNCTIONS.length + 1);
  });

  it('associates no web ACL by default, and the given one with each stage when webAclArn is set', () => {
    servicesTemplate.resourceCountIs('AWS::WAFv2::WebACLAssociation', 0);
    const webAclArn = 'arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/perp-wallet/0a1b2c3d-1111-2222-3333-444455556666';
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: stack } = buildStacks(app, { ids: ['WafStateful', 'WafServices'], services: { webAclArn } });
    const template = Template.fromStack(stack);
    const associations = Object.values(template.findResources('AWS::WAFv2::WebACLAssociation') as Resources) as Array<{ Properties: { WebACLArn: string; ResourceArn: unknown } }>;
    expect(associations).toHaveLength(3);
    const stageIds = SERVICES.map((service) => stack.getLogicalId(stack.apis[service].deploymentStage.node.defaultChild as CfnResource));
    const apiIds = SERVICES.map((service) => stack.getLogicalId(stack.apis[service].node.defaultChild as CfnResource));
    for (const association of associations) expect(association.Properties.WebACLArn).toBe(webAclArn);
    // arn:<partition>:apigateway:<region>::/restapis/<api-id>/stages/<stage>, one per API; the Ref to the stage orders it after the stage.
    const resourceArns = associations.map((association) => joinParts(association.Properties.ResourceArn));
    expect(resourceArns.map((parts) => apiIds.findIndex((id) => JSON.stringify(parts[5]) === JSON.stringify({ Ref: id }))).sort()).toEqual([0, 1, 2]);
    for (const parts of resourceArns) {
      const api = apiIds.findIndex((id) => JSON.stringify(parts[5]) === JSON.stringify({ Ref: id }));
      expect(parts).toEqual(['arn:', { Ref: 'AWS::Partition' }, ':apigateway:', { Ref: 'AWS::Region' }, '::/restapis/', { Ref: apiIds[api] }, '/stages/', { Ref: stageIds[api] }]);
    }
    expect(() => buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { ids: ['BadStateful', 'BadServices'], services: { webAclArn: 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/x/y' } })).toThrow(
      /REGIONAL WAFv2 web ACL/,
    );
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
    expect(rolesNeedingKey('accountKey', 'Decrypt')).toEqual(
      rolesOf(FUNCTIONS.filter((r) => ['SignWithWallet', 'Withdraw', 'InitPerpDex', 'InitPerpDexTrading', 'GetPerp', 'TransferWithdrawalStep', 'TransferBridgeStep', 'TransferDepositStep'].includes(r.id))),
    );
    expect(rolesNeedingKey('accountKey', 'Decrypt').has(roleLogicalId('TransferSettle'))).toBe(false);
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
    for (const route of FUNCTIONS) {
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
    const readers = rolesOf(FUNCTIONS.filter((route) => route.needs.table));
    const writers = rolesOf(FUNCTIONS.filter((route) => route.needs.table === 'read-write'));
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

  it('lets only the routes and steps that read chains read the RPC URLs secret, and nothing else of Secrets Manager or SSM', () => {
    const chainRoutes = rolesOf(FUNCTIONS.filter((route) => route.needs.chains));
    expect(chainRoutes).toEqual(
      rolesOf(
        FUNCTIONS.filter((route) =>
          ['Withdraw', 'GetDemoBalance', 'CheckPerpDexRequirements', 'InitPerpDex', 'InitPerpDexTrading', 'GetPerp', 'TransferWithdrawalStep', 'TransferBridgeStep', 'TransferDepositStep', 'EstimateTransferCost', 'CreateTransfer'].includes(route.id),
        ),
      ),
    );
    expect(chainRoutes.has(roleLogicalId('TransferSettle'))).toBe(false);
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

  it('uses Resource "*" only for X-Ray and, on the state machine\'s role, Step Functions log delivery (no resource-level permissions)', () => {
    const machineRole = logicalId(services.transfers.role);
    const wildcards = roleStatements().filter(({ statement }) => asArray(statement.Resource).includes('*'));
    const functionWildcards = wildcards.filter(({ role }) => role !== machineRole);
    expect(functionWildcards).toHaveLength(FUNCTIONS.length);
    for (const { statement } of functionWildcards) expect(asArray(statement.Action).sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    const machine = wildcards.filter(({ role }) => role === machineRole).flatMap(({ statement }) => asArray(statement.Action) as string[]);
    expect(machine.sort()).toEqual(
      [
        'logs:CreateLogDelivery',
        'logs:DeleteLogDelivery',
        'logs:DescribeLogGroups',
        'logs:DescribeResourcePolicies',
        'logs:GetLogDelivery',
        'logs:ListLogDeliveries',
        'logs:PutResourcePolicy',
        'logs:UpdateLogDelivery',
        'xray:GetSamplingRules',
        'xray:GetSamplingTargets',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ].sort(),
    );
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
    for (const route of FUNCTIONS) {
      const role = roleLogicalId(route.id);
      const logs = roleStatements().filter((entry) => entry.role === role && asArray(entry.statement.Action).some((a) => String(a).startsWith('logs:')));
      expect(logs.map(({ statement }) => statement.Resource), route.id).toEqual([{ 'Fn::GetAtt': [logicalId(functionOf(route.id).logGroup), 'Arn'] }]);
    }
    // The one managed policy is API Gateway's account-level logging role's (asserted in the REST APIs block).
    const withManagedPolicy = Object.entries(servicesTemplate.findResources('AWS::IAM::Role') as Resources).filter(([, role]) => role.Properties?.ManagedPolicyArns !== undefined);
    const account = (servicesTemplate.toJSON().Resources as Resources)[services.getLogicalId(services.apiGatewayAccount!)]!;
    expect(withManagedPolicy.map(([id]) => id)).toEqual([(account.Properties?.CloudWatchRoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]]);
    for (const route of FUNCTIONS) expect(servicesTemplate.toJSON().Resources[roleLogicalId(route.id)].Properties.ManagedPolicyArns, route.id).toBeUndefined();
  });
});

describe('venue routes (need `venues`)', () => {
  const VENUE_ROUTES = ['CheckPerpDexRequirements', 'InitPerpDex', 'InitPerpDexTrading', 'GetPerp'];
  const actionsOf = (routeId: string) =>
    roleStatements()
      .filter((entry) => entry.role === roleLogicalId(routeId))
      .flatMap(({ statement }) => asArray(statement.Action) as string[])
      .filter((action) => !action.startsWith('logs:') && !action.startsWith('xray:'))
      .sort();

  it('gives VENUE_URLS (`{}` by default) to exactly the routes that call venues', () => {
    expect(ROUTES.filter((route) => route.needs.venues).map((route) => route.id).sort()).toEqual([...VENUE_ROUTES].sort());
    for (const route of ROUTES) {
      const variables = environmentOf(route.id);
      if (route.needs.venues) expect(variables.VENUE_URLS, route.id).toBe('{}');
      else expect(variables.VENUE_URLS, route.id).toBeUndefined();
    }
  });

  it('grants each venue route only what its code path uses: the requirements check and credentials sign nothing', () => {
    const read = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'];
    const write = ['dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem', 'dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];
    const secret = ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'];
    const signing = ['kms:Decrypt', 'kms:GetPublicKey', 'kms:Sign'];
    expect(actionsOf('CheckPerpDexRequirements')).toEqual([...read, ...secret].sort());
    expect(actionsOf('GetPerpCredentials')).toEqual(read);
    expect(actionsOf('GetPerp')).toEqual([...read, ...secret, ...signing].sort());
    expect(actionsOf('InitPerpDex')).toEqual([...read, ...write, ...secret, ...signing].sort());
    expect(actionsOf('InitPerpDexTrading')).toEqual([...read, ...write, ...secret, ...signing].sort());
    for (const id of ['CheckPerpDexRequirements', 'GetPerpCredentials']) {
      for (const name of ['TEE_URL', 'KEY_PROVIDER', 'OP_JWT_SIGNER']) expect(environmentOf(id)[name], `${id} ${name}`).toBeUndefined();
    }
    expect(rolesAllowed('kms:GenerateDataKey', importedKeyArn('accountKey')).has(roleLogicalId('InitPerpDex'))).toBe(false);
  });

  it('passes the venueUrls prop (checked as the functions check it) to VENUE_URLS; a bad one stops the synth', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const venueUrls = { venue_b: 'https://api.venue-b.example.com/', venue_d: 'https://gateway.venue-d.example.com/v1' };
    const { services: stack } = buildStacks(app, { ids: ['VenueStateful', 'VenueServices'], services: { venueUrls } });
    const resources = Template.fromStack(stack).toJSON().Resources;
    const variables = resources[stack.getLogicalId(stack.functions.get('InitPerpDex')!.lambda.node.defaultChild as CfnResource)].Properties.Environment.Variables;
    expect(JSON.parse(variables.VENUE_URLS)).toEqual({ venue_b: 'https://api.venue-b.example.com', venue_d: 'https://gateway.venue-d.example.com/v1' });
    const other = resources[stack.getLogicalId(stack.functions.get('GetAccount')!.lambda.node.defaultChild as CfnResource)].Properties.Environment.Variables;
    expect(other.VENUE_URLS).toBeUndefined();
    const bad = (venueUrls: Record<string, string>, ids: [string, string]) => () => buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { ids, services: { venueUrls } });
    expect(bad({ venue_z: 'https://x.example.com' }, ['BadVenueStateful', 'BadVenueServices'])).toThrow(/VENUE_URLS: venue_z: is not a venue id/);
    expect(bad({ venue_a: 'x' }, ['BadUrlStateful', 'BadUrlServices'])).toThrow(/VENUE_URLS: venue_a: must be a URL/);
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
    const fakeArn = (kind: string) => `arn:aws:lambda:us-east-1:123456789012:function:placeholder-${kind}`;
    const placeholder = (name: string, value: unknown) =>
      typeof value === 'string'
        ? value
        : name === 'TRANSFER_STEP_FUNCTIONS'
          ? JSON.stringify(Object.fromEntries(['withdrawal', 'bridge', 'deposit', 'settle'].map((kind) => [kind, fakeArn(kind)])))
          : name === 'TRANSFER_STATE_MACHINE_ARN'
            ? 'arn:aws:states:us-east-1:123456789012:stateMachine:placeholder'
            : JSON.stringify(value).includes('.execute-api.')
              ? `https://enclave.example.com/${API_STAGE_NAME}`
              : 'placeholder-id';
    const failures: string[] = [];
    try {
      await Promise.all(
        [...ROUTES, ...TRANSFER_STEP_FUNCTIONS].map(async (route) => {
          const outfile = join(outDir, route.id, 'index.cjs');
          await build({ ...ESBUILD_OPTIONS, absWorkingDir: new URL('../..', import.meta.url).pathname, entryPoints: [route.entry], outfile, logLevel: 'silent' });
          const variables = environmentOf(route.id);
          const env = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, placeholder(name, value)]));
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
