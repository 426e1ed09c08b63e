import { randomUUID } from 'node:crypto';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { TABLE_TTL_ATTRIBUTE } from '../db/table-definition.ts';
import { OUTBOX_ATTRIBUTE, outboxEntries } from '../events/outbox.ts';
import { type PolicyDecisionRecord, toDecisionResource } from '../policies/decision-record.ts';
import { microToUsd, type PolicyChannel, type PolicyOperation } from '../policies/policy.ts';

export type { PolicyDecisionRecord };

/** How long a decision stays listable: DynamoDB TTL removes it after (may lag by days). */
export const POLICY_LOG_TTL_DAYS = 90;

export interface DecisionInput {
  readonly decision: 'allow' | 'deny' | 'shadow_deny';
  readonly rule_id: string | null;
  readonly reason: string;
  readonly operation: PolicyOperation;
  readonly channel: PolicyChannel;
  readonly chain?: string;
  readonly recipients: readonly string[];
  readonly usd?: bigint;
  readonly sub?: string;
}

export async function recordPolicyDecision(table: Table, appId: string, input: DecisionInput, now: Date): Promise<PolicyDecisionRecord> {
  const record: PolicyDecisionRecord = {
    at: now.toISOString(),
    decision: input.decision,
    rule_id: input.rule_id,
    reason: input.reason,
    operation: input.operation,
    channel: input.channel,
    chain: input.chain ?? null,
    recipients: [...input.recipients],
    usd: input.usd === undefined ? null : microToUsd(input.usd),
    sub: input.sub ?? null,
  };
  const sk = `${record.at}#${randomUUID()}`;
  await table.doc.send(
    new PutCommand({
      TableName: table.name,
      Item: {
        ...keys.policyDecision(appId, sk),
        ...record,
        app_id: appId,
        [TABLE_TTL_ATTRIBUTE]: Math.floor(now.getTime() / 1000) + POLICY_LOG_TTL_DAYS * 86_400,
        // A denial is an event (issue 24: policy.denied), written with the decision it reports.
        ...(record.decision === 'deny' ? { [OUTBOX_ATTRIBUTE]: outboxEntries(['policy.denied'], record.at, sk) } : {}),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  return record;
}

/** The app's most recent decisions, newest first (`limit` 1-100). */
export async function listPolicyDecisions(table: Table, appId: string, limit: number): Promise<PolicyDecisionRecord[]> {
  const out = await table.doc.send(
    new QueryCommand({
      TableName: table.name,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.policyDecisionsOf(appId) },
      ScanIndexForward: false,
      Limit: limit,
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map(toDecisionResource);
}
