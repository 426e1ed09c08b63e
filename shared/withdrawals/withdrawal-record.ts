import { createHash } from 'node:crypto';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import type { Broadcast, SendJournal } from '../chains/sender/ports.ts';
import { isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { TABLE_TTL_ATTRIBUTE } from '../db/table-definition.ts';
import { appendOutbox, OUTBOX_ATTRIBUTE, outboxEntries } from '../events/outbox.ts';
import { EVENT_RETENTION_DAYS, type EventType } from '../events/types.ts';

/**
 * A withdrawal to an external address as the events see it (issue 24): `withdrawal.sent` when its
 * transaction is signed and recorded for broadcast, `withdrawal.confirmed` once included,
 * `withdrawal.failed` when it failed on chain after being sent. One item per withdrawal,
 * `WITHDRAWALS#<app_id>#<sub>` / `WD#<withdrawal_id>`, each event in the same write as the state it
 * reports (shared/events/outbox.ts), kept EVENT_RETENTION_DAYS. A withdrawal that never left this
 * service (refused, nothing signed) has no record and no event.
 *
 * It wraps the send's journal (the Idempotency-Key record, when the request has one): the
 * journal's record comes first, so exactly-once is the journal's as before; `replace` only when the
 * journal has one, so the sender replaces exactly as it did.
 */
export interface WithdrawalFacts {
  readonly chain: string;
  readonly token: string;
  /** Decimal string, as the response says it. */
  readonly amount: string;
  readonly from_address: string;
  readonly to_address: string;
  readonly gas_sponsored: boolean;
}

/** `wd_` + the Idempotency-Key's hash (a retry is the same withdrawal) or a UUIDv7. */
export function withdrawalId(scope: { appId: string; sub: string }, idempotencyKey?: string): string {
  if (!idempotencyKey) return `wd_${uuidv7()}`;
  return `wd_${createHash('sha256').update(`${scope.appId}\n${scope.sub}\n${idempotencyKey}`).digest('hex').slice(0, 32)}`;
}

export class WithdrawalRecord implements SendJournal {
  readonly #table: Table;
  readonly #key: { pk: string; sk: string };
  readonly #id: string;
  readonly #appId: string;
  readonly #sub: string;
  readonly #facts: WithdrawalFacts;
  readonly #journal: SendJournal | undefined;
  readonly #now: () => Date;
  readonly replace?: (next: Broadcast, current: Broadcast) => Promise<void>;

  constructor(table: Table, scope: { appId: string; sub: string; id: string }, facts: WithdrawalFacts, journal: SendJournal | undefined, now: () => Date) {
    this.#table = table;
    this.#key = keys.withdrawal(scope.appId, scope.sub, scope.id);
    this.#id = scope.id;
    this.#appId = scope.appId;
    this.#sub = scope.sub;
    this.#facts = facts;
    this.#journal = journal;
    this.#now = now;
    const replace = journal?.replace?.bind(journal);
    if (replace) {
      this.replace = async (next, current) => {
        await replace(next, current);
        await this.#set({ tx_hash: next.tx_hash });
      };
    }
  }

  get previous(): Broadcast | undefined {
    return this.#journal?.previous;
  }

  async record(broadcast: Broadcast): Promise<void> {
    await this.#journal?.record(broadcast);
    const at = this.#now().toISOString();
    try {
      await this.#table.doc.send(
        new PutCommand({
          TableName: this.#table.name,
          Item: {
            ...this.#key,
            entity: 'withdrawal',
            withdrawal_id: this.#id,
            app_id: this.#appId,
            app_user_id: this.#sub,
            ...this.#facts,
            status: 'sent',
            tx_hash: broadcast.tx_hash,
            created_at: at,
            updated_at: at,
            [TABLE_TTL_ATTRIBUTE]: Math.floor(Date.parse(at) / 1000) + EVENT_RETENTION_DAYS * 86_400,
            [OUTBOX_ATTRIBUTE]: outboxEntries(['withdrawal.sent'], at),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      // A retry of the same Idempotency-Key resumed a recorded send: the withdrawal was sent already.
      if (!isConditionalCheckFailed(error)) throw error;
      await this.#set({ tx_hash: broadcast.tx_hash });
    }
  }

  /** Included: `withdrawal.confirmed`, once (a replayed completion finds it confirmed). */
  confirmed(txHash: string): Promise<void> {
    return this.#settle('confirmed', { tx_hash: txHash });
  }

  /** Sent, then failed (reverted, or never included): `withdrawal.failed`, once. */
  failed(error: { code: string; message: string }): Promise<void> {
    return this.#settle('failed', { error });
  }

  async #settle(status: 'confirmed' | 'failed', fields: Record<string, unknown>): Promise<void> {
    try {
      await this.#set({ ...fields, status }, { event: `withdrawal.${status}`, whileSent: true });
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error; // settled already, or never sent: nothing to report
    }
  }

  /** Sets `fields` (and `updated_at`); with `event`, its outbox entry in the same write; `whileSent`: only while the status is `sent`. */
  async #set(fields: Record<string, unknown>, options: { readonly event?: EventType; readonly whileSent?: boolean } = {}): Promise<void> {
    const at = this.#now().toISOString();
    const update = { sets: ['updated_at = :at'], names: {} as Record<string, string>, values: { ':at': at } as Record<string, unknown> };
    Object.entries(fields).forEach(([name, value], i) => {
      update.names[`#f${i}`] = name;
      update.values[`:f${i}`] = value;
      update.sets.push(`#f${i} = :f${i}`);
    });
    if (options.event) appendOutbox(update, [options.event], at);
    if (options.whileSent) {
      update.names['#status'] = 'status';
      update.values[':sent'] = 'sent';
    }
    await this.#table.doc.send(
      new UpdateCommand({
        TableName: this.#table.name,
        Key: this.#key,
        UpdateExpression: `SET ${update.sets.join(', ')}`,
        ...(options.whileSent ? { ConditionExpression: '#status = :sent' } : {}),
        ExpressionAttributeNames: update.names,
        ExpressionAttributeValues: update.values,
      }),
    );
  }
}

/** A withdrawal as its events carry it (`data`): never a signed transaction. */
export function toWithdrawalResource(item: Readonly<Record<string, unknown>>) {
  return {
    withdrawal_id: item.withdrawal_id,
    status: item.status,
    chain: item.chain,
    token: item.token,
    amount: item.amount,
    from_address: item.from_address,
    to_address: item.to_address,
    gas_sponsored: item.gas_sponsored,
    tx_hash: item.tx_hash,
    ...(item.error ? { error: item.error } : {}),
    created_at: item.created_at,
    updated_at: item.updated_at,
  };
}
