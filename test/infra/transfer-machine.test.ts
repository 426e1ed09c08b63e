import { readFileSync } from 'node:fs';
import { App, type CfnResource, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES, type RouteNeeds } from '../../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import { ServiceFunction } from '../../infra/constructs/service-function.ts';
import { checkTransferDefinition, SETTLE_FUNCTION_TIMEOUT, STEP_FUNCTION_TIMEOUT, TRANSFER_ASL_FILE } from '../../infra/constructs/transfer-machine.ts';
import type { ServicesStack } from '../../infra/services-stack.ts';
import type { StatefulStack } from '../../infra/stateful-stack.ts';
import { buildStacks } from './support/stacks.ts';

/**
 * The AWS side of transfers (issue 11): the Standard state machine of
 * statemachines/transfer.asl.json, its role (invoke the four step functions, nothing else), the
 * step functions (each exactly its `needs`), and the routes that start executions. Template
 * assertions only: asset bundling is skipped (test/infra/stacks.test.ts bundles every function).
 */
type Resources = Record<string, { Type: string; Properties?: Record<string, unknown>; DependsOn?: unknown }>;
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

const asArray = <T,>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
const ASL = JSON.parse(readFileSync(new URL(`../../${TRANSFER_ASL_FILE}`, import.meta.url), 'utf8')) as Record<string, unknown>;

const BRIDGE_URL = 'https://bridge.example.com/api/';
const PLATFORM_FEE = { bps: 10, recipients: { EVM: '0x00000000000000000000000000000000000000aa' } };
/** What a transfer route needs (the HTTP routes of issue 11 carry these; the probe below stands for one). */
const START_TRANSFER_NEEDS: RouteNeeds = { table: 'read-write', transfers: true, bridge: true, platformFee: true, chains: true };

let stateful: StatefulStack;
let services: ServicesStack;
let template: Template;
let resources: Resources;
let probe: ServiceFunction;

const id = (construct: IConstruct) => Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnResource);

beforeAll(() => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  ({ stateful, services } = buildStacks(app, { services: { bridgeUrl: BRIDGE_URL, platformFee: PLATFORM_FEE } }));
  // A function bound like a transfer route (the routes themselves come from another branch; once
  // merged, the ROUTES-driven assertions below cover them too).
  probe = new ServiceFunction(services, 'StartTransferProbe', { entry: 'functions/common/health.ts', service: 'account' }).bindNeeds(START_TRANSFER_NEEDS, services.needsResources);
  template = Template.fromStack(services);
  resources = template.toJSON().Resources as Resources;
}, 60_000);

/** Every IAM statement of the services stack, by role logical id (standalone policies and inline ones). */
function statements(): Array<{ role: string; statement: Statement }> {
  const out: Array<{ role: string; statement: Statement }> = [];
  for (const resource of Object.values(resources)) {
    if (resource.Type === 'AWS::IAM::Policy') {
      const props = resource.Properties as { PolicyDocument: { Statement: Statement[] }; Roles: Array<{ Ref: string }> };
      for (const statement of props.PolicyDocument.Statement) for (const role of props.Roles) out.push({ role: role.Ref, statement });
    }
    if (resource.Type === 'AWS::IAM::Role') {
      for (const policy of (resource.Properties?.Policies ?? []) as Array<{ PolicyDocument: { Statement: Statement[] } }>) {
        for (const statement of policy.PolicyDocument.Statement) out.push({ role: '?inline', statement });
      }
    }
  }
  return out;
}

