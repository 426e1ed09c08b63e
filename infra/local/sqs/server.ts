import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import { type LocalRequest, type LocalResponse, registerLocalEndpoint } from '../../../shared/deps/local-endpoints.ts';
import { listenPreferring } from '../listen-preferring.ts';
import {
  batchEntryIdsNotDistinct,
  batchRequestTooLong,
  emptyBatchRequest,
  internalError,
  invalidAttributeName,
  invalidBatchEntryId,
  invalidMessageContents,
  invalidParameter,
  invalidValue,
  missingParameter,
  queueDoesNotExist,
  SqsError,
  serializationError,
  sqsErrorResponse,
  tooManyEntriesInBatchRequest,
  unknownOperation,
} from './errors.ts';
import { type MessageAttributeValue, md5Hex, md5OfAttributes } from './md5.ts';
import { LocalQueue, type LocalQueueDefinition, MAX_VISIBILITY_SECONDS, type QueueStats, type StoredMessage } from './queue.ts';

export type { LocalQueueDefinition, QueueStats } from './queue.ts';

/**
 * The sandbox's Amazon SQS: the queues the sandbox declares, behind the AWS JSON 1.0 protocol that
 * @aws-sdk/client-sqs v3 speaks (POST /, `X-Amz-Target: AmazonSQS.<Operation>`,
 * `content-type: application/x-amz-json-1.0`), so a Lambda's SQSClient only changes its endpoint.
 * Operations: GetQueueUrl, GetQueueAttributes, SendMessage(Batch), ReceiveMessage (long polling),
 * DeleteMessage(Batch), ChangeMessageVisibility(Batch); errors in SQS's shapes (errors.ts). Queue
 * rules: queue.ts. Every acknowledged change is in `<dataDir>/sqs/<queue>.jsonl` (journal.ts) before
 * the answer, so it survives `kill -9`; an in-flight message stays invisible across a restart until
 * its recorded deadline. Queues are declared, not created: CreateQueue and the other management
 * operations answer UnsupportedOperation.
 *
 * Parameter limits from the SQS API Reference: MaxNumberOfMessages 1-10, WaitTimeSeconds 0-20,
 * VisibilityTimeout 0-43200, DelaySeconds 0-900 (standard queues only), 10 entries a batch,
 * MessageGroupId / MessageDeduplicationId up to 128 printable ASCII characters, messages up to
 * 1 MiB (the limit since August 2025) body and attributes together.
 */
export interface LocalSqsOptions {
  readonly dataDir: string;
  readonly host?: string;
  /** Default: the port of the previous start on this dataDir (stable queue URLs), else any free one. */
  readonly port?: number;
  readonly queues: readonly LocalQueueDefinition[];
  /** The queues' clock, ms (tests move it to cross visibility timeouts and the deduplication window). */
  readonly now?: () => number;
  /** Asked before an in-process client's request is answered (infra/local/iam/: the calling function's IAM): an answer refuses it. */
  readonly authorize?: (operation: string, body: Buffer) => LocalResponse | undefined;
}

export interface LocalSqs {
  readonly endpoint: string;
  readonly region: string;
  queueUrl(name: string): string;
  queueArn(name: string): string;
  /** Sandbox extra (not AWS API): a queue's counts now, by the injected clock. */
  stats(name: string): QueueStats;
  /** Sandbox extra: long polls look again (call after moving the injected clock); every queue when no name. */
  wake(name?: string): void;
  stop(): Promise<void>;
}

