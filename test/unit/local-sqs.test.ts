import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  MessageNotInflight,
  QueueDoesNotExist,
  ReceiptHandleIsInvalid,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  UnsupportedOperation,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type SqsEventSource, startSqsEventSource } from '../../infra/local/sqs/event-source.ts';
import { type LocalQueueDefinition, type LocalSqs, startLocalSqs } from '../../infra/local/sqs/server.ts';

/**
 * The sandbox's SQS through the REAL @aws-sdk/client-sqs (AWS JSON 1.0, query-compatible errors):
 * FIFO order and group blocking, deduplication, visibility and receipt handles, redrive, durability
 * across a kill -9, and the Lambda-style event source. The queues' clock is injected: hours pass in
 * a line.
 */
const QUEUES: readonly LocalQueueDefinition[] = [
  {
    name: 'deliveries.fifo',
    visibilityTimeoutSeconds: 30,
    messageRetentionSeconds: 345_600,
    redrive: { deadLetterQueue: 'deliveries-dlq.fifo', maxReceiveCount: 2 },
  },
  { name: 'deliveries-dlq.fifo', visibilityTimeoutSeconds: 30, messageRetentionSeconds: 1_209_600 },
  { name: 'content.fifo', visibilityTimeoutSeconds: 30, messageRetentionSeconds: 3600, contentBasedDeduplication: true },
  { name: 'plain', visibilityTimeoutSeconds: 30, messageRetentionSeconds: 86_400 },
];
const SERVER_MODULE = fileURLToPath(new URL('../../infra/local/sqs/server.ts', import.meta.url));

let dataDir: string;
let clock: number;
let sqs: LocalSqs | undefined;
let client: SQSClient;
let source: SqsEventSource | undefined;

const clientFor = (endpoint: string) => new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'sandbox', secretAccessKey: 'sandbox' } });

async function start() {
  sqs = await startLocalSqs({ dataDir, queues: QUEUES, now: () => clock });
  client = clientFor(sqs.endpoint);
  return sqs;
}

