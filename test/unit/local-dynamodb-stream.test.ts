import { crc32 } from 'node:zlib';
import { ConditionalCheckFailedException, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { AttributeValue, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type StreamEventSource, startStreamEventSource } from '../../infra/local/dynamodb-stream/event-source.ts';
import { type DynamoDbStreamProxy, startDynamoDbStreamProxy } from '../../infra/local/dynamodb-stream/proxy.ts';
import { createDocumentClient, type Table } from '../../shared/db/client.ts';
import { DYNAMO_ENGINES, startEngineTable } from './support/dynamodb-engines.ts';

/**
 * The sandbox's DynamoDB Streams (infra/local/dynamodb-stream): writes through the proxy on both
 * engines yield the records DynamoDB Streams would, with the engine's own images, while every
 * answer reaches the client as the engine gave it; the local event source mapping drives a
 * handler from them as Lambda does (per-key order, retries, partial batch failures, filters).
 */
describe.each(DYNAMO_ENGINES)('DynamoDB stream proxy on %s', (engine) => {
  let table: Table;
  let stopTable: () => Promise<void>;
  let upstream: string;
  let proxy: DynamoDbStreamProxy;
  let doc: DynamoDBDocumentClient;
  let direct: DynamoDBDocumentClient;
  let low: DynamoDBClient;
  let records: DynamoDBRecord[];
  let unsubscribe: () => void;

  beforeAll(async () => {
    ({ table, stop: stopTable } = await startEngineTable(engine, 'ddb-stream'));
    const endpoint = (await table.doc.config.endpoint!())!;
    upstream = `${endpoint.protocol}//${endpoint.hostname}:${endpoint.port}`;
    proxy = await startDynamoDbStreamProxy({ upstream, port: 0 });
    doc = createDocumentClient(proxy.endpoint);
    direct = table.doc;
    low = new DynamoDBClient({ endpoint: proxy.endpoint });
    records = [];
    unsubscribe = proxy.stream.subscribe(table.name, (record) => records.push(record));
  }, 90_000);
  afterAll(async () => {
    unsubscribe?.();
    low?.destroy();
    doc?.destroy();
    await proxy?.stop();
    await stopTable?.();
  });
  afterEach(() => {
    records.length = 0;
  });

  /** The item as the engine stores it, in the wire form a stream record holds. */
  const stored = async (key: Record<string, string>) => {
    const answer = await engineCall(upstream, 'GetItem', { TableName: table.name, Key: wireKey(key), ConsistentRead: true });
    return answer.Item as Record<string, unknown> | undefined;
  };

  it('PutItem, UpdateItem and DeleteItem yield INSERT, MODIFY and REMOVE carrying the engine’s exact images', async () => {
    const key = { pk: `TASK#exact-${engine}`, sk: 'TASK' };
    // Written in a form the engine normalises (1.50; DynamoDB Local also sorts the set): the images are what it stores.
    await low.send(
      new PutItemCommand({
        TableName: table.name,
        Item: { ...wireKey(key), amount: { N: '1.50' }, tags: { SS: ['b', 'a'] }, blob: { B: Buffer.from('bytes') }, outbox: { L: [] } },
      }),
    );
    const afterPut = await stored(key);
    await doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: key,
        UpdateExpression: 'SET #s = :s, outbox = list_append(outbox, :e) ADD amount :one',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':s': 'running', ':e': [{ type: 'task.running' }], ':one': 1 },
      }),
    );
    const afterUpdate = await stored(key);
    await doc.send(new DeleteCommand({ TableName: table.name, Key: key }));
    // Nothing to delete, nothing changed: no records (as DynamoDB Streams).
    await doc.send(new DeleteCommand({ TableName: table.name, Key: key }));
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key, same: 1 } }));
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key, same: 1 } }));

    expect(afterPut).toMatchObject({ amount: { N: '1.5' } });
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE', 'INSERT']);
    const [insert, modify, remove] = records as [DynamoDBRecord, DynamoDBRecord, DynamoDBRecord];
    expect(insert.dynamodb!.NewImage).toEqual(afterPut);
    expect(insert.dynamodb!.OldImage).toBeUndefined();
    expect(modify.dynamodb!.OldImage).toEqual(afterPut);
    expect(modify.dynamodb!.NewImage).toEqual(afterUpdate);
    expect(afterUpdate).toMatchObject({ amount: { N: '2.5' }, status: { S: 'running' }, outbox: { L: [{ M: { type: { S: 'task.running' } } }] } });
    expect(remove.dynamodb!.OldImage).toEqual(afterUpdate);
    expect(remove.dynamodb!.NewImage).toBeUndefined();
    const now = Math.floor(Date.now() / 1000);
    for (const record of records) {
      expect(record).toMatchObject({ eventVersion: '1.1', eventSource: 'aws:dynamodb', awsRegion: proxy.stream.region });
      expect(record.eventID).toMatch(/^[0-9a-f]{32}$/);
      expect(record.eventSourceARN).toBe(proxy.stream.streamArn(table.name));
      expect(record.eventSourceARN).toMatch(
        new RegExp(`^arn:aws:dynamodb:${proxy.stream.region}:000000000000:table/${table.name}/stream/\\d{4}-\\d\\d-\\d\\dT[\\d:.]+$`),
      );
      expect(record.dynamodb).toMatchObject({ Keys: wireKey(key), StreamViewType: 'NEW_AND_OLD_IMAGES' });
      expect(record.dynamodb!.SequenceNumber).toMatch(/^\d{21,40}$/);
      expect(record.dynamodb!.SizeBytes).toBeGreaterThan(0);
      expect(record.dynamodb!.ApproximateCreationDateTime).toBeGreaterThanOrEqual(now - 5);
      expect(record.dynamodb!.ApproximateCreationDateTime).toBeLessThanOrEqual(now);
    }
    const sequence = records.map((record) => BigInt(record.dynamodb!.SequenceNumber!));
    expect(sequence).toEqual([...sequence].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(sequence).size).toBe(sequence.length);
  });

  it('NEW_IMAGE (as the sandbox runs it): new images only, read from the writes themselves; a no-op put makes no record', async () => {
    const lean = await startDynamoDbStreamProxy({ upstream, port: 0, viewType: 'NEW_IMAGE' });
    const leanDoc = createDocumentClient(lean.endpoint);
    const seen: DynamoDBRecord[] = [];
    const stop = lean.stream.subscribe(table.name, (record) => seen.push(record));
    try {
      const key = { pk: `TASK#lean-${engine}`, sk: 'TASK' };
      await leanDoc.send(new PutCommand({ TableName: table.name, Item: { ...key, n: 1 } }));
      await leanDoc.send(new PutCommand({ TableName: table.name, Item: { ...key, n: 1 } }));
      await leanDoc.send(new UpdateCommand({ TableName: table.name, Key: key, UpdateExpression: 'SET n = :two', ExpressionAttributeValues: { ':two': 2 } }));
      const afterUpdate = await stored(key);
      await leanDoc.send(new DeleteCommand({ TableName: table.name, Key: key }));
      expect(seen.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
      expect(seen[1]!.dynamodb!.NewImage).toEqual(afterUpdate);
      for (const record of seen) {
        expect(record.dynamodb!.StreamViewType).toBe('NEW_IMAGE');
        expect(record.dynamodb!.OldImage).toBeUndefined();
      }
    } finally {
      stop();
      leanDoc.destroy();
      await lean.stop();
    }
  });

  it("an item over DynamoDB's 400 KB is refused as DynamoDB refuses it (ValidationException), with no record; one just under is stored", async () => {
    const refused = await doc
      .send(new PutCommand({ TableName: table.name, Item: { pk: 'LIMIT#big', sk: 'x', blob: 'x'.repeat(401 * 1024) } }))
      .catch((error: Error) => error);
    expect(refused).toMatchObject({ name: 'ValidationException', message: 'Item size has exceeded the maximum allowed size' });
    expect(records).toEqual([]);
    await doc.send(new PutCommand({ TableName: table.name, Item: { pk: 'LIMIT#big', sk: 'x', blob: 'x'.repeat(399 * 1024) } }));
    expect(records).toHaveLength(1);
  });

  it("DynamoDB's batch limits hold through the proxy: 26 writes in one BatchWriteItem, 101 keys in one BatchGetItem are refused, nothing written", async () => {
    const writes = Array.from({ length: 26 }, (_, i) => ({ PutRequest: { Item: { pk: `LIMIT#w${i}`, sk: 'x' } } }));
    await expect(doc.send(new BatchWriteCommand({ RequestItems: { [table.name]: writes } }))).rejects.toMatchObject({ name: 'ValidationException' });
    expect(records).toEqual([]);
    const keys = Array.from({ length: 101 }, (_, i) => ({ pk: `LIMIT#w${i}`, sk: 'x' }));
    await expect(doc.send(new BatchGetCommand({ RequestItems: { [table.name]: { Keys: keys } } }))).rejects.toMatchObject({ name: 'ValidationException' });
  });

  it('a failed conditional write yields no record and its error reaches the client as the engine sent it', async () => {
    const key = { pk: `TASK#cond-${engine}`, sk: 'TASK' };
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key, v: 1 } }));
    records.length = 0;
    const refusedPut = (client: DynamoDBDocumentClient) =>
      client
        .send(
          new PutCommand({
            TableName: table.name,
            Item: { ...key, v: 2 },
            ConditionExpression: 'attribute_not_exists(pk)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        )
        .then(
          () => undefined,
          (error: unknown) => error,
        );
    const refusedUpdate = (client: DynamoDBDocumentClient) =>
      client
        .send(
          new UpdateCommand({
            TableName: table.name,
            Key: key,
            UpdateExpression: 'SET v = :v',
            ConditionExpression: 'v = :other',
            ExpressionAttributeValues: { ':v': 3, ':other': 42 },
            ReturnValues: 'ALL_NEW',
          }),
        )
        .then(
          () => undefined,
          (error: unknown) => error,
        );
    for (const attempt of [refusedPut, refusedUpdate]) {
      const [viaProxy, viaEngine] = (await Promise.all([attempt(doc), attempt(direct)])) as [ConditionalCheckFailedException, ConditionalCheckFailedException];
      expect(viaProxy).toBeInstanceOf(ConditionalCheckFailedException);
      expect(viaProxy.message).toBe(viaEngine.message);
      expect(viaProxy.$metadata.httpStatusCode).toBe(400);
      expect(viaProxy.Item).toEqual(viaEngine.Item);
    }
    // DynamoDB Local returns the item with the failure; dynalite does not support it.
    const withItem = (await refusedPut(doc)) as ConditionalCheckFailedException;
    if (engine === 'dynamodb-local') expect(withItem.Item).toEqual({ ...wireKey(key), v: { N: '1' } });
    const invalid = await doc.send(new UpdateCommand({ TableName: table.name, Key: key, UpdateExpression: 'SET = broken' })).catch((error: Error) => error);
    expect(invalid).toMatchObject({ name: 'ValidationException' });
    expect(records).toEqual([]);
    expect(await doc.send(new GetCommand({ TableName: table.name, Key: key }))).toMatchObject({ Item: { v: 1 } });
  });

  it('ReturnValues come back as the client asked while the records still carry both images', async () => {
    const key = { pk: `TASK#returns-${engine}`, sk: 'TASK' };
    const put = await doc.send(new PutCommand({ TableName: table.name, Item: { ...key, n: 1, keep: 'k' } }));
    expect(put.Attributes).toBeUndefined();
    const putOld = await doc.send(new PutCommand({ TableName: table.name, Item: { ...key, n: 2, keep: 'k' }, ReturnValues: 'ALL_OLD' }));
    expect(putOld.Attributes).toEqual({ ...key, n: 1, keep: 'k' });
    const update = (n: number, ReturnValues?: 'NONE' | 'ALL_NEW' | 'ALL_OLD' | 'UPDATED_NEW' | 'UPDATED_OLD') =>
      doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: key,
          UpdateExpression: 'SET n = :n',
          ExpressionAttributeValues: { ':n': n },
          ...(ReturnValues ? { ReturnValues } : {}),
        }),
      );
    expect((await update(3)).Attributes).toBeUndefined();
    expect((await update(4, 'NONE')).Attributes).toBeUndefined();
    expect((await update(5, 'ALL_NEW')).Attributes).toEqual({ ...key, n: 5, keep: 'k' });
    expect((await update(6, 'ALL_OLD')).Attributes).toEqual({ ...key, n: 5, keep: 'k' });
    expect((await update(7, 'UPDATED_NEW')).Attributes).toEqual({ n: 7 });
    expect((await update(8, 'UPDATED_OLD')).Attributes).toEqual({ n: 7 });
    expect((await doc.send(new DeleteCommand({ TableName: table.name, Key: key }))).Attributes).toBeUndefined();
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key, n: 9 } }));
    expect((await doc.send(new DeleteCommand({ TableName: table.name, Key: key, ReturnValues: 'ALL_OLD' }))).Attributes).toEqual({ ...key, n: 9 });

    // The answer the proxy rewrote (ALL_NEW asked in place of NONE) keeps DynamoDB's body checksum true.
    const rewritten = await wireCall(proxy.endpoint, 'UpdateItem', {
      TableName: table.name,
      Key: wireKey(key),
      UpdateExpression: 'SET n = :n',
      ExpressionAttributeValues: { ':n': { N: '10' } },
    });
    expect(rewritten.json).toEqual({});
    if (engine === 'dynamodb-local') expect(rewritten.headers.get('x-amz-crc32')).toBe(String(crc32(rewritten.text)));
    await doc.send(new DeleteCommand({ TableName: table.name, Key: key }));

    const n = (image?: Record<string, AttributeValue>) => image?.n?.N;
    expect(records.map((record) => [record.eventName, n(record.dynamodb!.OldImage), n(record.dynamodb!.NewImage)])).toEqual([
      ['INSERT', undefined, '1'],
      ['MODIFY', '1', '2'],
      ['MODIFY', '2', '3'],
      ['MODIFY', '3', '4'],
      ['MODIFY', '4', '5'],
      ['MODIFY', '5', '6'],
      ['MODIFY', '6', '7'],
      ['MODIFY', '7', '8'],
      ['REMOVE', '8', undefined],
      ['INSERT', undefined, '9'],
      ['REMOVE', '9', undefined],
      ['INSERT', undefined, '10'],
      ['REMOVE', '10', undefined],
    ]);
  });

  it('BatchWriteItem yields a record per put and per delete of an existing item', async () => {
    const key = (i: number) => ({ pk: `TASK#batch-${engine}-${i}`, sk: 'TASK' });
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key(0), v: 'old' } }));
    records.length = 0;
    await doc.send(
      new BatchWriteCommand({
        RequestItems: {
          [table.name]: [
            { PutRequest: { Item: { ...key(0), v: 'new' } } },
            { PutRequest: { Item: { ...key(1), v: 'one' } } },
            { PutRequest: { Item: { ...key(2), v: 'two' } } },
            { DeleteRequest: { Key: key(3) } },
          ],
        },
      }),
    );
    await doc.send(new BatchWriteCommand({ RequestItems: { [table.name]: [{ DeleteRequest: { Key: key(1) } }] } }));
    expect(records.map((record) => [record.eventName, record.dynamodb!.Keys!.pk!.S, record.dynamodb!.OldImage?.v?.S, record.dynamodb!.NewImage?.v?.S])).toEqual(
      [
        ['MODIFY', key(0).pk, 'old', 'new'],
        ['INSERT', key(1).pk, undefined, 'one'],
        ['INSERT', key(2).pk, undefined, 'two'],
        ['REMOVE', key(1).pk, 'one', undefined],
      ],
    );
    expect(records[0]!.dynamodb!.NewImage).toEqual(await stored(key(0)));
  });

  it('TransactWriteItems yields its records where the engine supports it, else its error passes through', async () => {
    const key = (i: number) => ({ pk: `TASK#tx-${engine}-${i}`, sk: 'TASK' });
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key(0), v: 1 } }));
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key(3), v: 3 } }));
    records.length = 0;
    const transaction = (client: DynamoDBDocumentClient, pk: string) =>
      client
        .send(
          new TransactWriteCommand({
            TransactItems: [
              { Update: { TableName: table.name, Key: key(0), UpdateExpression: 'SET v = v + :one', ExpressionAttributeValues: { ':one': 1 } } },
              { Put: { TableName: table.name, Item: { pk, sk: 'TASK', v: 10 } } },
              { ConditionCheck: { TableName: table.name, Key: key(3), ConditionExpression: 'attribute_exists(pk)' } },
            ],
          }),
        )
        .then(
          () => 'ok',
          (error: Error) => `${error.name}: ${error.message}`,
        );
    const viaProxy = await transaction(doc, key(1).pk);
    if (engine === 'dynalite') {
      expect(viaProxy).not.toBe('ok');
      expect(viaProxy).toBe(await transaction(direct, key(2).pk));
      expect(records).toEqual([]);
      return;
    }
    expect(viaProxy).toBe('ok');
    expect(records.map((record) => [record.eventName, record.dynamodb!.Keys!.pk!.S, record.dynamodb!.OldImage?.v?.N, record.dynamodb!.NewImage?.v?.N])).toEqual(
      [
        ['MODIFY', key(0).pk, '1', '2'],
        ['INSERT', key(1).pk, undefined, '10'],
      ],
    );
  });

  it('concurrent updates of one item yield records whose OldImage is the NewImage of the one before', async () => {
    const key = { pk: `TASK#race-${engine}`, sk: 'TASK' };
    const writers = 40;
    await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        doc.send(
          new UpdateCommand({
            TableName: table.name,
            Key: key,
            UpdateExpression: 'ADD n :one SET outbox = list_append(if_not_exists(outbox, :empty), :entry)',
            ExpressionAttributeValues: { ':one': 1, ':empty': [], ':entry': [`e${i}`] },
          }),
        ),
      ),
    );
    expect(records).toHaveLength(writers);
    expect(records[0]!.eventName).toBe('INSERT');
    for (let i = 1; i < writers; i++) {
      expect(records[i]!.eventName).toBe('MODIFY');
      expect(records[i]!.dynamodb!.OldImage).toEqual(records[i - 1]!.dynamodb!.NewImage);
    }
    expect(records.map((record) => record.dynamodb!.NewImage!.n!.N)).toEqual(Array.from({ length: writers }, (_, i) => String(i + 1)));
    expect(records.at(-1)!.dynamodb!.NewImage).toEqual(await stored(key));
  });
});

