import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { AssetManifestArtifact } from 'aws-cdk-lib/cx-api';
import { beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FUNCTIONS } from '../../functions/events.ts';
import { ROUTES } from '../../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import {
  COVERAGE,
  type Found,
  outsideFreeCoverage,
  packageImports,
  reachableFiles,
  sdkOperations,
  stateMachineOperations,
  templateResourceTypes,
  yamlResourceTypes,
} from '../../infra/localstack/coverage.ts';
import { buildStacks } from './support/stacks.ts';

/**
 * LocalStack's free edition (issue 9), checked statically because LocalStack cannot run here (no
 * Docker engine): every CloudFormation resource type of our stacks and of the CDK bootstrap
 * stack, every AWS operation the functions can call (and the deployed test run and the deploy
 * tooling), must be in infra/localstack/free-coverage.json. Each failure names the type or
 * operation and where it occurs. LocalStack itself skips unsupported resource types by default,
 * so without this check such a deploy would "succeed" without the resource.
 */
const ROOT = resolve(import.meta.dirname, '../..');

let stackTypes: Found;
let templates: { label: string; text: string }[];
let containerImages: string[];

beforeAll(() => {
  // The stacks as `npm run localstack:deploy` deploys them (deletion protection off); bundling is
  // skipped: the check reads the templates and the asset manifests, not the function code.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  buildStacks(app, { stateful: { deletionProtection: false } });
  const assembly = app.synth();
  stackTypes = new Map();
  // Nested stacks are Stack constructs too, so custom-resource provider stacks are included.
  templates = app.node
    .findAll()
    .filter(Stack.isStack)
    .map((stack) => ({ label: stack.node.path, text: readFileSync(join(assembly.directory, stack.templateFile), 'utf8') }));
  for (const { label, text } of templates) templateResourceTypes(JSON.parse(text), label, stackTypes);
  containerImages = assembly.artifacts
    .filter((artifact): artifact is AssetManifestArtifact => artifact instanceof AssetManifestArtifact)
    .flatMap((manifest) => Object.keys(manifest.contents.dockerImages ?? {}).map((id) => `${manifest.id}/${id}`));
});

describe('the coverage data', () => {
  it('names a source and the reading date for every list', () => {
    expect(COVERAGE.read_on).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const list of [COVERAGE.services, COVERAGE.resource_types, COVERAGE.operations, COVERAGE.operations.cross_checked_in_code]) {
      const source = list.source as { repo?: string; commit?: string; url?: string; path?: string };
      expect(source.url ?? `${source.repo}@${source.commit}:${source.path}`).toMatch(/\S+/);
      if (source.repo) expect(source.commit).toMatch(/^[0-9a-f]{40}$/);
    }
    expect(COVERAGE.sdk.inferred).toBe(true);
    expect(COVERAGE.event_source_mappings.inferred).toBe(true);
    expect(COVERAGE.operations.sources_added.source.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(COVERAGE.tooling.inferred).toBe(true);
    // What the issue takes as given: REST APIs are free, HTTP APIs are not.
    expect(COVERAGE.resource_types.free).toEqual(
      expect.arrayContaining(['AWS::ApiGateway::RestApi', 'AWS::Lambda::Function', 'AWS::DynamoDB::Table', 'AWS::KMS::Key']),
    );
    expect(COVERAGE.resource_types.free.filter((type) => type.startsWith('AWS::ApiGatewayV2::'))).toEqual([]);
    expect(COVERAGE.services.minimum_plan.apigatewayv2).toBe('Base');
  });
});

