import type { Table } from '../db/client.ts';
import { PolicyDeniedError } from '../errors.ts';
import { logger } from '../logger.ts';
import { defaultPolicy } from '../policies/default-policy.ts';
import { evaluatePolicy, hasDailyLimit, type PolicyDecision } from '../policies/evaluate.ts';
import { type PolicyChains, signFacts } from '../policies/facts.ts';
import type { NativePrices } from '../policies/native-usd.ts';
import type { PolicyChannel, PolicyOperation } from '../policies/policy.ts';
import { completeFacts } from '../policies/token-owners.ts';
import { recordPolicyDecision } from './policy-log.ts';
import { currentPolicy, type StoredPolicy } from './policy-store.ts';
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
  /** Native coin prices (need `prices`), read only when the policy has a USD limit and the request moves a native coin. Without it native value is unpriced. */
  readonly prices?: NativePrices;
}

/** Who signs: the verified op_jwt's subject and `jti` (the signing record), for max_usd_per_day and the audit log. */
export interface Signer {
  readonly sub: string;
  readonly jti: string;
  readonly now: () => Date;
}

/** A policy decision taken, and its audit-log write, still in flight. */
export interface PolicyCheck {
  readonly decision: PolicyDecision;
  /**
   * The decision's audit-log put. The caller awaits it before it returns a signature (no signature
   * leaves without its log entry) and may overlap it with unwrapping the key. A denial awaits it
   * inside checkSigningPolicy, before 403 POLICY_DENIED.
   */
  readonly logged: Promise<unknown>;
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
 *
 * `stored` is the app's policy as read by the caller (currentPolicy), so the read can overlap the
 * caller's other reads: withWalletKey reads it alongside the op_jwt's single-use put and the wallet.
 */
export async function checkSigningPolicy(
  table: Table,
  appId: string,
  channel: PolicyChannel,
  request: SigningRequest,
  stored: StoredPolicy | undefined,
  signer?: Signer,
): Promise<PolicyCheck> {
  const policy = stored?.policy ?? defaultPolicy(request.allowedDelegates ?? []);
  const decoded = signFacts({ operation: request.operation, channel, body: request.body, chains: request.chains });
  const facts = await completeFacts(decoded, policy, request.prices);
  const usd = facts.usd?.value;
  const decision =
    signer && usd !== undefined && hasDailyLimit(policy)
      ? await decideWithUsage(table, { appId, sub: signer.sub, jti: signer.jti }, signer.now, (spent) => {
          const decided = evaluatePolicy(policy, { ...facts, usdToday: spent });
          // Only a real allow of a value above zero is counted.
          return { count: decided.decision === 'allow' && !decided.shadow && usd > 0n ? usd : null, result: decided };
        })
      : evaluatePolicy(policy, facts);
  const logged = recordPolicyDecision(
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
  if (decision.decision === 'deny') {
    await logged;
    throw new PolicyDeniedError(decision.rule_id, decision.reason);
  }
  // Awaited by the caller; until then a failed put must not surface as an unhandled rejection.
  logged.catch(() => undefined);
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
  return { decision, logged };
}

/** checkSigningPolicy with the app's policy read first and the audit-log write awaited. */
export async function enforceSigningPolicy(
  table: Table,
  appId: string,
  channel: PolicyChannel,
  request: SigningRequest,
  signer?: Signer,
): Promise<PolicyDecision> {
  const { decision, logged } = await checkSigningPolicy(table, appId, channel, request, await currentPolicy(table, appId), signer);
  await logged;
  return decision;
}