/** Moves the queues' clock and lets long polls look again. */
function advance(seconds: number) {
  clock += seconds * 1000;
  sqs?.wake();
}

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'local-sqs-'));
  clock = 1_750_000_000_000;
  await start();
});
afterEach(async () => {
  await source?.stop();
  source = undefined;
  client.destroy();
  await sqs?.stop();
  sqs = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

const url = (name: string) => sqs!.queueUrl(name);
const sendFifo = (group: string, body: string, dedup = body, queue = 'deliveries.fifo') =>
  client.send(new SendMessageCommand({ QueueUrl: url(queue), MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup }));
const receive = async (queue: string, max = 10, extra: { VisibilityTimeout?: number; WaitTimeSeconds?: number } = {}) =>
  (
    await client.send(
      new ReceiveMessageCommand({
        QueueUrl: url(queue),
        MaxNumberOfMessages: max,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
        ...extra,
      }),
    )
  ).Messages ?? [];
const bodies = (messages: readonly { Body?: string }[]) => messages.map((message) => message.Body);
const errorOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as Error & { $metadata?: { httpStatusCode?: number } },
  );

describe('FIFO queue', () => {
  it('keeps strict order within a group and delivers nothing more of a group while one of its messages is in flight', async () => {
    const sent = [];
    for (const [group, body] of [
      ['A', 'a1'],
      ['A', 'a2'],
      ['B', 'b1'],
      ['A', 'a3'],
    ] as const)
      sent.push(await sendFifo(group, body));
    const sequence = sent.map((answer) => BigInt(answer.SequenceNumber!));
    expect(sequence).toEqual([...sequence].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(sequence).size).toBe(4);

    const [first] = await receive('deliveries.fifo', 1);
    expect(first!.Body).toBe('a1');
    expect(first!.Attributes).toMatchObject({
      MessageGroupId: 'A',
      MessageDeduplicationId: 'a1',
      SequenceNumber: sent[0]!.SequenceNumber,
      ApproximateReceiveCount: '1',
    });
    // Group A is blocked by a1 in flight; B still delivers.
    expect(bodies(await receive('deliveries.fifo'))).toEqual(['b1']);
    expect(await receive('deliveries.fifo')).toEqual([]);

    await client.send(new DeleteMessageCommand({ QueueUrl: url('deliveries.fifo'), ReceiptHandle: first!.ReceiptHandle }));
    expect(bodies(await receive('deliveries.fifo'))).toEqual(['a2', 'a3']);
  });

  it('requires a MessageGroupId and a deduplication id, and refuses a per-message delay', async () => {
    const queueUrl = url('deliveries.fifo');
    const noGroup = await errorOf(client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageDeduplicationId: 'x' })));
    expect(noGroup).toMatchObject({ name: 'MissingParameter', message: 'The request must contain the parameter MessageGroupId.' });
    const noDedup = await errorOf(client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageGroupId: 'g' })));
    expect(noDedup).toMatchObject({ name: 'InvalidParameterValue', $metadata: { httpStatusCode: 400 } });
    const delayed = await errorOf(
      client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'x', DelaySeconds: 5 })),
    );
    expect(delayed?.name).toBe('InvalidParameterValue');
    expect(delayed?.message).toContain('DelaySeconds');
  });

  it('answers a duplicate within 5 minutes with the first message id and enqueues nothing, even after the first was deleted', async () => {
    const first = await sendFifo('g', 'created', 'event-1');
    const again = await sendFifo('g', 'created (retried)', 'event-1');
    expect(again.MessageId).toBe(first.MessageId);
    expect(again.SequenceNumber).toBe(first.SequenceNumber);
    const [message] = await receive('deliveries.fifo');
    expect(message!.Body).toBe('created');
    await client.send(new DeleteMessageCommand({ QueueUrl: url('deliveries.fifo'), ReceiptHandle: message!.ReceiptHandle }));

    advance(299);
    expect((await sendFifo('g', 'created', 'event-1')).MessageId).toBe(first.MessageId);
    expect(await receive('deliveries.fifo')).toEqual([]);
    advance(2);
    const fresh = await sendFifo('g', 'created', 'event-1');
    expect(fresh.MessageId).not.toBe(first.MessageId);
    expect(bodies(await receive('deliveries.fifo'))).toEqual(['created']);

    // Content-based: the body's SHA-256 is the deduplication id.
    const a = await client.send(new SendMessageCommand({ QueueUrl: url('content.fifo'), MessageBody: 'same', MessageGroupId: 'g' }));
    const b = await client.send(new SendMessageCommand({ QueueUrl: url('content.fifo'), MessageBody: 'same', MessageGroupId: 'h' }));
    expect(b.MessageId).toBe(a.MessageId);
    const [hashed] = await receive('content.fifo');
    expect(hashed!.Attributes!.MessageDeduplicationId).toMatch(/^[0-9a-f]{64}$/);
  });

  it('moves a message received maxReceiveCount times to the dead-letter queue instead of delivering it again', async () => {
    const poison = await sendFifo('g', 'poison');
    await sendFifo('g', 'next');
    for (const count of ['1', '2']) {
      const [message] = await receive('deliveries.fifo', 1);
      expect(message).toMatchObject({ Body: 'poison', Attributes: { ApproximateReceiveCount: count } });
      advance(31);
    }
    // The third receive moves poison and goes on with the group.
    expect(bodies(await receive('deliveries.fifo', 1))).toEqual(['next']);
    const [dead] = await receive('deliveries-dlq.fifo');
    expect(dead).toMatchObject({ MessageId: poison.MessageId, Body: 'poison', Attributes: { DeadLetterQueueSourceArn: sqs!.queueArn('deliveries.fifo') } });
    const attributes = await client.send(new GetQueueAttributesCommand({ QueueUrl: url('deliveries.fifo'), AttributeNames: ['All'] }));
    expect(attributes.Attributes).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '1',
      FifoQueue: 'true',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: sqs!.queueArn('deliveries-dlq.fifo'), maxReceiveCount: 2 }),
    });
  });

  it('refuses to delete with a handle whose visibility timeout has passed', async () => {
    await sendFifo('g', 'slow');
    const [message] = await receive('deliveries.fifo');
    advance(31);
    const expired = await errorOf(client.send(new DeleteMessageCommand({ QueueUrl: url('deliveries.fifo'), ReceiptHandle: message!.ReceiptHandle })));
    expect(expired?.name).toBe('InvalidParameterValue');
    expect(bodies(await receive('deliveries.fifo'))).toEqual(['slow']);
  });
});

