import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnResource, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AccessLogField, RestApi } from 'aws-cdk-lib/aws-apigateway';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { AssetManifestArtifact, type CloudAssembly } from 'aws-cdk-lib/cx-api';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FUNCTIONS } from '../../functions/events.ts';
import { ROUTES, type RouteDefinition, type RouteNeeds, type ServiceName, tableAccess } from '../../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import { parseRouteKey, resourceTree } from '../../infra/api-resources.ts';
import type { ServiceApiStack } from '../../infra/api-stack.ts';
import { functionRolePath } from '../../infra/constructs/key-use.ts';
import { API_FUNCTION_TIMEOUT, REPO_ROOT, type ServiceFunction } from '../../infra/constructs/service-function.ts';
import { stepFunctionTimeout } from '../../infra/constructs/transfer-machine.ts';
import { DELIVERER_TIMEOUT, PUBLISHER_TIMEOUT } from '../../infra/events-stack.ts';
import { API_INTEGRATION_TIMEOUT, API_STAGE_NAME, DEFAULT_API_THROTTLE, type ServiceStacks } from '../../infra/services-stack.ts';
import { DEFAULT_RPC_URLS_SECRET_NAME, StatefulStack } from '../../infra/stateful-stack.ts';
import { RPC_URLS_PLACEHOLDER_KEY } from '../../shared/chains/rpc-urls.ts';
import { TABLE_KEY_SCHEMA } from '../../shared/db/table-definition.ts';
import { buildStacks } from './support/stacks.ts';

type Resources = Record<
  string,
  { Type?: string; Properties?: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string; DependsOn?: string[] }
>;
type Outputs = Record<string, { Value: unknown; Export?: { Name: string } }>;
type KeyName = 'enclaveKey' | 'accountKey' | 'opJwtKey' | 'sponsorKey';
/** The `needs` fields of each key: the account key serves two purposes (issue 24), each under its own encryption context. */
const KEY_NEED = {
  enclaveKey: ['enclaveWalletKey'],
  accountKey: ['accountAccessKey', 'webhookSecretKey'],
  opJwtKey: ['opJwtKey'],
  sponsorKey: ['sponsorKey'],
} as const satisfies Record<string, readonly (keyof RouteNeeds)[]>;
/** Does `needs` list `operation` in any of the `fields`? */
const needsOperation = (needs: RouteNeeds, fields: readonly (keyof RouteNeeds)[], operation: string) =>
  fields.some((field) => (needs[field] as readonly string[] | undefined)?.includes(operation));
const KEY_NAMES = Object.keys(KEY_NEED) as KeyName[];
const isSigningKey = (key: KeyName) => key === 'opJwtKey' || key === 'sponsorKey';

const SERVICES: readonly ServiceName[] = ['account', 'enclave', 'express'];

/** Each wrapping purpose: its key, the need that lists its operations, and the context key naming what it seals (key-use.ts WRAPPING_CONTEXTS). */
const WRAPPING_CONTEXT = {
  'enclave-wallet': { key: 'enclaveKey', need: 'enclaveWalletKey', idKey: 'wallet_id' },
  'account-access-keys': { key: 'accountKey', need: 'accountAccessKey', idKey: 'user_id' },
  'webhook-secret': { key: 'accountKey', need: 'webhookSecretKey', idKey: 'endpoint_id' },
} as const;

/** The encryption-context condition of `purpose`, as written out here (not read from key-use.ts). */
function contextCondition(purpose: string): Record<string, unknown> {
  const { idKey } = WRAPPING_CONTEXT[purpose as keyof typeof WRAPPING_CONTEXT];
  return {
    StringEquals: { 'kms:EncryptionContext:purpose': purpose },
    Null: { 'kms:EncryptionContext:app_id': 'false', [`kms:EncryptionContext:${idKey}`]: 'false' },
    'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['purpose', 'app_id', idKey] },
  };
}

/** Every function of the service stacks and its needs: one per route, one per transfer step (functions/transfer-steps.ts), the event functions (functions/events.ts). */
const FUNCTIONS: readonly { id: string; needs: RouteNeeds }[] = [...ROUTES, ...TRANSFER_STEP_FUNCTIONS, ...EVENT_FUNCTIONS];

/** CloudFormation refuses a stack of more than 500 resources; ours stay well under, with room for new routes. */
const MAX_RESOURCES_PER_STACK = 300;

/**
 * The stack whose functions CDK bundles in the synth below (NodejsFunction's own esbuild run, as
 * `cdk deploy` does); the others synthesise without bundling (`aws:cdk:bundling-stacks`). The
 * cold-start test builds every function in one esbuild run with ESBUILD_OPTIONS (infra/bundling.ts)
 * and first checks that these CDK bundles are byte for byte that build's: one esbuild process
 * instead of one per function (the synth took 20.7 s and 31 CPU-s bundling each, 2.1 s without).
 */
const BUNDLED_STACK = 'Express';

let stateful: StatefulStack;
let services: ServiceStacks;
let assembly: CloudAssembly;
let statefulTemplate: Template;
/** The stateless stacks' templates (ApiGatewayLogging, Enclave, Transfers, Account, Express). */
let serviceTemplates: ReadonlyMap<Stack, Template>;

beforeAll(() => {
  // The assembly (and the bundles in it) outside the repository: Lambda loads index.js as CommonJS
  // (its zip has no package.json), and so does Node here only where no package.json says
  // "type": "module", as the repository's does.
  const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'stacks-test-')), context: { 'aws:cdk:bundling-stacks': [BUNDLED_STACK] } });
  ({ stateful, services } = buildStacks(app));
  assembly = app.synth();
  statefulTemplate = Template.fromStack(stateful);
  serviceTemplates = new Map(services.stacks.map((stack) => [stack, Template.fromStack(stack)]));
}, 120_000);

afterAll(() => {
  if (assembly) rmSync(assembly.directory, { recursive: true, force: true });
});

/** A construct's logical id in its own stack's template (what `Ref` and `Fn::GetAtt` name there). */
function logicalId(construct: IConstruct): string {
  return Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnResource);
}

/**
 * Logical ids are unique within a template only: across the service stacks, a resource is
 * `<stack name>/<logical id>`.
 */
const qualify = (stack: Stack, id: string) => `${stack.stackName}/${id}`;
const qualifiedId = (construct: IConstruct) => qualify(Stack.of(construct), logicalId(construct));

/** Every resource of the service stacks (of `type`, when given), by qualified id. */
function serviceResources(type?: string): Resources {
  const out: Resources = {};
  for (const [stack, template] of serviceTemplates) {
    for (const [id, resource] of Object.entries(template.toJSON().Resources as Resources))
      if (!type || resource.Type === type) out[qualify(stack, id)] = resource;
  }
  return out;
}

const countOf = (type: string) => Object.keys(serviceResources(type)).length;

/** A construct's resource in its stack's template. */
function resourceOf(construct: IConstruct): NonNullable<Resources[string]> {
  const template = Stack.of(construct) === stateful ? statefulTemplate : serviceTemplates.get(Stack.of(construct));
  const resource = (template?.toJSON().Resources as Resources | undefined)?.[logicalId(construct)];
  if (!resource) throw new Error(`${construct.node.path} is in no template`);
  return resource;
}

/** A route's function (by route id) or a transfer step's (by step id). */
function functionOf(id: string): ServiceFunction {
  const fn = services.functions.get(id);
  if (!fn) throw new Error(`no function for ${id}`);
  return fn;
}

function functionId(id: string): string {
  return qualifiedId(functionOf(id).lambda);
}

function roleId(id: string): string {
  return qualifiedId(functionOf(id).role);
}

/**
 * How a consuming stack refers to another stack's resource: the import of the export (in the
 * producing stack's template) whose value is `value` (`Fn::GetAtt … Arn`, or `Ref`).
 */
function imported(resource: IConstruct, value: unknown): unknown {
  const producer = Stack.of(resource);
  const template = producer === stateful ? statefulTemplate : serviceTemplates.get(producer)!;
  const exported = Object.values(template.toJSON().Outputs as Outputs).find((o) => o.Export && JSON.stringify(o.Value) === JSON.stringify(value));
  if (!exported?.Export) throw new Error(`${resource.node.path}: ${JSON.stringify(value)} is not exported`);
  return { 'Fn::ImportValue': exported.Export.Name };
}

/** A stateful resource's ARN as the service stacks refer to it (`Ref` for a secret, whose Ref is its ARN). */
function importedArn(resource: IConstruct, via: 'GetAtt' | 'Ref' = 'GetAtt'): unknown {
  const id = logicalId(resource);
  return imported(resource, via === 'Ref' ? { Ref: id } : { 'Fn::GetAtt': [id, 'Arn'] });
}

const importedKeyArn = (key: KeyName) => importedArn(stateful[key]);

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

type Statement = Record<string, unknown>;
type PolicyDocument = { Statement: Statement[] };

