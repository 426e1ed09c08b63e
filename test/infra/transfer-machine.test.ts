import { readFileSync } from 'node:fs';
import { App, type CfnResource, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FUNCTIONS } from '../../functions/events.ts';
import { ROUTES, type RouteNeeds } from '../../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import { ServiceFunction } from '../../infra/constructs/service-function.ts';
import { SETTLE_FUNCTION_TIMEOUT, STEP_FUNCTION_TIMEOUT, TRANSFER_ASL_FILE } from '../../infra/constructs/transfer-machine.ts';
import type { ServiceStacks } from '../../infra/services-stack.ts';
import type { StatefulStack } from '../../infra/stateful-stack.ts';
import { checkTransferDefinition } from '../../infra/transfer-definition.ts';
import { buildStacks } from './support/stacks.ts';

/**
 * The AWS side of transfers (issue 11): the Standard state machine of
 * statemachines/transfer.asl.json, its role (invoke the four step functions, nothing else), the
 * step functions (each exactly its `needs`), all in the transfers stack, and the routes that start
 * executions, in the account service's stack, which imports the machine's and the steps' ARNs.
 * Template assertions only: asset bundling is skipped (test/infra/stacks.test.ts bundles every function).
 */
type Resources = Record<string, { Type: string; Properties?: Record<string, unknown>; DependsOn?: unknown }>;
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
const ASL = JSON.parse(readFileSync(new URL(`../../${TRANSFER_ASL_FILE}`, import.meta.url), 'utf8')) as Record<string, unknown>;

const BRIDGE_URL = 'https://bridge.example.com/api/';
const PLATFORM_FEE = { bps: 10, recipients: { EVM: '0x00000000000000000000000000000000000000aa' } };
/** What a transfer route needs (the HTTP routes of issue 11 carry these; the probe below stands for one). */
const START_TRANSFER_NEEDS: RouteNeeds = {
  table: { reads: ['appSecret', 'app', 'account'], writes: ['idempotency', 'tasks'] },
  transfers: true,
  bridge: true,
  platformFee: true,
  chains: true,
};

let stateful: StatefulStack;
let services: ServiceStacks;
/** The service stacks' templates. */
let templates: ReadonlyMap<Stack, Template>;
/** The transfers stack's resources, by logical id. */
let resources: Resources;
let probe: ServiceFunction;

const id = (construct: IConstruct) => Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnResource);
/** Logical ids are unique within a template only: across stacks, `<stack name>/<logical id>`. */
const qualifiedId = (construct: IConstruct) => `${Stack.of(construct).stackName}/${id(construct)}`;

beforeAll(() => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  ({ stateful, services } = buildStacks(app, { services: { bridgeUrl: BRIDGE_URL, platformFee: PLATFORM_FEE } }));
  // A function bound like a transfer route, in the account service's stack (the ROUTES-driven
  // assertions below cover the real routes too).
  probe = new ServiceFunction(services.account, 'StartTransferProbe', { entry: 'functions/common/health.ts', service: 'account' }).bindNeeds(
    START_TRANSFER_NEEDS,
    services.account.needsResources,
  );
  templates = new Map(services.stacks.map((stack) => [stack, Template.fromStack(stack)]));
  resources = templates.get(services.transfers)!.toJSON().Resources as Resources;
}, 60_000);

const resourcesOf = (stack: Stack) => templates.get(stack)!.toJSON().Resources as Resources;

/** Every IAM statement of the service stacks, by role (qualified id; standalone policies and inline ones). */
function statements(): Array<{ role: string; statement: Statement }> {
  const out: Array<{ role: string; statement: Statement }> = [];
  for (const stack of templates.keys()) {
    for (const resource of Object.values(resourcesOf(stack))) {
      if (resource.Type === 'AWS::IAM::Policy') {
        const props = resource.Properties as { PolicyDocument: { Statement: Statement[] }; Roles: Array<{ Ref: string }> };
        for (const statement of props.PolicyDocument.Statement) for (const role of props.Roles) out.push({ role: `${stack.stackName}/${role.Ref}`, statement });
      }
      if (resource.Type === 'AWS::IAM::Role') {
        for (const policy of (resource.Properties?.Policies ?? []) as Array<{ PolicyDocument: { Statement: Statement[] } }>) {
          for (const statement of policy.PolicyDocument.Statement) out.push({ role: '?inline', statement });
        }
      }
    }
  }
  return out;
}