export const SQS_REGION = 'us-east-1';
const ACCOUNT = '000000000000';
const BODY_LIMIT = 4 * 1024 * 1024;
const tooLarge = () => new SqsError('com.amazon.coral.service#RequestEntityTooLarge', 'RequestEntityTooLarge', 'The request body is too large', 413);
const MAX_MESSAGE_BYTES = 1_048_576;
const MAX_DELAY_SECONDS = 900;
const MAX_WAIT_SECONDS = 20;
const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;
const GROUP_OR_DEDUP_ID = /^[!-~]{1,128}$/;
const ATTRIBUTE_NAME = /^(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.-]{1,256}$/;
const ATTRIBUTE_DATA_TYPE = /^(String|Number|Binary)(\.[!-~]{1,255})?$/;
/** The characters a message may hold: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what a message may not contain (SQS's rule)
const INVALID_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ud800-\udfff\ufffe\uffff]/u;
const SYSTEM_ATTRIBUTES = [
  'ApproximateFirstReceiveTimestamp',
  'ApproximateReceiveCount',
  'AWSTraceHeader',
  'DeadLetterQueueSourceArn',
  'MessageDeduplicationId',
  'MessageGroupId',
  'SenderId',
  'SentTimestamp',
  'SequenceNumber',
] as const;
/** SQS operations the sandbox does not serve (its queues are declared at start): UnsupportedOperation, not an unknown action. */
const MANAGEMENT_OPERATIONS = new Set([
  'AddPermission',
  'CancelMessageMoveTask',
  'CreateQueue',
  'DeleteQueue',
  'ListDeadLetterSourceQueues',
  'ListMessageMoveTasks',
  'ListQueueTags',
  'ListQueues',
  'PurgeQueue',
  'RemovePermission',
  'SetQueueAttributes',
  'StartMessageMoveTask',
  'TagQueue',
  'UntagQueue',
]);

type Body = Record<string, unknown>;