/** Every IAM statement attached to a role of the service stacks, with that role's qualified id. */
function roleStatements(): Array<{ role: string; statement: Statement }> {
  const out: Array<{ role: string; statement: Statement }> = [];
  for (const [stack, template] of serviceTemplates) {
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy') as Resources)) {
      const props = policy.Properties as { PolicyDocument: PolicyDocument; Roles: Array<{ Ref: string }> };
      for (const statement of props.PolicyDocument.Statement) for (const role of props.Roles) out.push({ role: qualify(stack, role.Ref), statement });
    }
    for (const [id, role] of Object.entries(template.findResources('AWS::IAM::Role') as Resources)) {
      const inline = (role.Properties?.Policies ?? []) as Array<{ PolicyDocument: PolicyDocument }>;
      for (const policy of inline) for (const statement of policy.PolicyDocument.Statement) out.push({ role: qualify(stack, id), statement });
    }
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
 * Roles (qualified ids) that some IAM statement allows `action` (or a wildcard covering it) on
 * `resource` (or `*`): standalone AWS::IAM::Policy resources and roles' inline policies.
 */
function rolesAllowed(action: string, resource?: unknown): Set<string> {
  return new Set(
    roleStatements()
      .filter(({ statement }) => allows(statement, action, resource))
      .map(({ role }) => role),
  );
}

const rolesOf = (functions: readonly { id: string }[]) => new Set(functions.map((fn) => roleId(fn.id)));

/** Roles of the routes whose `needs` list `operation` for `key`. */
function rolesNeedingKey(key: KeyName, operation: string): Set<string> {
  return rolesOf(FUNCTIONS.filter((fn) => needsOperation(fn.needs, KEY_NEED[key], operation)));
}

const HEALTH_AND_NOT_FOUND = ROUTES.filter((route) => route.routeKey === 'GET /health' || route.routeKey === '$default');

function environmentOf(routeId: string): Record<string, unknown> {
  return (resourceOf(functionOf(routeId).lambda).Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
}

/** TEE_URL as a function of `stack` sees it: the enclave's stage URL, the API's id imported outside the enclave's stack. */
function enclaveUrlIn(stack: Stack): unknown {
  const enclaveApi = services.apis.enclave;
  const id = Stack.of(enclaveApi) === stack ? { Ref: logicalId(enclaveApi) } : imported(enclaveApi, { Ref: logicalId(enclaveApi) });
  return { 'Fn::Join': ['', ['https://', id, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, `/${API_STAGE_NAME}`]] };
}

describe('stacks', () => {
  it("splits the stateless side into one stack per service, the transfer machine, and API Gateway's logging role", () => {
    expect(services.stacks.map((stack) => stack.stackName)).toEqual(['ApiGatewayLogging', 'Enclave', 'Transfers', 'Events', 'Account', 'Express']);
    for (const service of SERVICES) {
      const stack = services.apiStacks[service];
      expect(stack.service).toBe(service);
      expect(Stack.of(stack.api)).toBe(stack);
      // Each route's function lives in its own service's stack, and nothing else does.
      expect([...stack.functions.keys()].sort(), service).toEqual(
        ROUTES.filter((route) => route.service === service)
          .map((route) => route.id)
          .sort(),
      );
      for (const fn of stack.functions.values()) expect(Stack.of(fn), fn.node.id).toBe(stack);
      const lambdas = Object.keys(serviceTemplates.get(stack)!.findResources('AWS::Lambda::Function')).map((id) => qualify(stack, id));
      expect(lambdas.sort(), service).toEqual([...stack.functions.values()].map((fn) => qualifiedId(fn.lambda)).sort());
    }
    // The transfer machine and its step functions, and no API, in their own stack.
    const transfers = serviceTemplates.get(services.transfers)!;
    expect(Object.keys(transfers.findResources('AWS::Lambda::Function')).sort()).toEqual(
      [...services.transfers.transfers.stepFunctions.values()].map((fn) => logicalId(fn.lambda)).sort(),
    );
    transfers.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    transfers.resourceCountIs('AWS::ApiGateway::RestApi', 0);
    // The logging stack holds the account setting and its role only.
    expect(
      Object.values(serviceTemplates.get(services.apiGatewayLogging!)!.toJSON().Resources as Resources)
        .map((r) => r.Type)
        .sort(),
    ).toEqual(['AWS::ApiGateway::Account', 'AWS::IAM::Role']);
  });

  it(`keeps every stack at ${MAX_RESOURCES_PER_STACK} resources or fewer (CloudFormation's limit is 500)`, () => {
    const counts = Object.fromEntries(
      [stateful, ...services.stacks].map((stack) => [stack.stackName, Object.keys(Template.fromStack(stack).toJSON().Resources).length]),
    );
    for (const [stack, count] of Object.entries(counts)) expect(count, stack).toBeLessThanOrEqual(MAX_RESOURCES_PER_STACK);
    // The check reads real templates: together they hold every function, method and resource.
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBeGreaterThan(400);
    // And so does what CDK synthesised (the assembly `cdk deploy` reads).
    for (const artifact of assembly.stacks)
      expect(Object.keys(artifact.template.Resources).length, artifact.stackName).toBeLessThanOrEqual(MAX_RESOURCES_PER_STACK);
    expect(assembly.stacks).toHaveLength(services.stacks.length + 1);
  });

  it('orders the stacks by what they import: Stateful and the logging role, then Enclave, Transfers, Events, Account; Express after Enclave', () => {
    const dependsOn = (stack: Stack) => stack.dependencies.map((d) => d.stackName).sort();
    expect(dependsOn(services.apiGatewayLogging!)).toEqual([]);
    expect(dependsOn(stateful)).toEqual([]);
    expect(dependsOn(services.enclave)).toEqual(['ApiGatewayLogging', 'Stateful']);
    expect(dependsOn(services.transfers)).toEqual(['Enclave', 'Stateful']);
    // Events needs the table (stream, partitions) and the account key only; Account imports its queue (the replay route sends to it).
    expect(dependsOn(services.events)).toEqual(['Stateful']);
    expect(dependsOn(services.account)).toEqual(['ApiGatewayLogging', 'Enclave', 'Events', 'Stateful', 'Transfers']);
    expect(dependsOn(services.express)).toEqual(['ApiGatewayLogging', 'Enclave', 'Stateful']);
  });

  it("exports exactly what other stacks import: the enclave API's id, the transfer machine and its step functions, the delivery queue", () => {
    const exportsOf = (stack: Stack) =>
      Object.values((serviceTemplates.get(stack)!.toJSON().Outputs ?? {}) as Outputs)
        .filter((output) => output.Export)
        .map((output) => output.Value);
    expect(exportsOf(services.enclave)).toEqual([{ Ref: logicalId(services.apis.enclave) }]);
    const machine = services.transfers.transfers.stateMachine;
    expect(exportsOf(services.transfers)).toEqual(
      expect.arrayContaining([
        { Ref: logicalId(machine) },
        { 'Fn::GetAtt': [logicalId(machine), 'Name'] },
        ...TRANSFER_STEP_FUNCTIONS.map((step) => ({ 'Fn::GetAtt': [logicalId(functionOf(step.id).lambda), 'Arn'] })),
      ]),
    );
    expect(exportsOf(services.transfers)).toHaveLength(2 + TRANSFER_STEP_FUNCTIONS.length);
    // Events: the delivery queue's ARN (the replay route's SendMessage grant) and URL (its DELIVERY_QUEUE_URL).
    const queue = logicalId(services.events.deliveryQueue);
    expect(exportsOf(services.events)).toEqual(expect.arrayContaining([{ 'Fn::GetAtt': [queue, 'Arn'] }]));
    expect(
      exportsOf(services.events).every((value) => JSON.stringify(value).includes(queue)),
      'only the delivery queue',
    ).toBe(true);
    for (const stack of [services.apiGatewayLogging!, services.account, services.express]) expect(exportsOf(stack), stack.stackName).toEqual([]);
    // Imports, not SSM parameters or weak references (docs/deploy.md, "Stacks").
    for (const [stack, template] of serviceTemplates) {
      const json = template.toJSON() as { Parameters?: Record<string, unknown> };
      expect(JSON.stringify(json), stack.stackName).not.toContain('Fn::GetStackOutput');
      expect(
        Object.keys(json.Parameters ?? {}).filter((name) => name !== 'BootstrapVersion'),
        stack.stackName,
      ).toEqual([]);
      expect(Object.keys(template.findResources('AWS::SSM::Parameter')), stack.stackName).toEqual([]);
    }
  });
});

describe('service stacks: functions', () => {
  it('makes one function per route, per transfer step and per event function, and nothing else', () => {
    const functions = serviceResources('AWS::Lambda::Function');
    expect(TRANSFER_STEP_FUNCTIONS).toHaveLength(4);
    expect(Object.keys(functions).sort()).toEqual(FUNCTIONS.map((fn) => functionId(fn.id)).sort());
  });

  it('runs every function on nodejs24.x, arm64, traced, with source maps; the API timeout for routes, the step timeout for steps', () => {
    const steps = new Map([
      ...TRANSFER_STEP_FUNCTIONS.map((step) => [functionId(step.id), stepFunctionTimeout(step.kind).toSeconds()] as const),
      ...EVENT_FUNCTIONS.map((fn) => [functionId(fn.id), (fn.kind === 'publish' ? PUBLISHER_TIMEOUT : DELIVERER_TIMEOUT).toSeconds()] as const),
    ]);
    for (const [id, fn] of Object.entries(serviceResources('AWS::Lambda::Function'))) {
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

  it("keeps each function's logs for one month in its own log group", () => {
    // One per function, one access log per API, one for the transfer state machine.
    expect(countOf('AWS::Logs::LogGroup')).toBe(FUNCTIONS.length + 3 + 1);
    for (const group of Object.values(serviceResources('AWS::Logs::LogGroup'))) expect(group.Properties?.RetentionInDays).toBe(30);
    for (const route of FUNCTIONS) {
      const fn = functionOf(route.id);
      // A Ref within the template: the log group is in the function's own stack.
      expect(Stack.of(fn.logGroup)).toBe(Stack.of(fn.lambda));
      expect(resourceOf(fn.lambda).Properties!.LoggingConfig).toEqual({ LogGroup: { Ref: logicalId(fn.logGroup) } });
    }
  });

  it("names each function's service for Powertools", () => {
    for (const route of ROUTES) expect(environmentOf(route.id).POWERTOOLS_SERVICE_NAME, route.id).toBe(route.service);
  });

  it('gives each function exactly the environment its needs imply', () => {
    for (const route of FUNCTIONS) {
      const { needs } = route;
      const expected = ['NODE_OPTIONS', 'POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_METRICS_NAMESPACE', 'LOG_LEVEL'];
      if (needs.table) expected.push('TABLE_NAME');
      if (needs.enclaveWalletKey || needs.accountAccessKey || needs.webhookSecretKey) expected.push('KEY_PROVIDER');
      if (needs.enclaveWalletKey) expected.push('ENCLAVE_KMS_KEY_ID');
      if (needs.accountAccessKey || needs.webhookSecretKey) expected.push('ACCOUNT_KMS_KEY_ID');
      if (needs.deliveryQueue) expected.push('DELIVERY_QUEUE_URL');
      if (needs.opJwtKey) expected.push('OP_JWT_SIGNER', 'OP_JWT_KMS_KEY_ID');
      if (needs.sponsorKey) expected.push('SPONSOR_SIGNER', 'SPONSOR_KMS_KEY_ID');
      if (needs.enclaveUrl) expected.push('TEE_URL');
      if (needs.chains) expected.push('CHAINS_CONFIG', 'RPC_URLS_SECRET');
      else if (needs.chainData) expected.push('CHAINS_CONFIG');
      if (needs.delegates) expected.push('ALLOWED_7702_DELEGATES');
      if (needs.venues) expected.push('VENUE_URLS');
      // No -c bridgeUrl here: BRIDGE_URL is LI.FI's public API; no platformFee: PLATFORM_FEE stays unset (test/infra/transfer-machine.test.ts sets both).
      if (needs.bridge) expected.push('BRIDGE_URL');
      if (needs.transfers) expected.push('TRANSFER_STATE_MACHINE_ARN', 'TRANSFER_STEP_FUNCTIONS');
      const variables = environmentOf(route.id);
      expect(Object.keys(variables).sort(), route.id).toEqual(expected.sort());
      if (needs.enclaveUrl) expect(variables.TEE_URL, route.id).toEqual(enclaveUrlIn(Stack.of(functionOf(route.id))));
      if (needs.enclaveWalletKey || needs.accountAccessKey || needs.webhookSecretKey) expect(variables.KEY_PROVIDER).toBe('kms');
      if (needs.opJwtKey) expect(variables.OP_JWT_SIGNER).toBe('kms');
      if (needs.sponsorKey) expect(variables.SPONSOR_SIGNER).toBe('kms');
    }
  });

  it("keeps RPC URLs out of the templates: no URL in any environment, CHAINS_CONFIG without rpc_url, the secret's ARN instead", () => {
    for (const route of FUNCTIONS) {
      const variables = environmentOf(route.id);
      for (const [name, value] of Object.entries(variables)) {
        // BRIDGE_URL is LI.FI's public API (docs/bridge.md), not an RPC URL.
        if (name === 'BRIDGE_URL') expect(value, route.id).toBe('https://li.quest');
        else if (typeof value === 'string') expect(value, `${route.id} ${name}`).not.toMatch(/https?:|wss?:|rpc_url/i);
      }
      if (route.needs.chainData && !route.needs.chains) expect(variables.RPC_URLS_SECRET, route.id).toBeUndefined();
      if (route.needs.chains) {
        expect(variables.RPC_URLS_SECRET).toEqual(importedArn(stateful.rpcUrlsSecret, 'Ref'));
        expect(Object.keys(JSON.parse(variables.CHAINS_CONFIG as string))).toEqual(expect.arrayContaining(['ETH', 'ARB', 'POL', 'INK', 'SOL']));
      }
    }
    for (const template of [...serviceTemplates.values(), statefulTemplate])
      expect(JSON.stringify(template.toJSON())).not.toMatch(/publicnode|arbitrum\.io|polygon-rpc|inkonchain|solana\.com|https?:\/\/[^"]*(rpc|mainnet)/);
  });
});

/** A REST API resource's or method's `ResourceId`/`ParentId`: the API's root, or another resource. */
type ResourceRef = { 'Fn::GetAtt': [string, 'RootResourceId'] } | { Ref: string };

/** Every REST API resource of the service stacks by qualified id, with its full path and API (qualified id). */
function restResources(): Map<string, { api: string; path: string }> {
  const out = new Map<string, { api: string; path: string }>();
  for (const [stack, template] of serviceTemplates) {
    for (const [id, entry] of restResourcesOf(template)) out.set(qualify(stack, id), { api: qualify(stack, entry.api), path: entry.path });
  }
  return out;
}

/** Every REST API resource of one template by logical id, with its full path and API. */
function restResourcesOf(template: Template): Map<string, { api: string; path: string }> {
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

/** `METHOD /path` -> qualified id of the function its AWS_PROXY integration invokes, per API (qualified id), over the service stacks. */
function restMethods(): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  for (const [stack, template] of serviceTemplates) {
    for (const [api, methods] of restMethodsOf(template)) out.set(qualify(stack, api), new Map([...methods].map(([key, fn]) => [key, qualify(stack, fn)])));
  }
  return out;
}

/** `METHOD /path` -> logical id of the function its AWS_PROXY integration invokes, per API logical id, in one template. */
function restMethodsOf(template: Template): Map<string, Map<string, string>> {
  const paths = restResourcesOf(template);
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
 * Everything wrong with a service stack's Lambda permissions: empty when each of its functions has exactly
 * one per method it serves (a GET route's function two: GET and HEAD), for
 * `apigateway.amazonaws.com`, whose SourceArn is its own API's stage and its own method and
 * resource (`/*\/*` for the `$default` function), never a wildcard API id, another API, or the
 * console's test-invoke stage.
 */
function permissionProblems(stack: ServiceApiStack, template: Template): string[] {
  const id = (construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnResource);
  const routes = ROUTES.filter((route) => route.service === stack.service);
  const problems: string[] = [];
  const counts = new Map<string, number>();
  const granted = new Map<string, Set<string>>();
  for (const permission of Object.values(template.findResources('AWS::Lambda::Permission') as Resources)) {
    const props = permission.Properties as { Action: string; Principal: string; FunctionName: unknown; SourceArn?: unknown };
    const fnId = /"Fn::GetAtt":\["([^"]+)","Arn"\]/.exec(JSON.stringify(props.FunctionName))?.[1];
    const route = routes.find((r) => id(stack.functions.get(r.id)!.lambda) === fnId);
    if (!route) {
      problems.push(`permission for ${JSON.stringify(props.FunctionName)}, not a route's function`);
      continue;
    }
    counts.set(route.id, (counts.get(route.id) ?? 0) + 1);
    if (props.Action !== 'lambda:InvokeFunction' || props.Principal !== 'apigateway.amazonaws.com')
      problems.push(`${route.id}: ${props.Action} for ${props.Principal}`);
    const api = stack.api;
    const prefix = [
      'arn:',
      { Ref: 'AWS::Partition' },
      ':execute-api:',
      { Ref: 'AWS::Region' },
      ':',
      { Ref: 'AWS::AccountId' },
      ':',
      { Ref: id(api) },
      '/',
      { Ref: id(api.deploymentStage) },
    ];
    const join = (props.SourceArn as { 'Fn::Join'?: [string, unknown[]] } | undefined)?.['Fn::Join'];
    const parts = join?.[0] === '' ? join[1] : undefined;
    const tail = parts?.slice(prefix.length).join('') ?? '';
    const ok = parts !== undefined && JSON.stringify(parts.slice(0, prefix.length)) === JSON.stringify(prefix) && invokeTails(route).includes(tail);
    if (!ok) problems.push(`${route.id}: SourceArn ${JSON.stringify(props.SourceArn)}`);
    else granted.set(route.id, new Set([...(granted.get(route.id) ?? []), tail]));
  }
  for (const route of routes) {
    const expected = invokeTails(route);
    if (counts.get(route.id) !== expected.length) problems.push(`${route.id} has ${counts.get(route.id) ?? 0} permissions`);
    for (const tail of expected) if (!granted.get(route.id)?.has(tail)) problems.push(`${route.id}: no permission for ${tail}`);
  }
  return problems;
}

describe('service stacks: REST APIs', () => {
  it('has three REGIONAL REST APIs, one per service stack, and nothing of API Gateway v2 (HTTP APIs) in any stack', () => {
    expect(countOf('AWS::ApiGateway::RestApi')).toBe(3);
    for (const service of SERVICES) {
      const template = serviceTemplates.get(services.apiStacks[service])!;
      template.resourceCountIs('AWS::ApiGateway::RestApi', 1);
      template.allResourcesProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
    }
    for (const template of [...serviceTemplates.values(), statefulTemplate]) {
      const types = Object.values(template.toJSON().Resources as Resources).map((resource) => (resource as { Type: string }).Type);
      expect(types.filter((type) => type.startsWith('AWS::ApiGatewayV2::'))).toEqual([]);
    }
    for (const service of SERVICES) expect(services.apis[service]).toBeInstanceOf(RestApi);
  });

  it("creates each service's resources: every route path and its prefixes, and the {proxy+} catch-alls", () => {
    const resources = [...restResources().values()];
    for (const service of SERVICES) {
      const apiId = qualifiedId(services.apis[service]);
      const paths = resources.filter((resource) => resource.api === apiId).map((resource) => resource.path);
      expect(new Set(paths).size, service).toBe(paths.length);
      expect(paths.sort(), service).toEqual(
        resourceTree(ROUTES.filter((route) => route.service === service))
          .resources.map((r) => r.path)
          .filter((p) => p !== '/')
          .sort(),
      );
      // Independently of resourceTree: every route's path and each of its prefixes exists.
      for (const route of ROUTES.filter((r) => r.service === service && r.routeKey !== '$default')) {
        const segments = routePath(route).split('/').slice(1);
        for (let i = 1; i <= segments.length; i++) expect(paths, `${route.id}`).toContain(`/${segments.slice(0, i).join('/')}`);
      }
      expect(paths, service).toContain('/{proxy+}');
      expect(paths, service).toContain('/health/{proxy+}');
    }
    const express = resources.filter((resource) => resource.api === qualifiedId(services.apis.express)).map((resource) => resource.path);
    // A greedy variable may not sit beside another variable: /v1/wallet/sign has {operation}, so no {proxy+}.
    expect(express).toContain('/v1/wallet/sign/{operation}');
    expect(express).toContain('/v1/wallet/sign/{operation}/{proxy+}');
    expect(express).not.toContain('/v1/wallet/sign/{proxy+}');
    const account = resources.filter((resource) => resource.api === qualifiedId(services.apis.account)).map((resource) => resource.path);
    expect(account).toContain('/account/{proxy+}');
    expect(account).toContain('/demo/wallet/balance/{proxy+}');
  });

  it('puts every route on its resource as a method invoking its own function, and ANY on every resource (root included) for $default', () => {
    const methods = restMethods();
    expect(methods.size).toBe(3);
    const resources = [...restResources().values()];
    for (const service of SERVICES) {
      const apiId = qualifiedId(services.apis[service]);
      const fallback = functionId(fallbackOf(service).id);
      const expected = new Map<string, string>();
      for (const route of ROUTES.filter((r) => r.service === service && r.routeKey !== '$default')) {
        expected.set(route.routeKey, functionId(route.id));
        // HEAD beside every GET, by the GET route's own function (no function of its own).
        if (route.routeKey.startsWith('GET ')) expected.set(route.routeKey.replace(/^GET /, 'HEAD '), functionId(route.id));
      }
      for (const path of ['/', ...resources.filter((resource) => resource.api === apiId).map((resource) => resource.path)])
        expected.set(`ANY ${path}`, fallback);
      expect(Object.fromEntries([...methods.get(apiId)!].sort()), service).toEqual(Object.fromEntries([...expected].sort()));
    }
    // Spot checks, spelled out.
    const account = methods.get(qualifiedId(services.apis.account))!;
    expect(account.get('POST /account')).toBe(functionId('CreateAccount'));
    expect(account.get('GET /account')).toBe(functionId('GetAccount'));
    expect(account.get('ANY /account')).toBe(functionId('AccountNotFound'));
    expect(account.get('ANY /')).toBe(functionId('AccountNotFound'));
    expect(account.get('HEAD /account')).toBe(functionId('GetAccount'));
    expect(account.get('HEAD /health')).toBe(functionId('AccountHealth'));
    expect(account.get('HEAD /task/{task_id}')).toBe(functionId('GetTask'));
    // Only where GET is: a POST-only resource has none.
    expect(account.get('HEAD /withdraw')).toBeUndefined();
    expect([...account.keys()].filter((key) => key.startsWith('HEAD ')).length).toBe(
      ROUTES.filter((r) => r.service === 'account' && r.routeKey.startsWith('GET ')).length,
    );
    expect(methods.get(qualifiedId(services.apis.express))!.get('POST /v1/wallet/sign/{operation}')).toBe(functionId('ExpressSignV1'));
  });

  it("answers in the services' JSON error shape wherever API Gateway itself answers (413, 429, 504, 4XX, 5XX)", () => {
    expect(countOf('AWS::ApiGateway::GatewayResponse')).toBe(3 * 6);
    for (const service of SERVICES) {
      const responses = serviceTemplates.get(services.apiStacks[service])!.findResources('AWS::ApiGateway::GatewayResponse');
      const apiId = logicalId(services.apis[service]);
      const mine = Object.values(responses).filter((r) => JSON.stringify(r.Properties.RestApiId) === JSON.stringify({ Ref: apiId }));
      expect(mine).toHaveLength(Object.keys(responses).length);
      const byType: Record<string, { StatusCode?: string; ResponseTemplates: Record<string, string> }> = Object.fromEntries(
        mine.map((r) => [r.Properties.ResponseType, r.Properties]),
      );
      expect(Object.keys(byType).sort()).toEqual([
        'DEFAULT_4XX',
        'DEFAULT_5XX',
        'INTEGRATION_TIMEOUT',
        'MISSING_AUTHENTICATION_TOKEN',
        'REQUEST_TOO_LARGE',
        'THROTTLED',
      ]);
      expect(byType.REQUEST_TOO_LARGE!.StatusCode).toBe('413');
      expect(byType.THROTTLED!.StatusCode).toBe('429');
      expect(byType.DEFAULT_4XX!.StatusCode).toBeUndefined(); // keeps API Gateway's own 4xx status
      for (const [type, properties] of Object.entries(byType)) {
        const template = properties.ResponseTemplates['application/json'] as string;
        // A valid JSON document once API Gateway substitutes its variables (each a JSON string).
        const body = JSON.parse(template.replace('$context.error.messageString', '"Unsupported Media Type"'));
        expect(body, type).toMatchObject({
          success: false,
          error: { code: expect.stringMatching(/^[A-Z_]+$/), message: expect.any(String), request_id: '$context.requestId' },
        });
      }
    }
  });

  it('ends every function before API Gateway stops waiting for it', () => {
    expect(API_FUNCTION_TIMEOUT.toMilliseconds()).toBeLessThan(API_INTEGRATION_TIMEOUT.toMilliseconds());
    expect(API_INTEGRATION_TIMEOUT.toMilliseconds()).toBeLessThanOrEqual(29_000);
  });

  it('deploys one throttled, traced stage per API, execution logs at ERROR without bodies', () => {
    for (const service of SERVICES) {
      const template = serviceTemplates.get(services.apiStacks[service])!;
      template.resourceCountIs('AWS::ApiGateway::Stage', 1);
      template.resourceCountIs('AWS::ApiGateway::Deployment', 1);
    }
    expect(countOf('AWS::ApiGateway::Stage')).toBe(3);
    expect(countOf('AWS::ApiGateway::Deployment')).toBe(3);
    for (const stage of Object.values(serviceResources('AWS::ApiGateway::Stage'))) {
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
    const { services: slow } = buildStacks(app, { prefix: 'Slow', services: { throttle: { rateLimit: 5, burstLimit: 7 } } });
    const stages = Object.values(slow.stacks).flatMap((stack) => Object.values(Template.fromStack(stack).findResources('AWS::ApiGateway::Stage') as Resources));
    expect(stages).toHaveLength(3);
    for (const stage of stages)
      expect(stage.Properties?.MethodSettings).toEqual([
        expect.objectContaining({ ResourcePath: '/*', HttpMethod: '*', ThrottlingRateLimit: 5, ThrottlingBurstLimit: 7 }),
      ]);
  });

  it("writes each API's access log as JSON request metadata (no headers, query or body) to its own log group", () => {
    const destinations = new Set<string>();
    for (const [stack, template] of serviceTemplates) {
      const logGroups = template.toJSON().Resources as Resources;
      for (const stage of Object.values(template.findResources('AWS::ApiGateway::Stage') as Resources)) {
        const settings = stage.Properties?.AccessLogSetting as { DestinationArn: { 'Fn::GetAtt': [string, string] }; Format: string };
        const [logGroupId] = settings.DestinationArn['Fn::GetAtt'];
        expect(logGroups[logGroupId]?.Properties?.RetentionInDays).toBe(30);
        destinations.add(qualify(stack, logGroupId));
        const format = JSON.parse(settings.Format) as Record<string, string>;
        expect(format).toMatchObject({
          requestId: '$context.requestId',
          extendedRequestId: '$context.extendedRequestId',
          status: '$context.status',
          resourcePath: '$context.resourcePath',
        });
        // Only variables API Gateway documents for REST API access logs (CDK's AccessLogField list; routeKey is HTTP/WebSocket only).
        for (const value of Object.values(format)) expect(REST_ACCESS_LOG_VARIABLES, value).toContain(value);
        expect(settings.Format).not.toContain('$context.routeKey');
        expect(settings.Format).not.toMatch(/request\.header|querystring|\$input|authorizer|identity\.(user|caller|apiKey|cognito)|apiKey|clientCert/i);
      }
    }
    expect(destinations.size).toBe(3);
  });

  it("lets API Gateway invoke each function only from its own API's stage, for its own method (one permission per method it serves)", () => {
    expect(countOf('AWS::Lambda::Permission')).toBe(ROUTES.flatMap(invokeTails).length);
    for (const service of SERVICES) {
      const stack = services.apiStacks[service];
      expect(permissionProblems(stack, serviceTemplates.get(stack)!), service).toEqual([]);
    }
    // Spelled out for two functions.
    const sourceArnOf = (routeId: string) => {
      const fn = functionOf(routeId).lambda;
      return Object.values(serviceTemplates.get(Stack.of(fn))!.findResources('AWS::Lambda::Permission') as Resources).find(
        (p) => JSON.stringify(p.Properties?.FunctionName) === JSON.stringify({ 'Fn::GetAtt': [logicalId(fn), 'Arn'] }),
      )!.Properties!.SourceArn;
    };
    expect(joinParts(sourceArnOf('ExpressSignV1')).slice(6)).toEqual([
      ':',
      { Ref: logicalId(services.apis.express) },
      '/',
      { Ref: logicalId(services.apis.express.deploymentStage) },
      '/POST/v1/wallet/sign/*',
    ]);
    expect(joinParts(sourceArnOf('EnclaveNotFound')).slice(6)).toEqual([
      ':',
      { Ref: logicalId(services.apis.enclave) },
      '/',
      { Ref: logicalId(services.apis.enclave.deploymentStage) },
      '/*/*',
    ]);
  });

  it('would catch a function invocable from another API, from any API, or twice (the permission check is not vacuous)', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: widened } = buildStacks(app, { prefix: 'Widened' });
    const apigateway = new ServicePrincipal('apigateway.amazonaws.com');
    const account = widened.account;
    // The enclave's API is in another stack: its id is imported, still not this API's.
    account.functions
      .get('AccountNotFound')!
      .lambda.addPermission('FromEnclaveApi', { principal: apigateway, sourceArn: widened.apis.enclave.arnForExecuteApi() });
    account.functions
      .get('GetAccount')!
      .lambda.addPermission('FromAnyApi', { principal: apigateway, sourceArn: `arn:aws:execute-api:${account.region}:${account.account}:*/prod/*/*` });
    account.functions
      .get('AccountHealth')!
      .lambda.addPermission('TestInvoke', { principal: apigateway, sourceArn: widened.apis.account.arnForExecuteApi('GET', '/health', 'test-invoke-stage') });
    const problems = permissionProblems(account, Template.fromStack(account));
    expect(problems.filter((problem) => problem.startsWith('AccountNotFound: SourceArn'))).toHaveLength(1);
    expect(problems.filter((problem) => problem.startsWith('GetAccount: SourceArn'))).toHaveLength(1);
    expect(problems.filter((problem) => problem.startsWith('AccountHealth: SourceArn'))).toHaveLength(1);
    expect(problems.filter((problem) => / has [2-9] permissions$/.test(problem)).sort()).toEqual([
      'AccountHealth has 3 permissions',
      'AccountNotFound has 2 permissions',
      'GetAccount has 3 permissions',
    ]);
    expect(problems).toHaveLength(6);
  });

  it("outputs each stage URL (with the stage name, without a trailing slash) from its own stack, and gives the enclave's to TEE_URL", () => {
    const outputNames = (stack: Stack) => Object.keys(serviceTemplates.get(stack)!.toJSON().Outputs ?? {}).filter((name) => !name.startsWith('ExportsOutput'));
    expect(outputNames(services.transfers)).toEqual(['TransferStateMachineArn']);
    expect(outputNames(services.apiGatewayLogging!)).toEqual([]);
    for (const service of SERVICES) {
      const id = `${service[0]!.toUpperCase()}${service.slice(1)}ApiUrl`;
      const stack = services.apiStacks[service];
      expect(outputNames(stack), service).toEqual([id]);
      const parts = joinParts((serviceTemplates.get(stack)!.toJSON().Outputs as Outputs)[id]!.Value);
      expect(parts).toEqual([
        'https://',
        { Ref: logicalId(services.apis[service]) },
        '.execute-api.',
        { Ref: 'AWS::Region' },
        '.',
        { Ref: 'AWS::URLSuffix' },
        `/${API_STAGE_NAME}`,
      ]);
    }
    const users = FUNCTIONS.filter((r) => r.needs.enclaveUrl);
    // The account and express services and the signing transfer steps: all outside the enclave's stack.
    expect(new Set(users.map((route) => Stack.of(functionOf(route.id)).stackName))).toEqual(new Set(['Account', 'Express', 'Transfers']));
    for (const route of users) {
      const teeUrl = environmentOf(route.id).TEE_URL;
      expect(teeUrl, route.id).toEqual(enclaveUrlIn(Stack.of(functionOf(route.id))));
      expect(JSON.stringify(teeUrl), route.id).toMatch(
        /^\{"Fn::Join":\["",\["https:\/\/",\{"Fn::ImportValue":"Enclave:ExportsOutputRefEnclaveApi[^"]*"\}.*"\/prod"\]\]\}$/,
      );
    }
  });

  it("sets API Gateway's account-level CloudWatch Logs role once, retained, with the AWS-managed push policy, before any stage", () => {
    expect(countOf('AWS::ApiGateway::Account')).toBe(1);
    const logging = services.apiGatewayLogging!;
    const template = serviceTemplates.get(logging)!;
    const [, account] = Object.entries(template.findResources('AWS::ApiGateway::Account') as Resources)[0]!;
    const loggingRoleId = (account.Properties!.CloudWatchRoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    expect(loggingRoleId).toBe(logicalId(logging.role));
    const role = (template.toJSON().Resources as Resources)[loggingRoleId]!;
    expect(role).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    expect(role.Properties?.AssumeRolePolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [{ Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'apigateway.amazonaws.com' } }],
    });
    expect(role.Properties?.ManagedPolicyArns).toEqual([
      { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs']] },
    ]);
    expect(role.Properties?.Policies).toBeUndefined();
    expect(roleStatements().filter((entry) => entry.role === qualify(logging, loggingRoleId))).toEqual([]);
    // Each stage waits for the setting: its API's stack deploys after the logging stack.
    for (const service of SERVICES) expect(services.apiStacks[service].dependencies, service).toContain(logging);
  });

  it('leaves the account-level CloudWatch role out when apiGatewayCloudWatchRole is false', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: bare } = buildStacks(app, { prefix: 'NoRole', services: { apiGatewayCloudWatchRole: false } });
    expect(bare.apiGatewayLogging).toBeUndefined();
    expect(bare.stacks.map((stack) => stack.stackName)).toEqual(['NoRoleEnclave', 'NoRoleTransfers', 'NoRoleEvents', 'NoRoleAccount', 'NoRoleExpress']);
    const templates = bare.stacks.map((stack) => Template.fromStack(stack));
    const count = (type: string) => templates.reduce((sum, template) => sum + Object.keys(template.findResources(type)).length, 0);
    expect(count('AWS::ApiGateway::Account')).toBe(0);
    // One per function and the transfer state machine's.
    expect(count('AWS::IAM::Role')).toBe(FUNCTIONS.length + 1);
  });

  it('associates no web ACL by default, and the given one with each stage when webAclArn is set', () => {
    expect(countOf('AWS::WAFv2::WebACLAssociation')).toBe(0);
    const webAclArn = 'arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/perp-wallet/0a1b2c3d-1111-2222-3333-444455556666';
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: waf } = buildStacks(app, { prefix: 'Waf', services: { webAclArn } });
    for (const service of SERVICES) {
      const stack = waf.apiStacks[service];
      const associations = Object.values(Template.fromStack(stack).findResources('AWS::WAFv2::WebACLAssociation') as Resources) as Array<{
        Properties: { WebACLArn: string; ResourceArn: unknown };
      }>;
      expect(associations, service).toHaveLength(1);
      const stageId = stack.getLogicalId(stack.api.deploymentStage.node.defaultChild as CfnResource);
      const apiId = stack.getLogicalId(stack.api.node.defaultChild as CfnResource);
      expect(associations[0]!.Properties.WebACLArn).toBe(webAclArn);
      // arn:<partition>:apigateway:<region>::/restapis/<api-id>/stages/<stage>, its own API's; the Ref to the stage orders it after the stage.
      expect(joinParts(associations[0]!.Properties.ResourceArn)).toEqual([
        'arn:',
        { Ref: 'AWS::Partition' },
        ':apigateway:',
        { Ref: 'AWS::Region' },
        '::/restapis/',
        { Ref: apiId },
        '/stages/',
        { Ref: stageId },
      ]);
    }
    for (const stack of [waf.transfers, waf.apiGatewayLogging!]) Template.fromStack(stack).resourceCountIs('AWS::WAFv2::WebACLAssociation', 0);
    expect(() =>
      buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), {
        prefix: 'Bad',
        services: { webAclArn: 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/x/y' },
      }),
    ).toThrow(/REGIONAL WAFv2 web ACL/);
  });
});

describe('least privilege per route', () => {
  it('gives health and not-found functions nothing beyond their own logs and X-Ray', () => {
    expect(HEALTH_AND_NOT_FOUND).toHaveLength(6);
    for (const route of HEALTH_AND_NOT_FOUND) {
      const role = roleId(route.id);
      const actions = roleStatements()
        .filter((entry) => entry.role === role)
        .flatMap(({ statement }) => asArray(statement.Action));
      expect(actions.sort(), route.id).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    }
    for (const action of ['kms:Decrypt', 'kms:GenerateDataKey', 'kms:Sign', 'kms:GetPublicKey', 'dynamodb:GetItem', 'secretsmanager:GetSecretValue']) {
      for (const route of HEALTH_AND_NOT_FOUND) expect(rolesAllowed(action).has(roleId(route.id)), `${route.id} ${action}`).toBe(false);
    }
  });

  it("lets only the enclave's creating and signing (v2) functions decrypt or wrap with the wallet key", () => {
    const expected = rolesOf(ROUTES.filter((route) => route.service === 'enclave' && /^(CreateWallet|Sign\w+)V2$/.test(route.id)));
    expect(expected.size).toBe(5);
    expect(rolesAllowed('kms:Decrypt', importedKeyArn('enclaveKey'))).toEqual(expected);
    expect(rolesAllowed('kms:GenerateDataKey', importedKeyArn('enclaveKey'))).toEqual(expected);
  });

  it('grants each key operation exactly to the routes whose needs list it, and nothing else on the keys', () => {
    const operations = {
      enclaveKey: ['GenerateDataKey', 'Decrypt'],
      accountKey: ['GenerateDataKey', 'Decrypt'],
      opJwtKey: ['Sign', 'GetPublicKey'],
      sponsorKey: ['Sign', 'GetPublicKey'],
    } as const;
    for (const key of KEY_NAMES) {
      for (const operation of operations[key]) {
        expect(rolesAllowed(`kms:${operation}`, importedKeyArn(key)), `${key} ${operation}`).toEqual(rolesNeedingKey(key, operation));
      }
      for (const other of [
        'kms:Encrypt',
        'kms:ReEncryptFrom',
        'kms:CreateGrant',
        'kms:PutKeyPolicy',
        ...(isSigningKey(key) ? ['kms:Decrypt', 'kms:GenerateDataKey'] : ['kms:Sign']),
      ]) {
        expect(rolesAllowed(other, importedKeyArn(key)), `${key} ${other}`).toEqual(new Set());
      }
    }
    // Spot checks against the code paths (functions/routes.ts explains each).
    expect(rolesNeedingKey('accountKey', 'GenerateDataKey')).toEqual(
      rolesOf(ROUTES.filter((r) => ['CreateAccount', 'CreateWebhookEndpoint', 'RotateWebhookEndpointSecret'].includes(r.id))),
    );
    expect(rolesNeedingKey('accountKey', 'Decrypt')).toEqual(
      rolesOf(
        FUNCTIONS.filter((r) =>
          [
            'SignWithWallet',
            'Withdraw',
            'InitPerpDex',
            'InitPerpDexTrading',
            'GetPerp',
            'TransferWithdrawalStep',
            'TransferBridgeStep',
            'TransferDepositStep',
            // Issue 24: opens webhook signing secrets, under purpose webhook-secret only.
            'EventsDeliver',
          ].includes(r.id),
        ),
      ),
    );
    expect(rolesNeedingKey('accountKey', 'Decrypt').has(roleId('TransferSettle'))).toBe(false);
    expect(rolesNeedingKey('accountKey', 'Decrypt').has(roleId('EventsPublish'))).toBe(false);
    expect(rolesNeedingKey('opJwtKey', 'Sign').has(roleId('CreateAccount'))).toBe(false);
    expect(rolesNeedingKey('opJwtKey', 'Sign').has(roleId('ExpressSignData'))).toBe(true);
  });

  it("conditions every wrapping-key grant on its purpose's encryption context, and op_jwt Sign on ES256 over a raw message", () => {
    for (const key of ['enclaveKey', 'accountKey'] as const) {
      const grants = roleStatements().filter(({ statement }) => JSON.stringify(statement.Resource) === JSON.stringify(importedKeyArn(key)));
      expect(grants.length, key).toBeGreaterThan(0);
      for (const { role, statement } of grants) {
        // Each grant carries the context of the need it comes from: the role's function lists the operation under that purpose's field.
        const purpose = (statement.Condition as { StringEquals?: Record<string, string> }).StringEquals?.['kms:EncryptionContext:purpose'] ?? '';
        const context = WRAPPING_CONTEXT[purpose as keyof typeof WRAPPING_CONTEXT];
        expect(context?.key, `${key} ${purpose}`).toBe(key);
        const fn = FUNCTIONS.find((f) => roleId(f.id) === role)!;
        expect(needsOperation(fn.needs, [context!.need], String(statement.Action).replace('kms:', '')), `${fn.id} ${purpose}`).toBe(true);
        expect(statement.Condition, key).toEqual(contextCondition(purpose));
      }
    }
    const signs = roleStatements().filter(
      ({ statement }) => allows(statement, 'kms:Sign', importedKeyArn('opJwtKey')) || allows(statement, 'kms:Sign', importedKeyArn('sponsorKey')),
    );
    expect(signs.length).toBeGreaterThan(0);
    for (const { statement } of signs)
      expect(statement.Condition).toEqual({ StringEquals: { 'kms:SigningAlgorithm': 'ECDSA_SHA_256', 'kms:MessageType': 'RAW' } });
  });

  it("puts each function's role under its own path (what the key policies name) and tags none for key use", () => {
    const roles = serviceResources('AWS::IAM::Role');
    for (const route of FUNCTIONS) {
      const role = roles[roleId(route.id)]?.Properties;
      expect(role?.Path, route.id).toBe(functionRolePath(stateful.stackName, route.id));
      expect(role?.RoleName, route.id).toBeUndefined(); // CloudFormation's name: the role can be replaced
      expect(JSON.stringify(role?.Tags ?? []), route.id).not.toContain('kms');
    }
  });

  it('grants table reads to the routes that read, writes only to those that write, and Scan to none', () => {
    const tableArn = importedArn(stateful.table);
    const readers = rolesOf(FUNCTIONS.filter((route) => route.needs.table));
    const writers = rolesOf(FUNCTIONS.filter((route) => route.needs.table && tableAccess(route.needs.table) === 'read-write'));
    for (const action of ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query']) expect(rolesAllowed(action, tableArn), action).toEqual(readers);
    for (const action of ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem']) {
      expect(rolesAllowed(action, tableArn), action).toEqual(writers);
    }
    for (const readOnly of ['GetAccount', 'GetIdentityProvider', 'SignWithWallet', 'SignDataV1', 'ExpressSignData', 'ExpressWalletV1']) {
      expect(readers.has(roleId(readOnly)), readOnly).toBe(true);
      expect(writers.has(roleId(readOnly)), readOnly).toBe(false);
    }
    expect(rolesAllowed('dynamodb:Scan')).toEqual(new Set());
    expect(rolesAllowed('dynamodb:DeleteTable')).toEqual(new Set());
  });

  it('lets only the routes and steps that read chains read the RPC URLs secret, and nothing else of Secrets Manager or SSM', () => {
    const chainRoutes = rolesOf(FUNCTIONS.filter((route) => route.needs.chains));
    expect(chainRoutes).toEqual(
      rolesOf(
        FUNCTIONS.filter((route) =>
          [
            'Withdraw',
            'GetDemoBalance',
            'CheckPerpDexRequirements',
            'InitPerpDex',
            'InitPerpDexTrading',
            'GetPerp',
            'TransferWithdrawalStep',
            'TransferBridgeStep',
            'TransferDepositStep',
            'EstimateTransferCost',
            'CreateTransfer',
            // Issue 22: a policy's USD limit prices a native coin from the Chainlink feeds.
            'SignTransactionV2',
            'EvaluatePolicy',
          ].includes(route.id),
        ),
      ),
    );
    expect(chainRoutes.has(roleId('TransferSettle'))).toBe(false);
    // The other enclave signatures move no native coin: no RPC URL for them.
    for (const id of ['SignDataV2', 'SignMessageV2', 'SignAuthorizationV2', 'CreateWalletV2']) expect(chainRoutes.has(roleId(id)), id).toBe(false);
    const secretArn = importedArn(stateful.rpcUrlsSecret, 'Ref');
    expect(rolesAllowed('secretsmanager:GetSecretValue', secretArn)).toEqual(chainRoutes);
    const secretStatements = roleStatements().filter(({ statement }) => asArray(statement.Action).some((a) => String(a).startsWith('secretsmanager:')));
    expect(new Set(secretStatements.map(({ role }) => role))).toEqual(chainRoutes);
    for (const { statement } of secretStatements) {
      expect(statement).toEqual({ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'], Resource: secretArn });
    }
    for (const action of ['secretsmanager:PutSecretValue', 'secretsmanager:ListSecrets', 'secretsmanager:UpdateSecret'])
      expect(rolesAllowed(action), action).toEqual(new Set());
    // The SSM parameter and its aws/ssm decrypt grant are gone: nothing may call SSM, nor use KMS on a wildcard key.
    expect(roleStatements().filter(({ statement }) => asArray(statement.Action).some((a) => String(a).startsWith('ssm:')))).toEqual([]);
    expect(
      roleStatements().filter(
        ({ statement }) => asArray(statement.Action).some((a) => String(a).startsWith('kms:')) && JSON.stringify(statement.Resource).includes('key/*'),
      ),
    ).toEqual([]);
  });

  it('uses Resource "*" only for X-Ray and, on the state machine\'s role, Step Functions log delivery (no resource-level permissions)', () => {
    const machineRole = qualifiedId(services.transfers.transfers.role);
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
    const { stateful: own, services: stacks } = buildStacks(app, { prefix: 'Own', stateful: { rpcUrlsSecretName: 'staging/rpc-urls' } });
    Template.fromStack(own).hasResourceProperties('AWS::SecretsManager::Secret', { Name: 'staging/rpc-urls' });
    const secretExport = `"RPC_URLS_SECRET":{"Fn::ImportValue":"OwnStateful:ExportsOutputRef${own.getLogicalId(own.rpcUrlsSecret.node.defaultChild as CfnResource)}`;
    // The account routes and the transfer steps that read chains, each in its own stack.
    for (const stack of [stacks.account, stacks.transfers]) expect(JSON.stringify(Template.fromStack(stack).toJSON()), stack.stackName).toContain(secretExport);
    expect(JSON.stringify(Template.fromStack(own).toJSON())).not.toContain(DEFAULT_RPC_URLS_SECRET_NAME);
  });

  it("writes each function's logs only to its own log group, with no managed policy", () => {
    for (const route of FUNCTIONS) {
      const role = roleId(route.id);
      const logs = roleStatements().filter((entry) => entry.role === role && asArray(entry.statement.Action).some((a) => String(a).startsWith('logs:')));
      expect(
        logs.map(({ statement }) => statement.Resource),
        route.id,
      ).toEqual([{ 'Fn::GetAtt': [logicalId(functionOf(route.id).logGroup), 'Arn'] }]);
    }
    // The one managed policy is API Gateway's account-level logging role's (asserted in the REST APIs block).
    const roles = serviceResources('AWS::IAM::Role');
    const withManagedPolicy = Object.entries(roles).filter(([, role]) => role.Properties?.ManagedPolicyArns !== undefined);
    expect(withManagedPolicy.map(([id]) => id)).toEqual([qualifiedId(services.apiGatewayLogging!.role)]);
    for (const route of FUNCTIONS) expect(roles[roleId(route.id)]!.Properties!.ManagedPolicyArns, route.id).toBeUndefined();
  });
});

describe('venue routes (need `venues`)', () => {
  const VENUE_ROUTES = ['CheckPerpDexRequirements', 'InitPerpDex', 'InitPerpDexTrading', 'GetPerp'];
  const actionsOf = (routeId: string) =>
    roleStatements()
      .filter((entry) => entry.role === roleId(routeId))
      .flatMap(({ statement }) => asArray(statement.Action) as string[])
      .filter((action) => !action.startsWith('logs:') && !action.startsWith('xray:'))
      .sort();

  it('gives VENUE_URLS (`{}` by default) to exactly the routes that call venues', () => {
    expect(
      ROUTES.filter((route) => route.needs.venues)
        .map((route) => route.id)
        .sort(),
    ).toEqual([...VENUE_ROUTES].sort());
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
    expect(rolesAllowed('kms:GenerateDataKey', importedKeyArn('accountKey')).has(roleId('InitPerpDex'))).toBe(false);
  });

  it('passes the venueUrls prop (checked as the functions check it) to VENUE_URLS; a bad one stops the synth', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const venueUrls = { venue_b: 'https://api.venue-b.example.com/', venue_d: 'https://gateway.venue-d.example.com/v1' };
    const { services: venues } = buildStacks(app, { prefix: 'Venue', services: { venueUrls } });
    const stack = venues.account;
    const resources = Template.fromStack(stack).toJSON().Resources;
    const variables =
      resources[stack.getLogicalId(stack.functions.get('InitPerpDex')!.lambda.node.defaultChild as CfnResource)].Properties.Environment.Variables;
    expect(JSON.parse(variables.VENUE_URLS)).toEqual({ venue_b: 'https://api.venue-b.example.com', venue_d: 'https://gateway.venue-d.example.com/v1' });
    const other = resources[stack.getLogicalId(stack.functions.get('GetAccount')!.lambda.node.defaultChild as CfnResource)].Properties.Environment.Variables;
    expect(other.VENUE_URLS).toBeUndefined();
    const bad = (venueUrls: Record<string, string>, prefix: string) => () =>
      buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { prefix, services: { venueUrls } });
    expect(bad({ venue_z: 'https://x.example.com' }, 'BadVenue')).toThrow(/VENUE_URLS: venue_z: is not a venue id/);
    expect(bad({ venue_a: 'x' }, 'BadUrl')).toThrow(/VENUE_URLS: venue_a: must be a URL/);
  });
});

describe('key policies', () => {
  const CRYPTO = ['kms:Decrypt', 'kms:GenerateDataKey', 'kms:Encrypt', 'kms:ReEncryptFrom', 'kms:ReEncryptTo', 'kms:Sign', 'kms:CreateGrant'];
  const policyOf = (key: KeyName) => (statefulTemplate.toJSON().Resources as Resources)[logicalId(stateful[key])]!.Properties!.KeyPolicy as PolicyDocument;
  const covers = (statement: Statement, action: string) =>
    asArray(statement.Action).some((a) => a === action || a === '*' || a === 'kms:*' || (String(a).endsWith('*') && action.startsWith(String(a).slice(0, -1))));

  it('let the account administer each key but use it only through statements naming the roles of the functions that need it', () => {
    for (const key of KEY_NAMES) {
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
        // A wrapping key's statement serves one purpose (its condition), so the users are those whose need for that purpose lists the operation.
        const purpose = (statement.Condition as { StringEquals?: Record<string, string> }).StringEquals?.['kms:EncryptionContext:purpose'];
        const fields = purpose ? [WRAPPING_CONTEXT[purpose as keyof typeof WRAPPING_CONTEXT].need] : KEY_NEED[key];
        const users = FUNCTIONS.filter((fn) => needsOperation(fn.needs, fields, operation));
        expect(users.length, `${key} ${statement.Sid}`).toBeGreaterThan(0);
        const patterns = (statement.Condition as { ArnLike: Record<string, unknown> }).ArnLike['aws:PrincipalArn'];
        expect(JSON.stringify(patterns), `${key} ${action}`).toBe(
          JSON.stringify(
            users.map((fn) => ({
              'Fn::Join': [
                '',
                ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, `:role${functionRolePath(stateful.stackName, fn.id)}*`],
              ],
            })),
          ),
        );
      }
      expect(JSON.stringify(policyOf(key))).not.toContain('PrincipalTag');
    }
  });

  it("bind wallet-key, access-key and webhook-secret use to their purpose's encryption context", () => {
    const uses = (key: KeyName) => policyOf(key).Statement.filter((statement) => statement.Sid !== 'AdministerButNotUse');
    const summary = (key: KeyName) =>
      uses(key)
        .map((s) => `${(s.Condition as { StringEquals: Record<string, string> }).StringEquals['kms:EncryptionContext:purpose']} ${s.Action}`)
        .sort();
    expect(summary('enclaveKey')).toEqual(['enclave-wallet kms:Decrypt', 'enclave-wallet kms:GenerateDataKey']);
    // The webhook secret's GenerateDataKey gets its statement with the first route that seals one (POST /webhook-endpoints).
    const sealsWebhookSecrets = FUNCTIONS.some((fn) => needsOperation(fn.needs, ['webhookSecretKey'], 'GenerateDataKey'));
    expect(summary('accountKey')).toEqual(
      [
        'account-access-keys kms:Decrypt',
        'account-access-keys kms:GenerateDataKey',
        'webhook-secret kms:Decrypt',
        ...(sealsWebhookSecrets ? ['webhook-secret kms:GenerateDataKey'] : []),
      ].sort(),
    );
    for (const key of ['enclaveKey', 'accountKey'] as const) {
      for (const statement of uses(key)) {
        const purpose = (statement.Condition as { StringEquals: Record<string, string> }).StringEquals['kms:EncryptionContext:purpose']!;
        expect(WRAPPING_CONTEXT[purpose as keyof typeof WRAPPING_CONTEXT].key, purpose).toBe(key);
        expect(statement.Condition, `${key} ${purpose}`).toEqual({ ...contextCondition(purpose), ArnLike: expect.any(Object) });
      }
    }
  });

  it('allow op_jwt and sponsor Sign only to the named roles, ES256 over a raw message', () => {
    for (const key of ['opJwtKey', 'sponsorKey'] as const) {
      const sign = policyOf(key).Statement.filter((statement) => covers(statement, 'kms:Sign'));
      expect(sign, key).toHaveLength(1);
      expect(sign[0]!.Condition, key).toMatchObject({ StringEquals: { 'kms:SigningAlgorithm': 'ECDSA_SHA_256', 'kms:MessageType': 'RAW' } });
      expect(Object.keys(sign[0]!.Condition as object).sort(), key).toEqual(['ArnLike', 'StringEquals']);
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

  it('keeps two rotating symmetric wrapping keys and two ECC_NIST_P256 signing keys (op_jwt, gas sponsor), all retained', () => {
    statefulTemplate.resourceCountIs('AWS::KMS::Key', 4);
    const keys = statefulTemplate.toJSON().Resources as Resources;
    for (const key of ['enclaveKey', 'accountKey'] as const) {
      const props = keys[logicalId(stateful[key])]?.Properties;
      expect(props?.EnableKeyRotation, key).toBe(true);
      expect(props?.KeySpec ?? 'SYMMETRIC_DEFAULT', key).toBe('SYMMETRIC_DEFAULT');
    }
    expect(keys[logicalId(stateful.opJwtKey)]?.Properties).toMatchObject({ KeySpec: 'ECC_NIST_P256', KeyUsage: 'SIGN_VERIFY' });
    expect(keys[logicalId(stateful.sponsorKey)]?.Properties).toMatchObject({ KeySpec: 'ECC_NIST_P256', KeyUsage: 'SIGN_VERIFY' });
    statefulTemplate.allResources('AWS::KMS::Key', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  it("outputs the table name, key ids and the RPC URLs secret's name", () => {
    for (const name of ['TableName', 'EnclaveKeyId', 'AccountKeyId', 'OpJwtKeyId', 'SponsorKeyId', 'RpcUrlsSecretName']) statefulTemplate.hasOutput(name, {});
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
    expect(countOf('AWS::SecretsManager::ResourcePolicy')).toBe(0);
  });
});

describe('service stacks: function configuration', () => {
  /**
   * Each handler parses its configuration at module load and refuses to cold-start without it.
   * Every function's bundle, built as CDK builds it (one esbuild run of all entries with
   * ESBUILD_OPTIONS, after checking that CDK's own bundles of the BUNDLED_STACK functions are the
   * same bytes), is loaded in a fresh Node process with exactly the environment the template gives
   * its function (CloudFormation references replaced by placeholders): a missing variable fails
   * here instead of in AWS.
   */
  it('every function bundle (the bytes CDK builds) cold-starts with the environment its function is deployed with', async () => {
    const { execFile } = await import('node:child_process');
    const { existsSync, readFileSync } = await import('node:fs');
    const { promisify } = await import('node:util');
    const { build } = await import('esbuild');
    const { ESBUILD_OPTIONS } = await import('../../infra/bundling.ts');
    const run = promisify(execFile);
    const outdir = mkdtempSync(join(tmpdir(), 'stacks-test-bundles-'));
    try {
      // One entry per function (by id: two routes may share an entry file, each keeps its own bundle).
      await build({
        ...ESBUILD_OPTIONS,
        absWorkingDir: REPO_ROOT,
        entryPoints: Object.fromEntries(FUNCTIONS.map((fn) => [`${fn.id}/index`, functionOf(fn.id).entry])),
        outdir,
        logLevel: 'error',
      });
      // S3 object key of each file asset (`<hash>.zip`, the functions' Code.S3Key) -> its staged directory.
      const cdkBundles = new Map<string, string>();
      for (const manifest of assembly.artifacts.filter((artifact): artifact is AssetManifestArtifact => artifact instanceof AssetManifestArtifact)) {
        for (const file of Object.values(manifest.contents.files ?? {})) {
          for (const destination of Object.values(file.destinations))
            if (file.source.path) cdkBundles.set(destination.objectKey, join(assembly.directory, file.source.path));
        }
      }
      const compared = FUNCTIONS.filter((fn) => Stack.of(functionOf(fn.id)).stackName.endsWith(BUNDLED_STACK)).map((fn) => {
        const code = resourceOf(functionOf(fn.id).lambda).Properties!.Code as { S3Key?: string };
        const dir = code.S3Key === undefined ? undefined : cdkBundles.get(code.S3Key);
        const cdk = dir && join(dir, 'index.js');
        expect(cdk && existsSync(cdk), `${fn.id}: no CDK bundle in the assembly for ${JSON.stringify(code)}`).toBe(true);
        expect(readFileSync(cdk as string).equals(readFileSync(join(outdir, fn.id, 'index.js'))), `${fn.id}: CDK's bundle differs from ESBUILD_OPTIONS'`).toBe(
          true,
        );
        return fn.id;
      });
      expect(compared.length).toBeGreaterThan(5);
      const fakeArn = (kind: string) => `arn:aws:lambda:us-east-1:123456789012:function:placeholder-${kind}`;
      const placeholder = (name: string, value: unknown) =>
        typeof value === 'string'
          ? value
          : name === 'TRANSFER_STEP_FUNCTIONS'
            ? JSON.stringify(Object.fromEntries(['withdrawal', 'bridge', 'deposit', 'settle'].map((kind) => [kind, fakeArn(kind)])))
            : name === 'TRANSFER_STATE_MACHINE_ARN'
              ? 'arn:aws:states:us-east-1:123456789012:stateMachine:placeholder'
              : name === 'DELIVERY_QUEUE_URL'
                ? 'https://sqs.us-east-1.amazonaws.com/123456789012/placeholder.fifo'
                : JSON.stringify(value).includes('.execute-api.')
                  ? `https://enclave.example.com/${API_STAGE_NAME}`
                  : 'placeholder-id';
      const failures: string[] = [];
      const loaded: string[] = [];
      await Promise.all(
        FUNCTIONS.map(async (route) => {
          const bundle = join(outdir, route.id, 'index.js');
          const variables = environmentOf(route.id);
          const env = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, placeholder(name, value)]));
          const script = `const m = await import(${JSON.stringify(bundle)}); if (typeof m.handler !== 'function') process.exit(3);`;
          try {
            await run(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1', ...env } });
            loaded.push(route.id);
          } catch (error) {
            const stderr = String((error as { stderr?: string }).stderr ?? error);
            failures.push(`${route.id}: ${/(?:\[\w*Error\]|^\w*Error): .*$/m.exec(stderr)?.[0] ?? stderr.slice(0, 300)}`);
          }
        }),
      );
      // Every failing route at once, each with its first error line.
      expect(failures.sort()).toEqual([]);
      expect(loaded.sort()).toEqual(FUNCTIONS.map((fn) => fn.id).sort());
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);
});