/** How another stack refers to `value` of `producer` (by default the transfers stack): the import of its export. */
function imported(value: unknown, producer: Stack = services.transfers): unknown {
  const outputs = (producer === stateful ? Template.fromStack(stateful) : templates.get(producer)!).toJSON().Outputs as Record<
    string,
    { Value: unknown; Export?: { Name: string } }
  >;
  const exported = Object.values(outputs).find((output) => output.Export && JSON.stringify(output.Value) === JSON.stringify(value));
  if (!exported?.Export) throw new Error(`${JSON.stringify(value)} is not exported`);
  return { 'Fn::ImportValue': exported.Export.Name };
}

const actionsOfRole = (role: string) =>
  statements()
    .filter((entry) => entry.role === role)
    .flatMap(({ statement }) => asArray(statement.Action));
const rolesWith = (prefix: string) =>
  new Set(
    statements()
      .filter(({ statement }) => asArray(statement.Action).some((a) => a.startsWith(prefix)))
      .map(({ role }) => role),
  );
const machine = () => services.transfers.transfers;
const machineId = () => id(machine().stateMachine);
/** The machine's role: its logical id in the transfers stack, and qualified (statements()). */
const machineRoleLogicalId = () => id(machine().role);
const machineRoleId = () => qualifiedId(machine().role);
const stepFn = (kind: string) => machine().stepFunctions.get(kind as never)!;
const environmentOf = (fn: ServiceFunction) =>
  (resourcesOf(Stack.of(fn))[id(fn.lambda)]!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
const transferRouteRoles = () =>
  new Set([...ROUTES.filter((r) => r.needs.transfers).map((r) => qualifiedId(services.account.functions.get(r.id)!.role)), qualifiedId(probe.role)]);

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
    templates.get(services.transfers)!.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    for (const stack of templates.keys()) if (stack !== services.transfers) templates.get(stack)!.resourceCountIs('AWS::StepFunctions::StateMachine', 0);
    const props = resources[machineId()]!.Properties!;
    expect(props.StateMachineType).toBe('STANDARD');
    expect(JSON.parse(props.DefinitionString as string)).toEqual(ASL);
    expect(props.DefinitionS3Location).toBeUndefined();
    expect(props.RoleArn).toEqual({ 'Fn::GetAtt': [machineRoleLogicalId(), 'Arn'] });
  });

  it('has the Map over $.steps with lambda:invoke Tasks naming their function from the input, and a TimeoutSeconds on each Task and the machine', () => {
    const definition = JSON.parse(resources[machineId()]!.Properties!.DefinitionString as string);
    expect(typeof definition.TimeoutSeconds).toBe('number');
    const map = definition.States[definition.StartAt];
    expect(map).toMatchObject({ Type: 'Map', ItemsPath: '$.steps', MaxConcurrency: 1 });
    const inner = Object.values(
      map.ItemProcessor.States as Record<string, { Type: string; Resource?: string; Parameters?: Record<string, unknown>; TimeoutSeconds?: number }>,
    );
    const tasks = inner.filter((state) => state.Type === 'Task');
    expect(tasks.length).toBeGreaterThanOrEqual(2); // submit and poll
    const outer = Object.values(
      definition.States as Record<string, { Type: string; Resource?: string; Parameters?: Record<string, unknown>; TimeoutSeconds?: number }>,
    ).filter((s) => s.Type === 'Task');
    for (const task of [...tasks, ...outer]) {
      expect(task.Resource).toBe('arn:aws:states:::lambda:invoke');
      expect(Object.keys(task.Parameters ?? {})).toContain('FunctionName.$');
      expect(task.TimeoutSeconds).toBeGreaterThanOrEqual(STEP_FUNCTION_TIMEOUT.toSeconds());
    }
    expect(outer.map((task) => task.Parameters!['FunctionName.$'])).toContain('$.settle_function');
  });

  it('logs ALL events without execution data to its own log group (a month), and is traced', () => {
    const props = resources[machineId()]!.Properties!;
    const logGroupId = id(machine().logGroup);
    expect(props.LoggingConfiguration).toEqual({
      Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [logGroupId, 'Arn'] } } }],
      IncludeExecutionData: false,
      Level: 'ALL',
    });
    expect(props.TracingConfiguration).toEqual({ Enabled: true });
    expect(resources[logGroupId]!.Properties).toMatchObject({ RetentionInDays: 30, LogGroupName: expect.stringMatching(/^\/aws\/vendedlogs\/states\//) });
  });

  it('its role (assumed by Step Functions only) may invoke exactly the four step functions and nothing else of Lambda', () => {
    expect((resources[machineRoleLogicalId()]!.Properties!.AssumeRolePolicyDocument as { Statement: unknown[] }).Statement).toEqual([
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
    for (const { statement } of mine)
      if (asArray(statement.Resource).includes('*'))
        expect(asArray(statement.Action).every((a) => a.startsWith('xray:') || LOG_DELIVERY.includes(a))).toBe(true);
    // And no other role may invoke a function directly (API Gateway invokes through resource permissions).
    expect(rolesWith('lambda:')).toEqual(new Set([machineRoleId()]));
  });
});

describe('the step functions', () => {
  it('makes one function per TRANSFER_STEP_FUNCTIONS entry, with the step timeout, reachable by no API', () => {
    expect([...machine().stepFunctions.keys()].sort()).toEqual(['bridge', 'deposit', 'settle', 'withdrawal']);
    for (const step of TRANSFER_STEP_FUNCTIONS) {
      const fn = stepFn(step.kind);
      expect(fn.node.id).toBe(step.id);
      expect(fn.entry).toBe(step.entry);
      const timeout = step.kind === 'settle' ? SETTLE_FUNCTION_TIMEOUT : STEP_FUNCTION_TIMEOUT;
      expect(Stack.of(fn)).toBe(services.transfers);
      expect(resources[id(fn.lambda)]!.Properties).toMatchObject({ Timeout: timeout.toSeconds(), Runtime: 'nodejs24.x', TracingConfig: { Mode: 'Active' } });
      // In any stack: by Ref/GetAtt in the transfers stack, or by an import (whose name carries the logical id) elsewhere.
      const permissions = [...templates.keys()].flatMap((stack) =>
        Object.values(resourcesOf(stack)).filter(
          (r) => r.Type === 'AWS::Lambda::Permission' && JSON.stringify(r.Properties!.FunctionName).includes(id(fn.lambda)),
        ),
      );
      expect(permissions, step.id).toEqual([]);
    }
    expect(STEP_FUNCTION_TIMEOUT.toSeconds()).toBeGreaterThan(Duration.seconds(27).toSeconds());
    expect(SETTLE_FUNCTION_TIMEOUT.toSeconds()).toBeLessThanOrEqual(STEP_FUNCTION_TIMEOUT.toSeconds());
  });

  it('gives each step exactly the environment of its needs (the bridge step no VENUE_URLS, settle only the table)', () => {
    const base = ['NODE_OPTIONS', 'POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_METRICS_NAMESPACE', 'LOG_LEVEL'];
    const signing = [
      'TABLE_NAME',
      'KEY_PROVIDER',
      'ACCOUNT_KMS_KEY_ID',
      'OP_JWT_SIGNER',
      'OP_JWT_KMS_KEY_ID',
      'TEE_URL',
      'CHAINS_CONFIG',
      'RPC_URLS_SECRET',
      'PLATFORM_FEE',
    ];
    const expected: Record<string, string[]> = {
      withdrawal: [...base, ...signing, 'VENUE_URLS'],
      // The steps that sponsor gas sign the sponsor's tokens with its own key (issue 21).
      bridge: [...base, ...signing, 'BRIDGE_URL', 'ALLOWED_7702_DELEGATES', 'SPONSOR_SIGNER', 'SPONSOR_KMS_KEY_ID'],
      deposit: [...base, ...signing, 'VENUE_URLS', 'ALLOWED_7702_DELEGATES', 'SPONSOR_SIGNER', 'SPONSOR_KMS_KEY_ID'],
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
    const roleOf = (kind: string) => qualifiedId(stepFn(kind).role);
    const nonLogging = (kind: string) =>
      actionsOfRole(roleOf(kind))
        .filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:'))
        .sort();
    const rw = [
      'dynamodb:BatchGetItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:ConditionCheckItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ];
    const signing = ['kms:Decrypt', 'kms:GetPublicKey', 'kms:Sign', 'secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'];
    // Table reads and writes are two statements, each under its own dynamodb:LeadingKeys (test/infra/fences.test.ts); the sponsoring steps sign on a second key.
    expect(nonLogging('withdrawal')).toEqual([...rw, ...signing].sort());
    for (const kind of ['bridge', 'deposit']) expect(nonLogging(kind), kind).toEqual([...rw, ...signing, 'kms:GetPublicKey', 'kms:Sign'].sort());
    expect(nonLogging('settle')).toEqual(rw);
    for (const kind of ['withdrawal', 'bridge', 'deposit', 'settle'])
      expect(
        actionsOfRole(roleOf(kind)).filter((a) => a.startsWith('states:')),
        kind,
      ).toEqual([]);
    // The signing steps open the account access key (Decrypt), never wrap (GenerateDataKey), never touch the enclave's key.
    const accountKey = JSON.stringify(imported({ 'Fn::GetAtt': [id(stateful.accountKey), 'Arn'] }, stateful));
    for (const kind of ['withdrawal', 'bridge', 'deposit']) {
      const kms = statements().filter(
        ({ role, statement }) => role === roleOf(kind) && asArray(statement.Action).some((a) => a.startsWith('kms:Decrypt') || a === 'kms:GenerateDataKey'),
      );
      expect(
        kms.map(({ statement }) => statement.Action),
        kind,
      ).toEqual(['kms:Decrypt']);
      expect(JSON.stringify(kms[0]!.statement.Resource)).toBe(accountKey);
    }
  });

  it('refuses a step function that needs transfers (a step cannot start executions)', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const steps = TRANSFER_STEP_FUNCTIONS.map((step) => (step.kind === 'settle' ? { ...step, needs: { ...step.needs, transfers: true as const } } : step));
    expect(() => buildStacks(app, { prefix: 'Loop', services: { transferSteps: steps } })).toThrow(/TransferSettle: a step function cannot start transfers/);
  });
});

describe('routes that start transfers (need `transfers`)', () => {
  it('may StartExecution on this machine and DescribeExecution on its executions only; no other role may', () => {
    const roles = transferRouteRoles();
    // The routes are in the account service's stack: the machine's ARN and name are imported from the transfers stack.
    for (const route of ROUTES.filter((r) => r.needs.transfers)) expect(Stack.of(services.account.functions.get(route.id)!)).toBe(services.account);
    const machineArn = imported({ Ref: machineId() });
    const executions = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':states:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          ':execution:',
          imported({ 'Fn::GetAtt': [machineId(), 'Name'] }),
          ':*',
        ],
      ],
    };
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

  it("gives them the machine ARN and the step functions' ARNs by kind", () => {
    for (const role of [...ROUTES.filter((r) => r.needs.transfers).map((r) => services.account.functions.get(r.id)!), probe]) {
      const variables = environmentOf(role);
      expect(variables.TRANSFER_STATE_MACHINE_ARN).toEqual(imported({ Ref: machineId() }));
      const json = JSON.stringify(variables.TRANSFER_STEP_FUNCTIONS);
      for (const kind of ['withdrawal', 'bridge', 'deposit', 'settle']) {
        expect(json).toContain(`\\"${kind}\\":\\"`);
        expect(json).toContain(JSON.stringify(imported({ 'Fn::GetAtt': [id(stepFn(kind).lambda), 'Arn'] })));
      }
    }
    expect(Object.keys(environmentOf(probe))).toEqual(
      expect.arrayContaining(['BRIDGE_URL', 'PLATFORM_FEE', 'TRANSFER_STATE_MACHINE_ARN', 'TRANSFER_STEP_FUNCTIONS']),
    );
  });

  it('gives no role states:* nor any Step Functions action beyond Start/DescribeExecution', () => {
    const actions = statements().flatMap(({ statement }) => asArray(statement.Action));
    expect(actions.filter((a) => a === '*' || a === 'states:*')).toEqual([]);
    expect([...new Set(actions.filter((a) => a.startsWith('states:')))].sort()).toEqual(['states:DescribeExecution', 'states:StartExecution']);
  });

  it("sets BRIDGE_URL to LI.FI's public API unless configured, PLATFORM_FEE only when configured (absent: no fee), and refuses bad values at synth", () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const { services: bare } = buildStacks(app, { prefix: 'Bare' });
    expect(bare.functions.size).toBe(ROUTES.length + TRANSFER_STEP_FUNCTIONS.length + EVENT_FUNCTIONS.length);
    for (const fn of bare.functions.values()) {
      const bareResources = Template.fromStack(Stack.of(fn)).toJSON().Resources as Resources;
      const variables = (bareResources[id(fn.lambda)]!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
      // No -c bridgeUrl: LI.FI's public API where the bridge is needed.
      expect([undefined, 'https://li.quest'], fn.node.id).toContain(variables.BRIDGE_URL);
      if (fn === bare.transfers.transfers.stepFunctions.get('bridge')) expect(variables.BRIDGE_URL).toBe('https://li.quest');
      expect(variables.PLATFORM_FEE, fn.node.id).toBeUndefined();
    }
    expect([...bare.functions.values()]).toContain(bare.transfers.transfers.stepFunctions.get('bridge'));
    const build = (prefix: string, options: { bridgeUrl?: string; platformFee?: unknown }) => () =>
      buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { prefix, services: options });
    expect(build('B1', { bridgeUrl: 'ftp://bridge.example.com' })).toThrow(/bridgeUrl must be an http\(s\) URL/);
    expect(build('B3', { bridgeUrl: 'bridge' })).toThrow(/bridgeUrl must be an http\(s\) URL/);
    expect(build('F1', { platformFee: '{"bps":5000,"recipients":{}}' })).toThrow(/PLATFORM_FEE: bps/);
    expect(build('F3', { platformFee: 'not json' })).toThrow(/PLATFORM_FEE: must be JSON/);
  });
});

