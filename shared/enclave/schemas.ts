import * as v from 'valibot';
import { LimitQuery, NonEmptyString } from '../http/schemas.ts';
import { POLICY_CHANNELS, POLICY_OPERATIONS } from '../policies/policy.ts';
import { NetworkSchema } from '../wallets/networks.ts';
import { Address, ChainId, Nonce, SignDataFields, SignMessageFields, SignTransactionFields } from '../wallets/schemas.ts';
import { WithdrawRequest } from '../withdrawals/withdraw-rules.ts';

/** Request and response schemas of the wallet enclave service (v2). */
export const WalletGroupId = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 characters of letters, digits, ".", "_", ":" or "-"'),
);

export const CreateWalletRequest = v.object({
  auth_jwt: NonEmptyString(8192),
  network: NetworkSchema,
  wallet_group_id: WalletGroupId,
});

export const CreateWalletResponse = v.object({
  success: v.literal(true),
  wallet_id: v.string(),
  access_key: v.pipe(v.string(), v.description('Keep it: it is required, with an op_jwt, for every signing call.')),
  public_address: v.pipe(v.string(), v.description('EIP-55 address (EVM networks) or base58 public key (SOL).')),
  network: v.string(),
  wallet_group_id: v.string(),
});

const SignAuthFields = {
  op_jwt: NonEmptyString(8192),
  access_key: NonEmptyString(256),
  wallet_id: NonEmptyString(64),
  encryption_context: v.optional(v.pipe(NonEmptyString(4096), v.description('Only on the first v2 call for a v1 wallet (migration).'))),
};

/** v1 authorisation: the user secret in place of op_jwt (spec, Versioning). Retired. */
const V1AuthFields = {
  encryption_context: NonEmptyString(4096),
  access_key: NonEmptyString(256),
  wallet_id: NonEmptyString(64),
};

export const SignDataRequest = v.object({ ...SignAuthFields, ...SignDataFields });
export const SignMessageRequest = v.object({ ...SignAuthFields, ...SignMessageFields });
export const SignTransactionRequest = v.object({ ...SignAuthFields, ...SignTransactionFields });

export const V1CreateWalletRequest = v.object({
  encryption_context: NonEmptyString(4096),
  auth_jwt: v.optional(
    v.pipe(
      NonEmptyString(8192),
      v.description(
        "The user's JWT, as in v2 creation: the wallet is created for its iss and sub, the only identity it may later migrate to. Without it the wallet names no user and cannot be migrated to v2.",
      ),
    ),
  ),
  network: NetworkSchema,
  wallet_group_id: WalletGroupId,
});

export const V1CreateWalletResponse = v.object({
  ...CreateWalletResponse.entries,
  recovery_key: v.pipe(v.string(), v.description('v1 only: keep it until the wallet is migrated to v2.')),
});

export const V1SignDataRequest = v.object({ ...V1AuthFields, ...SignDataFields });
export const V1SignMessageRequest = v.object({ ...V1AuthFields, ...SignMessageFields });
export const V1SignTransactionRequest = v.object({ ...V1AuthFields, ...SignTransactionFields });

export const SignatureResponse = v.object({
  success: v.literal(true),
  wallet_id: v.string(),
  public_address: v.string(),
  signature: v.pipe(v.string(), v.description('0x-hex. EVM: 65 bytes r‖s‖v with v = 27 or 28. SOL: 64-byte ed25519 signature.')),
});

export const SignTransactionResponse = v.object({
  success: v.literal(true),
  wallet_id: v.string(),
  public_address: v.string(),
  signed_transaction: v.optional(v.pipe(v.string(), v.description('EVM: the signed serialised transaction, 0x-hex.'))),
  tx_hash: v.optional(v.pipe(v.string(), v.description('EVM: keccak256 of the signed transaction.'))),
  signature: v.optional(v.pipe(v.string(), v.description('SOL: base58 ed25519 signature of the message.'))),
});

export const SignAuthorizationFields = {
  chain_id: ChainId,
  contract_address: v.pipe(Address, v.description('The delegate contract; must be one the enclave is configured to allow.')),
  nonce: v.pipe(Nonce, v.description("The account's transaction nonce the authorisation is valid at.")),
};

export const SignAuthorizationRequest = v.object({ ...SignAuthFields, ...SignAuthorizationFields });

