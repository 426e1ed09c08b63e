import { App, type CfnResource, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FUNCTIONS } from '../../functions/events.ts';
import { ROUTES } from '../../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import { DELIVERER_TIMEOUT, ITERATOR_AGE_ALARM_MS } from '../../infra/events-stack.ts';
import type { ServiceStacks } from '../../infra/services-stack.ts';
import type { StatefulStack } from '../../infra/stateful-stack.ts';
import { keys } from '../../shared/db/keys.ts';
import { buildStacks } from './support/stacks.ts';

/**
 * Events and webhooks (issue 24) in the templates: the table's stream, the FIFO delivery queue and
 * its DLQ, the two event source mappings, the alarms, and each event function's grants, exactly its
 * needs (functions/events.ts), with the negative cases read from the statements: the publisher
 * cannot write tasks, the deliverer cannot read them, neither can Scan, and the account key's two
 * purposes cannot open each other's data (a small evaluator of the statements' conditions).
 */
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };
type Resources = Record<string, { Type?: string; Properties?: Record<string, unknown>; DependsOn?: string[] }>;

let stateful: StatefulStack;
let services: ServiceStacks;
let events: Resources;
let statefulResources: Resources;
/** Every statement of every function role, by function id. */
const statementsOf = new Map<string, Statement[]>();

const logicalId = (construct: IConstruct) => Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnResource);
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);
const json = (value: unknown) => JSON.stringify(value);

beforeAll(() => {
  ({ stateful, services } = buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { prefix: 'Ev' }));
  statefulResources = Template.fromStack(stateful).toJSON().Resources as Resources;
  events = Template.fromStack(services.events).toJSON().Resources as Resources;
  const templates = new Map(services.stacks.map((stack) => [stack, Template.fromStack(stack).toJSON().Resources as Resources]));
  for (const [id, fn] of services.functions) {
    const resources = templates.get(Stack.of(fn) as never)!;
    const role = logicalId(fn.role);
    statementsOf.set(
      id,
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy' && (r.Properties!.Roles as Array<{ Ref: string }>).some((ref) => ref.Ref === role))
        .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement),
    );
  }
}, 60_000);

const ofType = (type: string) => Object.entries(events).filter(([, r]) => r.Type === type);
const queue = () => events[logicalId(services.events.deliveryQueue)]!;
const dlq = () => events[logicalId(services.events.deadLetterQueue)]!;
const queueArn = () => ({ 'Fn::GetAtt': [logicalId(services.events.deliveryQueue), 'Arn'] });
const tableLogicalId = () => logicalId(stateful.table);
const accountKeyId = () => logicalId(stateful.accountKey);
const mappingOf = (id: string) => {
  const fn = logicalId(services.functions.get(id)!.lambda);
  const found = ofType('AWS::Lambda::EventSourceMapping').filter(([, r]) => json(r.Properties!.FunctionName) === json({ Ref: fn }));
  expect(found, id).toHaveLength(1);
  return found[0]![1].Properties!;
};

