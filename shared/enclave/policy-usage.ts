import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { TABLE_TTL_ATTRIBUTE } from '../db/table-definition.ts';
import { ConflictError } from '../errors.ts';

/**
 * max_usd_per_day (issue 22): what a user (the op_jwt's app + `sub`) signed in the rolling 24 h.
 *
 * ONE item per (app, sub), `POLICYUSE#<app_id>#<sub>` / `POLICYUSE`, holds the recent entries
 * (`t` epoch ms, `usd` micro-USD as a decimal string, `jti` of the op_jwt) and a `rev` number.
 * A signature is counted by reading the item, dropping entries older than 24 h, deciding on the
 * total, then a put conditional on `rev` (absent item: `attribute_not_exists`). Of concurrent
 * writers exactly one wins each `rev`; the losers re-read and decide again, so a limit that allows
 * five lets exactly five through on every engine. No transaction and no arithmetic in a condition
 * expression is needed (dynalite has no TransactWriteItems; conditions cannot add numbers).
 *
 * The entry carries the op_jwt's `jti`: the conditional write that counts the signature is also
 * its signing record here (the `OPJWT#` put of shared/auth/op-jwt-replay.ts stays the single-use
 * guard, written first; an entry's jti lets the daily counter be audited against it and a jti is
 * never counted twice).
 *
 * Limit: the item holds one day's counted signatures (about 100 bytes each): some 3,000 counted
 * signatures per user per day fit in DynamoDB's 400 KB item.
 */
export const USAGE_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Attempts of the read-decide-conditional-put loop before 409 POLICY_BUSY. */
export const USAGE_MAX_ATTEMPTS = 25;

export interface UsageEntry {
  /** Epoch milliseconds of the signature. */
  readonly t: number;
  /** Micro-USD, decimal string. */
  readonly usd: string;
  readonly jti: string;
}

export interface Usage {
  /** 0 when the item does not exist yet. */
  readonly rev: number;
  /** The entries inside the rolling window ending at `now`. */
  readonly entries: readonly UsageEntry[];
  /** Their total in micro-USD. */
  readonly spent: bigint;
}

export function inWindow(entries: readonly UsageEntry[], now: Date): UsageEntry[] {
  const from = now.getTime() - USAGE_WINDOW_MS;
  return entries.filter((entry) => entry.t > from);
}

export function sumMicroUsd(entries: readonly UsageEntry[]): bigint {
  return entries.reduce((total, entry) => total + BigInt(entry.usd), 0n);
}

export async function readUsage(table: Table, appId: string, sub: string, now: Date): Promise<Usage> {
  const out = await table.doc.send(new GetCommand({ TableName: table.name, Key: keys.policyUse(appId, sub), ConsistentRead: true }));
  if (!out.Item) return { rev: 0, entries: [], spent: 0n };
  const entries = inWindow((out.Item.entries as UsageEntry[] | undefined) ?? [], now);
  return { rev: Number(out.Item.rev ?? 0), entries, spent: sumMicroUsd(entries) };
}

/** Micro-USD the user signed in the rolling 24 h ending at `now` (0 when nothing is counted). */
export async function usdSpentToday(table: Table, appId: string, sub: string, now: Date): Promise<bigint /* micro-USD in the rolling 24 h */> {
  return (await readUsage(table, appId, sub, now)).spent;
}

/** What one decision made of the user's usage: `count` the signature's micro-USD, or count nothing. */
export type UsageVerdict<T> = { readonly count: bigint | null; readonly result: T };

/**
 * Decides on the user's current usage and, when `decide` says to count, appends the entry with
 * one conditional write on `rev`; a lost race re-reads and decides again (bounded, with jitter).
 * `decide` is pure and may run several times. Exhausted attempts: 409 POLICY_BUSY.
 */
export async function decideWithUsage<T>(
  table: Table,
  user: { readonly appId: string; readonly sub: string; readonly jti: string },
  now: () => Date,
  decide: (spent: bigint) => UsageVerdict<T>,
): Promise<T> {
  for (let attempt = 1; attempt <= USAGE_MAX_ATTEMPTS; attempt++) {
    const at = now();
    const usage = await readUsage(table, user.appId, user.sub, at);
    const verdict = decide(usage.spent);
    if (verdict.count === null) return verdict.result;
    if (usage.entries.some((entry) => entry.jti === user.jti)) return verdict.result; // already counted (never twice)
    const entries = [...usage.entries, { t: at.getTime(), usd: verdict.count.toString(), jti: user.jti }];
    try {
      await table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: {
            ...keys.policyUse(user.appId, user.sub),
            rev: usage.rev + 1,
            entries,
            // Gone a day after its newest entry, when nothing in it counts any more.
            [TABLE_TTL_ATTRIBUTE]: Math.ceil((at.getTime() + USAGE_WINDOW_MS) / 1000) + 3600,
          },
          ConditionExpression: usage.rev === 0 ? 'attribute_not_exists(pk)' : 'rev = :rev',
          ExpressionAttributeValues: usage.rev === 0 ? undefined : { ':rev': usage.rev },
        }),
      );
      return verdict.result;
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      await new Promise((done) => setTimeout(done, Math.random() * Math.min(200, 10 * 2 ** attempt)));
    }
  }
  throw new ConflictError('POLICY_BUSY', 'too many concurrent signatures for this user while counting max_usd_per_day: retry with a fresh op_jwt', {
    retryAfterSeconds: 1,
  });
}