describe('the definition check (synthetic definitions)', () => {
  const task = (extra: Record<string, unknown>) =>
    JSON.stringify({
      StartAt: 'T',
      TimeoutSeconds: 600,
      States: { T: { Type: 'Task', Resource: 'arn:aws:states:::lambda:invoke', TimeoutSeconds: 90, End: true, ...extra } },
    });
  it('accepts the repository file and a minimal lambda:invoke Task', () => {
    expect(() => checkTransferDefinition(JSON.stringify(ASL))).not.toThrow();
    expect(() => checkTransferDefinition(task({}))).not.toThrow();
  });

  it('refuses other integrations, missing or short timeouts, JSONata, and a machine without Tasks, naming the state', () => {
    expect(() => checkTransferDefinition(task({ Resource: 'arn:aws:states:::aws-sdk:kms:sign' }))).toThrow(/T: Resource "arn:aws:states:::aws-sdk:kms:sign"/);
    expect(() => checkTransferDefinition(task({ TimeoutSeconds: undefined }))).toThrow(/T: a Task without TimeoutSeconds/);
    expect(() => checkTransferDefinition(task({ TimeoutSeconds: 30 }))).toThrow(/T: TimeoutSeconds 30 < the step functions' 60 s timeout/);
    expect(() => checkTransferDefinition(task({ QueryLanguage: 'JSONata' }))).toThrow(/T: QueryLanguage "JSONata"/);
    expect(() => checkTransferDefinition(JSON.stringify({ StartAt: 'P', States: { P: { Type: 'Pass', End: true } } }))).toThrow(
      /the machine has no TimeoutSeconds; no Task state/,
    );
    const nested = JSON.stringify({
      StartAt: 'M',
      TimeoutSeconds: 60,
      States: {
        M: {
          Type: 'Map',
          ItemProcessor: { StartAt: 'X', States: { X: { Type: 'Task', Resource: 'arn:aws:states:::sqs:sendMessage', TimeoutSeconds: 90, End: true } } },
          End: true,
        },
      },
    });
    expect(() => checkTransferDefinition(nested)).toThrow(/M\/X: Resource/);
  });
});