const actionsOfRole = (role: string) => statements().filter((entry) => entry.role === role).flatMap(({ statement }) => asArray(statement.Action));
const rolesWith = (prefix: string) => new Set(statements().filter(({ statement }) => asArray(statement.Action).some((a) => a.startsWith(prefix))).map(({ role }) => role));
const machineId = () => id(services.transfers.stateMachine);
const machineRoleId = () => id(services.transfers.role);
const stepFn = (kind: string) => services.transfers.stepFunctions.get(kind as never)!;
const environmentOf = (fn: ServiceFunction) => (resources[id(fn.lambda)]!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
const transferRouteRoles = () => new Set([...ROUTES.filter((r) => r.needs.transfers).map((r) => id(services.functions.get(r.id)!.role)), id(probe.role)]);

const LOG_DELIVERY = [
  'logs:CreateLogDelivery',
  'logs:DeleteLogDelivery',
  'logs:DescribeLogGroups',
  'logs:DescribeResourcePolicies',
  'logs:GetLogDelivery',
  'logs:ListLogDeliveries',
  'logs:PutResourcePolicy',
  'logs:UpdateLogDelivery',
];
const XRAY_MACHINE = ['xray:GetSamplingRules', 'xray:GetSamplingTargets', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments'];

describe('the transfer state machine', () => {
  it('exists once, Standard, with the definition of statemachines/transfer.asl.json inline', () => {
    template.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    const props = resources[machineId()]!.Properties!;
    expect(props.StateMachineType).toBe('STANDARD');
    expect(JSON.parse(props.DefinitionString as string)).toEqual(ASL);
    expect(props.DefinitionS3Location).toBeUndefined();
    expect(props.RoleArn).toEqual({ 'Fn::GetAtt': [machineRoleId(), 'Arn'] });
  });

  it('has the Map over $.steps with lambda:invoke Tasks naming their function from the input, and a TimeoutSeconds on each Task and the machine', () => {
    const definition = JSON.parse(resources[machineId()]!.Properties!.DefinitionString as string);
    expect(typeof definition.TimeoutSeconds).toBe('number');
    const map = definition.States[definition.StartAt];
    expect(map).toMatchObject({ Type: 'Map', ItemsPath: '$.steps', MaxConcurrency: 1 });
    const inner = Object.values(map.ItemProcessor.States as Record<string, { Type: string; Resource?: string; Parameters?: Record<string, unknown>; TimeoutSeconds?: number }>);
    const tasks = inner.filter((state) => state.Type === 'Task');
    expect(tasks.length).toBeGreaterThanOrEqual(2); // submit and poll
    const outer = Object.values(definition.States as Record<string, { Type: string; Resource?: string; Parameters?: Record<string, unknown>; TimeoutSeconds?: number }>).filter((s) => s.Type === 'Task');
    for (const task of [...tasks, ...outer]) {
      expect(task.Resource).toBe('arn:aws:states:::lambda:invoke');
      expect(Object.keys(task.Parameters ?? {})).toContain('FunctionName.$');
      expect(task.TimeoutSeconds).toBeGreaterThanOrEqual(STEP_FUNCTION_TIMEOUT.toSeconds());
    }
    expect(outer.map((task) => task.Parameters!['FunctionName.$'])).toContain('$.settle_function');
  });

  it('logs ALL events without execution data to its own log group (a month), and is traced', () => {
    const props = resources[machineId()]!.Properties!;
    const logGroupId = id(services.transfers.logGroup);
    expect(props.LoggingConfiguration).toEqual({ Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [logGroupId, 'Arn'] } } }], IncludeExecutionData: false, Level: 'ALL' });
    expect(props.TracingConfiguration).toEqual({ Enabled: true });
    expect(resources[logGroupId]!.Properties).toMatchObject({ RetentionInDays: 30, LogGroupName: expect.stringMatching(/^\/aws\/vendedlogs\/states\//) });
  });

  it('its role (assumed by Step Functions only) may invoke exactly the four step functions and nothing else of Lambda', () => {
    expect((resources[machineRoleId()]!.Properties!.AssumeRolePolicyDocument as { Statement: unknown[] }).Statement).toEqual([
      { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'states.amazonaws.com' } },
    ]);
    const mine = statements().filter((entry) => entry.role === machineRoleId());
    const invoke = mine.filter(({ statement }) => asArray(statement.Action).some((a) => a.startsWith('lambda:')));
    expect(invoke).toHaveLength(1);
    expect(invoke[0]!.statement.Action).toBe('lambda:InvokeFunction');
    const stepArns = TRANSFER_STEP_FUNCTIONS.map((step) => ({ 'Fn::GetAtt': [id(stepFn(step.kind).lambda), 'Arn'] }));
    expect(stepArns).toHaveLength(4);
    expect(asArray(invoke[0]!.statement.Resource)).toEqual(expect.arrayContaining(stepArns));
    expect(asArray(invoke[0]!.statement.Resource)).toHaveLength(4);
    // Nothing else: the other statements are logging and tracing on "*" (no resource-level permissions).
    expect(mine.flatMap(({ statement }) => asArray(statement.Action)).sort()).toEqual(['lambda:InvokeFunction', ...LOG_DELIVERY, ...XRAY_MACHINE].sort());
    for (const { statement } of mine) if (asArray(statement.Resource).includes('*')) expect(asArray(statement.Action).every((a) => a.startsWith('xray:') || LOG_DELIVERY.includes(a))).toBe(true);
    // And no other role may invoke a function directly (API Gateway invokes through resource permissions).
    expect(rolesWith('lambda:')).toEqual(new Set([machineRoleId()]));
  });
});

