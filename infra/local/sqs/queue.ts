import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { invalidValue, messageNotInflight, receiptHandleIsInvalid } from './errors.ts';
import { Journal } from './journal.ts';
import { type MessageAttributeValue, md5Hex, md5OfAttributes } from './md5.ts';

/**
 * One local SQS queue: its messages in memory, every change journaled (journal.ts) before the
 * server answers. The rules are SQS's, from the SQS Developer Guide and API Reference:
 * - FIFO (FIFO-key-terms, "Exactly-once processing"): a MessageDeduplicationId (or the body's SHA-256
 *   with ContentBasedDeduplication) seen in the last 5 minutes makes a send succeed with the first
 *   message's id and enqueue nothing, even once that message was deleted; strict order within a
 *   MessageGroupId, and while one message of a group is in flight the group delivers nothing more;
 *   delay is queue-level only.
 * - Visibility timeout ("Amazon SQS visibility timeout", ChangeMessageVisibility): each receive makes
 *   a new receipt handle; a change counts from the call and the total since the receive may not pass
 *   12 hours; a handle from an earlier receive no longer changes anything.
 * - Dead-letter queues ("Using dead-letter queues"): a message already received maxReceiveCount times
 *   goes to the dead-letter queue instead of being received again. A FIFO message's retention
 *   restarts there; a standard message keeps its original enqueue time.
 * - Retention: a message older than MessageRetentionPeriod is dropped, in flight or not.
 */
export interface LocalQueueDefinition {
  /** FIFO queues' names end in `.fifo`. */
  readonly name: string;
  readonly visibilityTimeoutSeconds: number;
  readonly messageRetentionSeconds: number;
  readonly contentBasedDeduplication?: boolean;
  /** Queue-level delivery delay (0-900 s, default 0): the only delay a FIFO queue has. */
  readonly delaySeconds?: number;
  /** Long polling for a ReceiveMessage that names no WaitTimeSeconds (0-20 s, default 0). */
  readonly receiveMessageWaitTimeSeconds?: number;
  readonly redrive?: { readonly deadLetterQueue: string; readonly maxReceiveCount: number };
}

export interface StoredMessage {
  readonly id: string;
  readonly body: string;
  readonly md5: string;
  readonly attributes?: Readonly<Record<string, MessageAttributeValue>>;
  readonly md5Attributes?: string;
  readonly traceHeader?: string;
  /** SentTimestamp, ms. */
  readonly sent: number;
  /** Where retention counts from, ms. */
  readonly enqueued: number;
  readonly group?: string;
  readonly dedup?: string;
  readonly seq?: string;
  /** Set on a message moved to this (dead-letter) queue. */
  readonly source?: string;
  /** Until then the message is delayed (never received) or in flight (received). */
  visibleAt: number;
  count: number;
  first?: number;
  /** The latest receive's handle; the only one that deletes or changes visibility. */
  handle?: string;
  receivedAt?: number;
}

export interface SendInput {
  readonly body: string;
  readonly attributes?: Readonly<Record<string, MessageAttributeValue>>;
  readonly traceHeader?: string;
  readonly delaySeconds?: number;
  readonly group?: string;
  readonly dedup?: string;
}

export interface SendResult {
  readonly id: string;
  readonly seq?: string;
  readonly md5Attributes?: string;
}

export interface QueueStats {
  /** Visible now (ApproximateNumberOfMessages). */
  readonly visible: number;
  /** Received and neither deleted nor visible again (ApproximateNumberOfMessagesNotVisible). */
  readonly inFlight: number;
  /** Sent with a delay not yet over (ApproximateNumberOfMessagesDelayed). */
  readonly delayed: number;
  /** What a receive now would take: visible messages of unblocked FIFO groups, including those it would move to the dead-letter queue. */
  readonly receivable: number;
  /** Messages handed out by receives since start (sandbox extra: the event source's idle check). */
  readonly delivered: number;
}

type JournalRecord =
  | { readonly t: 'h'; readonly seq: number }
  | { readonly t: 'k'; readonly key: string; readonly id: string; readonly seq?: string; readonly at: number }
  | { readonly t: 's'; readonly m: StoredMessage }
  | {
      readonly t: 'r';
      readonly id: string;
      readonly handle: string;
      readonly count: number;
      readonly first: number;
      readonly at: number;
      readonly visibleAt: number;
    }
  | { readonly t: 'v'; readonly id: string; readonly visibleAt: number }
  | { readonly t: 'd'; readonly id: string };

