import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { LocalDynamoDbStream } from './stream.ts';

/**
 * The sandbox's Lambda event source mapping for a DynamoDB stream, with FunctionResponseTypes
 * ReportBatchItemFailures (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html):
 * - records of one partition key go to one shard (the `pk` value hashed over SHARDS); a shard has
 *   one batch in flight and handles its records strictly in order; shards run side by side;
 * - a throw retries the same batch after a backoff, blocking its shard (no retry limit, no
 *   bisecting: Lambda's defaults, MaximumRetryAttempts -1);
 * - `batchItemFailures` checkpoints before the failed record with the lowest sequence number and
 *   retries from it; an empty or absent list is success; an itemIdentifier that is empty or names
 *   no record of the batch fails the whole batch;
 * - `filter` drops records as event filtering does (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html):
 *   before anything is queued, never retried.
 * Event-driven: a record starts its shard's work; no timer runs unless a retry waits.
 */
export interface StreamEventSourceOptions {
  readonly stream: LocalDynamoDbStream;
  readonly table: string;
  // biome-ignore lint/suspicious/noConfusingVoidType: the result type of Lambda's DynamoDBStreamHandler (@types/aws-lambda): a handler may return nothing
  readonly handler: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;
  /** Default 10. */
  readonly batchSize?: number;
  readonly filter?: (record: DynamoDBRecord) => boolean;
  /** The pause before retry `attempt` (1, 2, …) of a batch; default 100 ms doubling to 5 s. */
  readonly retryDelayMs?: (attempt: number) => number;
  /** A batch failed (thrown, or items reported) and will be retried; default: a line on stderr. */
  readonly onFailure?: (error: Error, attempt: number) => void;
}

export interface StreamEventSource {
  stop(): Promise<void>;
  /** Resolves once every record published so far was handled (or dropped by the filter). */
  idle(): Promise<void>;
}

/** Partitions of the sandbox stream: enough for parallel consumers, few enough to keep batches whole. */
const SHARDS = 8;

interface Shard {
  readonly records: DynamoDBRecord[];
  running: boolean;
}

export function startStreamEventSource(options: StreamEventSourceOptions): StreamEventSource {
  const batchSize = options.batchSize ?? 10;
  const retryDelayMs = options.retryDelayMs ?? ((attempt: number) => Math.min(100 * 2 ** (attempt - 1), 5_000));
  const onFailure = options.onFailure ?? ((error: Error) => process.stderr.write(`dynamodb-stream event source (${options.table}): ${error.message}\n`));
  const shards: Shard[] = Array.from({ length: SHARDS }, () => ({ records: [], running: false }));
  const running = new Set<Promise<void>>();
  const sleeping = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  let idleWaiters: (() => void)[] = [];
  let stopped = false;

  const isIdle = () => shards.every((shard) => !shard.running && shard.records.length === 0);
  const settle = () => {
    if (!isIdle()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const done of waiters) done();
  };

  const sleep = (ms: number) =>
    new Promise<void>((wake) => {
      const entry = {
        timer: setTimeout(() => {
          sleeping.delete(entry);
          wake();
        }, ms),
        wake,
      };
      sleeping.add(entry);
    });

  const drain = async (shard: Shard) => {
    let attempt = 0;
    // Set when the same records must be sent again (a throw): a retry is the same batch, not a larger one.
    let retrySize: number | undefined;
    while (!stopped && shard.records.length > 0) {
      const batch = shard.records.slice(0, retrySize ?? batchSize);
      let from: number | undefined;
      try {
        from = failedFrom(batch, (await options.handler({ Records: batch })) ?? undefined);
      } catch (error) {
        attempt++;
        retrySize = batch.length;
        onFailure(error instanceof Error ? error : new Error(String(error)), attempt);
        await sleep(retryDelayMs(attempt));
        continue;
      }
      if (from === undefined) {
        shard.records.splice(0, batch.length);
        attempt = 0;
        retrySize = undefined;
        continue;
      }
      // Checkpoint before the failed record; Lambda retries from it with a new batch.
      shard.records.splice(0, from);
      attempt++;
      retrySize = undefined;
      onFailure(new Error(`batch item failure at sequence number ${batch[from]!.dynamodb!.SequenceNumber}`), attempt);
      await sleep(retryDelayMs(attempt));
    }
  };

  const start = (shard: Shard) => {
    if (shard.running || stopped) return;
    shard.running = true;
    // A microtask later: the records one write publishes together (a batch, a transaction) leave in one batch.
    const work = Promise.resolve()
      .then(() => drain(shard))
      .finally(() => {
        shard.running = false;
        running.delete(work);
        settle();
      });
    running.add(work);
  };

  const unsubscribe = options.stream.subscribe(options.table, (record) => {
    if (stopped) return;
    if (options.filter) {
      let kept: boolean;
      try {
        kept = options.filter(record);
      } catch (error) {
        // Lambda's filters are data and cannot throw; a throwing one here drops the record, said aloud.
        onFailure(new Error(`filter threw on sequence number ${record.dynamodb?.SequenceNumber}: ${(error as Error).message}`), 0);
        return;
      }
      if (!kept) return;
    }
    const shard = shards[shardOf(record)]!;
    shard.records.push(record);
    start(shard);
  });

  return {
    idle: () => (isIdle() ? Promise.resolve() : new Promise((done) => idleWaiters.push(done))),
    stop: async () => {
      stopped = true;
      unsubscribe();
      for (const entry of sleeping) {
        clearTimeout(entry.timer);
        entry.wake();
      }
      sleeping.clear();
      await Promise.all(running);
      for (const shard of shards) shard.records.length = 0;
      settle();
    },
  };
}

/**
 * The index in `batch` to retry from, or undefined for success. Lambda takes the lowest sequence
 * number reported; a malformed report is a failure of the whole batch.
 */
function failedFrom(batch: readonly DynamoDBRecord[], response: DynamoDBBatchResponse | undefined): number | undefined {
  const failures = response?.batchItemFailures;
  if (!failures || failures.length === 0) return undefined;
  let from: number | undefined;
  for (const failure of failures) {
    const index = batch.findIndex((record) => typeof failure?.itemIdentifier === 'string' && record.dynamodb?.SequenceNumber === failure.itemIdentifier);
    if (index < 0) return 0;
    from = from === undefined ? index : Math.min(from, index);
  }
  return from;
}

/** FNV-1a of the partition key's value: one `pk`, one shard, whatever else the item holds. */
function shardOf(record: DynamoDBRecord): number {
  const pk = record.dynamodb?.Keys?.pk;
  const text = pk?.S ?? pk?.N ?? pk?.B ?? JSON.stringify(record.dynamodb?.Keys ?? {});
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % SHARDS;
}