describe('visibility', () => {
  it('gives a new receipt handle per receive, counts receives, and honours ChangeMessageVisibility over hours up to 12', async () => {
    const queueUrl = url('plain');
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'hello' }));
    const [first] = await receive('plain');
    expect(first!.Attributes).toMatchObject({ ApproximateReceiveCount: '1', SentTimestamp: String(clock), ApproximateFirstReceiveTimestamp: String(clock) });
    expect(await receive('plain')).toEqual([]);
    advance(31);
    const [second] = await receive('plain');
    expect(second!.Attributes!.ApproximateReceiveCount).toBe('2');
    expect(second!.ReceiptHandle).not.toBe(first!.ReceiptHandle);

    // The earlier receive's handle no longer changes anything, and deletes nothing (success, as SQS answers).
    const stale = await errorOf(
      client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: first!.ReceiptHandle, VisibilityTimeout: 0 })),
    );
    expect(stale?.name).toBe('InvalidParameterValue');
    await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: first!.ReceiptHandle }));

    await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: second!.ReceiptHandle, VisibilityTimeout: 3 * 3600 }));
    advance(3 * 3600 - 60);
    expect(await receive('plain')).toEqual([]);
    const beyond = await errorOf(
      client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: second!.ReceiptHandle, VisibilityTimeout: 43_200 })),
    );
    expect(beyond?.message).toContain('Total VisibilityTimeout');
    const outOfRange = await errorOf(
      client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: second!.ReceiptHandle, VisibilityTimeout: 43_201 })),
    );
    expect(outOfRange?.name).toBe('InvalidParameterValue');
    advance(61);
    const notInFlight = await errorOf(
      client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: second!.ReceiptHandle, VisibilityTimeout: 10 })),
    );
    expect(notInFlight).toBeInstanceOf(MessageNotInflight);
    const [third] = await receive('plain');
    expect(third!.Attributes!.ApproximateReceiveCount).toBe('3');

    const garbage = await errorOf(client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: 'not-a-handle' })));
    expect(garbage).toBeInstanceOf(ReceiptHandleIsInvalid);
    await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: third!.ReceiptHandle }));
    advance(3600);
    expect(await receive('plain')).toEqual([]);
  });

  it('delays a standard message by its DelaySeconds and drops messages past retention', async () => {
    await client.send(new SendMessageCommand({ QueueUrl: url('plain'), MessageBody: 'later', DelaySeconds: 60 }));
    expect(sqs!.stats('plain')).toMatchObject({ delayed: 1, visible: 0 });
    advance(60);
    const [message] = await receive('plain', 10, { VisibilityTimeout: 0 });
    expect(message!.Body).toBe('later');
    advance(86_400);
    expect(await receive('plain')).toEqual([]);
    expect(sqs!.stats('plain')).toMatchObject({ delayed: 0, visible: 0, inFlight: 0 });
  });

  it('long-polls: a waiting receive returns as soon as a message is sent', async () => {
    const started = Date.now();
    const waiting = receive('plain', 10, { WaitTimeSeconds: 10 });
    await new Promise((done) => setTimeout(done, 50));
    await client.send(new SendMessageCommand({ QueueUrl: url('plain'), MessageBody: 'ping' }));
    expect(bodies(await waiting)).toEqual(['ping']);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('protocol', () => {
  it("answers in SQS's error shapes and per-entry batch results", async () => {
    const missing = await errorOf(client.send(new GetQueueUrlCommand({ QueueName: 'nope' })));
    expect(missing).toBeInstanceOf(QueueDoesNotExist);
    expect(await client.send(new GetQueueUrlCommand({ QueueName: 'plain' }))).toMatchObject({ QueueUrl: url('plain') });
    expect(await errorOf(client.send(new CreateQueueCommand({ QueueName: 'other' })))).toBeInstanceOf(UnsupportedOperation);
    const tooMany = await errorOf(client.send(new ReceiveMessageCommand({ QueueUrl: url('plain'), MaxNumberOfMessages: 11 })));
    expect(tooMany?.name).toBe('InvalidParameterValue');

    const raw = await fetch(sqs!.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.Nope' },
      body: '{}',
    });
    expect(raw.status).toBe(400);
    expect(raw.headers.get('x-amzn-query-error')).toBe('InvalidAction;Sender');

    const batch = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: url('plain'),
        Entries: [
          { Id: 'ok', MessageBody: 'one', MessageAttributes: { kind: { DataType: 'String', StringValue: 'test' } } },
          { Id: 'bad', MessageBody: 'two', DelaySeconds: 901 },
        ],
      }),
    );
    expect(batch.Successful!.map((entry) => entry.Id)).toEqual(['ok']);
    expect(batch.Failed).toEqual([expect.objectContaining({ Id: 'bad', Code: 'InvalidParameterValue', SenderFault: true })]);
    const [message] = await receive('plain');
    expect(message!.MessageAttributes).toEqual({ kind: { DataType: 'String', StringValue: 'test' } });
    expect(message!.MD5OfMessageAttributes).toBe(batch.Successful![0]!.MD5OfMessageAttributes);
    const deleted = await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url('plain'),
        Entries: [
          { Id: 'a', ReceiptHandle: message!.ReceiptHandle },
          { Id: 'b', ReceiptHandle: 'garbage' },
        ],
      }),
    );
    expect(deleted.Successful).toEqual([{ Id: 'a' }]);
    expect(deleted.Failed).toEqual([expect.objectContaining({ Id: 'b', Code: 'ReceiptHandleIsInvalid' })]);
    expect(await errorOf(client.send(new DeleteMessageBatchCommand({ QueueUrl: url('plain'), Entries: [] })))).toMatchObject({
      name: 'EmptyBatchRequest',
    });
  });
});

