import { randomUUID } from 'node:crypto';
import { DescribeTableCommand, type DynamoDBClient, GetItemCommand, ScanCommand, type AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { itemSize, type KeySchema, keyOf, lockName, sameItem, type WireItem, wireItem } from './images.ts';
import type { KeyLock } from './key-lock.ts';

/**
 * The sandbox's DynamoDB Streams (view type NEW_AND_OLD_IMAGES, or NEW_IMAGE as the sandbox runs it), fed by the stream proxy
 * (./proxy.ts) and read by the local event source mapping (./event-source.ts). Records have
 * exactly the shape Lambda hands a function (`DynamoDBRecord`, @types/aws-lambda), as documented in
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html,
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_StreamRecord.html and
 * the example event of https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html. As DynamoDB
 * Streams guarantees (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html),
 * each record appears once and an item's records appear in the order of its modifications.
 *
 * In memory only and from LATEST: a listener sees the records written after it subscribed, and a
 * table nobody listens to costs the proxy nothing (its writes are piped).
 */
export interface ItemChange {
  readonly keys: WireItem;
  readonly oldImage?: WireItem | undefined;
  readonly newImage?: WireItem | undefined;
  /** NEW_IMAGE view: whether the item existed before (INSERT or MODIFY), when its old image was not read. */
  readonly existed?: boolean;
}

/** The stream's view type: what each record carries (DynamoDB's StreamViewType). */
export type StreamViewType = 'NEW_IMAGE' | 'NEW_AND_OLD_IMAGES';

export interface ReconcileOptions {
  readonly table: string;
  /** A Scan FilterExpression selecting the items a consumer may not have seen (e.g. a non-empty outbox). */
  readonly filterExpression?: string;
  readonly expressionAttributeNames?: Record<string, string>;
  /** In the low-level (wire) form, as Scan takes them. */
  readonly expressionAttributeValues?: Record<string, SdkAttributeValue>;
}

export type StreamListener = (record: DynamoDBRecord) => void;

const ACCOUNT = '000000000000';

export class LocalDynamoDbStream {
  readonly region: string;
  /** The stream's label in its ARN: AWS uses the stream's creation time. */
  readonly #label = new Date().toISOString().slice(0, 23);
  readonly #listeners = new Map<string, Set<StreamListener>>();
  readonly #client: DynamoDBClient;
  readonly #lock: KeyLock;
  /**
   * 21 digits (the API's minimum length), from the clock: a restarted sandbox numbers after the
   * one before it, so a checkpoint kept across restarts still compares.
   */
  #sequence = 10n ** 20n + BigInt(Date.now()) * 1_000_000n;

  /** `client` reaches the same engine as the proxy (reconcile's reads); `lock` is the proxy's per-item lock. */
  readonly viewType: StreamViewType;

  constructor(options: { region: string; client: DynamoDBClient; lock: KeyLock; viewType?: StreamViewType }) {
    this.region = options.region;
    this.viewType = options.viewType ?? 'NEW_AND_OLD_IMAGES';
    this.#client = options.client;
    this.#lock = options.lock;
  }

  streamArn(table: string): string {
    return `arn:aws:dynamodb:${this.region}:${ACCOUNT}:table/${table}/stream/${this.#label}`;
  }

  subscribe(table: string, listener: StreamListener): () => void {
    const listeners = this.#listeners.get(table) ?? new Set<StreamListener>();
    this.#listeners.set(table, listeners);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#listeners.get(table) === listeners) this.#listeners.delete(table);
    };
  }

  listened(table: string): boolean {
    return this.#listeners.has(table);
  }

  /**
   * The proxy's entry: the changes one successful write made, in its items' order. Called while the
   * items' locks are held, so records of one item leave in the order of its writes. A change that
   * changed nothing, or a delete of a missing item, makes no record (as DynamoDB Streams).
   */
  publish(table: string, changes: readonly ItemChange[]) {
    const listeners = this.#listeners.get(table);
    if (!listeners) return;
    for (const change of changes) {
      const { oldImage, newImage } = change;
      if (!oldImage && !newImage) continue;
      if (oldImage && newImage && sameItem(oldImage, newImage)) continue;
      this.#emit(table, listeners, oldImage || change.existed ? (newImage ? 'MODIFY' : 'REMOVE') : 'INSERT', change);
    }
  }

  /**
   * Sandbox-only recovery after a kill -9: the records in memory are gone, and a write may have
   * landed without its record being handled. Emits a MODIFY with NewImage only (no OldImage) for
   * every item the Scan selects, through the same per-item order as live records. In AWS none of
   * this exists: the stream keeps records 24 hours and the event source mapping resumes from its
   * checkpoint. The consumer must be idempotent: it sees again what it may already have handled.
   * Each item is read again under its lock, so a live write between the Scan and the record does
   * not leave an older image after a newer one. Returns how many records it emitted.
   */
  async reconcile(options: ReconcileOptions): Promise<number> {
    const table = options.table;
    const described = await this.#client.send(new DescribeTableCommand({ TableName: table }));
    const schema = keySchemaOf(described.Table?.KeySchema ?? []);
    let emitted = 0;
    let start: Record<string, SdkAttributeValue> | undefined;
    do {
      const page = await this.#client.send(
        new ScanCommand({
          TableName: table,
          ConsistentRead: true,
          ExclusiveStartKey: start,
          FilterExpression: options.filterExpression,
          ExpressionAttributeNames: options.expressionAttributeNames,
          ExpressionAttributeValues: options.expressionAttributeValues,
        }),
      );
      await Promise.all(
        (page.Items ?? []).map(async (scanned) => {
          const key = Object.fromEntries(schema.map((name) => [name, scanned[name]!]));
          const release = await this.#lock.acquire([lockName(table, keyOf(wireItem(scanned), schema)!)]);
          try {
            const current = await this.#client.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }));
            const listeners = this.#listeners.get(table);
            if (!current.Item || !listeners) return;
            const newImage = wireItem(current.Item);
            this.#emit(table, listeners, 'MODIFY', { keys: keyOf(newImage, schema)!, newImage });
            emitted++;
          } finally {
            release();
          }
        }),
      );
      start = page.LastEvaluatedKey;
    } while (start);
    return emitted;
  }

  #emit(table: string, listeners: Set<StreamListener>, eventName: 'INSERT' | 'MODIFY' | 'REMOVE', change: ItemChange) {
    this.#sequence += 1n;
    const record: DynamoDBRecord = {
      eventID: randomUUID().replaceAll('-', ''),
      eventName,
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: this.region,
      dynamodb: {
        ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
        Keys: change.keys,
        ...(change.newImage ? { NewImage: change.newImage } : {}),
        ...(change.oldImage && this.viewType === 'NEW_AND_OLD_IMAGES' ? { OldImage: change.oldImage } : {}),
        SequenceNumber: String(this.#sequence),
        SizeBytes: Math.max(1, itemSize(change.keys) + itemSize(change.newImage) + (this.viewType === 'NEW_AND_OLD_IMAGES' ? itemSize(change.oldImage) : 0)),
        StreamViewType: this.viewType,
      },
      eventSourceARN: this.streamArn(table),
    };
    for (const listener of listeners) listener(record);
  }
}

/** DescribeTable's KeySchema as the attribute names, hash key first. */
export function keySchemaOf(keys: readonly { AttributeName?: string | undefined; KeyType?: string | undefined }[]): KeySchema {
  return [...keys.filter((key) => key.KeyType === 'HASH'), ...keys.filter((key) => key.KeyType !== 'HASH')].map((key) => key.AttributeName!);
}