describe('DynamoDB stream event source (Lambda event source mapping, ReportBatchItemFailures)', () => {
  let stopTable: () => Promise<void>;
  let table: Table;
  let proxy: DynamoDbStreamProxy;
  let doc: DynamoDBDocumentClient;
  let source: StreamEventSource | undefined;

  beforeAll(async () => {
    ({ table, stop: stopTable } = await startEngineTable('dynalite', 'ddb-stream-esm'));
    const endpoint = (await table.doc.config.endpoint!())!;
    proxy = await startDynamoDbStreamProxy({ upstream: `${endpoint.protocol}//${endpoint.hostname}:${endpoint.port}` });
    doc = createDocumentClient(proxy.endpoint);
  });
  afterAll(async () => {
    doc?.destroy();
    await proxy?.stop();
    await stopTable?.();
  });
  afterEach(async () => {
    await source?.stop();
    source = undefined;
  });

  const put = (pk: string, v: number) => doc.send(new PutCommand({ TableName: table.name, Item: { pk, sk: 'TASK', v } }));
  const seen = (event: DynamoDBStreamEvent) => event.Records.map((record) => `${record.dynamodb!.Keys!.pk!.S}:${record.dynamodb!.NewImage?.v?.N}`);

  it('handles the records of one key strictly in order, one batch in flight per shard, shards side by side', async () => {
    const handled: string[] = [];
    let inFlight = 0;
    let widest = 0;
    const inFlightByKey = new Map<string, number>();
    source = startStreamEventSource({
      stream: proxy.stream,
      table: table.name,
      batchSize: 3,
      handler: async (event) => {
        const keys = new Set(event.Records.map((record) => record.dynamodb!.Keys!.pk!.S!));
        for (const key of keys) {
          expect(inFlightByKey.get(key) ?? 0).toBe(0);
          inFlightByKey.set(key, 1);
        }
        widest = Math.max(widest, ++inFlight);
        expect(event.Records.length).toBeLessThanOrEqual(3);
        await new Promise((done) => setTimeout(done, Math.random() * 4));
        handled.push(...seen(event));
        inFlight--;
        for (const key of keys) inFlightByKey.set(key, 0);
      },
    });
    const keys = Array.from({ length: 12 }, (_, i) => `ORDER#${i}`);
    const writes = 8;
    await Promise.all(
      keys.map(async (pk) => {
        for (let v = 1; v <= writes; v++) await put(pk, v);
      }),
    );
    await source.idle();
    expect(handled).toHaveLength(keys.length * writes);
    for (const pk of keys) expect(handled.filter((entry) => entry.startsWith(`${pk}:`))).toEqual(Array.from({ length: writes }, (_, i) => `${pk}:${i + 1}`));
    expect(widest).toBeGreaterThan(1);
  });

  it('retries a thrown batch whole and a reported item failure from that record on, in order', async () => {
    const calls: string[][] = [];
    let thrown = 0;
    let reported = 0;
    const attempts: number[] = [];
    source = startStreamEventSource({
      stream: proxy.stream,
      table: table.name,
      batchSize: 10,
      retryDelayMs: (attempt) => {
        attempts.push(attempt);
        return 1;
      },
      onFailure: () => {},
      handler: async (event): Promise<DynamoDBBatchResponse | undefined> => {
        calls.push(seen(event));
        const failing = event.Records.find((record) => record.dynamodb!.NewImage!.v!.N === '3');
        if (failing && reported < 2) {
          reported++;
          return { batchItemFailures: [{ itemIdentifier: failing.dynamodb!.SequenceNumber! }] };
        }
        if (event.Records.some((record) => record.dynamodb!.NewImage!.v!.N === '5') && thrown < 2) {
          thrown++;
          throw new Error('publisher down');
        }
        return { batchItemFailures: [] };
      },
    });
    // One write call publishes five records of one key together: they form one batch.
    await doc.send(
      new BatchWriteCommand({ RequestItems: { [table.name]: [1, 2, 3, 4, 5].map((v) => ({ PutRequest: { Item: { pk: 'RETRY', sk: `S${v}`, v } } })) } }),
    );
    await source.idle();
    expect(calls).toEqual([
      ['RETRY:1', 'RETRY:2', 'RETRY:3', 'RETRY:4', 'RETRY:5'],
      ['RETRY:3', 'RETRY:4', 'RETRY:5'],
      ['RETRY:3', 'RETRY:4', 'RETRY:5'],
      ['RETRY:3', 'RETRY:4', 'RETRY:5'],
      ['RETRY:3', 'RETRY:4', 'RETRY:5'],
    ]);
    expect(attempts).toEqual([1, 2, 3, 4]);
  });

  it('an itemIdentifier naming no record of the batch fails the whole batch', async () => {
    const calls: string[][] = [];
    source = startStreamEventSource({
      stream: proxy.stream,
      table: table.name,
      retryDelayMs: () => 1,
      onFailure: () => {},
      handler: async (event) => {
        calls.push(seen(event));
        return calls.length === 1 ? { batchItemFailures: [{ itemIdentifier: '' }] } : undefined;
      },
    });
    await put('BAD-ID', 1);
    await source.idle();
    expect(calls).toEqual([['BAD-ID:1'], ['BAD-ID:1']]);
  });

  it('the filter drops records before they are queued, and they are never retried', async () => {
    const handled: string[] = [];
    const offered: string[] = [];
    source = startStreamEventSource({
      stream: proxy.stream,
      table: table.name,
      filter: (record) => {
        offered.push(record.eventName!);
        return record.eventName === 'INSERT' || (record.dynamodb!.NewImage?.outbox?.L?.length ?? 0) > 0;
      },
      handler: async (event) => {
        handled.push(...event.Records.map((record) => `${record.eventName}:${record.dynamodb!.NewImage?.outbox?.L?.length ?? '-'}`));
      },
    });
    const key = { pk: 'FILTER', sk: 'TASK' };
    await doc.send(new PutCommand({ TableName: table.name, Item: { ...key, outbox: [] } }));
    await doc.send(new UpdateCommand({ TableName: table.name, Key: key, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': 1 } }));
    await doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: key,
        UpdateExpression: 'SET outbox = list_append(outbox, :e)',
        ExpressionAttributeValues: { ':e': ['x'] },
      }),
    );
    await doc.send(new DeleteCommand({ TableName: table.name, Key: key }));
    await source.idle();
    expect(offered).toEqual(['INSERT', 'MODIFY', 'MODIFY', 'REMOVE']);
    expect(handled).toEqual(['INSERT:0', 'MODIFY:1']);
  });

  it('after a restart, reconcile emits a NewImage-only MODIFY per item the Scan selects, through the same order', async () => {
    const withOutbox = ['RECON#1', 'RECON#2', 'RECON#3'];
    // Written before anyone listens: as after a kill -9, their records are gone.
    for (const pk of withOutbox) await doc.send(new PutCommand({ TableName: table.name, Item: { pk, sk: 'TASK', outbox: [`${pk}-event`] } }));
    await doc.send(new PutCommand({ TableName: table.name, Item: { pk: 'RECON#done', sk: 'TASK', outbox: [] } }));
    const handled: DynamoDBRecord[] = [];
    source = startStreamEventSource({
      stream: proxy.stream,
      table: table.name,
      handler: async (event) => {
        handled.push(...event.Records);
      },
    });
    const emitted = await proxy.stream.reconcile({
      table: table.name,
      filterExpression: 'begins_with(pk, :prefix) AND size(outbox) > :zero',
      expressionAttributeValues: { ':prefix': { S: 'RECON#' }, ':zero': { N: '0' } },
    });
    await source.idle();
    expect(emitted).toBe(3);
    expect(handled.map((record) => record.dynamodb!.Keys!.pk!.S).sort()).toEqual(withOutbox);
    for (const record of handled) {
      expect(record.eventName).toBe('MODIFY');
      expect(record.dynamodb!.OldImage).toBeUndefined();
      const pk = record.dynamodb!.Keys!.pk!.S!;
      expect(record.dynamodb!.NewImage).toEqual({ pk: { S: pk }, sk: { S: 'TASK' }, outbox: { L: [{ S: `${pk}-event` }] } });
    }
  });
});

/** A request straight to the engine, in the wire form (the SDK would turn binaries into bytes). */
async function engineCall(endpoint: string, target: string, body: unknown): Promise<any> {
  const { ok, json } = await wireCall(endpoint, target, body);
  if (!ok) throw new Error(`${target}: ${JSON.stringify(json)}`);
  return json;
}

async function wireCall(endpoint: string, target: string, body: unknown): Promise<{ ok: boolean; headers: Headers; text: string; json: any }> {
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `DynamoDB_20120810.${target}`,
      // DynamoDB Local keeps a database per access key and checks no signature.
      'x-amz-date': '20260101T000000Z',
      authorization: `AWS4-HMAC-SHA256 Credential=${process.env.AWS_ACCESS_KEY_ID}/20260101/${region}/dynamodb/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { ok: response.ok, headers: response.headers, text, json: JSON.parse(text) };
}

function wireKey(key: Record<string, string>): Record<string, { S: string }> {
  return Object.fromEntries(Object.entries(key).map(([name, value]) => [name, { S: value }]));
}
