import type { DecodedFacts, PolicyChains } from './decoded-facts.ts';
import { authorizationFacts, evmTransactionFacts } from './evm-facts.ts';
import type { PolicyChannel, PolicyOperation } from './policy.ts';
import { solanaTransactionFacts } from './solana-facts.ts';

export type { DecodedFacts, PolicyChains } from './decoded-facts.ts';

/**
 * What a sign request does, as far as the enclave can tell from its body: the facts a policy is
 * evaluated on. Decoding never throws: what it cannot read is `opaque` (and a `to.allow` rule can
 * then never allow it), so a malformed body is refused by the signing code, not let through here.
 */
export interface SignFacts extends DecodedFacts {
  readonly operation: PolicyOperation;
  readonly channel: PolicyChannel;
  /**
   * Micro-USD the user (op_jwt app + `sub`) signed in the rolling 24 h before this request, as
   * counted by shared/enclave/policy-usage.ts. Absent: unknown, so `max_usd_per_day` cannot hold.
   */
  readonly usdToday?: bigint;
}

/** The parts of the sign body facts are read from (the enclave has validated the rest). */
type SignBody = { readonly transaction?: unknown; readonly chain_id?: unknown; readonly contract_address?: unknown };

export interface SignFactsInput {
  readonly operation: PolicyOperation;
  readonly channel: PolicyChannel;
  /** The parsed sign body the enclave validated (sign_data, sign_message, sign_transaction or sign_authorization fields). */
  readonly body: unknown;
  /** The chains configuration (CHAINS_CONFIG): maps chain ids to codes and knows the USDC contracts. Without it chains are `eip155:<id>` and no USD value is known. */
  readonly chains?: PolicyChains;
}

export function signFacts(input: SignFactsInput): SignFacts {
  const { operation, channel, chains } = input;
  const body = (typeof input.body === 'object' && input.body !== null ? input.body : {}) as SignBody;
  switch (operation) {
    case 'sign_data':
      // A raw 32-byte hash: anything (a transaction, a permit, an EIP-7702 authorisation digest) may hide behind it.
      return { operation, channel, recipients: [], opaque: true };
    case 'sign_message':
      // An EIP-191 personal message (or raw Solana bytes): moves nothing itself.
      return { operation, channel, recipients: [], opaque: false, usd: { value: 0n } };
    case 'sign_authorization':
      return { operation, channel, ...authorizationFacts(body.chain_id, body.contract_address, chains) };
    case 'sign_transaction':
      if (typeof body.transaction === 'string') return { operation, channel, ...solanaTransactionFacts(body.transaction, chains) };
      if (typeof body.transaction === 'object' && body.transaction !== null) {
        return { operation, channel, ...evmTransactionFacts(body.transaction, chains) };
      }
      return { operation, channel, recipients: [], opaque: true };
  }
}
