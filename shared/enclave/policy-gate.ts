import type { Table } from '../db/client.ts';
import { PolicyDeniedError } from '../errors.ts';
import { logger } from '../logger.ts';
import { defaultPolicy } from '../policies/default-policy.ts';
import { evaluatePolicy, type PolicyDecision } from '../policies/evaluate.ts';
import { type PolicyChains, signFacts } from '../policies/facts.ts';
import type { PolicyChannel, PolicyOperation } from '../policies/policy.ts';
import { currentPolicy } from './policy-store.ts';

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

/**
 * Holds one signature to the app's policy (issue 22), or the built-in default when the app has
 * none. Runs inside the enclave after the op_jwt and access-key checks and before the key is
 * unwrapped: a denial is 403 POLICY_DENIED and nothing is opened or signed. In shadow mode a
 * would-be denial is let through and logged (rule id, operation, channel; never the body).
 */
export async function enforceSigningPolicy(table: Table, appId: string, channel: PolicyChannel, request: SigningRequest): Promise<PolicyDecision> {
  const policy = (await currentPolicy(table, appId))?.policy ?? defaultPolicy(request.allowedDelegates ?? []);
  const decision = evaluatePolicy(policy, signFacts({ operation: request.operation, channel, body: request.body, chains: request.chains }));
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
