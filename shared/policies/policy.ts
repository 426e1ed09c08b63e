import * as v from 'valibot';
import { checksumAddress } from 'viem';
import { CHAIN_CODES } from '../wallets/networks.ts';

/**
 * An application's signing policy (issue 22): the rules its users' wallets are held to, inside
 * the enclave. This module is the contract (types and the PUT body schema); evaluate.ts decides,
 * facts.ts says what a sign request does, default-policy.ts is the policy of an app without one.
 */
export const POLICY_OPERATIONS = ['sign_data', 'sign_message', 'sign_transaction', 'sign_authorization'] as const;
export type PolicyOperation = (typeof POLICY_OPERATIONS)[number];

/** Which service's door a signature came through: account (/wallet/sign, /withdraw, transfer steps), enclave (sign_*), express (/v2/wallet/sign/*). */
export const POLICY_CHANNELS = ['account', 'enclave', 'express'] as const;
export type PolicyChannel = (typeof POLICY_CHANNELS)[number];

export const POLICY_MODES = ['enforce', 'shadow'] as const;
export type PolicyMode = (typeof POLICY_MODES)[number];

export const MAX_POLICY_RULES = 100;
export const MAX_RULE_ADDRESSES = 1000;

export interface PolicyRule {
  /** 1-64 characters of letters, digits, ".", "_" or "-"; unique within the policy. */
  readonly id: string;
  readonly action: 'allow' | 'deny';
  /** Non-empty. */
  readonly operations: readonly PolicyOperation[];
  /** Absent: every channel. */
  readonly channels?: readonly PolicyChannel[];
  /**
   * Absent: any chain, and requests that name none (sign_data, sign_message). Given: the chain
   * codes of shared/wallets/networks.ts (ETH, ARB, POL, INK, SOL) or `eip155:<chain id>` for an
   * EVM chain the platform does not configure; a request naming no chain never matches.
   */
  readonly chains?: readonly string[];
  /** Recipient lists: EVM addresses (normalised to EIP-55) or base58 Solana addresses. */
  readonly to?: { readonly allow?: readonly string[]; readonly deny?: readonly string[] };
  /** Decimal USD string, at most 6 decimals ("10", "0.5"). */
  readonly max_usd_per_tx?: string;
  /**
   * Decimal USD string, at most 6 decimals: the most the user (op_jwt app + `sub`) may sign in the
   * rolling 24 h, this signature included (counted by shared/enclave/policy-usage.ts).
   */
  readonly max_usd_per_day?: string;
}

export interface Policy {
  readonly mode: PolicyMode;
  readonly rules: readonly PolicyRule[];
}

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const USD = /^(0|[1-9][0-9]{0,14})(\.[0-9]{1,6})?$/;
const CHAIN = new RegExp(`^(${CHAIN_CODES.join('|')}|eip155:[1-9][0-9]{0,15})$`);

/** A decimal USD string as micro-USD (6 decimals), exactly. */
export function usdToMicro(usd: string): bigint {
  const [whole = '0', fraction = ''] = usd.split('.');
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
}

/** Micro-USD as a decimal string without trailing zeros (for reasons). */
export function microToUsd(micro: bigint): string {
  const whole = micro / 1_000_000n;
  const fraction = (micro % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}

/**
 * An address in a `to` list: an EVM address as parseEvmAddress reads it (all lower or all upper
 * case is normalised, mixed case must be a right EIP-55 checksum) or a base58 Solana address.
 */
export function normalisePolicyAddress(raw: string): string | null {
  if (HEX_ADDRESS.test(raw)) {
    const hex = raw.slice(2);
    const address = checksumAddress(`0x${hex.toLowerCase()}`);
    const uncased = hex === hex.toLowerCase() || hex === hex.toUpperCase();
    return uncased || address === raw ? address : null;
  }
  return BASE58_ADDRESS.test(raw) ? raw : null;
}

const PolicyAddress = v.pipe(
  v.string('must be a string'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const address = normalisePolicyAddress(dataset.value);
    if (address !== null) return address;
    addIssue({
      message: 'must be an EVM address (0x and 40 hex digits; mixed case must be a right EIP-55 checksum) or a base58 Solana address',
    });
    return NEVER;
  }),
);

const AddressList = v.pipe(
  v.array(PolicyAddress, 'must be an array of addresses'),
  v.minLength(1, 'must list at least one address (leave it out instead)'),
  v.maxLength(MAX_RULE_ADDRESSES, `must list at most ${MAX_RULE_ADDRESSES} addresses`),
);

const unique = <T>(items: readonly T[]) => new Set(items).size === items.length;

const UsdAmount = v.pipe(v.string('must be a decimal string'), v.regex(USD, 'must be a decimal string of USD with at most 6 decimals ("10", "0.5")'));

const PolicyRuleSchema = v.strictObject({
  id: v.pipe(v.string('must be a string'), v.regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 characters of letters, digits, ".", "_" or "-"')),
  action: v.picklist(['allow', 'deny'], 'must be "allow" or "deny"'),
  operations: v.pipe(
    v.array(v.picklist(POLICY_OPERATIONS, `must be one of ${POLICY_OPERATIONS.join(', ')}`), 'must be an array of operations'),
    v.minLength(1, 'must list at least one operation'),
    v.check(unique, 'must not list an operation twice'),
  ),
  channels: v.optional(
    v.pipe(
      v.array(v.picklist(POLICY_CHANNELS, `must be one of ${POLICY_CHANNELS.join(', ')}`), 'must be an array of channels'),
      v.minLength(1, 'must list at least one channel (leave it out for every channel)'),
      v.check(unique, 'must not list a channel twice'),
    ),
  ),
  chains: v.optional(
    v.pipe(
      v.array(
        v.pipe(v.string('must be a string'), v.regex(CHAIN, `must be one of ${CHAIN_CODES.join(', ')} or eip155:<chain id>`)),
        'must be an array of chains',
      ),
      v.minLength(1, 'must list at least one chain (leave it out for any chain)'),
      v.check(unique, 'must not list a chain twice'),
    ),
  ),
  to: v.optional(
    v.pipe(
      v.strictObject({ allow: v.optional(AddressList), deny: v.optional(AddressList) }),
      v.check((to) => to.allow !== undefined || to.deny !== undefined, 'must have allow or deny (or be left out)'),
    ),
  ),
  max_usd_per_tx: v.optional(UsdAmount),
  max_usd_per_day: v.optional(UsdAmount),
});

/** The body of `PUT {tee_url}/v2/api/policies`; the output has every address normalised. */
export const PolicySchema = v.pipe(
  v.strictObject({
    mode: v.picklist(POLICY_MODES, 'must be "enforce" or "shadow"'),
    rules: v.pipe(
      v.array(PolicyRuleSchema, 'must be an array of rules'),
      v.maxLength(MAX_POLICY_RULES, `must hold at most ${MAX_POLICY_RULES} rules`),
      v.check((rules) => unique(rules.map((rule) => rule.id)), 'must not hold two rules with the same id'),
    ),
  }),
  // The output type is the contract's (readonly arrays).
  v.transform((policy): Policy => policy as Policy),
);
