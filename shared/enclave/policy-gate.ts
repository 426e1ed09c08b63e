import type { Table } from '../db/client.ts';
import { PolicyDeniedError } from '../errors.ts';
import { logger } from '../logger.ts';
import { defaultPolicy } from '../policies/default-policy.ts';
import { evaluatePolicy, hasDailyLimit, type PolicyDecision } from '../policies/evaluate.ts';
import { type PolicyChains, signFacts } from '../policies/facts.ts';
import type { PolicyChannel, PolicyOperation } from '../policies/policy.ts';
import { recordPolicyDecision } from './policy-log.ts';
import { currentPolicy } from './policy-store.ts';
import { decideWithUsage } from './policy-usage.ts';

/** One v2 signing request as the policy sees it: which operation, and the validated body it signs. */
export interface SigningRequest {
  readonly operation: PolicyOperation;
  readonly body: unknown;
  /**
   * The platform's EIP-7702 delegates (ALLOWED_7702_DELEGATES) for the built-in default's express
   * authorisation rule; only sign_authorization needs them (other operations are not in its scope).
   */
  readonly allowedDelegates?: ReadonlySet<string>;
  /** The public chains config (need `chainData`): chain codes and USDC contracts. Without it chains read `eip155:<id>` and USDC is unpriced. */
  readonly chains?: PolicyChains;
}

/** Who signs: the verified op_jwt's subject and `jti` (the signing record), for max_usd_per_day and the audit log. */
export interface Signer {
  readonly sub: string;
  readonly jti: string;
  readonly now: () => Date;
}

/**
 * Holds one signature to the app's policy (issue 22), or the built-in default when the app has
 * none. Runs inside the enclave after the op_jwt and access-key checks and before the key is
 * unwrapped: a denial is 403 POLICY_DENIED and nothing is opened or signed. In shadow mode a
 * would-be denial is let through and logged (rule id, operation, channel; never the body).
 *
 * When a rule has `max_usd_per_day` and the value is known, the decision is taken on the user's
 * rolling-24 h total and an allowed signature is counted in the same conditional write that
 * records its `jti` (shared/enclave/policy-usage.ts); a denial or a shadow would-be denial counts
 * nothing. Without `signer` the day's total is unknown, so no daily limit can allow. Every
 * decision (allow, deny, shadow deny) is stored in the app's audit log (shared/enclave/policy-log.ts).
 */
export async function enforceSigningPolicy(
  table: Table,
  appId: string,
  channel: PolicyChannel,
  request: SigningRequest,
  signer?: Signer,
): Promise<PolicyDecision> {
  const policy = (await currentPolicy(table, appId))?.policy ?? defaultPolicy(request.allowedDelegates ?? []);
  const facts = signFacts({ operation: request.operation, channel, body: request.body, chains: request.chains });
  const usd = facts.usd?.value;
  const decision =
    signer && usd !== undefined && hasDailyLimit(policy)
      ? await decideWithUsage(table, { appId, sub: signer.sub, jti: signer.jti }, signer.now, (spent) => {
          const decided = evaluatePolicy(policy, { ...facts, usdToday: spent });
          // Only a real allow of a value above zero is counted.
          return { count: decided.decision === 'allow' && !decided.shadow && usd > 0n ? usd : null, result: decided };
        })
      : evaluatePolicy(policy, facts);
  await recordPolicyDecision(
    table,
    appId,
    {
      decision: decision.decision === 'deny' ? 'deny' : decision.shadow ? 'shadow_deny' : 'allow',
      rule_id: decision.rule_id,
      reason: decision.reason,
      operation: request.operation,
      channel,
      chain: facts.chain,
      recipients: facts.recipients,
      usd,
      sub: signer?.sub,
    },
    signer?.now() ?? new Date(),
  );
  if (decision.decision === 'deny') throw new PolicyDeniedError(decision.rule_id, decision.reason);
  if (decision.shadow) {
    // A would-be denial in shadow mode (evaluatePolicy returns it as allow): signed, and said so.
    logger.warn('policy shadow denial: signed anyway', {
      app_id: appId,
      rule_id: decision.rule_id,
      operation: request.operation,
      channel,
      reason: decision.reason,
    });
  }
  return decision;
}
