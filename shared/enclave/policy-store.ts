import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import { getItem, isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { ConflictError } from '../errors.ts';
import { type Policy, PolicySchema } from '../policies/policy.ts';

/**
 * An app's signing policy in the table (issue 22). Every PUT is a new version, kept as
 * `V#<version>`; `CURRENT` holds the latest with its number. CURRENT is written first, under the
 * condition that it still holds the version this PUT read, so concurrent PUTs get distinct versions
 * (the loser reads again and takes the next number); only the winner then writes its `V#` item.
 * Without transactions (dynalite has none) a crash between the two writes loses that version's
 * history item, never the policy in force.
 */
export interface StoredPolicy {
  readonly version: number;
  readonly policy: Policy;
}

/** Concurrent PUTs on one app are rare; past this many lost races the caller is asked to retry. */
const MAX_ATTEMPTS = 8;

const StoredItem = v.object({ version: v.pipe(v.number(), v.integer(), v.minValue(1)), mode: v.unknown(), rules: v.unknown() });

/** The policy in force for the app, or undefined when it never set one (the built-in default applies). */
export async function currentPolicy(table: Table, appId: string): Promise<StoredPolicy | undefined> {
  const item = await getItem(table, keys.currentPolicy(appId));
  if (!item) return undefined;
  // Parsed, never cast: a stored policy that no longer parses fails the request (500), it is not skipped.
  const stored = v.parse(StoredItem, item);
  return { version: stored.version, policy: v.parse(PolicySchema, { mode: stored.mode, rules: stored.rules }) };
}

/** Stores `policy` as the app's next version and makes it the one in force. */
export async function putPolicy(table: Table, appId: string, policy: Policy, now: Date): Promise<{ version: number }> {
  const body = { mode: policy.mode, rules: policy.rules };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const seen = (await currentPolicy(table, appId))?.version ?? 0;
    const version = seen + 1;
    try {
      await table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.currentPolicy(appId),
          UpdateExpression: 'SET #version = :version, #mode = :mode, #rules = :rules, #updated_at = :at',
          ConditionExpression: seen === 0 ? 'attribute_not_exists(pk)' : '#version = :seen',
          ExpressionAttributeNames: { '#version': 'version', '#mode': 'mode', '#rules': 'rules', '#updated_at': 'updated_at' },
          ExpressionAttributeValues: {
            ':version': version,
            ':mode': body.mode,
            ':rules': body.rules,
            ':at': now.toISOString(),
            ...(seen === 0 ? {} : { ':seen': seen }),
          },
        }),
      );
    } catch (error) {
      if (isConditionalCheckFailed(error)) continue; // another PUT took this number: read again
      throw error;
    }
    await table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: { ...keys.policyVersion(appId, version), version, ...body, created_at: now.toISOString() },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return { version };
  }
  throw new ConflictError('POLICY_CONFLICT', 'The policy was changed concurrently too many times: retry', { retryAfterSeconds: 1 });
}