describe('durability', () => {
  it('keeps every acknowledged send, delete and in-flight deadline across a kill -9, and compacts its journal', async () => {
    await sqs!.stop();
    client.destroy();
    sqs = undefined;
    const child = await spawnServer(dataDir);
    let lastId: string | undefined;
    let inFlight: string | undefined;
    try {
      client = clientFor(child.endpoint);
      const queueUrl = `${child.endpoint}/000000000000/plain`;
      // 100 sends, 95 deletes: dead lines outnumber live ones, so the journal is compacted on the way.
      for (let index = 0; index < 10; index += 1) {
        await client.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: Array.from({ length: 10 }, (_, entry) => ({ Id: `m${entry}`, MessageBody: `message ${index * 10 + entry}` })),
          }),
        );
      }
      let kept = 0;
      for (;;) {
        const messages = (await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }))).Messages ?? [];
        if (messages.length === 0) break;
        const drop = messages.filter((message) => !/ (7|27|47|67|87)$/.test(message.Body!));
        kept = messages.length - drop.length;
        if (drop.length === 0) break;
        await client.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: drop.map((message, entry) => ({ Id: `d${entry}`, ReceiptHandle: message.ReceiptHandle })),
          }),
        );
      }
      expect(kept).toBeGreaterThan(0);
      inFlight = (await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 600 }))).Messages![0]!.Body;
      const last = await client.send(
        new SendMessageCommand({
          QueueUrl: `${child.endpoint}/000000000000/deliveries.fifo`,
          MessageBody: 'last',
          MessageGroupId: 'g',
          MessageDeduplicationId: 'last',
        }),
      );
      lastId = last.MessageId;
    } finally {
      child.process.kill('SIGKILL');
      await new Promise((done) => child.process.once('exit', done));
      client.destroy();
    }
    const journal = join(dataDir, 'sqs', 'plain.jsonl');
    expect((await readFile(journal, 'utf8')).split('\n').length).toBeLessThan(100); // 100 sends + receives + deletes, compacted
    expect((await stat(journal)).size).toBeGreaterThan(0);

    clock = Date.now();
    await start();
    // The deduplication window survives: a retry of the last send is still a duplicate.
    expect((await sendFifo('other', 'last (retried)', 'last')).MessageId).toBe(lastId);
    const visible = bodies(await receive('plain', 10, { VisibilityTimeout: 0 })).sort();
    expect(visible).toHaveLength(4); // five kept, one still in flight until its recorded deadline
    expect(visible).not.toContain(inFlight);
    expect(sqs!.stats('plain')).toMatchObject({ inFlight: 1 });
    advance(601);
    expect(bodies(await receive('plain')).sort()).toEqual(['message 27', 'message 47', 'message 67', 'message 7', 'message 87']);
    const delivered = await receive('deliveries.fifo');
    expect(delivered.map((message) => [message.MessageId, message.Body])).toEqual([[lastId, 'last']]);
  });
});