const DEDUPLICATION_MS = 5 * 60_000;
export const MAX_VISIBILITY_SECONDS = 43_200;
/** Compaction waits for this many journal lines, then for the dead ones to outnumber the live ones. */
const COMPACT_AFTER_LINES = 64;
const HANDLE_PATTERN = /^([0-9a-f-]{36})\.([0-9a-f-]{36})$/;

export class LocalQueue {
  readonly definition: LocalQueueDefinition;
  readonly fifo: boolean;
  readonly arn: string;
  deadLetter: LocalQueue | undefined;
  private readonly journal: Journal;
  private readonly now: () => number;
  /** In send order: FIFO order, and the standard queue's best-effort order. */
  private readonly messages = new Map<string, StoredMessage>();
  private readonly deduplication = new Map<string, { readonly id: string; readonly seq?: string; readonly at: number }>();
  /** Being copied to the dead-letter queue: received by nobody, deleted here once the copy is on disk. */
  private readonly moving = new Set<string>();
  private readonly waiters = new Set<() => void>();
  private sequence = 0;
  private delivered = 0;
  private compacting = false;

  private constructor(definition: LocalQueueDefinition, arn: string, journal: Journal, now: () => number) {
    this.definition = definition;
    this.fifo = definition.name.endsWith('.fifo');
    this.arn = arn;
    this.journal = journal;
    this.now = now;
  }

  static async open(definition: LocalQueueDefinition, directory: string, arn: string, now: () => number): Promise<LocalQueue> {
    const { journal, records } = await Journal.open(join(directory, `${definition.name}.jsonl`));
    const queue = new LocalQueue(definition, arn, journal, now);
    for (const record of records) queue.replay(record as JournalRecord);
    return queue;
  }

  private replay(record: JournalRecord): void {
    switch (record.t) {
      case 'h':
        this.sequence = Math.max(this.sequence, record.seq);
        return;
      case 'k':
        this.deduplication.set(record.key, { id: record.id, ...(record.seq ? { seq: record.seq } : {}), at: record.at });
        return;
      case 's':
        this.messages.set(record.m.id, { ...record.m });
        if (record.m.seq) this.sequence = Math.max(this.sequence, Number(BigInt(record.m.seq) - SEQUENCE_BASE));
        if (record.m.dedup && !record.m.source) this.remember(record.m);
        return;
      case 'r': {
        const message = this.messages.get(record.id);
        if (!message) return;
        message.handle = record.handle;
        message.count = record.count;
        message.first = record.first;
        message.receivedAt = record.at;
        message.visibleAt = record.visibleAt;
        return;
      }
      case 'v': {
        const message = this.messages.get(record.id);
        if (message) message.visibleAt = record.visibleAt;
        return;
      }
      case 'd':
        this.messages.delete(record.id);
        return;
    }
  }

  private remember(message: StoredMessage): void {
    this.deduplication.set(message.dedup!, { id: message.id, ...(message.seq ? { seq: message.seq } : {}), at: message.sent });
  }

  private write(record: JournalRecord): void {
    this.journal.append(record);
  }

  /** Resolves once every change made so far is on disk; starts a compaction when the journal is mostly dead lines. */
  async flush(): Promise<void> {
    await this.journal.flush();
    const live = this.messages.size + this.deduplication.size + 1;
    if (!this.compacting && this.journal.size >= COMPACT_AFTER_LINES && this.journal.size - live > live) {
      this.compacting = true;
      // In the background: the journal chains it before the next write, and a failed rewrite leaves the old file whole.
      void this.journal
        .compact(() => this.snapshot())
        .catch(() => undefined)
        .finally(() => {
          this.compacting = false;
        });
    }
  }

  private snapshot(): JournalRecord[] {
    const now = this.now();
    const records: JournalRecord[] = [{ t: 'h', seq: this.sequence }];
    for (const [key, entry] of this.deduplication) {
      if (now - entry.at < DEDUPLICATION_MS && !this.messages.has(entry.id)) records.push({ t: 'k', key, ...entry });
    }
    for (const message of this.messages.values()) records.push({ t: 's', m: message });
    return records;
  }