describe('the step functions', () => {
  it('makes one function per TRANSFER_STEP_FUNCTIONS entry, with the step timeout, reachable by no API', () => {
    expect([...services.transfers.stepFunctions.keys()].sort()).toEqual(['bridge', 'deposit', 'settle', 'withdrawal']);
    for (const step of TRANSFER_STEP_FUNCTIONS) {
      const fn = stepFn(step.kind);
      expect(fn.node.id).toBe(step.id);
      expect(fn.entry).toBe(step.entry);
      const timeout = step.kind === 'settle' ? SETTLE_FUNCTION_TIMEOUT : STEP_FUNCTION_TIMEOUT;
      expect(resources[id(fn.lambda)]!.Properties).toMatchObject({ Timeout: timeout.toSeconds(), Runtime: 'nodejs24.x', TracingConfig: { Mode: 'Active' } });
      const permissions = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Permission' && JSON.stringify(r.Properties!.FunctionName).includes(`"${id(fn.lambda)}"`));
      expect(permissions, step.id).toEqual([]);
    }
    expect(STEP_FUNCTION_TIMEOUT.toSeconds()).toBeGreaterThan(Duration.seconds(27).toSeconds());
    expect(SETTLE_FUNCTION_TIMEOUT.toSeconds()).toBeLessThanOrEqual(STEP_FUNCTION_TIMEOUT.toSeconds());
  });

  it('gives each step exactly the environment of its needs (the bridge step no VENUE_URLS, settle only the table)', () => {
    const base = ['NODE_OPTIONS', 'POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_METRICS_NAMESPACE', 'LOG_LEVEL'];
    const signing = ['TABLE_NAME', 'KEY_PROVIDER', 'ACCOUNT_KMS_KEY_ID', 'OP_JWT_SIGNER', 'OP_JWT_KMS_KEY_ID', 'TEE_URL', 'CHAINS_CONFIG', 'RPC_URLS_SECRET', 'PLATFORM_FEE'];
    const expected: Record<string, string[]> = {
      withdrawal: [...base, ...signing, 'VENUE_URLS'],
      bridge: [...base, ...signing, 'BRIDGE_URL', 'ALLOWED_7702_DELEGATES'],
      deposit: [...base, ...signing, 'VENUE_URLS', 'ALLOWED_7702_DELEGATES'],
      settle: [...base, 'TABLE_NAME'],
    };
    for (const [kind, names] of Object.entries(expected)) expect(Object.keys(environmentOf(stepFn(kind))).sort(), kind).toEqual(names.sort());
    expect(environmentOf(stepFn('bridge')).BRIDGE_URL).toBe('https://bridge.example.com/api');
    expect(JSON.parse(environmentOf(stepFn('withdrawal')).PLATFORM_FEE as string)).toEqual({ bps: 10, fixed: '0', recipients: PLATFORM_FEE.recipients });
    for (const kind of ['withdrawal', 'bridge', 'deposit', 'settle']) {
      const variables = environmentOf(stepFn(kind));
      expect(variables.TRANSFER_STATE_MACHINE_ARN, kind).toBeUndefined();
      expect(variables.TRANSFER_STEP_FUNCTIONS, kind).toBeUndefined();
    }
  });

  it('grants each step only what its needs list: settle the table alone, no step any Step Functions action', () => {
    const roleOf = (kind: string) => id(stepFn(kind).role);
    const nonLogging = (kind: string) => actionsOfRole(roleOf(kind)).filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:')).sort();
    const rw = ['dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'];
    const signing = ['kms:Decrypt', 'kms:GetPublicKey', 'kms:Sign', 'secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'];
    for (const kind of ['withdrawal', 'bridge', 'deposit']) expect(nonLogging(kind), kind).toEqual([...rw, ...signing].sort());
    expect(nonLogging('settle')).toEqual(rw);
    for (const kind of ['withdrawal', 'bridge', 'deposit', 'settle']) expect(actionsOfRole(roleOf(kind)).filter((a) => a.startsWith('states:')), kind).toEqual([]);
    // The signing steps open the account access key (Decrypt), never wrap (GenerateDataKey), never touch the enclave's key.
    const accountKey = JSON.stringify(services.resolve(stateful.accountKey.keyArn));
    for (const kind of ['withdrawal', 'bridge', 'deposit']) {
      const kms = statements().filter(({ role, statement }) => role === roleOf(kind) && asArray(statement.Action).some((a) => a.startsWith('kms:Decrypt') || a === 'kms:GenerateDataKey'));
      expect(kms.map(({ statement }) => statement.Action), kind).toEqual(['kms:Decrypt']);
      expect(JSON.stringify(kms[0]!.statement.Resource)).toBe(accountKey);
    }
  });

  it('refuses a step function that needs transfers (a step cannot start executions)', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const steps = TRANSFER_STEP_FUNCTIONS.map((step) => (step.kind === 'settle' ? { ...step, needs: { ...step.needs, transfers: true as const } } : step));
    expect(() => buildStacks(app, { ids: ['LoopStateful', 'LoopServices'], services: { transferSteps: steps } })).toThrow(/TransferSettle: a step function cannot start transfers/);
  });
});

