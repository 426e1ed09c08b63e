import type { PolicyChannel, PolicyOperation } from './policy.ts';

/**
 * One signing-policy decision in the app's audit log (issue 22), `POLICYLOG#<app_id>` /
 * `<ISO time>#<random>`. Nothing secret: never the sign body, the op_jwt or the access key. `sub`
 * is the app's own user id (the op_jwt's subject), shown to the app only.
 */
export interface PolicyDecisionRecord {
  readonly at: string;
  readonly decision: 'allow' | 'deny' | 'shadow_deny';
  readonly rule_id: string | null;
  readonly reason: string;
  readonly operation: PolicyOperation;
  readonly channel: PolicyChannel;
  readonly chain: string | null;
  readonly recipients: readonly string[];
  /** The signature's USD value as a decimal string; null when unknown. */
  readonly usd: string | null;
  readonly sub: string | null;
}

/** A stored decision as GET /v2/api/policies/decisions lists it (and a policy.denied event carries it). */
export function toDecisionResource(item: Readonly<Record<string, unknown>>): PolicyDecisionRecord {
  return {
    at: item.at as string,
    decision: item.decision as PolicyDecisionRecord['decision'],
    rule_id: (item.rule_id as string | undefined) ?? null,
    reason: item.reason as string,
    operation: item.operation as PolicyOperation,
    channel: item.channel as PolicyChannel,
    chain: (item.chain as string | undefined) ?? null,
    recipients: (item.recipients as string[] | undefined) ?? [],
    usd: (item.usd as string | undefined) ?? null,
    sub: (item.sub as string | undefined) ?? null,
  };
}