  send(input: SendInput): SendResult {
    const now = this.now();
    const md5Attributes = input.attributes && Object.keys(input.attributes).length > 0 ? md5OfAttributes(input.attributes) : undefined;
    let dedup: string | undefined;
    if (this.fifo) {
      dedup = input.dedup ?? createHash('sha256').update(input.body, 'utf8').digest('hex');
      const seen = this.deduplication.get(dedup);
      if (seen && now - seen.at < DEDUPLICATION_MS) return { id: seen.id, ...(seen.seq ? { seq: seen.seq } : {}), ...(md5Attributes ? { md5Attributes } : {}) };
    }
    const delaySeconds = this.fifo ? (this.definition.delaySeconds ?? 0) : (input.delaySeconds ?? this.definition.delaySeconds ?? 0);
    const message: StoredMessage = {
      id: randomUUID(),
      body: input.body,
      md5: md5Hex(input.body),
      ...(input.attributes && md5Attributes ? { attributes: input.attributes, md5Attributes } : {}),
      ...(input.traceHeader === undefined ? {} : { traceHeader: input.traceHeader }),
      sent: now,
      enqueued: now,
      ...(input.group === undefined ? {} : { group: input.group }),
      ...(dedup === undefined ? {} : { dedup, seq: this.nextSequence() }),
      visibleAt: now + delaySeconds * 1000,
      count: 0,
    };
    this.messages.set(message.id, message);
    if (dedup !== undefined) this.remember(message);
    this.write({ t: 's', m: message });
    this.notify();
    return { id: message.id, ...(message.seq ? { seq: message.seq } : {}), ...(md5Attributes ? { md5Attributes } : {}) };
  }

  /** SQS's FIFO sequence numbers: 20 digits, strictly increasing within the queue. */
  private nextSequence(): string {
    this.sequence += 1;
    return (SEQUENCE_BASE + BigInt(this.sequence)).toString();
  }

  /** Takes up to `max` messages (copies, as received); moves those received maxReceiveCount times to the dead-letter queue. */
  async receive(max: number, visibilitySeconds: number = this.definition.visibilityTimeoutSeconds): Promise<StoredMessage[]> {
    const now = this.now();
    const { deliver, redrive } = this.select(now, max);
    const received = deliver.map((message) => {
      message.count += 1;
      message.first ??= now;
      message.handle = encodeHandle(`${message.id}.${randomUUID()}`);
      message.receivedAt = now;
      message.visibleAt = now + visibilitySeconds * 1000;
      this.write({ t: 'r', id: message.id, handle: message.handle, count: message.count, first: message.first, at: now, visibleAt: message.visibleAt });
      return { ...message };
    });
    this.delivered += received.length;
    await Promise.all([this.flush(), redrive.length > 0 ? this.moveToDeadLetter(redrive) : undefined]);
    return received;
  }

  /**
   * Copies the messages to the dead-letter queue, and deletes them here only once the copy is on disk:
   * a kill in between leaves a message in both (at-least-once), never in neither.
   */
  private async moveToDeadLetter(messages: readonly StoredMessage[]): Promise<void> {
    const target = this.deadLetter!;
    for (const message of messages) this.moving.add(message.id);
    try {
      for (const message of messages) target.accept(message, this.arn);
      await target.flush();
      for (const message of messages) {
        this.messages.delete(message.id);
        this.write({ t: 'd', id: message.id });
      }
      await this.flush();
    } finally {
      for (const message of messages) this.moving.delete(message.id);
    }
  }

  private accept(message: StoredMessage, source: string): void {
    if (this.messages.has(message.id)) return;
    const now = this.now();
    const { handle: _handle, receivedAt: _receivedAt, seq: _seq, source: _source, ...kept } = message;
    const moved: StoredMessage = {
      ...kept,
      enqueued: this.fifo ? now : message.enqueued,
      ...(this.fifo ? { seq: this.nextSequence() } : {}),
      source,
      visibleAt: now,
    };
    this.messages.set(moved.id, moved);
    this.write({ t: 's', m: moved });
    this.notify();
  }

