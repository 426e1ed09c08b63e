import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import { crc32 } from 'node:zlib';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type LocalResponse, registerLocalEndpoint } from '../../../shared/deps/local-endpoints.ts';
import { listenPreferring } from '../listen-preferring.ts';
import { type KeySchema, keyOf, lockName, type WireItem } from './images.ts';
import { KeyLock } from './key-lock.ts';
import { type ItemChange, keySchemaOf, LocalDynamoDbStream, type StreamViewType } from './stream.ts';
import { type EngineListener, Upstream, type UpstreamResponse } from './upstream.ts';

/**
 * DynamoDB Streams for the sandbox's engine (dynalite has no Streams API): an HTTP proxy in front
 * of it that the sandbox's writers use as their DynamoDB endpoint. Every request of the JSON
 * protocol goes to the engine and its answer comes back as the engine sent it (errors, and
 * ConditionalCheckFailedException's `Item`, included). A successful PutItem, UpdateItem,
 * DeleteItem, BatchWriteItem or TransactWriteItems on a table someone listens to also publishes
 * the records DynamoDB Streams would (./stream.ts), with images read from the engine while the
 * item's lock is held: the write's own ReturnValues give one image (the proxy asks ALL_NEW or
 * ALL_OLD in place of NONE and removes `Attributes` from the answer), one consistent GetItem the
 * other. DeleteItem needs no read; a batch or transaction two BatchGetItems. Anything else (reads,
 * writes to unheard tables, other operations) is piped.
 *
 * Every writer of the table must go through the proxy: a write that bypasses it has no record,
 * and the next record of its item would show its change as part of that record's.
 */
export interface DynamoDbStreamProxyOptions {
  /** The engine's endpoint URL (dynalite, DynamoDB Local). */
  readonly upstream: string;
  /** The engine's request listener when it runs in this process (the embedded dynalite): no second HTTP hop. */
  readonly engine?: EngineListener;
  readonly host?: string;
  /** 0 or unset: any free port. */
  readonly port?: number;
  /** The records' awsRegion and ARN region; default AWS_REGION, else us-east-1. */
  readonly region?: string;
  /**
   * NEW_IMAGE (what the sandbox runs, as the AWS table's stream): a PutItem's or UpdateItem's new
   * image comes from the write itself (the Item put; ALL_NEW in place of NONE), so a write costs
   * no extra read, and records carry no OldImage. NEW_AND_OLD_IMAGES (default) reads the old
   * image first, under the item's lock. In NEW_IMAGE, an UpdateItem that wrote nothing new still
   * makes a record (its old image was not read), and an upsert by UpdateItem is a MODIFY.
   */
  readonly viewType?: StreamViewType;
  /** A write landed but its record could not be made (a read after it failed): reconcile covers it. Default: a line on stderr. */
  readonly onError?: (error: Error) => void;
  /**
   * Asked before an in-process client's request reaches the engine (infra/local/iam/: the calling
   * function's IAM): an answer refuses the request with it, and the engine never sees it.
   */
  readonly authorize?: (operation: string, body: Buffer) => LocalResponse | undefined;
}

export interface DynamoDbStreamProxy {
  readonly endpoint: string;
  readonly stream: LocalDynamoDbStream;
  stop(): Promise<void>;
}

const TARGET_PREFIX = 'DynamoDB_20120810.';
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
/** The DynamoDB operation an `X-Amz-Target` header names. */
const operationOf = (target: string | string[] | undefined) =>
  typeof target === 'string' && target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : undefined;
/** BatchGetItem's limit per request. */
const BATCH_GET_KEYS = 100;

/** One item a batch or transaction writes: its images are read before and after. */
interface Written {
  readonly table: string;
  readonly key: WireItem;
  readonly name: string;
  readonly deletes: boolean;
}