/** Would `statements` allow `action` on the table item whose partition key is `pk`? (dynamodb:LeadingKeys, as in fences.test.ts) */
function allowsItem(statements: readonly Statement[], action: string, pk: string): boolean {
  const glob = (pattern: string) =>
    new RegExp(
      `^${pattern
        .split('*')
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    ).test(pk);
  return statements.some((s) => {
    if (s.Effect !== 'Allow' || !asArray(s.Action).some((a) => a === action || a === 'dynamodb:*' || a === '*')) return false;
    if (!asArray(s.Resource).some((r) => r === '*' || json(r).includes(tableLogicalId()))) return false;
    return Object.entries(s.Condition ?? {}).every(([operator, values]) => {
      if (operator === 'ForAllValues:StringLike') return asArray(values['dynamodb:LeadingKeys']).some((p) => glob(String(p)));
      if (operator === 'Null') return values['dynamodb:LeadingKeys'] === 'false';
      throw new Error(`unexpected condition ${operator}`);
    });
  });
}

/**
 * Would `statement` allow a KMS call with `context` (the request's encryption context)? Only the
 * condition operators our key grants use; any other fails the test rather than pass unread.
 */
function allowsContext(statement: Statement, context: Record<string, string>): boolean {
  return Object.entries(statement.Condition ?? {}).every(([operator, values]) =>
    Object.entries(values).every(([key, expected]) => {
      const contextKey = key.replace('kms:EncryptionContext:', '');
      if (operator === 'StringEquals' && key.startsWith('kms:EncryptionContext:')) return context[contextKey] === expected;
      if (operator === 'Null') return (context[contextKey] === undefined) === (expected === 'true');
      if (operator === 'ForAllValues:StringEquals' && key === 'kms:EncryptionContextKeys')
        return Object.keys(context).every((k) => asArray(expected).includes(k));
      if (operator === 'ArnLike') return true; // the principal: not what this evaluator asks
      throw new Error(`unexpected condition ${operator} ${key}`);
    }),
  );
}

const WEBHOOK_SECRET = { purpose: 'webhook-secret', app_id: 'acme', endpoint_id: 'we_1' };
const ACCESS_KEY = { purpose: 'account-access-keys', app_id: 'acme', user_id: 'user-1' };
const SAMPLES = {
  tasks: keys.tasksOf('acme', 'user-1'),
  webhooks: keys.webhookEndpointsOf('acme'),
  events: keys.eventsOf('acme'),
  eventPlacement: keys.eventPlacement('acme', 'evt_0192').pk,
  app: keys.app('acme').pk,
  account: keys.account('acme', 'user-1').pk,
};
const READ = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'];
const WRITE = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'];
const reads = (id: string) =>
  Object.entries(SAMPLES)
    .filter(([, pk]) => READ.every((a) => allowsItem(statementsOf.get(id)!, a, pk)))
    .map(([k]) => k);
const writes = (id: string) =>
  Object.entries(SAMPLES)
    .filter(([, pk]) => WRITE.some((a) => allowsItem(statementsOf.get(id)!, a, pk)))
    .map(([k]) => k);
const actionsOf = (id: string, prefix: string) =>
  statementsOf
    .get(id)!
    .flatMap((s) => asArray(s.Action) as string[])
    .filter((a) => a.startsWith(prefix))
    .sort();

describe('events: stateful side', () => {
  it('streams the table with old and new images', () => {
    expect(statefulResources[tableLogicalId()]!.Properties!.StreamSpecification).toEqual({ StreamViewType: 'NEW_IMAGE' });
  });

  it('has a FIFO delivery queue without content-based deduplication, 4-day retention, SSE, visibility 6x the deliverer timeout, redriving to a FIFO DLQ after 30 receives', () => {
    expect(ofType('AWS::SQS::Queue')).toHaveLength(2);
    expect(queue().Properties).toEqual({
      FifoQueue: true,
      ContentBasedDeduplication: false,
      MessageRetentionPeriod: 4 * 24 * 3600,
      SqsManagedSseEnabled: true,
      VisibilityTimeout: 6 * DELIVERER_TIMEOUT.toSeconds(),
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(services.events.deadLetterQueue), 'Arn'] }, maxReceiveCount: 30 },
    });
    expect(dlq().Properties).toEqual({ FifoQueue: true, MessageRetentionPeriod: 14 * 24 * 3600, SqsManagedSseEnabled: true });
  });

  it('refuses any queue access without TLS (enforceSSL), on both queues', () => {
    const policies = ofType('AWS::SQS::QueuePolicy').map(([, r]) => r.Properties!);
    expect(policies).toHaveLength(2);
    for (const policy of policies) {
      expect((policy.PolicyDocument as { Statement: Statement[] }).Statement).toEqual([
        expect.objectContaining({ Effect: 'Deny', Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      ]);
    }
  });

  it('outputs both queue URLs', () => {
    const outputs = Template.fromStack(services.events).toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(outputs.DeliveryQueueUrl?.Value).toEqual({ Ref: logicalId(services.events.deliveryQueue) });
    expect(outputs.DeliveryDeadLetterQueueUrl?.Value).toEqual({ Ref: logicalId(services.events.deadLetterQueue) });
  });
});

describe('events: event source mappings', () => {
  it('drives the publisher from the stream: TRIM_HORIZON, ReportBatchItemFailures, no bisecting, retried until the record expires', () => {
    const mapping = mappingOf('EventsPublish');
    expect(mapping).toMatchObject({
      StartingPosition: 'TRIM_HORIZON',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: false,
      MaximumRetryAttempts: -1,
    });
    expect(json(mapping.EventSourceArn)).toContain('StreamArn');
    // Left to CloudFormation's default, -1: a record is retried for as long as the stream keeps it.
    expect(mapping.MaximumRecordAgeInSeconds).toBeUndefined();
    expect(mapping.DestinationConfig).toBeUndefined();
  });

  it('filters the stream to INSERT and MODIFY records whose new image holds an outbox entry', () => {
    const filters = (mappingOf('EventsPublish').FilterCriteria as { Filters: Array<{ Pattern: string }> }).Filters;
    expect(filters).toHaveLength(1);
    const pattern = JSON.parse(filters[0]!.Pattern);
    expect(pattern).toEqual({
      eventName: ['INSERT', 'MODIFY'],
      dynamodb: { NewImage: { outbox: { L: { M: { id: { S: [{ exists: true }] } } } } } },
    });
    const entry = { M: { id: { S: 'evt_1' }, type: { S: 'task.completed' }, occurred_at: { S: '2026-11-25T00:00:00Z' } } };
    const task = { pk: { S: 'TASKS#acme#user-1' }, sk: { S: 'TASK#t1' } };
    expect(matches(pattern, { eventName: 'MODIFY', dynamodb: { NewImage: { ...task, outbox: { L: [entry] } } } })).toBe(true);
    expect(matches(pattern, { eventName: 'INSERT', dynamodb: { NewImage: { ...task, outbox: { L: [entry, entry] } } } })).toBe(true);
    // No outbox, an empty one, a REMOVE (no new image), an outbox only in the old image: not for the publisher.
    expect(matches(pattern, { eventName: 'MODIFY', dynamodb: { NewImage: task } })).toBe(false);
    expect(matches(pattern, { eventName: 'MODIFY', dynamodb: { NewImage: { ...task, outbox: { L: [] } } } })).toBe(false);
    expect(matches(pattern, { eventName: 'REMOVE', dynamodb: { OldImage: { ...task, outbox: { L: [entry] } } } })).toBe(false);
    expect(matches(pattern, { eventName: 'REMOVE', dynamodb: { NewImage: { ...task, outbox: { L: [entry] } } } })).toBe(false);
  });

  it('drives the deliverer from the queue: batches of 10, ReportBatchItemFailures, bounded concurrency', () => {
    expect(mappingOf('EventsDeliver')).toEqual({
      EventSourceArn: queueArn(),
      FunctionName: { Ref: logicalId(services.functions.get('EventsDeliver')!.lambda) },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
    });
  });

  it('alarms on any message in the DLQ and on the publisher falling 5 minutes behind the stream', () => {
    const alarms = ofType('AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!);
    expect(alarms).toHaveLength(2);
    expect(alarms).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(services.events.deadLetterQueue), 'QueueName'] } }],
          ComparisonOperator: 'GreaterThanThreshold',
          Threshold: 0,
          TreatMissingData: 'notBreaching',
        }),
        expect.objectContaining({
          Namespace: 'AWS/Lambda',
          MetricName: 'IteratorAge',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(services.functions.get('EventsPublish')!.lambda) } }],
          Statistic: 'Maximum',
          ComparisonOperator: 'GreaterThanThreshold',
          Threshold: ITERATOR_AGE_ALARM_MS,
        }),
      ]),
    );
    expect(ITERATOR_AGE_ALARM_MS).toBe(300_000);
  });
});

describe('events: least privilege', () => {
  it('gives the publisher exactly its needs: reads endpoints (the items it publishes arrive in the stream), writes the log and placements, sends to the queue, reads the stream', () => {
    expect(reads('EventsPublish').sort()).toEqual(['eventPlacement', 'events', 'webhooks']);
    expect(writes('EventsPublish').sort()).toEqual(['eventPlacement', 'events']);
    expect(actionsOf('EventsPublish', 'sqs:')).toEqual(['sqs:SendMessage']);
    expect(statementsOf.get('EventsPublish')!.filter((s) => asArray(s.Action).includes('sqs:SendMessage'))).toEqual([
      { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queueArn() },
    ]);
    // The stream poller's four actions, on this table's stream only (no ListStreams on "*").
    const stream = statementsOf
      .get('EventsPublish')!
      .filter((s) => asArray(s.Action).some((a) => String(a).startsWith('dynamodb:') && /Stream|Records|Shard/.test(String(a))));
    expect(stream).toHaveLength(1);
    expect((asArray(stream[0]!.Action) as string[]).sort()).toEqual([
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
    ]);
    expect(json(stream[0]!.Resource)).toContain('StreamArn');
    expect(actionsOf('EventsPublish', 'kms:')).toEqual([]);
  });

  it('gives the deliverer exactly its needs: reads the log and endpoints, writes endpoints, Decrypt for webhook secrets, the queue mapping and ChangeMessageVisibility', () => {
    expect(reads('EventsDeliver').sort()).toEqual(['events', 'webhooks']);
    expect(writes('EventsDeliver')).toEqual(['webhooks']);
    expect(actionsOf('EventsDeliver', 'sqs:')).toEqual(['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage']);
    for (const s of statementsOf.get('EventsDeliver')!.filter((x) => asArray(x.Action).some((a) => String(a).startsWith('sqs:'))))
      expect(s.Resource).toEqual(queueArn());
    expect(actionsOf('EventsDeliver', 'kms:')).toEqual(['kms:Decrypt']);
    expect(actionsOf('EventsDeliver', 'dynamodb:').filter((a) => /Stream|Records|Shard/.test(a))).toEqual([]);
  });

  it('refuses the negative cases: the publisher writes no task, the deliverer reads no task, neither touches app or account items, nobody Scans', () => {
    for (const action of WRITE) expect(allowsItem(statementsOf.get('EventsPublish')!, action, SAMPLES.tasks), action).toBe(false);
    for (const action of READ) expect(allowsItem(statementsOf.get('EventsDeliver')!, action, SAMPLES.tasks), action).toBe(false);
    for (const id of ['EventsPublish', 'EventsDeliver']) {
      for (const pk of [SAMPLES.app, SAMPLES.account, 'OTHER#x', ''])
        for (const action of [...READ, ...WRITE]) expect(allowsItem(statementsOf.get(id)!, action, pk), `${id} ${action} ${pk}`).toBe(false);
      expect(
        actionsOf(id, 'dynamodb:').filter((a) => a === 'dynamodb:Scan' || a === 'dynamodb:*'),
        id,
      ).toEqual([]);
    }
    expect(actionsOf('EventsDeliver', 'sqs:')).not.toContain('sqs:SendMessage');
    expect(actionsOf('EventsPublish', 'sqs:')).not.toContain('sqs:ReceiveMessage');
  });

  it("lets the deliverer Decrypt on the account key only under purpose webhook-secret (IAM grant and key policy), and no accountAccessKey grant open a webhook secret, nor the deliverer's an access key", () => {
    const grant = statementsOf.get('EventsDeliver')!.filter((s) => asArray(s.Action).includes('kms:Decrypt'));
    expect(grant).toHaveLength(1);
    expect(json(grant[0]!.Resource)).toContain(accountKeyId());
    expect(allowsContext(grant[0]!, WEBHOOK_SECRET)).toBe(true);
    expect(allowsContext(grant[0]!, ACCESS_KEY)).toBe(false);
    expect(allowsContext(grant[0]!, { ...WEBHOOK_SECRET, user_id: 'user-1' })).toBe(false); // no extra context keys
    expect(allowsContext(grant[0]!, { purpose: 'webhook-secret', app_id: 'acme' })).toBe(false); // endpoint_id required
    // Every function holding an account-key grant: its grants open exactly the purposes its needs name.
    const all = [...ROUTES, ...TRANSFER_STEP_FUNCTIONS, ...EVENT_FUNCTIONS];
    let checked = 0;
    for (const { id, needs } of all) {
      for (const s of statementsOf.get(id)!.filter((x) => json(x.Resource).includes(accountKeyId()))) {
        checked++;
        const operation = String(s.Action).replace('kms:', '') as 'Decrypt' | 'GenerateDataKey';
        expect(allowsContext(s, WEBHOOK_SECRET), `${id} ${operation} webhook-secret`).toBe(needs.webhookSecretKey?.includes(operation) ?? false);
        expect(allowsContext(s, ACCESS_KEY), `${id} ${operation} account-access-keys`).toBe(needs.accountAccessKey?.includes(operation) ?? false);
      }
    }
    expect(checked).toBeGreaterThan(8);
    // The key policy alike: each use statement opens one purpose, and only the deliverer's role is named for webhook-secret Decrypt.
    const policy = (statefulResources[accountKeyId()]!.Properties!.KeyPolicy as { Statement: Array<Statement & { Sid: string }> }).Statement;
    const webhookDecrypt = policy.filter((s) => s.Action === 'kms:Decrypt' && allowsContext(s, WEBHOOK_SECRET));
    expect(webhookDecrypt.map((s) => s.Sid)).toEqual(['DecryptWebhookSecretOnlyByNamedRoles']);
    expect(json(webhookDecrypt[0]!.Condition!.ArnLike)).toContain('/EventsDeliver/*');
    expect(json(webhookDecrypt[0]!.Condition!.ArnLike)).not.toContain('/SignWithWallet/');
    for (const s of policy.filter((x) => x.Sid !== 'AdministerButNotUse'))
      expect(allowsContext(s, WEBHOOK_SECRET) && allowsContext(s, ACCESS_KEY), s.Sid).toBe(false);
    expect(policy.filter((s) => s.Action === 'kms:Decrypt' && allowsContext(s, ACCESS_KEY)).map((s) => json(s.Condition!.ArnLike))[0]).not.toContain(
      '/EventsDeliver/',
    );
  });

  it('gives each event function DELIVERY_QUEUE_URL (the queue in its own stack) and the deliverer the account key for webhook secrets', () => {
    const variables = (id: string) =>
      (events[logicalId(services.functions.get(id)!.lambda)]!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
    for (const { id } of EVENT_FUNCTIONS) expect(variables(id).DELIVERY_QUEUE_URL, id).toEqual({ Ref: logicalId(services.events.deliveryQueue) });
    expect(variables('EventsDeliver')).toMatchObject({ KEY_PROVIDER: 'kms', ACCOUNT_KMS_KEY_ID: expect.anything() });
    expect(variables('EventsPublish').KEY_PROVIDER).toBeUndefined();
  });
});

/**
 * A small Lambda event-filter matcher (the subset PUBLISHER_FILTER uses): a pattern object's keys
 * must all match; an array of values matches one of them; `{ exists: true }` matches a present
 * leaf (string, number, boolean); an array in the event matches when any element does.
 */
function matches(pattern: unknown, value: unknown): boolean {
  if (Array.isArray(value)) return value.some((element) => matches(pattern, element));
  if (Array.isArray(pattern)) {
    return pattern.some((rule) => {
      if (rule && typeof rule === 'object' && 'exists' in rule)
        return (value !== undefined && value !== null && typeof value !== 'object') === (rule as { exists: boolean }).exists;
      return rule === value;
    });
  }
  if (pattern && typeof pattern === 'object') {
    if (!value || typeof value !== 'object') return false;
    return Object.entries(pattern).every(([key, sub]) => matches(sub, (value as Record<string, unknown>)[key]));
  }
  return false;
}