  /** What a receive now would take, in order; drops the messages past retention on the way. */
  private select(now: number, max: number): { deliver: StoredMessage[]; redrive: StoredMessage[] } {
    const deliver: StoredMessage[] = [];
    const redrive: StoredMessage[] = [];
    const blocked = new Set<string>();
    const retentionMs = this.definition.messageRetentionSeconds * 1000;
    for (const message of this.messages.values()) {
      if (message.enqueued + retentionMs <= now && !this.moving.has(message.id)) {
        this.messages.delete(message.id); // its journal lines die at the next compaction, which skips it
        continue;
      }
      if (this.moving.has(message.id)) continue;
      if (this.fifo && blocked.has(message.group!)) continue;
      if (message.visibleAt > now) {
        if (this.fifo) blocked.add(message.group!);
        continue;
      }
      const redrivePolicy = this.definition.redrive;
      if (redrivePolicy && this.deadLetter && message.count >= redrivePolicy.maxReceiveCount) {
        redrive.push(message);
        continue;
      }
      deliver.push(message);
      if (deliver.length >= max) break;
    }
    return { deliver, redrive };
  }

  /** DeleteMessage. A handle of an earlier receive deletes nothing: a standard queue still answers success, a FIFO queue refuses it as expired. */
  delete(handle: string): void {
    const id = parseHandle(handle);
    const message = this.messages.get(id);
    if (!message || this.moving.has(id)) return; // deleted already: SQS answers success
    const current = message.handle === handle;
    if (this.fifo && (!current || message.visibleAt <= this.now())) throw invalidValue('ReceiptHandle', handle, 'The receipt handle has expired.');
    if (!current) return;
    this.messages.delete(id);
    this.write({ t: 'd', id });
    if (this.fifo) this.notify(); // its group may deliver again
  }

  changeVisibility(handle: string, seconds: number): void {
    const id = parseHandle(handle);
    const message = this.messages.get(id);
    if (!message || this.moving.has(id) || message.handle !== handle)
      throw invalidValue('ReceiptHandle', handle, 'Message does not exist or is not available for visibility timeout change.');
    const now = this.now();
    if (message.visibleAt <= now) throw messageNotInflight();
    const visibleAt = now + seconds * 1000;
    if (visibleAt > message.receivedAt! + MAX_VISIBILITY_SECONDS * 1000)
      throw invalidValue('VisibilityTimeout', seconds, `Total VisibilityTimeout for the message is beyond the limit [${MAX_VISIBILITY_SECONDS} seconds]`);
    message.visibleAt = visibleAt;
    this.write({ t: 'v', id, visibleAt });
    if (seconds === 0) this.notify();
  }

  stats(): QueueStats {
    const now = this.now();
    const receivable = this.select(now, Number.POSITIVE_INFINITY);
    let visible = 0;
    let inFlight = 0;
    let delayed = 0;
    for (const message of this.messages.values()) {
      if (this.moving.has(message.id)) continue;
      if (message.visibleAt <= now) visible += 1;
      else if (message.handle) inFlight += 1;
      else delayed += 1;
    }
    return { visible, inFlight, delayed, receivable: receivable.deliver.length + receivable.redrive.length, delivered: this.delivered };
  }

  /** Milliseconds (by the queue's clock) until the next delayed or in-flight message turns visible. */
  nextChangeIn(): number {
    const now = this.now();
    let next = Number.POSITIVE_INFINITY;
    for (const message of this.messages.values()) if (message.visibleAt > now) next = Math.min(next, message.visibleAt - now);
    return next;
  }

  /** Resolves at the next change that may make a message receivable, after `ms`, or on `signal`. */
  changed(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((done) => {
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(finish);
        signal?.removeEventListener('abort', finish);
        done();
      };
      const timer = setTimeout(finish, Math.max(0, ms));
      this.waiters.add(finish);
      signal?.addEventListener('abort', finish, { once: true });
    });
  }

  /** Wakes every long poll to look again (a send, a delete unblocking a group, or the injected clock moved). */
  notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  close(): Promise<void> {
    this.notify();
    return this.journal.close();
  }
}

const SEQUENCE_BASE = 10n ** 19n;

function parseHandle(handle: string): string {
  let decoded: string;
  try {
    decoded = Buffer.from(handle, 'base64url').toString('utf8');
  } catch {
    throw receiptHandleIsInvalid(handle);
  }
  const match = HANDLE_PATTERN.exec(decoded);
  if (!match) throw receiptHandleIsInvalid(handle);
  return match[1]!;
}

/** Receipt handles are opaque to clients: base64url of `<message id>.<receive nonce>`. */
function encodeHandle(raw: string): string {
  return Buffer.from(raw, 'utf8').toString('base64url');
}