export async function startLocalSqs(options: LocalSqsOptions): Promise<LocalSqs> {
  const directory = join(resolve(options.dataDir), 'sqs');
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const now = options.now ?? Date.now;
  const queueArn = (name: string) => `arn:aws:sqs:${SQS_REGION}:${ACCOUNT}:${name}`;
  const queues = new Map<string, LocalQueue>();
  for (const definition of options.queues) {
    validateDefinition(definition);
    queues.set(definition.name, await LocalQueue.open(definition, directory, queueArn(definition.name), now));
  }
  for (const queue of queues.values()) {
    const redrive = queue.definition.redrive;
    if (!redrive) continue;
    const target = queues.get(redrive.deadLetterQueue);
    if (!target) throw new Error(`local SQS: ${queue.definition.name}'s dead-letter queue ${redrive.deadLetterQueue} is not declared`);
    if (target.fifo !== queue.fifo) throw new Error(`local SQS: ${queue.definition.name} and its dead-letter queue must be both FIFO or both standard`);
    queue.deadLetter = target;
  }
  let stopping = false;

  const queueOf = (body: Body): LocalQueue => {
    const url = body.QueueUrl;
    if (url === undefined) throw missingParameter('QueueUrl');
    if (typeof url !== 'string') throw invalidValue('QueueUrl', url, 'Must be a string.');
    let path: string[];
    try {
      path = new URL(url).pathname.split('/').filter(Boolean);
    } catch {
      throw queueDoesNotExist();
    }
    const queue = path.length === 2 && path[0] === ACCOUNT ? queues.get(path[1]!) : undefined;
    if (!queue) throw queueDoesNotExist();
    return queue;
  };

  const sendOne = (queue: LocalQueue, entry: Body) => {
    const input = parseSend(queue, entry);
    const result = queue.send(input);
    return {
      MessageId: result.id,
      MD5OfMessageBody: md5Hex(input.body),
      ...(result.md5Attributes ? { MD5OfMessageAttributes: result.md5Attributes } : {}),
      ...(input.traceHeader === undefined ? {} : { MD5OfMessageSystemAttributes: md5OfTrace(input.traceHeader) }),
      ...(result.seq ? { SequenceNumber: result.seq } : {}),
    };
  };

  const operations: Record<string, (body: Body, signal: AbortSignal) => Promise<unknown>> = {
    GetQueueUrl: async (body) => {
      const name = body.QueueName;
      if (name === undefined) throw missingParameter('QueueName');
      const owner = body.QueueOwnerAWSAccountId;
      if (typeof name !== 'string' || !queues.has(name) || (owner !== undefined && owner !== ACCOUNT)) throw queueDoesNotExist();
      return { QueueUrl: url(name) };
    },
    GetQueueAttributes: async (body) => {
      const queue = queueOf(body);
      const names = stringList(body.AttributeNames, 'AttributeNames') ?? [];
      const all = queueAttributes(queue);
      const wanted = names.includes('All') ? Object.keys(all) : names;
      const attributes: Record<string, string> = {};
      for (const name of wanted) {
        if (!(name in all)) throw invalidAttributeName(name);
        const value = all[name];
        if (value !== undefined) attributes[name] = value;
      }
      return Object.keys(attributes).length > 0 ? { Attributes: attributes } : {};
    },
    SendMessage: async (body) => {
      const queue = queueOf(body);
      const answer = sendOne(queue, body);
      await queue.flush();
      return answer;
    },
    SendMessageBatch: async (body) => {
      const queue = queueOf(body);
      const entries = batchEntries(body.Entries);
      const bytes = entries.reduce((total, entry) => total + messageBytes(entry), 0);
      if (bytes > MAX_MESSAGE_BYTES) throw batchRequestTooLong(MAX_MESSAGE_BYTES);
      const outcome = eachEntry(entries, (entry) => sendOne(queue, entry));
      await queue.flush();
      return outcome;
    },
    ReceiveMessage: async (body, signal) => {
      const queue = queueOf(body);
      const max = optionalInteger(body, 'MaxNumberOfMessages', 1, 10, 'Must be between 1 and 10, if provided.') ?? 1;
      const visibility = optionalInteger(body, 'VisibilityTimeout', 0, MAX_VISIBILITY_SECONDS, `Must be between 0 and ${MAX_VISIBILITY_SECONDS}, if provided.`);
      const wait =
        optionalInteger(body, 'WaitTimeSeconds', 0, MAX_WAIT_SECONDS, `Must be >= 0 and <= ${MAX_WAIT_SECONDS}, if provided.`) ??
        queue.definition.receiveMessageWaitTimeSeconds ??
        0;
      const systemNames = [
        ...(stringList(body.AttributeNames, 'AttributeNames') ?? []),
        ...(stringList(body.MessageSystemAttributeNames, 'MessageSystemAttributeNames') ?? []),
      ];
      for (const name of systemNames) if (name !== 'All' && !(SYSTEM_ATTRIBUTES as readonly string[]).includes(name)) throw invalidAttributeName(name);
      const attributeNames = stringList(body.MessageAttributeNames, 'MessageAttributeNames') ?? [];
      const deadline = Date.now() + wait * 1000;
      let messages: StoredMessage[] = [];
      // A poll woken by stop() or by its client going away takes nothing: no message goes in flight for nobody.
      while (!stopping && !signal.aborted) {
        messages = await queue.receive(max, visibility);
        const left = deadline - Date.now();
        if (messages.length > 0 || left <= 0) break;
        await queue.changed(Math.min(left, queue.nextChangeIn()), signal);
      }
      return messages.length > 0 ? { Messages: messages.map((message) => receivedMessage(message, systemNames, attributeNames)) } : {};
    },
    DeleteMessage: async (body) => {
      const queue = queueOf(body);
      queue.delete(receiptHandle(body));
      await queue.flush();
      return {};
    },
    DeleteMessageBatch: async (body) => {
      const queue = queueOf(body);
      const outcome = eachEntry(batchEntries(body.Entries), (entry) => {
        queue.delete(receiptHandle(entry));
        return {};
      });
      await queue.flush();
      return outcome;
    },
    ChangeMessageVisibility: async (body) => {
      const queue = queueOf(body);
      queue.changeVisibility(receiptHandle(body), visibilityTimeout(body));
      await queue.flush();
      return {};
    },
    ChangeMessageVisibilityBatch: async (body) => {
      const queue = queueOf(body);
      const outcome = eachEntry(batchEntries(body.Entries), (entry) => {
        queue.changeVisibility(receiptHandle(entry), visibilityTimeout(entry));
        return {};
      });
      await queue.flush();
      return outcome;
    },
  };

  /** One request of the JSON protocol, from the HTTP server or from an SDK client in this process (shared/deps/local-endpoints.ts). */
  const answer = async (request: LocalRequest): Promise<LocalResponse> => {
    try {
      if (request.body.length > BODY_LIMIT) throw tooLarge();
      const target = request.headers['x-amz-target'] ?? '';
      const name = target.startsWith('AmazonSQS.') ? target.slice('AmazonSQS.'.length) : '';
      const operation = Object.hasOwn(operations, name) ? operations[name] : undefined;
      if (request.method !== 'POST' || request.path.split('?')[0] !== '/' || !operation) {
        if (MANAGEMENT_OPERATIONS.has(name))
          throw new SqsError(
            'com.amazonaws.sqs#UnsupportedOperation',
            'AWS.SimpleQueueService.UnsupportedOperation',
            `${name} is not supported by the sandbox's SQS: its queues are declared when it starts`,
          );
        throw unknownOperation(target);
      }
      let body: unknown;
      try {
        body = JSON.parse(request.body.toString('utf8') || '{}');
      } catch {
        throw serializationError('The request body is not JSON');
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw serializationError('The request body is not a JSON object');
      const result = await operation(body as Body, request.signal ?? new AbortController().signal);
      return {
        status: 200,
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() },
        body: Buffer.from(JSON.stringify(result)),
      };
    } catch (error) {
      return sqsErrorResponse(error instanceof SqsError ? error : internalError());
    }
  };

  const server = createServer((req, res) => {
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    const respond = (answered: LocalResponse) => void (res.headersSent || res.writeHead(answered.status, answered.headers).end(answered.body));
    (async () => {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > BODY_LIMIT) return respond(sqsErrorResponse(tooLarge()));
        chunks.push(chunk as Buffer);
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
      respond(await answer({ method: req.method ?? 'GET', path: req.url ?? '/', headers, body: Buffer.concat(chunks), signal: aborted.signal }));
    })().catch(() => res.destroy());
  });

  const host = options.host ?? '127.0.0.1';
  const portFile = join(directory, 'port');
  const previous = Number(await readFile(portFile, 'utf8').catch(() => '')) || null;
  const port = await listenPreferring(server, options.port ?? previous, host);
  if (port !== previous) await writeFile(portFile, String(port), { mode: 0o600 });
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const endpoint = `http://${urlHost}:${port}`;
  const unregister = registerLocalEndpoint(endpoint, async (request) => {
    const target = request.headers['x-amz-target'] ?? '';
    const refused = target.startsWith('AmazonSQS.') ? options.authorize?.(target.slice('AmazonSQS.'.length), request.body) : undefined;
    if (refused) return refused;
    return answer(request);
  });
  const url = (name: string) => `${endpoint}/${ACCOUNT}/${name}`;
  const known = (name: string) => {
    const queue = queues.get(name);
    if (!queue) throw new Error(`local SQS: no queue ${name}`);
    return queue;
  };

  return {
    endpoint,
    region: SQS_REGION,
    queueUrl: (name) => url(known(name).definition.name),
    queueArn: (name) => known(name).arn,
    stats: (name) => known(name).stats(),
    wake: (name) => {
      for (const queue of name === undefined ? queues.values() : [known(name)]) queue.notify();
    },
    stop: async () => {
      unregister();
      stopping = true;
      for (const queue of queues.values()) queue.notify();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      for (const queue of queues.values()) await queue.close();
    },
  };
}