describe('the check (synthetic input)', () => {
  it('refuses an HTTP API, a custom resource, a paid service and an operation LocalStack lacks, naming each', () => {
    const types = templateResourceTypes(
      {
        Resources: {
          Api: { Type: 'AWS::ApiGatewayV2::Api' },
          Fn: { Type: 'AWS::Lambda::Function' },
          Seed: { Type: 'Custom::SeedTable' },
          Acl: { Type: 'AWS::WAFv2::WebACLAssociation' },
        },
      },
      'Synthetic',
    );
    const { found: operations, unknown } = sdkOperations(
      [
        "import { GetItemCommand, DescribeContributorInsightsCommand, CreateBackupCommand } from '@aws-sdk/client-dynamodb';",
        "import { PutTraceSegmentsCommand } from '@aws-sdk/client-xray';",
        "import { GetCommand, type QueryCommand } from '@aws-sdk/lib-dynamodb';",
      ].join('\n'),
      'synthetic.ts',
    );
    expect(unknown).toEqual([]);
    expect(outsideFreeCoverage({ resourceTypes: types, operations })).toEqual([
      "resource type AWS::ApiGatewayV2::Api is not in LocalStack's free coverage (Synthetic/Api)",
      "resource type AWS::CloudFormation::CustomResource is not in LocalStack's free coverage (Synthetic/Seed)",
      "resource type AWS::WAFv2::WebACLAssociation is not in LocalStack's free coverage (Synthetic/Acl)",
      "operation dynamodb CreateBackup is not in LocalStack's free coverage of dynamodb (synthetic.ts)",
      "operation dynamodb DescribeContributorInsights is not in LocalStack's free coverage of dynamodb (synthetic.ts)",
      "operation xray PutTraceSegments: xray needs LocalStack's Ultimate plan (synthetic.ts)",
    ]);
    // GetItem (client and document client) and the Lambda function pass; a type-only import is no call.
    expect(operations.has('dynamodb GetItem')).toBe(true);
    expect(operations.has('dynamodb Query')).toBe(false);
  });

  it('reports what it cannot map instead of passing it: unknown packages and commands, dynamic SDK imports', () => {
    const { unknown } = sdkOperations(
      [
        "import { StartQueryCommand } from '@aws-sdk/client-athena';",
        "import { ScanPagesCommand } from '@aws-sdk/lib-dynamodb';",
        "const { KMSClient } = await import('@aws-sdk/client-kms');",
      ].join('\n'),
      'odd.ts',
    );
    expect(unknown).toEqual([
      'odd.ts: dynamic import of an AWS package (not analysed)',
      'odd.ts: @aws-sdk/client-athena has no service in free-coverage.json (sdk.client_packages)',
      'odd.ts: @aws-sdk/lib-dynamodb ScanPagesCommand has no mapping in free-coverage.json (sdk.lib_dynamodb_commands)',
    ]);
  });

  it('maps Powertools getSecret to Secrets Manager GetSecretValue, and reads multi-line and aliased imports', () => {
    const { found } = sdkOperations(
      "import { getSecret } from '@aws-lambda-powertools/parameters/secrets';\nimport {\n  SignCommand as Sign,\n  type KMSClient,\n} from '@aws-sdk/client-kms';",
      'p.ts',
    );
    expect([...found.keys()].sort()).toEqual(['kms Sign', 'secretsmanager GetSecretValue']);
    expect(packageImports("import type { A } from 'x';\nexport { B } from 'y';")).toEqual([{ module: 'y', names: ['B'] }]);
  });

  it('maps state machine Task integrations, also when CloudFormation splits the ARN, and flags the rest', () => {
    const template = JSON.stringify({
      States: {
        Run: { Resource: 'arn:aws:states:::lambda:invoke' },
        Sign: { Resource: 'arn:aws:states:::aws-sdk:kms:sign' },
        Put: { Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::dynamodb:putItem']] } },
        Child: { Resource: 'arn:aws:states:::states:startExecution.sync:2' },
        Trace: { Resource: 'arn:aws:states:::aws-sdk:xray:putTraceSegments' },
        Wait: { Resource: 'arn:aws:states:::sqs:sendMessage.waitForTaskToken' },
      },
    });
    const { found, unknown } = stateMachineOperations(template, 'Machine');
    expect([...found.keys()].sort()).toEqual(['dynamodb PutItem', 'kms Sign', 'lambda Invoke', 'stepfunctions StartExecution', 'xray PutTraceSegments']);
    expect(unknown).toEqual(['Machine: state machine integration sqs:sendMessage has no mapping (coverage.ts, stateMachineOperations)']);
    expect(outsideFreeCoverage({ operations: found })).toEqual(["operation xray PutTraceSegments: xray needs LocalStack's Ultimate plan (Machine)"]);
    // A definition inlined as a string (DefinitionString) keeps its quotes escaped.
    const inlined = JSON.stringify({ DefinitionString: JSON.stringify({ States: { Run: { Resource: 'arn:aws:states:::lambda:invoke' } } }) });
    expect([...stateMachineOperations(inlined, 'Inlined').found.keys()]).toEqual(['lambda Invoke']);
  });

  it('reads resource types out of a YAML template', () => {
    const yaml =
      "Conditions:\n  X: !Equals [a, b]\nResources:\n  Bucket:\n    Type: AWS::S3::Bucket\n  Policy:\n    Type: 'AWS::S3::BucketPolicy'\nOutputs:\n  Y:\n    Value: 1\n";
    expect([...yamlResourceTypes(yaml, 'T')].map(([type, where]) => [type, [...where]])).toEqual([
      ['AWS::S3::Bucket', ['T/Bucket']],
      ['AWS::S3::BucketPolicy', ['T/Policy']],
    ]);
  });
});

describe("the project on LocalStack's free edition", () => {
  it('the stacks hold only resource types the free edition creates', () => {
    expect(stackTypes.size, 'no resource types found: the synthesis read nothing').toBeGreaterThan(5);
    expect(stackTypes.has('AWS::Lambda::Function')).toBe(true);
    expect(stackTypes.get('AWS::StepFunctions::StateMachine')?.size, 'the transfer state machine').toBe(1);
    expect(outsideFreeCoverage({ resourceTypes: stackTypes })).toEqual([]);
  });

  it('the assets are files only (a container image would need ECR, a paid service)', () => {
    expect(containerImages).toEqual([]);
  });

  it('the CDK bootstrap stack (cdklocal bootstrap) holds only resource types the free edition creates', () => {
    const path = join(ROOT, 'node_modules/aws-cdk/lib/api/bootstrap/bootstrap-template.yaml');
    const types = yamlResourceTypes(readFileSync(path, 'utf8'), 'CDKToolkit');
    expect(types.has('AWS::S3::Bucket')).toBe(true);
    expect(outsideFreeCoverage({ resourceTypes: types })).toEqual([]);
  });

  it('the functions call only operations the free edition serves (from the route and transfer-step entries, following imports)', () => {
    const files = reachableFiles([...new Set([...ROUTES, ...TRANSFER_STEP_FUNCTIONS, ...EVENT_FUNCTIONS].map((fn) => fn.entry))]);
    const operations: Found = new Map();
    const unknown: string[] = [];
    for (const file of files.filter((f) => f.endsWith('.ts'))) sdkOperations(readFileSync(join(ROOT, file), 'utf8'), file, operations, unknown);
    expect(unknown).toEqual([]);
    // The scan must have seen the calls we know of, or an empty result would prove nothing.
    expect([...operations.keys()]).toEqual(
      expect.arrayContaining([
        'dynamodb GetItem',
        'dynamodb PutItem',
        'kms Sign',
        'kms Decrypt',
        'secretsmanager GetSecretValue',
        // Issue 24: the publisher queues deliveries, the deliverer holds failed ones back.
        'sqs SendMessageBatch',
        'sqs ChangeMessageVisibility',
      ]),
    );
    expect(outsideFreeCoverage({ operations })).toEqual([]);
    // Step Functions: only what the `transfers` need grants (infra/constructs/service-function.ts, bindTransfers).
    for (const key of operations.keys())
      if (key.startsWith('stepfunctions ')) expect(['stepfunctions StartExecution', 'stepfunctions DescribeExecution'], key).toContain(key);
  });

  it("the event source mappings' pollers (DynamoDB stream, SQS) call only free operations", () => {
    const operations = mappingOperations(templates);
    expect([...operations.keys()].sort()).toEqual([
      'dynamodbstreams DescribeStream',
      'dynamodbstreams GetRecords',
      'dynamodbstreams GetShardIterator',
      'dynamodbstreams ListStreams',
      'sqs ChangeMessageVisibilityBatch',
      'sqs DeleteMessage',
      'sqs DeleteMessageBatch',
      'sqs GetQueueAttributes',
      'sqs ReceiveMessage',
    ]);
    expect(outsideFreeCoverage({ operations })).toEqual([]);
    // Not vacuous: without SQS in the free data, the same mappings fail the check.
    const { sqs: _sqs, ...withoutSqs } = COVERAGE.operations.free;
    const reduced = { ...COVERAGE, operations: { ...COVERAGE.operations, free: withoutSqs } } as unknown as typeof COVERAGE;
    expect(outsideFreeCoverage({ operations }, reduced)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^operation sqs ReceiveMessage: no free-coverage data for sqs/)]),
    );
  });

  it('the state machines (templates and statemachines/*.asl.json) call only free operations', () => {
    const operations: Found = new Map();
    const unknown: string[] = [];
    const aslDir = join(ROOT, 'statemachines');
    const asl = existsSync(aslDir)
      ? readdirSync(aslDir)
          .filter((f) => f.endsWith('.asl.json'))
          .map((f) => ({ label: `statemachines/${f}`, text: readFileSync(join(aslDir, f), 'utf8') }))
      : [];
    for (const { label, text } of [...templates, ...asl]) stateMachineOperations(text, label, operations, unknown);
    // The transfer machine invokes its step functions (lambda:invoke), in its stack's template and in the file.
    expect([...(operations.get('lambda Invoke') ?? [])].sort()).toEqual(expect.arrayContaining(['Transfers', 'statemachines/transfer.asl.json']));
    expect([...operations.keys()]).toEqual(['lambda Invoke']);
    expect(unknown).toEqual([]);
    expect(outsideFreeCoverage({ operations })).toEqual([]);
  });

  it('the deployed test run (test/api/support/global-setup.ts) and the deploy tooling call only free operations', () => {
    const operations: Found = new Map();
    const unknown: string[] = [];
    for (const file of reachableFiles(['test/api/support/global-setup.ts']).filter((f) => f.endsWith('.ts'))) {
      sdkOperations(readFileSync(join(ROOT, file), 'utf8'), file, operations, unknown);
    }
    for (const { service, operation, by } of COVERAGE.tooling.operations) operations.set(`${service} ${operation}`, new Set([by]));
    expect(unknown).toEqual([]);
    expect([...operations.keys()]).toEqual(expect.arrayContaining(['kms GetPublicKey', 'dynamodb PutItem', 'cloudformation CreateChangeSet']));
    expect(outsideFreeCoverage({ operations })).toEqual([]);
  });
});

