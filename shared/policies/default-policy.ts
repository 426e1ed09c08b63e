import { checksumAddress } from 'viem';
import type { Policy, PolicyRule } from './policy.ts';

/**
 * The policy of an application that has set none (issue 22 §2). The account and enclave channels
 * keep every behaviour of the spec: all four operations allowed (the enclave's own checks still
 * apply, such as its EIP-7702 delegate allow-list). The express channel, whose API key may ship in
 * a front end, may sign messages and transactions but not raw hashes (sign_data: an authorisation
 * digest or a permit hides behind one), and EIP-7702 authorisations only to the platform's
 * delegates (ALLOWED_7702_DELEGATES, read by shared/enclave/deps.ts allowedDelegatesFromEnv).
 */
export function defaultPolicy(allowedDelegates: Iterable<string>): Policy {
  const delegates = [...new Set([...allowedDelegates].map((address) => checksumAddress(`0x${address.slice(2).toLowerCase()}`)))];
  const rules: PolicyRule[] = [
    {
      id: 'default.account-enclave',
      action: 'allow',
      operations: ['sign_data', 'sign_message', 'sign_transaction', 'sign_authorization'],
      channels: ['account', 'enclave'],
    },
    { id: 'default.express-sign', action: 'allow', operations: ['sign_message', 'sign_transaction'], channels: ['express'] },
    { id: 'default.express-no-raw-hash', action: 'deny', operations: ['sign_data'], channels: ['express'] },
  ];
  // With no delegate configured the enclave authorises none, and no rule is needed to say so.
  if (delegates.length) {
    rules.push({ id: 'default.express-delegates', action: 'allow', operations: ['sign_authorization'], channels: ['express'], to: { allow: delegates } });
  }
  return { mode: 'enforce', rules };
}

/**
 * The default policy where no delegate is configured (express sign_authorization then has no
 * allowing rule). The enclave should use `defaultPolicy(allowedDelegatesFromEnv())`, which
 * also allows express authorisations to the configured delegates.
 */
export const DEFAULT_POLICY: Policy = defaultPolicy([]);