describe('routes that start transfers (need `transfers`)', () => {
  it('may StartExecution on this machine and DescribeExecution on its executions only; no other role may', () => {
    const roles = transferRouteRoles();
    const machineArn = { Ref: machineId() };
    const executions = services.resolve(services.transfers.executionsArn);
    expect(JSON.stringify(executions)).toContain(':execution:');
    expect(JSON.stringify(executions)).toContain(`"Fn::GetAtt":["${machineId()}","Name"]`);
    const states = statements().filter(({ statement }) => asArray(statement.Action).some((a) => a.startsWith('states:')));
    expect(new Set(states.map(({ role }) => role))).toEqual(roles);
    for (const role of roles) {
      const mine = states.filter((entry) => entry.role === role).map(({ statement }) => ({ Action: statement.Action, Resource: statement.Resource }));
      expect(mine).toEqual([
        { Action: 'states:StartExecution', Resource: machineArn },
        { Action: 'states:DescribeExecution', Resource: executions },
      ]);
    }
  });

  it('gives them the machine ARN and the step functions\' ARNs by kind', () => {
    for (const role of [...ROUTES.filter((r) => r.needs.transfers).map((r) => services.functions.get(r.id)!), probe]) {
      const variables = environmentOf(role);
      expect(variables.TRANSFER_STATE_MACHINE_ARN).toEqual({ Ref: machineId() });
      const json = JSON.stringify(variables.TRANSFER_STEP_FUNCTIONS);
      for (const kind of ['withdrawal', 'bridge', 'deposit', 'settle']) {
        expect(json).toContain(`\\"${kind}\\":\\"`);
        expect(json).toContain(`"Fn::GetAtt":["${id(stepFn(kind).lambda)}","Arn"]`);
      }
    }
    expect(Object.keys(environmentOf(probe))).toEqual(expect.arrayContaining(['BRIDGE_URL', 'PLATFORM_FEE', 'TRANSFER_STATE_MACHINE_ARN', 'TRANSFER_STEP_FUNCTIONS']));
  });

  it('gives no role states:* nor any Step Functions action beyond Start/DescribeExecution', () => {
    const actions = statements().flatMap(({ statement }) => asArray(statement.Action));
    expect(actions.filter((a) => a === '*' || a === 'states:*')).toEqual([]);
    expect([...new Set(actions.filter((a) => a.startsWith('states:')))].sort()).toEqual(['states:DescribeExecution', 'states:StartExecution']);
  });

  it('sets BRIDGE_URL and PLATFORM_FEE only when configured (absent: no bridge, no fee), and refuses bad values at synth', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: bare } = buildStacks(app, { ids: ['BareStateful', 'BareServices'] });
    const bareResources = Template.fromStack(bare).toJSON().Resources as Resources;
    for (const fn of [...bare.transfers.stepFunctions.values(), ...bare.functions.values()]) {
      const variables = (bareResources[id(fn.lambda)]!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(variables.BRIDGE_URL, fn.node.id).toBeUndefined();
      expect(variables.PLATFORM_FEE, fn.node.id).toBeUndefined();
    }
    const build = (ids: [string, string], options: { bridgeUrl?: string; platformFee?: unknown }) => () =>
      buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { ids, services: options });
    expect(build(['B1', 'B2'], { bridgeUrl: 'ftp://bridge.example.com' })).toThrow(/bridgeUrl must be an http\(s\) URL/);
    expect(build(['B3', 'B4'], { bridgeUrl: 'bridge' })).toThrow(/bridgeUrl must be an http\(s\) URL/);
    expect(build(['F1', 'F2'], { platformFee: '{"bps":5000,"recipients":{}}' })).toThrow(/PLATFORM_FEE: bps/);
    expect(build(['F3', 'F4'], { platformFee: 'not json' })).toThrow(/PLATFORM_FEE: must be JSON/);
  });
});