function validateDefinition(definition: LocalQueueDefinition): void {
  const fifo = definition.name.endsWith('.fifo');
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(fifo ? definition.name.slice(0, -'.fifo'.length) : definition.name))
    throw new Error(`local SQS: invalid queue name ${definition.name}`);
  if (definition.contentBasedDeduplication && !fifo) throw new Error(`local SQS: ${definition.name}: content-based deduplication is for FIFO queues`);
  const inRange = (value: number | undefined, min: number, max: number) => value === undefined || (Number.isInteger(value) && value >= min && value <= max);
  if (!inRange(definition.visibilityTimeoutSeconds, 0, MAX_VISIBILITY_SECONDS)) throw new Error(`local SQS: ${definition.name}: VisibilityTimeout 0-43200`);
  if (!inRange(definition.messageRetentionSeconds, 60, 1_209_600)) throw new Error(`local SQS: ${definition.name}: MessageRetentionPeriod 60-1209600`);
  if (!inRange(definition.delaySeconds, 0, MAX_DELAY_SECONDS)) throw new Error(`local SQS: ${definition.name}: DelaySeconds 0-900`);
  if (!inRange(definition.receiveMessageWaitTimeSeconds, 0, MAX_WAIT_SECONDS))
    throw new Error(`local SQS: ${definition.name}: ReceiveMessageWaitTimeSeconds 0-20`);
  if (definition.redrive && !inRange(definition.redrive.maxReceiveCount, 1, 1000)) throw new Error(`local SQS: ${definition.name}: maxReceiveCount 1-1000`);
}

