import { createHash, randomUUID } from 'node:crypto';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { classifySendFailure } from '../chains/sender/outcome.ts';
import type { Broadcast, SendJournal } from '../chains/sender/ports.ts';
import { DEFAULT_LEASE_TIMING } from '../chains/sender/sender-lease.ts';
import { isConditionalCheckFailed, putIfAbsent, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { ConflictError, DomainError, UnprocessableError } from '../errors.ts';

/**
 * `Idempotency-Key` for withdrawals: the first request with a key runs; a retry with the same key
 * and body gets the first result without a second transaction; the same key with another body is
 * a 422. The signed transaction is stored before it is broadcast, so a retry after a crash
 * re-broadcasts that very transaction (same nonce or signature: at most one inclusion) instead of
 * signing a new one. Records expire after a day (DynamoDB TTL on `ttl`).
 */
export interface StoredResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export type { Broadcast };

interface IdempotencyItem {
  readonly request_hash: string;
  readonly status: 'in_progress' | 'completed';
  readonly lease_until: number;
  /** Which attempt holds the key now: every write of an attempt is conditional on it (fencing). */
  readonly attempt: string;
  readonly response?: StoredResponse;
  readonly broadcast?: Broadcast;
  /** What the request created, bound before it is stored (POST /transfer: the task id), so a retry after a crash finds it instead of creating another. */
  readonly subject?: string;
  /** Epoch seconds; the table's TTL attribute (TABLE_TTL_ATTRIBUTE). */
  readonly ttl: number;
}

export type Claim =
  | { readonly kind: 'new'; readonly record: IdempotencyRecord }
  | { readonly kind: 'replay'; readonly response: StoredResponse }
  | { readonly kind: 'resume'; readonly record: IdempotencyRecord };

/**
 * How long a claim keeps a retry out (409 WITHDRAWAL_IN_PROGRESS) before it may take over: what
 * a live attempt's send can take, the sender lease (signing and broadcast under it) plus the wait
 * for inclusion, and a margin. Past it the attempt is taken as dead (a crash, `kill -9`); should
 * it still be alive, fencing keeps it from recording or settling (see IdempotencyRecord).
 */
export function claimLeaseMs(inclusionTimeoutMs: number, senderLeaseMs: number = DEFAULT_LEASE_TIMING.leaseMs): number {
  return senderLeaseMs + inclusionTimeoutMs + CLAIM_MARGIN_MS;
}
const CLAIM_MARGIN_MS = 5_000;
/** WITHDRAW_INCLUSION_TIMEOUT_MS's default (shared/config.ts). */
export const DEFAULT_CLAIM_LEASE_MS = claimLeaseMs(20_000);
const TTL_SECONDS = 24 * 3600;

export function requestHash(request: object): string {
  return createHash('sha256').update(JSON.stringify(request)).digest('hex');
}

/** 409 with `Retry-After`: when the holder's claim runs out (or 1 s when another attempt took over). */
/** What a key guards: its 409 says `WITHDRAWAL_IN_PROGRESS` or `TRANSFER_IN_PROGRESS`. */
export type IdempotentOperation = 'withdrawal' | 'transfer';

const inProgress = (operation: IdempotentOperation, retryAfterMs = 1_000) =>
  new ConflictError(
    `${operation.toUpperCase()}_IN_PROGRESS`,
    `A ${operation} with this Idempotency-Key is still in progress; retry after Retry-After seconds`,
    {
      retryAfterSeconds: retryAfterMs / 1000,
    },
  );

/**
 * One claimed key: the journal of its send (SendJournal) and where its response is kept. Every
 * write is conditional on this attempt still holding the key: an attempt that stalled past its
 * lease and was taken over cannot record (so it never broadcasts) nor settle the key.
 */
export class IdempotencyRecord implements SendJournal {
  readonly #table: Table;
  readonly #key: { pk: string; sk: string };
  readonly #attempt: string;
  readonly previous: Broadcast | undefined;
  /** The subject an earlier attempt of this key bound (bindSubject), if any. */
  readonly subject: string | undefined;
  #recorded: boolean;

  readonly #operation: IdempotentOperation;

  constructor(
    table: Table,
    key: { pk: string; sk: string },
    attempt: string,
    previous?: Broadcast,
    subject?: string,
    operation: IdempotentOperation = 'withdrawal',
  ) {
    this.#operation = operation;
    this.#table = table;
    this.#key = key;
    this.#attempt = attempt;
    this.previous = previous;
    this.subject = subject;
    this.#recorded = previous !== undefined;
  }

  /**
   * Binds what this request is about to create (e.g. a task id) before creating it: a retry after
   * a crash gets it back as `subject` and finds the thing instead of making a second one.
   * Throws 409 when the key was taken over.
   */
  async bindSubject(subject: string): Promise<void> {
    if (!(await this.#update('SET subject = :subject', { ':subject': subject }))) throw inProgress(this.#operation);
  }

  /** Stored before broadcasting: what a retry after a crash re-sends. Throws 409 when the key was taken over. */
  async record(broadcast: Broadcast): Promise<void> {
    if (!(await this.#update('SET broadcast = :b', { ':b': broadcast }))) throw inProgress(this.#operation);
    this.#recorded = true;
  }

  /**
   * A replacement candidate (before its broadcast) or the mined candidate, in place of the
   * recorded broadcast: fenced by this attempt like `record` (one attempt holds the key, so
   * `current` is what it recorded). Throws 409 when the key was taken over.
   */
  async replace(next: Broadcast, _current: Broadcast): Promise<void> {
    await this.record(next);
  }

  /** Keeps the key's state right after a failed send (see classifySendFailure). */
  async settleFailure(error: unknown): Promise<void> {
    const outcome = classifySendFailure(error, this.#recorded);
    if (outcome === 'not_sent') return this.abandon(); // nothing left this service: the key may be used again
    if (outcome === 'failed' && error instanceof DomainError) {
      return this.complete({ status: error.status, body: { success: false, error: { code: error.code, message: error.message } } });
    }
    // Broadcast, outcome unknown (inclusion timeout, RPC trouble): a retry with the same key
    // resumes with the same signed transaction. After a crash the lease expires instead.
    return this.releaseLease();
  }

  async complete(response: StoredResponse): Promise<void> {
    await this.#update('SET #s = :done, #r = :r', { ':done': 'completed', ':r': response }, { '#s': 'status', '#r': 'response' });
  }

  /** Broadcast, outcome unknown (e.g. inclusion timed out): let the next retry resume at once. */
  async releaseLease(): Promise<void> {
    await this.#update('SET lease_until = :zero', { ':zero': 0 });
  }

  /** Nothing was broadcast and the request failed: forget the key so the client may try again. */
  async abandon(): Promise<void> {
    try {
      await this.#table.doc.send(
        new DeleteCommand({
          TableName: this.#table.name,
          Key: this.#key,
          ConditionExpression: 'attempt = :mine',
          ExpressionAttributeValues: { ':mine': this.#attempt },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error; // taken over: the key is another attempt's now
    }
  }

  /** False when another attempt holds the key now. */
  async #update(expression: string, values: Record<string, unknown>, names?: Record<string, string>): Promise<boolean> {
    try {
      await this.#table.doc.send(
        new UpdateCommand({
          TableName: this.#table.name,
          Key: this.#key,
          UpdateExpression: expression,
          ConditionExpression: 'attempt = :mine',
          ...(names ? { ExpressionAttributeNames: names } : {}),
          ExpressionAttributeValues: { ...values, ':mine': this.#attempt },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}

export async function claimIdempotencyKey(
  table: Table,
  scope: { appId: string; sub: string; key: string },
  hash: string,
  now = Date.now(),
  leaseMs = DEFAULT_CLAIM_LEASE_MS,
  operation: IdempotentOperation = 'withdrawal',
): Promise<Claim> {
  const key = keys.idempotency(scope.appId, scope.sub, scope.key);
  const attempt = randomUUID();
  const fresh: IdempotencyItem = { request_hash: hash, status: 'in_progress', lease_until: now + leaseMs, attempt, ttl: Math.floor(now / 1000) + TTL_SECONDS };
  const { item, created } = await putIfAbsent(table, key, fresh);
  if (created) return { kind: 'new', record: new IdempotencyRecord(table, key, attempt, undefined, undefined, operation) };
  if (item.request_hash !== hash) {
    throw new UnprocessableError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body');
  }
  if (item.status === 'completed' && item.response) return { kind: 'replay', response: item.response };
  if (item.lease_until > now) throw inProgress(operation, item.lease_until - now);
  // The first attempt stopped (crash or timeout): take it over, exactly one retry at a time. One
  // conditional update returns the stored item, with the broadcast the first attempt recorded.
  try {
    const out = await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: key,
        UpdateExpression: 'SET lease_until = :until, attempt = :attempt',
        ConditionExpression: 'lease_until = :seen',
        ExpressionAttributeValues: { ':seen': item.lease_until, ':until': now + leaseMs, ':attempt': attempt },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const stored = out.Attributes as IdempotencyItem | undefined;
    return { kind: 'resume', record: new IdempotencyRecord(table, key, attempt, stored?.broadcast, stored?.subject, operation) };
  } catch (error) {
    if (isConditionalCheckFailed(error)) throw inProgress(operation, leaseMs); // another retry took it over just now
    throw error;
  }
}