export async function startDynamoDbStreamProxy(options: DynamoDbStreamProxyOptions): Promise<DynamoDbStreamProxy> {
  const region = options.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const onError = options.onError ?? ((error: Error) => process.stderr.write(`dynamodb-stream proxy: ${error.message}\n`));
  const upstream = new Upstream(options.upstream, options.engine);
  const lock = new KeyLock();
  const client = new DynamoDBClient({ endpoint: options.upstream, region });
  const viewType = options.viewType ?? 'NEW_AND_OLD_IMAGES';
  const stream = new LocalDynamoDbStream({ region, client, lock, viewType });
  const schemas = new Map<string, Promise<KeySchema>>();

  const schemaOf = (table: string, headers: IncomingHttpHeaders): Promise<KeySchema> => {
    let schema = schemas.get(table);
    if (!schema) {
      schema = upstream.json(headers, 'DescribeTable', { TableName: table }).then((answer) => keySchemaOf(answer.Table?.KeySchema ?? []));
      schemas.set(table, schema);
      // Not cached when the table is missing: it may be created next.
      schema.catch(() => schemas.delete(table));
    }
    return schema;
  };

  const getItem = async (headers: IncomingHttpHeaders, table: string, key: WireItem): Promise<WireItem | undefined> =>
    (await upstream.json(headers, 'GetItem', { TableName: table, Key: key, ConsistentRead: true })).Item;

  /** Consistent images of several items, by lock name. */
  const readItems = async (headers: IncomingHttpHeaders, items: readonly Written[]): Promise<Map<string, WireItem>> => {
    const found = new Map<string, WireItem>();
    const unique = [...new Map(items.map((item) => [item.name, item])).values()];
    for (let from = 0; from < unique.length; from += BATCH_GET_KEYS) {
      let requested: Record<string, { Keys: WireItem[]; ConsistentRead: true }> = {};
      for (const item of unique.slice(from, from + BATCH_GET_KEYS)) {
        requested[item.table] ??= { Keys: [], ConsistentRead: true };
        requested[item.table]!.Keys.push(item.key);
      }
      while (Object.keys(requested).length > 0) {
        const answer = await upstream.json(headers, 'BatchGetItem', { RequestItems: requested });
        for (const [table, got] of Object.entries<WireItem[]>(answer.Responses ?? {})) {
          const schema = await schemaOf(table, headers);
          for (const item of got) found.set(lockName(table, keyOf(item, schema)!), item);
        }
        requested = answer.UnprocessedKeys ?? {};
      }
    }
    return found;
  };

  /** PutItem, UpdateItem, DeleteItem: one item, one extra read at most. */
  const writeOne = async (operation: string, body: any, raw: Buffer, headers: IncomingHttpHeaders): Promise<UpstreamResponse> => {
    const table = body.TableName;
    if (typeof table !== 'string' || !stream.listened(table)) return upstream.send(headers, operation, raw);
    const schema = await schemaOf(table, headers).catch(() => undefined);
    const key = schema && keyOf((operation === 'PutItem' ? body.Item : body.Key) ?? {}, schema);
    if (!schema || !key) return upstream.send(headers, operation, raw);
    const asked = body.ReturnValues ?? 'NONE';
    // Which image the write's own answer gives; undefined (UPDATED_*, or a value the engine will refuse): read before and after.
    const returned =
      operation === 'UpdateItem'
        ? asked === 'NONE' || asked === 'ALL_NEW'
          ? 'ALL_NEW'
          : asked === 'ALL_OLD'
            ? 'ALL_OLD'
            : undefined
        : asked === 'NONE' || asked === 'ALL_OLD'
          ? 'ALL_OLD'
          : undefined;
    const release = await lock.acquire([lockName(table, key)]);
    try {
      let before: WireItem | undefined;
      // NEW_IMAGE records carry no old image: none is read (the write's own answer, or the Item put, is the new one).
      if (returned !== 'ALL_OLD' && viewType === 'NEW_AND_OLD_IMAGES') {
        try {
          before = await getItem(headers, table, key);
        } catch {
          // The engine refuses the key (wrong type, missing table): the write meets the same refusal.
          return await upstream.send(headers, operation, raw);
        }
      }
      const rewritten = returned !== undefined && returned !== asked;
      const answer = await upstream.send(headers, operation, rewritten ? Buffer.from(JSON.stringify({ ...body, ReturnValues: returned })) : raw);
      if (answer.status !== 200) return answer;
      const result = JSON.parse(answer.body.toString('utf8'));
      try {
        const putImage = operation === 'PutItem' && viewType === 'NEW_IMAGE' ? (body.Item as WireItem) : undefined;
        const change: { oldImage: WireItem | undefined; newImage: WireItem | undefined; existed?: boolean } =
          returned === 'ALL_OLD'
            ? { oldImage: result.Attributes, newImage: operation === 'DeleteItem' ? undefined : (putImage ?? (await getItem(headers, table, key))) }
            : // NEW_IMAGE: an update's old image was not read; it is a MODIFY (an upsert too).
              {
                oldImage: before,
                newImage: returned === 'ALL_NEW' ? result.Attributes : await getItem(headers, table, key),
                existed: viewType === 'NEW_IMAGE',
              };
        const image = change.newImage ?? change.oldImage;
        stream.publish(table, [{ keys: (image && keyOf(image, schema)) ?? key, ...change }]);
      } catch (error) {
        onError(new Error(`${operation} on ${table} succeeded but its stream record was not made: ${(error as Error).message}`));
      }
      if (!rewritten) return answer;
      delete result.Attributes;
      return withBody(answer, result);
    } finally {
      release();
    }
  };

  /** BatchWriteItem and TransactWriteItems: every written item read before and (unless deleted) after. */
  const writeMany = async (operation: string, body: any, raw: Buffer, headers: IncomingHttpHeaders): Promise<UpstreamResponse> => {
    const planned = await plan(operation, body, headers).catch(() => undefined);
    if (!planned || planned.length === 0) return upstream.send(headers, operation, raw);
    const release = await lock.acquire(planned.map((item) => item.name));
    try {
      let before: Map<string, WireItem>;
      try {
        before = await readItems(headers, planned);
      } catch {
        return await upstream.send(headers, operation, raw);
      }
      const answer = await upstream.send(headers, operation, raw);
      if (answer.status !== 200) return answer;
      try {
        const result = JSON.parse(answer.body.toString('utf8'));
        const unprocessed = new Set<string>();
        for (const [table, requests] of Object.entries<any[]>(result.UnprocessedItems ?? {})) {
          if (!stream.listened(table)) continue;
          const schema = await schemaOf(table, headers);
          for (const request of requests) {
            const key = keyOf(request.PutRequest?.Item ?? request.DeleteRequest?.Key ?? {}, schema);
            if (key) unprocessed.add(lockName(table, key));
          }
        }
        const done = planned.filter((item) => !unprocessed.has(item.name));
        const after = await readItems(
          headers,
          done.filter((item) => !item.deletes),
        );
        const changes = new Map<string, ItemChange[]>();
        for (const item of done) {
          const newImage = item.deletes ? undefined : after.get(item.name);
          changes.set(item.table, [...(changes.get(item.table) ?? []), { keys: item.key, oldImage: before.get(item.name), newImage }]);
        }
        for (const [table, tableChanges] of changes) stream.publish(table, tableChanges);
      } catch (error) {
        onError(new Error(`${operation} succeeded but its stream records were not made: ${(error as Error).message}`));
      }
      return answer;
    } finally {
      release();
    }
  };

  /** The items a batch or transaction writes in tables someone listens to, in request order. */
  const plan = async (operation: string, body: any, headers: IncomingHttpHeaders): Promise<Written[] | undefined> => {
    const requests: { table: unknown; item: unknown; deletes: boolean }[] = [];
    if (operation === 'BatchWriteItem') {
      for (const [table, writes] of Object.entries<any[]>(body.RequestItems ?? {}))
        for (const write of Array.isArray(writes) ? writes : [])
          requests.push({ table, item: write?.PutRequest?.Item ?? write?.DeleteRequest?.Key, deletes: write?.DeleteRequest !== undefined });
    } else {
      for (const entry of Array.isArray(body.TransactItems) ? body.TransactItems : []) {
        const write = entry?.Put ?? entry?.Update ?? entry?.Delete;
        if (write) requests.push({ table: write.TableName, item: entry.Put ? write.Item : write.Key, deletes: entry.Delete !== undefined });
      }
    }
    const planned: Written[] = [];
    for (const request of requests) {
      if (typeof request.table !== 'string' || !stream.listened(request.table)) continue;
      const key = keyOf((request.item ?? {}) as WireItem, await schemaOf(request.table, headers));
      // A request the engine will refuse: nothing to record.
      if (!key) return undefined;
      planned.push({ table: request.table, key, name: lockName(request.table, key), deletes: request.deletes });
    }
    return planned;
  };

  const write = (operation: string, raw: Buffer, headers: IncomingHttpHeaders): Promise<UpstreamResponse> => {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      body = undefined;
    }
    return typeof body !== 'object' || body === null || Array.isArray(body)
      ? upstream.send(headers, operation, raw)
      : operation === 'BatchWriteItem' || operation === 'TransactWriteItems'
        ? writeMany(operation, body, raw, headers)
        : writeOne(operation, body, raw, headers);
  };

  const handleWrite = async (operation: string, req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const answer = await write(operation, Buffer.concat(chunks), req.headers);
    const headers = { ...answer.headers };
    for (const name of ['connection', 'keep-alive', 'transfer-encoding']) delete headers[name];
    res.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) }).end(answer.body);
  };

  const failed = (res: ServerResponse) => (error: Error) => {
    // The engine unreachable: a 5xx the SDK retries, in DynamoDB's error shape.
    if (!res.headersSent)
      res
        .writeHead(500, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'InternalServerError' })
        .end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: `stream proxy: ${error.message}` }));
    else res.destroy(error);
  };

  const server = createServer((req, res) => {
    const operation = operationOf(req.headers['x-amz-target']);
    if (req.method === 'POST' && operation !== undefined && WRITES.has(operation)) handleWrite(operation, req, res).catch(failed(res));
    else upstream.pipe(req, res, failed(res));
  });
  // The SDK keeps connections alive longer than Node's 5 s default would.
  server.keepAliveTimeout = 60_000;

  const host = options.host ?? '127.0.0.1';
  const port = await listenPreferring(server, options.port || null, host);
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const endpoint = `http://${urlHost}:${port}`;
  // This process's SDK clients for the endpoint: the same handling, without the loopback socket.
  const unregister = registerLocalEndpoint(endpoint, async (request) => {
    const operation = operationOf(request.headers['x-amz-target']);
    const refused = options.authorize?.(operation ?? '', request.body);
    if (refused) return refused;
    return operation !== undefined && WRITES.has(operation)
      ? write(operation, request.body, request.headers)
      : upstream.send(request.headers, operation ?? '', request.body);
  });
  return {
    endpoint,
    stream,
    stop: async () => {
      unregister();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      upstream.close();
      client.destroy();
    },
  };
}

/** The engine's answer with another JSON body; its CRC32 header (DynamoDB's body checksum) recomputed to match. */
function withBody(answer: UpstreamResponse, json: unknown): UpstreamResponse {
  const body = Buffer.from(JSON.stringify(json));
  const headers = { ...answer.headers };
  if (headers['x-amz-crc32'] !== undefined) headers['x-amz-crc32'] = String(crc32(body));
  return { status: answer.status, headers, body };
}