describe('event source', () => {
  it('deletes what the handler succeeded on; reported failures and the later messages of their group come back, in order', async () => {
    const calls: string[][] = [];
    let fail = true;
    source = startSqsEventSource({
      sqs: sqs!,
      queue: 'deliveries.fifo',
      batchSize: 10,
      handler: async (event: SQSEvent) => {
        calls.push(event.Records.map((record) => record.body));
        expect(event.Records[0]).toMatchObject({ eventSource: 'aws:sqs', eventSourceARN: sqs!.queueArn('deliveries.fifo'), awsRegion: 'us-east-1' });
        if (!fail) return;
        fail = false;
        const a2 = event.Records.find((record) => record.body === 'a2')!;
        return { batchItemFailures: [{ itemIdentifier: a2.messageId }] };
      },
    });
    await client.send(
      new SendMessageBatchCommand({
        QueueUrl: url('deliveries.fifo'),
        Entries: [
          ['A', 'a1'],
          ['A', 'a2'],
          ['B', 'b1'],
          ['A', 'a3'],
        ].map(([group, body]) => ({ Id: body!, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: body })),
      }),
    );
    await source.idle();
    expect(calls).toEqual([['a1', 'a2', 'b1', 'a3']]);
    expect(sqs!.stats('deliveries.fifo')).toMatchObject({ inFlight: 2, visible: 0 });
    advance(31);
    await source.idle();
    expect(calls).toEqual([
      ['a1', 'a2', 'b1', 'a3'],
      ['a2', 'a3'],
    ]);
    expect(sqs!.stats('deliveries.fifo')).toMatchObject({ inFlight: 0, visible: 0, delayed: 0 });
  });

  it('retries a batch whose handler throws, after the visibility timeout the handler set', async () => {
    const seen: { body: string; count: string }[] = [];
    const errors: unknown[] = [];
    source = startSqsEventSource({
      sqs: sqs!,
      queue: 'plain',
      onError: (error) => errors.push(error),
      handler: async (event) => {
        const [record] = event.Records;
        seen.push({ body: record!.body, count: record!.attributes.ApproximateReceiveCount });
        if (seen.length === 1) {
          await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url('plain'), ReceiptHandle: record!.receiptHandle, VisibilityTimeout: 7200 }));
          throw new Error('endpoint answered 503');
        }
      },
    });
    await client.send(new SendMessageCommand({ QueueUrl: url('plain'), MessageBody: 'webhook' }));
    await source.idle();
    expect(errors).toHaveLength(1);
    advance(3600);
    await source.idle();
    expect(seen).toHaveLength(1);
    advance(3601);
    await source.idle();
    expect(seen).toEqual([
      { body: 'webhook', count: '1' },
      { body: 'webhook', count: '2' },
    ]);
    expect(sqs!.stats('plain')).toMatchObject({ inFlight: 0, visible: 0 });

    // Idle pollers wait in long polls: near-zero CPU.
    const before = process.cpuUsage();
    await new Promise((done) => setTimeout(done, 500));
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1000).toBeLessThan(100);
  });
});

async function spawnServer(directory: string): Promise<{ process: ChildProcess; endpoint: string }> {
  const script = `
    const { startLocalSqs } = await import(${JSON.stringify(SERVER_MODULE)});
    const sqs = await startLocalSqs({ dataDir: ${JSON.stringify(directory)}, queues: ${JSON.stringify(QUEUES)} });
    process.stdout.write(sqs.endpoint + '\\n');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const endpoint = await new Promise<string>((done, fail) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) done(text.trim());
    });
    child.once('exit', (code) => fail(new Error(`local SQS child exited ${code}`)));
  });
  return { process: child, endpoint };
}