export const SignAuthorizationResponse = v.object({
  success: v.literal(true),
  wallet_id: v.string(),
  public_address: v.string(),
  authorization: v.object({ address: v.string(), chainId: v.number(), nonce: v.number(), r: v.string(), s: v.string(), yParity: v.number() }),
});

/**
 * `POST {tee_url}/v2/api/policies/evaluate` (issue 22): what the app's policy would decide for one
 * request, signing nothing and counting nothing. The body is a v2 sign body without its
 * authorisation (op_jwt, access_key, wallet_id), or a withdrawal (`chain`, `token`, `to_address`,
 * `amount`) read as the transaction /withdraw would have signed.
 */
const Common = {
  sub: v.pipe(
    NonEmptyString(256),
    v.description("The user (the op_jwt's sub a signature would carry): max_usd_per_day is decided on their rolling-24 h total, read and never added to."),
  ),
  channel: v.optional(
    v.pipe(
      v.picklist(POLICY_CHANNELS, `must be one of ${POLICY_CHANNELS.join(', ')}`),
      v.description(
        'The channel the signature would come through. Default: enclave for the sign_* operations, account for withdraw (the only channel /withdraw signs on).',
      ),
    ),
  ),
};
const { chain, token, to_address, amount } = WithdrawRequest.entries;

export const EvaluatePolicyRequest = v.variant(
  'operation',
  [
    v.object({ operation: v.literal('sign_data'), ...Common, ...SignDataFields }),
    v.object({ operation: v.literal('sign_message'), ...Common, ...SignMessageFields }),
    v.object({ operation: v.literal('sign_transaction'), ...Common, ...SignTransactionFields }),
    v.object({ operation: v.literal('sign_authorization'), ...Common, ...SignAuthorizationFields }),
    v.object({ operation: v.literal('withdraw'), ...Common, chain, token, to_address, amount }),
  ],
  'must be one of sign_data, sign_message, sign_transaction, sign_authorization, withdraw',
);
export type EvaluatePolicyInput = v.InferOutput<typeof EvaluatePolicyRequest>;

export const EvaluatePolicyResponse = v.object({
  success: v.literal(true),
  decision: v.picklist(['allow', 'deny']),
  rule_id: v.pipe(v.nullable(v.string()), v.description('The rule that decided; null when no rule allows the request.')),
  reason: v.pipe(v.string(), v.description('Names the rule and the condition, never the body.')),
  shadow: v.optional(
    v.pipe(v.literal(true), v.description('Present when the policy is in shadow mode and would deny: the signature would go through, logged.')),
  ),
  remaining_usd_today: v.pipe(
    v.nullable(v.string()),
    v.description(
      'Decimal USD the user (sub) may still sign in the rolling 24 h under the tightest max_usd_per_day of the rules in scope of the request (operation, channel, chain), after what was counted; null when no such rule is in scope.',
    ),
  ),
});

export const DECISIONS_DEFAULT_LIMIT = 20;
export const DECISIONS_MAX_LIMIT = 100;
/** The query of `GET {tee_url}/v2/api/policies/decisions`. */
export const DecisionsQuery = LimitQuery(DECISIONS_DEFAULT_LIMIT, DECISIONS_MAX_LIMIT);

/** One entry of `GET {tee_url}/v2/api/policies/decisions` (OpenAPI). */
export const PolicyDecisionEntry = v.object({
  at: v.pipe(v.string(), v.description('ISO 8601 time of the decision')),
  decision: v.pipe(v.picklist(['allow', 'deny', 'shadow_deny']), v.description('shadow_deny: a shadow-mode would-be denial, signed')),
  rule_id: v.nullable(v.string()),
  reason: v.string(),
  operation: v.picklist(POLICY_OPERATIONS),
  channel: v.picklist(POLICY_CHANNELS),
  chain: v.nullable(v.string()),
  recipients: v.array(v.string()),
  usd: v.pipe(v.nullable(v.string()), v.description('USD value as a decimal string; null when unknown')),
  sub: v.pipe(v.nullable(v.string()), v.description("the op_jwt's subject: the app's own user id")),
});
export const PolicyDecisionsResponse = v.object({ success: v.literal(true), decisions: v.array(PolicyDecisionEntry) });