describe('the definition check (synthetic definitions)', () => {
  const task = (extra: Record<string, unknown>) => JSON.stringify({ StartAt: 'T', TimeoutSeconds: 600, States: { T: { Type: 'Task', Resource: 'arn:aws:states:::lambda:invoke', TimeoutSeconds: 90, End: true, ...extra } } });
  it('accepts the repository file and a minimal lambda:invoke Task', () => {
    expect(() => checkTransferDefinition(JSON.stringify(ASL))).not.toThrow();
    expect(() => checkTransferDefinition(task({}))).not.toThrow();
  });

  it('refuses other integrations, missing or short timeouts, JSONata, and a machine without Tasks, naming the state', () => {
    expect(() => checkTransferDefinition(task({ Resource: 'arn:aws:states:::aws-sdk:kms:sign' }))).toThrow(/T: Resource "arn:aws:states:::aws-sdk:kms:sign"/);
    expect(() => checkTransferDefinition(task({ TimeoutSeconds: undefined }))).toThrow(/T: no TimeoutSeconds/);
    expect(() => checkTransferDefinition(task({ TimeoutSeconds: 30 }))).toThrow(/T: TimeoutSeconds 30 < the step functions' 60 s timeout/);
    expect(() => checkTransferDefinition(task({ QueryLanguage: 'JSONata' }))).toThrow(/T: JSONata/);
    expect(() => checkTransferDefinition(JSON.stringify({ StartAt: 'P', States: { P: { Type: 'Pass', End: true } } }))).toThrow(/the machine has no TimeoutSeconds; no Task state/);
    const nested = JSON.stringify({ StartAt: 'M', TimeoutSeconds: 60, States: { M: { Type: 'Map', ItemProcessor: { StartAt: 'X', States: { X: { Type: 'Task', Resource: 'arn:aws:states:::sqs:sendMessage', TimeoutSeconds: 90, End: true } } }, End: true } } });
    expect(() => checkTransferDefinition(nested)).toThrow(/M\/X: Resource/);
  });
});