function queueAttributes(queue: LocalQueue): Record<string, string | undefined> {
  const { definition } = queue;
  const stats = queue.stats();
  return {
    QueueArn: queue.arn,
    ApproximateNumberOfMessages: String(stats.visible),
    ApproximateNumberOfMessagesNotVisible: String(stats.inFlight),
    ApproximateNumberOfMessagesDelayed: String(stats.delayed),
    VisibilityTimeout: String(definition.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(definition.messageRetentionSeconds),
    DelaySeconds: String(definition.delaySeconds ?? 0),
    ReceiveMessageWaitTimeSeconds: String(definition.receiveMessageWaitTimeSeconds ?? 0),
    MaximumMessageSize: String(MAX_MESSAGE_BYTES),
    RedrivePolicy: definition.redrive
      ? JSON.stringify({ deadLetterTargetArn: queue.deadLetter!.arn, maxReceiveCount: definition.redrive.maxReceiveCount })
      : undefined,
    FifoQueue: queue.fifo ? 'true' : undefined,
    ContentBasedDeduplication: queue.fifo ? String(definition.contentBasedDeduplication ?? false) : undefined,
    DeduplicationScope: queue.fifo ? 'queue' : undefined,
    FifoThroughputLimit: queue.fifo ? 'perQueue' : undefined,
    SqsManagedSseEnabled: 'false',
  };
}

function parseSend(queue: LocalQueue, entry: Body) {
  const body = entry.MessageBody;
  if (body === undefined || body === '') throw missingParameter('MessageBody');
  if (typeof body !== 'string') throw invalidValue('MessageBody', body, 'Must be a string.');
  if (INVALID_CHARACTERS.test(body)) throw invalidMessageContents();
  const attributes = messageAttributes(entry.MessageAttributes);
  if (messageBytes(entry) > MAX_MESSAGE_BYTES)
    throw invalidParameter(`One or more parameters are invalid. Reason: Message must be shorter than ${MAX_MESSAGE_BYTES} bytes.`);
  const delaySeconds = optionalInteger(entry, 'DelaySeconds', 0, MAX_DELAY_SECONDS, `Must be >= 0 and <= ${MAX_DELAY_SECONDS}, if provided.`);
  if (queue.fifo && delaySeconds !== undefined)
    throw invalidValue('DelaySeconds', delaySeconds, 'The request include parameter that is not valid for this queue type.');
  const group = optionalId(entry, 'MessageGroupId');
  const dedup = optionalId(entry, 'MessageDeduplicationId');
  if (queue.fifo) {
    if (group === undefined) throw missingParameter('MessageGroupId');
    if (dedup === undefined && !queue.definition.contentBasedDeduplication)
      throw invalidParameter('The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly');
  } else if (dedup !== undefined) {
    throw invalidValue('MessageDeduplicationId', dedup, 'The request include parameter that is not valid for this queue type.');
  }
  return {
    body,
    ...(attributes ? { attributes } : {}),
    ...(delaySeconds === undefined ? {} : { delaySeconds }),
    ...(group === undefined ? {} : { group }),
    ...(dedup === undefined ? {} : { dedup }),
    ...traceHeaderOf(entry.MessageSystemAttributes),
  };
}

function messageAttributes(value: unknown): Record<string, MessageAttributeValue> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidValue('MessageAttributes', value, 'Must be a map.');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 10) throw invalidParameter(`Number of message attributes [${entries.length}] exceeds the allowed maximum [10].`);
  const out: Record<string, MessageAttributeValue> = {};
  for (const [name, raw] of entries) {
    if (!ATTRIBUTE_NAME.test(name) || /^(aws|amazon)\./i.test(name)) throw invalidParameter(`Message attribute name '${name}' is invalid.`);
    out[name] = attributeValue(name, raw);
  }
  return out;
}