/**
 * The operations Lambda's pollers call for each AWS::Lambda::EventSourceMapping of the templates,
 * by the kind of its source (free-coverage.json `event_source_mappings`, inferred from the execution
 * role permissions Lambda documents). A mapping on any other source fails: it has no data yet.
 */
function mappingOperations(templates: readonly { label: string; text: string }[]): Found {
  const found: Found = new Map();
  const pollers = COVERAGE.event_source_mappings as unknown as Record<string, [string, string][]>;
  for (const { label, text } of templates) {
    const resources = (JSON.parse(text) as { Resources?: Record<string, { Type: string; Properties: { EventSourceArn: unknown } }> }).Resources ?? {};
    for (const [id, resource] of Object.entries(resources)) {
      if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
      const source = JSON.stringify(resource.Properties.EventSourceArn);
      const kind = source.includes('StreamArn') ? 'AWS::DynamoDB::Table stream' : /Queue[0-9A-F]{8}"?,"Arn"/.test(source) ? 'AWS::SQS::Queue' : undefined;
      if (!kind) throw new Error(`${label}/${id}: event source ${source} has no poller data in free-coverage.json`);
      for (const [service, operation] of pollers[kind]!) {
        const key = `${service} ${operation}`;
        found.set(key, new Set([...(found.get(key) ?? []), `${label}/${id}`]));
      }
    }
  }
  return found;
}
