import type { SignFacts } from './facts.ts';
import { microToUsd, type Policy, type PolicyRule, usdToMicro } from './policy.ts';

/**
 * Policy evaluation (issue 22 §2), pure and synchronous.
 *
 * A rule is in scope when the operation is listed, and its `channels` and `chains` (when given)
 * name the request's; a request naming no chain (sign_data, sign_message) is in scope only of
 * rules without `chains`. A rule's conditions:
 * - `to.allow`: satisfied when the request is decodable (not opaque) and every recipient is listed
 *   (an SPL token account also through its listed owner: token-owners.ts);
 * - `to.deny`: satisfied when the request is decodable and no recipient is listed;
 * - `max_usd_per_tx`: satisfied when the USD value is known and at most the limit;
 * - `max_usd_per_day`: satisfied when the USD value and the user's rolling-24 h total
 *   (`usdToday`) are known and their sum is at most the limit.
 * An `allow` rule matches when in scope and every condition it has is satisfied; a `deny` rule
 * matches when in scope and every condition it has is violated (none: always). So what cannot be
 * decoded or priced is never allowed by a condition and is caught by a deny rule's condition.
 *
 * Decision: any matching deny wins (the first in rule order names it); otherwise the first
 * matching allow; otherwise deny with rule_id null. In shadow mode a denial is returned as
 * `allow` with `shadow: true` and the rule that would have denied. Reasons name the rule and the
 * condition, never the body.
 */
export interface PolicyDecision {
  readonly decision: 'allow' | 'deny';
  readonly rule_id: string | null;
  readonly reason: string;
  /** True when the policy would deny but is in shadow mode, so the request is allowed. */
  readonly shadow?: boolean;
}

type Check = { readonly satisfied: boolean; readonly says: string };

export function inScope(rule: PolicyRule, facts: Pick<SignFacts, 'operation' | 'channel' | 'chain'>): boolean {
  if (!rule.operations.includes(facts.operation)) return false;
  if (rule.channels && !rule.channels.includes(facts.channel)) return false;
  if (rule.chains && (facts.chain === undefined || !rule.chains.includes(facts.chain))) return false;
  return true;
}

/** EVM addresses compare without case (EIP-55 is only a checksum); base58 Solana addresses are case-sensitive. */
const sameAddress = (a: string, b: string) => (a.startsWith('0x') && b.startsWith('0x') ? a.toLowerCase() === b.toLowerCase() : a === b);
const listed = (list: readonly string[], address: string) => list.some((entry) => sameAddress(entry, address));
/** A recipient is listed itself or, for an SPL token account, through the listed owner whose associated token account it is. */
const listedRecipient = (list: readonly string[], recipient: string, facts: SignFacts) => {
  const owner = facts.owners?.get(recipient);
  return listed(list, recipient) || (owner !== undefined && listed(list, owner));
};

function conditions(rule: PolicyRule, facts: SignFacts): Check[] {
  const checks: Check[] = [];
  const allowList = rule.to?.allow;
  if (allowList) {
    const unlisted = facts.recipients.some((recipient) => !listedRecipient(allowList, recipient, facts));
    checks.push(
      facts.opaque
        ? { satisfied: false, says: 'its recipients cannot be decoded, so to.allow cannot hold' }
        : { satisfied: !unlisted, says: unlisted ? 'a recipient is not in to.allow' : 'every recipient is in to.allow' },
    );
  }
  const denyList = rule.to?.deny;
  if (denyList) {
    const hit = facts.recipients.some((recipient) => listedRecipient(denyList, recipient, facts));
    checks.push(
      facts.opaque
        ? { satisfied: false, says: 'its recipients cannot be decoded, so to.deny cannot be ruled out' }
        : { satisfied: !hit, says: hit ? 'a recipient is in to.deny' : 'no recipient is in to.deny' },
    );
  }
  if (rule.max_usd_per_tx !== undefined) {
    const limit = usdToMicro(rule.max_usd_per_tx);
    const usd = facts.usd?.value;
    checks.push(
      usd === undefined
        ? { satisfied: false, says: `its USD value is unknown, so max_usd_per_tx ${rule.max_usd_per_tx} cannot hold` }
        : usd <= limit
          ? { satisfied: true, says: `${microToUsd(usd)} USD is within max_usd_per_tx ${rule.max_usd_per_tx}` }
          : { satisfied: false, says: `${microToUsd(usd)} USD is over max_usd_per_tx ${rule.max_usd_per_tx}` },
    );
  }
  if (rule.max_usd_per_day !== undefined) {
    const limit = usdToMicro(rule.max_usd_per_day);
    const usd = facts.usd?.value;
    const today = facts.usdToday;
    checks.push(
      usd === undefined
        ? { satisfied: false, says: `its USD value is unknown, so max_usd_per_day ${rule.max_usd_per_day} cannot hold` }
        : today === undefined
          ? { satisfied: false, says: `the user's spend of the last 24 h is unknown, so max_usd_per_day ${rule.max_usd_per_day} cannot hold` }
          : today + usd <= limit
            ? {
                satisfied: true,
                says: `${microToUsd(today)} USD in the last 24 h plus ${microToUsd(usd)} USD is within max_usd_per_day ${rule.max_usd_per_day}`,
              }
            : {
                satisfied: false,
                says: `${microToUsd(today)} USD in the last 24 h plus ${microToUsd(usd)} USD is over max_usd_per_day ${rule.max_usd_per_day}`,
              },
    );
  }
  return checks;
}

/** True when a rule of `policy` has a daily limit, so signatures must be counted (shared/enclave/policy-usage.ts). */
export function hasDailyLimit(policy: Policy): boolean {
  return policy.rules.some((rule) => rule.max_usd_per_day !== undefined);
}

/** Why the rule matched, or null when it does not. */
function match(rule: PolicyRule, facts: SignFacts): string | null {
  if (!inScope(rule, facts)) return null;
  const checks = conditions(rule, facts);
  const wanted = rule.action === 'allow';
  if (!checks.every((check) => check.satisfied === wanted)) return null;
  return checks.length ? checks.map((check) => check.says).join('; ') : `it covers ${facts.operation}`;
}

export function evaluatePolicy(policy: Policy, facts: SignFacts): PolicyDecision {
  const what = `${facts.operation} on the ${facts.channel} channel${facts.chain ? ` (${facts.chain})` : ''}`;
  let allowed: PolicyDecision | null = null;
  for (const rule of policy.rules) {
    const why = match(rule, facts);
    if (why === null) continue;
    if (rule.action === 'deny') return denied(policy, facts, { rule_id: rule.id, reason: `rule ${rule.id} denies ${what}: ${why}` });
    allowed ??= { decision: 'allow', rule_id: rule.id, reason: `rule ${rule.id} allows ${what}: ${why}` };
  }
  return allowed ?? denied(policy, facts, { rule_id: null, reason: `no rule allows ${what}` });
}

function denied(policy: Policy, facts: SignFacts, denial: { rule_id: string | null; reason: string }): PolicyDecision {
  // A native coin without a price cannot satisfy a USD limit: the denial says so.
  const reason = facts.priceError ? `${denial.reason} (${facts.priceError})` : denial.reason;
  if (policy.mode === 'shadow') return { decision: 'allow', rule_id: denial.rule_id, reason: `shadow mode: ${reason}`, shadow: true };
  return { decision: 'deny', rule_id: denial.rule_id, reason };
}