function attributeValue(name: string, raw: unknown): MessageAttributeValue {
  const value = (typeof raw === 'object' && raw !== null ? raw : {}) as Body;
  const type = value.DataType;
  if (typeof type !== 'string' || !ATTRIBUTE_DATA_TYPE.test(type))
    throw invalidParameter(`The message attribute '${name}' has an invalid message attribute type.`);
  if (type.startsWith('Binary')) {
    if (typeof value.BinaryValue !== 'string' || value.BinaryValue.length === 0)
      throw invalidParameter(`The message attribute '${name}' with type 'Binary' must use field 'Binary'.`);
    return { DataType: type, BinaryValue: value.BinaryValue };
  }
  if (typeof value.StringValue !== 'string' || value.StringValue.length === 0)
    throw invalidParameter(`The message attribute '${name}' must contain non-empty message attribute value for message attribute type '${type}'.`);
  if (type.startsWith('Number') && !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(value.StringValue))
    throw invalidParameter(`Can't cast the value of message (user) attribute '${name}' to a number.`);
  if (INVALID_CHARACTERS.test(value.StringValue)) throw invalidMessageContents();
  return { DataType: type, StringValue: value.StringValue };
}

function traceHeaderOf(value: unknown): { traceHeader?: string } {
  if (value === undefined) return {};
  const entries = typeof value === 'object' && value !== null ? Object.entries(value as Body) : [];
  const out: { traceHeader?: string } = {};
  for (const [name, raw] of entries) {
    if (name !== 'AWSTraceHeader') throw invalidParameter(`Message system attribute name '${name}' is invalid.`);
    const attribute = raw as Body;
    if (attribute?.DataType !== 'String' || typeof attribute.StringValue !== 'string')
      throw invalidParameter("Message system attribute 'AWSTraceHeader' must be a String.");
    out.traceHeader = attribute.StringValue;
  }
  return out;
}

/** What SQS counts against the size limit: the body and every attribute's name, type and value. */
function messageBytes(entry: Body): number {
  let bytes = typeof entry.MessageBody === 'string' ? Buffer.byteLength(entry.MessageBody) : 0;
  const attributes = entry.MessageAttributes;
  if (typeof attributes === 'object' && attributes !== null) {
    for (const [name, raw] of Object.entries(attributes as Record<string, Body>)) {
      bytes += Buffer.byteLength(name) + Buffer.byteLength(String(raw?.DataType ?? ''));
      if (typeof raw?.StringValue === 'string') bytes += Buffer.byteLength(raw.StringValue);
      if (typeof raw?.BinaryValue === 'string') bytes += Buffer.from(raw.BinaryValue, 'base64').length;
    }
  }
  return bytes;
}

function receivedMessage(message: StoredMessage, systemNames: readonly string[], attributeNames: readonly string[]) {
  const all = systemNames.includes('All');
  const system: Record<string, string | undefined> = {
    SenderId: ACCOUNT,
    SentTimestamp: String(message.sent),
    ApproximateReceiveCount: String(message.count),
    ApproximateFirstReceiveTimestamp: String(message.first),
    MessageGroupId: message.group,
    MessageDeduplicationId: message.dedup,
    SequenceNumber: message.seq,
    AWSTraceHeader: message.traceHeader,
    DeadLetterQueueSourceArn: message.source,
  };
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(system)) if (value !== undefined && (all || systemNames.includes(name))) attributes[name] = value;
  const chosen: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.attributes ?? {})) {
    const wanted = attributeNames.some(
      (pattern) => pattern === 'All' || pattern === '.*' || pattern === name || (pattern.endsWith('.*') && name.startsWith(pattern.slice(0, -1))),
    );
    if (wanted) chosen[name] = value;
  }
  const hasAttributes = Object.keys(chosen).length > 0;
  return {
    MessageId: message.id,
    ReceiptHandle: message.handle,
    MD5OfBody: message.md5,
    Body: message.body,
    ...(Object.keys(attributes).length > 0 ? { Attributes: attributes } : {}),
    ...(hasAttributes ? { MessageAttributes: chosen, MD5OfMessageAttributes: md5OfAttributes(chosen) } : {}),
  };
}

function batchEntries(value: unknown): Body[] {
  if (value === undefined || (Array.isArray(value) && value.length === 0)) throw emptyBatchRequest();
  if (!Array.isArray(value)) throw invalidValue('Entries', value, 'Must be a list.');
  if (value.length > 10) throw tooManyEntriesInBatchRequest(value.length);
  const seen = new Set<string>();
  for (const entry of value as Body[]) {
    const id = entry?.Id;
    if (typeof id !== 'string' || !BATCH_ENTRY_ID.test(id)) throw invalidBatchEntryId();
    if (seen.has(id)) throw batchEntryIdsNotDistinct(id);
    seen.add(id);
  }
  return value as Body[];
}

/** A batch answers per entry: an entry's SQS error goes to Failed with its query code, the others succeed. */
function eachEntry(entries: readonly Body[], run: (entry: Body) => object) {
  const successful: object[] = [];
  const failed: object[] = [];
  for (const entry of entries) {
    try {
      successful.push({ Id: entry.Id, ...run(entry) });
    } catch (error) {
      if (!(error instanceof SqsError)) throw error;
      failed.push({ Id: entry.Id, SenderFault: error.fault === 'Sender', Code: error.code, Message: error.message });
    }
  }
  return { Successful: successful, Failed: failed };
}

function receiptHandle(body: Body): string {
  const handle = body.ReceiptHandle;
  if (handle === undefined || handle === '') throw missingParameter('ReceiptHandle');
  if (typeof handle !== 'string') throw invalidValue('ReceiptHandle', handle, 'Must be a string.');
  return handle;
}

function visibilityTimeout(body: Body): number {
  if (body.VisibilityTimeout === undefined) throw missingParameter('VisibilityTimeout');
  return optionalInteger(body, 'VisibilityTimeout', 0, MAX_VISIBILITY_SECONDS, `Must be between 0 and ${MAX_VISIBILITY_SECONDS}, if provided.`)!;
}

function optionalInteger(body: Body, name: string, min: number, max: number, reason: string): number | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) throw invalidValue(name, value, reason);
  return value;
}

function optionalId(body: Body, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !GROUP_OR_DEDUP_ID.test(value))
    throw invalidValue(name, value, `${name} can only include alphanumeric and punctuation characters. 1 to 128 in length.`);
  return value;
}

function stringList(value: unknown, name: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw invalidValue(name, value, 'Must be a list of strings.');
  return value as string[];
}

const md5OfTrace = (traceHeader: string) => md5OfAttributes({ AWSTraceHeader: { DataType: 'String', StringValue: traceHeader } });
