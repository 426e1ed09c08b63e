import * as v from 'valibot';
import { DemoBalanceQuery } from '../../shared/accounts/demo-balance.ts';
import { Account, CreateAccountResponse, SignRequest, SignResponse } from '../../shared/accounts/schemas.ts';
import {
  CreateWalletRequest,
  CreateWalletResponse,
  DecisionsQuery,
  EvaluatePolicyRequest,
  EvaluatePolicyResponse,
  PolicyDecisionsResponse,
  SignAuthorizationRequest,
  SignAuthorizationResponse,
  SignatureResponse,
  SignDataRequest,
  SignMessageRequest,
  SignTransactionRequest,
  SignTransactionResponse,
  V1CreateWalletRequest,
  V1CreateWalletResponse,
  V1SignDataRequest,
  V1SignMessageRequest,
  V1SignTransactionRequest,
} from '../../shared/enclave/schemas.ts';
import {
  CreateEndpointRequest,
  CreateEndpointResponse,
  DeleteEndpointResponse,
  ListEndpointsResponse,
  RotateSecretResponse,
} from '../../shared/events/endpoint-schemas.ts';
import { EventsPage, EventsQuery, ReplayRequest, ReplayResponse } from '../../shared/events/schemas.ts';
import { MAX_ENDPOINTS_PER_APP } from '../../shared/events/types.ts';
import {
  ExpressSignDataRequest,
  ExpressSignMessageRequest,
  ExpressSignResponse,
  ExpressSignTransactionRequest,
  ExpressWalletResponse,
} from '../../shared/express/schemas.ts';
import { PolicySchema } from '../../shared/policies/policy.ts';
import { TransferCostEstimateResponse, TransferRequest } from '../../shared/transfers/schemas.ts';
import { TaskAccepted, TaskResource, TasksQuery, TasksResponse } from '../../shared/transfers/task-schemas.ts';
import {
  DexQuery,
  DexRequest,
  InitPerpDexRequest,
  InitPerpDexResponse,
  InitPerpDexTradingRequest,
  InitPerpDexTradingResponse,
  RequirementsResponse,
  VenueAssetsResponse,
  VenueCredentialsResponse,
} from '../../shared/venues/schemas.ts';
import { WithdrawRequest } from '../../shared/withdrawals/withdraw-rules.ts';

/**
 * What the OpenAPI document says of each route id in functions/routes.ts. The request schemas
 * are the very valibot schemas the handlers validate with, so the document cannot drift from
 * what is enforced.
 */
export type Security = 'userJwt' | 'secretKey' | 'apiKey' | 'providerId' | 'chain';

export interface OperationDoc {
  readonly summary: string;
  readonly description?: string;
  readonly security: readonly Security[];
  readonly body?: v.GenericSchema;
  /** Query parameters: an object schema whose entries are the parameters. */
  readonly query?: v.ObjectSchema<v.ObjectEntries, undefined>;
  readonly response: v.GenericSchema;
  /** Error statuses this operation can answer with (besides 500). */
  readonly errors: readonly number[];
  readonly deprecated?: boolean;
  /** Documented non-200 success (the express v1 redirect). */
  readonly redirect?: boolean;
  /** Success status other than 200 (202 for the asynchronous transfer routes). */
  readonly status?: 202;
  /** Honours the `Idempotency-Key` request header. */
  readonly idempotencyKey?: true;
}

const V1_NOTE = 'Retired: answers 410 V1_RETIRED after the retirement instant (default end of 2026-07-31 UTC, V1_RETIREMENT_AT).';
const expressAuth: readonly Security[] = ['userJwt', 'apiKey', 'providerId', 'chain'];
const EXPRESS_NOTE =
  'Authenticated by the Bearer JWT (from the provider named by X-OIDC-Provider-ID), X-SERVICE-API-KEY and X-SERVICE-CHAIN. A legacy provider id is accepted and answered with a Deprecation header.';

const Health = v.object({ status: v.literal('ok') });

const PolicyBody = PolicySchema.pipe[0];
const PolicyResponse = v.object({
  success: v.literal(true),
  version: v.pipe(v.number(), v.integer(), v.description('Each PUT is a new version (1, 2, ...), kept; 0 is the built-in default.')),
  ...PolicyBody.entries,
});
const POLICY_NOTE =
  'Policies are evaluated inside the enclave on every v2 signature (account /wallet/sign, /withdraw, transfer steps; enclave sign_*; express /v2/wallet/sign/*), after the op_jwt and access-key checks and before the key is opened: any matching deny wins, else a matching allow is needed, else deny (403 POLICY_DENIED with rule_id). In shadow mode a would-be denial is signed and logged. Guide: docs/guide/policies.md.';
const WEBHOOK_NOTE =
  'Webhook endpoints (issue 24) belong to the application: X-SERVICE-SECRET-KEY alone, no user JWT. Deliveries follow Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature). Guide: docs/guide/webhooks.md.';
const SIGN_POLICY_NOTE = "403 POLICY_DENIED (with rule_id) when the application's signing policy refuses it; nothing is signed.";

const WithdrawResponse = v.object({
  success: v.literal(true),
  tx_hash: v.pipe(v.string(), v.description('EVM: 0x transaction hash. SOL: base58 signature.')),
  from_address: v.string(),
  to_address: v.pipe(v.string(), v.description('After normalisation (EIP-55 for EVM).')),
  amount: v.string(),
  token: v.string(),
  chain: v.string(),
  message: v.string(),
});

const DemoBalanceResponse = v.object({
  chain: v.string(),
  address: v.nullable(v.string()),
  assets: v.pipe(v.record(v.string(), v.string()), v.description('Token code to decimal string, read from the chain.')),
  public_address: v.object({ ETH: v.string(), SOL: v.string() }),
});

export const IdentityProviderResponse = v.object({
  success: v.literal(true),
  provider_id: v.string(),
  issuer: v.string(),
  audience: v.nullable(v.string()),
});

const VENUE_NOTE =
  '`dex` is venue_a … venue_e (400 INVALID_REQUEST naming the field when missing or unknown). 503 VENUE_NOT_CONFIGURED when this deployment has no base URL for the venue (VENUE_URLS).';

const health: OperationDoc = { summary: 'Liveness: 200 once the service can serve', security: [], response: Health, errors: [] };

export const OPERATIONS: Record<string, OperationDoc> = {
  AccountHealth: health,
  EnclaveHealth: health,
  ExpressHealth: health,
  CreateAccount: {
    summary: "Create the caller's account if missing, otherwise return it",
    description:
      "Provisions an EVM and a Solana wallet in the wallet enclave (the app's default wallet group). Safe to retry and to call concurrently: one account per user.",
    security: ['userJwt', 'secretKey'],
    response: CreateAccountResponse,
    errors: [401, 502],
  },
  GetAccount: {
    summary: "The caller's account",
    security: ['userJwt', 'secretKey'],
    response: Account,
    errors: [401, 404],
  },
  SignWithWallet: {
    summary: 'Sign a 32-byte hash, or keccak256 of a message, with the EVM wallet',
    description: `raw_data_hash is signed when given (it wins over message); otherwise keccak256(message) with no EIP-191 prefix. ${SIGN_POLICY_NOTE}`,
    security: ['userJwt', 'secretKey'],
    body: SignRequest,
    response: SignResponse,
    errors: [400, 401, 403, 404, 415, 502],
  },
  GetDemoBalance: {
    summary: "Demo only: the wallet's balances on one chain, read from the chain",
    description: 'Query `chain` (ETH, ARB, POL, INK or SOL). Not for production use.',
    security: ['userJwt', 'secretKey'],
    query: DemoBalanceQuery,
    response: DemoBalanceResponse,
    errors: [400, 401, 404, 502],
  },
  Withdraw: {
    summary: "Send from the user's wallet to an external address",
    description:
      'Token/chain pairs: ETH {ETH, USDC}, ARB {ETH, USDC, USDC.E}, POL {POL, USDC, USDC.E}, SOL {SOL, USDC}, INK {ETH, USDC}. Funds (token and gas) are checked before anything is signed: 422 INSUFFICIENT_FUNDS names what is missing; 422 TRANSACTION_WOULD_FAIL when the gas estimate says it would revert. The answer waits for inclusion (504 INCLUSION_TIMEOUT past WITHDRAW_INCLUSION_TIMEOUT_MS; 422 TRANSACTION_REVERTED when it reverted; 422 TRANSACTION_NO_EFFECT when it was included with a successful status but without the token transfer to the recipient, e.g. a sponsored call whose EIP-7702 authorisation the chain skipped: success is decided by the effect, and nothing is reported sent). Header `Idempotency-Key` (8-128 chars): a retry returns the first result (header `Idempotent-Replayed: true`) without a second transaction; the same key with another body is 422 IDEMPOTENCY_KEY_REUSED; while the first is running, 409 WITHDRAWAL_IN_PROGRESS. 409 SENDER_BUSY when too many transactions from the wallet queue at once (both 409s carry `Retry-After` in seconds); 502 BROADCAST_REJECTED when the node refuses the transaction (nothing was sent) and 502 CHAIN_UNAVAILABLE when the chain RPC fails (retry with the same Idempotency-Key). `gas_sponsored` (EVM only; ignored for SOL): the platform pays gas through EIP-7702. `Server-Timing` reports sign, broadcast and inclusion times. ' +
      SIGN_POLICY_NOTE,
    security: ['userJwt', 'secretKey'],
    body: WithdrawRequest,
    idempotencyKey: true,
    response: WithdrawResponse,
    errors: [400, 401, 403, 404, 409, 415, 422, 502, 504],
  },
  EstimateTransferCost: {
    summary: 'The route of a transfer and its computed costs (gas, bridge, platform and venue fees)',
    description:
      "Body: the transfer body. Each step's gas comes from eth_estimateGas on the chain (a state override of the token balance, so an unfunded wallet can estimate; Solana: the fee per signature) times the chain's gas price, converted to USD and ETH with Chainlink's ETH/USD, MATIC/USD and SOL/USD feeds on Ethereum mainnet (AggregatorV3Interface latestRoundData); bridge_fee_usdc from the bridge's quote (route.bridge_estimation_error when it fails); platform_fee_usdc from PLATFORM_FEE. 400 names the field of a bad combination (INVALID_ROUTE, UNSUPPORTED_CHAIN, UNSUPPORTED_TOKEN, NO_BRIDGE_ROUTE); 422 AMOUNT_BELOW_EFFECTIVE_MINIMUM with the effective minimum, 422 AMOUNT_ABOVE_BRIDGE_MAXIMUM, 422 UNSUPPORTED_ROUTE; 422 VENUE_WITHDRAWAL_UNSUPPORTED for a route whose source is venue_c or venue_e (their live withdrawals, a Starknet transaction with hours of proving and a proxy-wallet transfer to Polymarket's bridge, are not sent or followed by this service; the message names the venue and why, as its transfer_rules.withdrawal note does); 502 CHAIN_UNAVAILABLE when a chain cannot be read; 503 BRIDGE_NOT_CONFIGURED for a route with a bridge step on a deployment without a bridge (BRIDGE_URL); 503 PRICE_UNAVAILABLE (Retry-After) when a needed price feed is stale (not updated within its heartbeat plus 10 %), not positive or unreadable: never a default price. Writes nothing.",
    security: ['userJwt', 'secretKey'],
    body: TransferRequest,
    response: TransferCostEstimateResponse,
    errors: [400, 401, 404, 415, 422, 502, 503],
  },
  CreateTransfer: {
    summary: 'Start a transfer: answers 202 with the task id; execution is asynchronous',
    description:
      "Same body, validation and estimate as estimate-transfer-cost (its 400 and 422 apply; the estimate is kept in the task's metadata.route). 409 DEX_NOT_INITIALIZED when the source or destination venue is not initialized for the user. 422 INSUFFICIENT_FUNDS, with the numbers and no task, when a `self` source's wallet does not hold what the first step spends (the amount; where the user pays gas, the first step's estimated gas with 20 % headroom); a venue source is refused by the venue when the task runs. 202 `{success, task_id, message}` with header X-Task-ID; the task is `pending` and its Step Functions execution is started (should the start be lost, the first GET /task/{task_id} starts it, once). Header `Idempotency-Key` (8-128 chars) as on POST /withdraw: a retry with the same key and body returns the same task (`Idempotent-Replayed: true`); another body is 422 IDEMPOTENCY_KEY_REUSED; while the first is running, 409 TRANSFER_IN_PROGRESS with Retry-After; a retry after a crash finds the task the first attempt stored (its id is bound to the key before the task is stored), never a second task. 503 BRIDGE_NOT_CONFIGURED and 503 PRICE_UNAVAILABLE as the estimate; 503 BRIDGE_UNAVAILABLE when the bridge gives no quote (no task is made with an unknown fee).",
    security: ['userJwt', 'secretKey'],
    body: TransferRequest,
    idempotencyKey: true,
    response: TaskAccepted,
    status: 202,
    errors: [400, 401, 404, 409, 415, 422, 502, 503],
  },
  ListTasks: {
    summary: "The user's transfer tasks, most recent first",
    description: "Query `limit`: default 5, at most 50 (400 otherwise). One Query on the user's task partition.",
    security: ['userJwt', 'secretKey'],
    query: TasksQuery,
    response: TasksResponse,
    errors: [400, 401, 404],
  },
  GetTask: {
    summary: 'One transfer task of the caller',
    description:
      "Path task_id: a UUID (400 otherwise); 404 TASK_NOT_FOUND when the caller has no such task (another user's task is not found). A pending task whose execution start was lost is started again (once per attempt). A task whose execution closed without recording the outcome is settled here: ABORTED (stopped by an operator) or TIMED_OUT (the machine's timeout) makes it `cancelled` with metadata.cancel_reason; FAILED or SUCCEEDED makes it `failed` with metadata.failure.code EXECUTION_FAILED. metadata never carries auth_jwt, a signed transaction, an idempotency key or any secret.",
    security: ['userJwt', 'secretKey'],
    response: TaskResource,
    errors: [400, 401, 404],
  },
  ResumeTask: {
    summary: 'Resume a failed or cancelled task from its first unfinished step',
    description:
      'No body. Only a `failed` or `cancelled` task: otherwise 409 TASK_NOT_RESUMABLE naming its status. A new attempt (a new execution) runs the steps not completed; a failed step is tried again with its earlier try\'s records kept (metadata.checkpoints try). Concurrent resumes of one task make one new attempt; the others get 409. 202 like POST /transfer (X-Task-ID); message e.g. "Resuming from step 2 of 3 (bridge)".',
    security: ['userJwt', 'secretKey'],
    response: TaskAccepted,
    status: 202,
    errors: [400, 401, 404, 409],
  },
  ListEvents: {
    summary: "The application's event log, oldest first, from a cursor",
    description:
      "Every event of every user of the app (task.created, task.step_updated, task.completed, task.failed, …), oldest first, with no gap in `seq`: an event is recorded in the same write as the change it reports. Query `after` (a cursor: the previous page's `next`; default 0, the oldest event kept), `types` (comma-separated) and `limit` (default 100, at most 500). Kept 30 days in AWS. Webhooks deliver the same events (guide: webhooks). Only with the app's X-SERVICE-SECRET-KEY.",
    security: ['secretKey'],
    query: EventsQuery,
    response: EventsPage,
    errors: [400, 401],
  },
  CreateWebhookEndpoint: {
    summary: 'Add a webhook endpoint of the application; its signing secret is in this response only',
    description: `${WEBHOOK_NOTE} 422 WEBHOOK_URL_NOT_ALLOWED (a scheme, user name, or host the rules refuse; the message names the rule) or WEBHOOK_URL_INVALID (not an absolute URL); 422 UNKNOWN_EVENT_TYPE naming the type; 409 ENDPOINT_LIMIT at ${MAX_ENDPOINTS_PER_APP} endpoints (also under concurrent creates). The secret (whsec_…) is never shown, stored in the clear or logged again: store it now.`,
    security: ['secretKey'],
    body: CreateEndpointRequest,
    response: CreateEndpointResponse,
    errors: [400, 401, 409, 415, 422],
  },
  ListWebhookEndpoints: {
    summary: "The application's webhook endpoints, oldest first, with their delivery status",
    description: `${WEBHOOK_NOTE} status \`failing\` once deliveries have failed for 3 days (failing_since); last_delivery is the latest attempt. Nothing of the signing secrets is shown.`,
    security: ['secretKey'],
    response: ListEndpointsResponse,
    errors: [401],
  },
  DeleteWebhookEndpoint: {
    summary: 'Remove a webhook endpoint: nothing more is delivered to it',
    description: `${WEBHOOK_NOTE} 404 WEBHOOK_ENDPOINT_NOT_FOUND when the application has no endpoint with this id (another application's included); 400 when the path id is not a we_<UUIDv7>.`,
    security: ['secretKey'],
    response: DeleteEndpointResponse,
    errors: [400, 401, 404],
  },
  RotateWebhookEndpointSecret: {
    summary: "Replace an endpoint's signing secret; the previous one keeps signing for 24 hours",
    description: `${WEBHOOK_NOTE} No body. The new secret is in this response only. Until previous_secret_expires_at every delivery's webhook-signature lists a signature with each secret (space-separated, Standard Webhooks), so a receiver can switch to the new one without missing a delivery; a second rotation within those 24 hours drops the older secret at once. 404 WEBHOOK_ENDPOINT_NOT_FOUND as DELETE; 409 ROTATION_CONFLICT (Retry-After) after four lost races with concurrent rotations.`,
    security: ['secretKey'],
    response: RotateSecretResponse,
    errors: [400, 401, 404, 409],
  },
  ReplayWebhookEndpoint: {
    summary: 'Deliver the logged events after a cursor to this endpoint again',
    description: `${WEBHOOK_NOTE} Body { after }: a cursor of GET /events (0: from the oldest event kept). The events after it that the endpoint subscribes to are queued again, in log order and with their own ids (webhook-id), at most 1000 per call: \`more\` true means call again with after = \`next\`. Per resource they keep their order behind deliveries still waiting. 404 WEBHOOK_ENDPOINT_NOT_FOUND as DELETE.`,
    security: ['secretKey'],
    body: ReplayRequest,
    response: ReplayResponse,
    errors: [400, 401, 404, 415],
  },

  CheckPerpDexRequirements: {
    summary: "Whether the wallet can fund the venue's first deposit: token and gas",
    description: `Balances read from the chains for the user's EVM address. usdc_required is the venue's first-deposit minimum; usdc_available the venue token on the venue's chain (chain_balances: on every EVM chain carrying it); eth_required the native coin (gas_token) for the first deposit's calls at the chain's current maxFeePerGas (a fixed gas budget per venue mechanism; the user pays gas). message says what is missing. ${VENUE_NOTE} 502 CHAIN_UNAVAILABLE when a chain cannot be read.`,
    security: ['userJwt', 'secretKey'],
    body: DexRequest,
    response: RequirementsResponse,
    errors: [400, 401, 404, 415, 502, 503],
  },
  InitPerpDex: {
    summary: "Create the user's account at the venue and store its fields in perp_dex_status",
    description: `The venue's onboarding signatures come from the user's wallet through the enclave. First time: 422 REQUIREMENTS_NOT_MET (message as the requirements check) and nothing stored when the requirements are not met. Already initialized without force_reinit: the stored status, nothing changed, no venue call. Concurrent calls make one venue account (409 VENUE_SETUP_IN_PROGRESS with Retry-After if one waits too long). 502 VENUE_UNAVAILABLE when the venue fails; a venue rule's refusal is a 422 with its code. ${VENUE_NOTE}`,
    security: ['userJwt', 'secretKey'],
    body: InitPerpDexRequest,
    response: InitPerpDexResponse,
    errors: [400, 401, 404, 409, 415, 422, 502, 503],
  },
  InitPerpDexTrading: {
    summary: 'Set up trading at the venue; the one-time private key is in this response only',
    description: `409 DEX_NOT_INITIALIZED before init-perp-dex; 409 DEX_NOT_FUNDED while the venue account's balance is 0; 409 TRADING_ALREADY_INITIALIZED when set up already and force_reinit is not given (force_reinit replaces the key; the venue revokes the old one). The key (agent_private_key, stark_private_key, subkey_private_key, linked_signer_private_key; venue_e: CLOB API credentials) is never stored, logged or returned again. 400 names a metadata field the venue does not accept or a malformed one. ${VENUE_NOTE}`,
    security: ['userJwt', 'secretKey'],
    body: InitPerpDexTradingRequest,
    response: InitPerpDexTradingResponse,
    errors: [400, 401, 404, 409, 415, 422, 502, 503],
  },
  GetPerp: {
    summary: "The user's assets at the venue and its transfer rules",
    description:
      "Query `dex` (venue_a … venue_e). Not initialized: initialized false, assets and transfer_rules null, error null. When the venue cannot be read or is not configured: 200 with `error` set (never a 5xx for the venue's sake).",
    security: ['userJwt', 'secretKey'],
    query: DexQuery,
    response: VenueAssetsResponse,
    errors: [400, 401, 404],
  },
  GetPerpCredentials: {
    summary: "The venue's stored credential metadata (never a private key)",
    description: 'Query `dex` (venue_a … venue_e). Read from the account: no venue call.',
    security: ['userJwt', 'secretKey'],
    query: DexQuery,
    response: VenueCredentialsResponse,
    errors: [400, 401, 404],
  },
  CreateWalletV2: {
    summary: 'Get or create a wallet bound to the auth_jwt identity',
    description:
      'One wallet per (identity, wallet_group_id, key family): every EVM network shares one secp256k1 key, SOL uses ed25519. Repeats return the same wallet and access_key. No recovery_key.',
    security: ['secretKey'],
    body: CreateWalletRequest,
    response: CreateWalletResponse,
    errors: [400, 401, 415],
  },
  SignDataV2: {
    summary: 'Sign a 32-byte hash as given',
    description:
      "Authorised by op_jwt (verified offline, exp - iat ≤ 300 s, sub ≤ 255 bytes, naming the wallet's iss/sub) plus access_key. A v1 wallet migrates only to the user it was created for (403 WALLET_IDENTITY_MISMATCH; 409 V1_OWNER_UNKNOWN when it was created without auth_jwt). 500 WALLET_INTEGRITY_FAILED when the stored wallet does not authenticate (edited outside the enclave): nothing is signed. " +
      SIGN_POLICY_NOTE,
    security: ['secretKey'],
    body: SignDataRequest,
    response: SignatureResponse,
    errors: [400, 401, 403, 404, 415],
  },
  SignMessageV2: {
    summary: 'Sign a message: EIP-191 personal message (EVM) or raw bytes (SOL)',
    description: SIGN_POLICY_NOTE,
    security: ['secretKey'],
    body: SignMessageRequest,
    response: SignatureResponse,
    errors: [400, 401, 403, 404, 415],
  },
  SignTransactionV2: {
    summary: 'Sign a transaction: an EVM transaction object, or a base64 Solana message',
    description: SIGN_POLICY_NOTE,
    security: ['secretKey'],
    body: SignTransactionRequest,
    response: SignTransactionResponse,
    errors: [400, 401, 403, 404, 415],
  },
  SignAuthorizationV2: {
    summary: 'Sign an EIP-7702 authorisation (EVM wallets) to an allowed delegate',
    description:
      "Only delegates listed in the enclave's ALLOWED_7702_DELEGATES (the chains config's SponsoredExecutor) are signed for: an authorisation hands the account's code to that contract. 403 DELEGATE_NOT_ALLOWED otherwise. " +
      SIGN_POLICY_NOTE,
    security: ['secretKey'],
    body: SignAuthorizationRequest,
    response: SignAuthorizationResponse,
    errors: [400, 401, 403, 404, 415],
  },
  PutPolicy: {
    summary: "Set the application's signing policy (a new version)",
    description: `Only with the app's X-SERVICE-SECRET-KEY (never a platform service token). Returns the stored policy (addresses normalised) and its version. ${POLICY_NOTE}`,
    security: ['secretKey'],
    body: PolicySchema,
    response: PolicyResponse,
    errors: [400, 401, 409, 415],
  },
  GetPolicyDecisions: {
    summary: "The application's audit log of signing-policy decisions, newest first",
    description:
      'Every decision a v2 signature met (allow, deny, shadow_deny) with the rule, operation, channel, chain, recipients, USD value (decimal string, null when unknown), the user (op_jwt sub) and time; never the signed body, op_jwt or access key. Kept 90 days. ' +
      POLICY_NOTE,
    security: ['secretKey'],
    query: DecisionsQuery,
    response: PolicyDecisionsResponse,
    errors: [400, 401],
  },
  GetPolicy: {
    summary: "The application's signing policy in force",
    description: `The latest version; an app that never set one gets the built-in default as version 0 with built_in true (account and enclave channels: everything; express: no sign_data, EIP-7702 authorisations only to the platform's delegates). ${POLICY_NOTE}`,
    security: ['secretKey'],
    response: v.object({ ...PolicyResponse.entries, built_in: v.boolean() }),
    errors: [401],
  },
  EvaluatePolicy: {
    summary: 'What the signing policy would decide for one request (signs nothing, counts nothing)',
    description: `Body: sub, operation and the body that operation carries: a v2 sign_* body without op_jwt, access_key and wallet_id, or for operation withdraw the fields chain, token, to_address and amount (read as the ERC-20 transfer, native send or SPL transfer /withdraw would sign). channel defaults to enclave for sign_*, account for withdraw. max_usd_per_day is decided on the user's (sub) rolling-24 h total, as the signature would be; remaining_usd_today is what is left under the tightest daily limit in scope (null when none). ${POLICY_NOTE}`,
    security: ['secretKey'],
    body: EvaluatePolicyRequest,
    response: EvaluatePolicyResponse,
    errors: [400, 401, 415],
  },
  CreateWalletV1: {
    summary: 'v1: create a wallet sealed under an encryption_context',
    description: `Returns wallet_id, access_key and recovery_key. With the optional auth_jwt the wallet is created for that user, the only one it may migrate to; without, it cannot be migrated to v2. ${V1_NOTE}`,
    security: ['secretKey'],
    body: V1CreateWalletRequest,
    response: V1CreateWalletResponse,
    errors: [400, 401, 410, 415],
    deprecated: true,
  },
  SignDataV1: {
    summary: 'v1: sign a 32-byte hash with encryption_context + access_key',
    description: `A wallet already migrated to v2 answers 409 WALLET_MIGRATED. ${V1_NOTE}`,
    security: ['secretKey'],
    body: V1SignDataRequest,
    response: SignatureResponse,
    errors: [400, 401, 403, 404, 409, 410, 415],
    deprecated: true,
  },
  SignMessageV1: {
    summary: 'v1: sign a message with encryption_context + access_key',
    description: V1_NOTE,
    security: ['secretKey'],
    body: V1SignMessageRequest,
    response: SignatureResponse,
    errors: [400, 401, 403, 404, 409, 410, 415],
    deprecated: true,
  },
  SignTransactionV1: {
    summary: 'v1: sign a transaction with encryption_context + access_key',
    description: V1_NOTE,
    security: ['secretKey'],
    body: V1SignTransactionRequest,
    response: SignTransactionResponse,
    errors: [400, 401, 403, 404, 409, 410, 415],
    deprecated: true,
  },
  GetOrCreateExpressWallet: {
    summary: "Get or create the user's wallet for X-SERVICE-CHAIN",
    description: `No body. Every EVM chain code shares one address; it is the same wallet the account service reports. ${EXPRESS_NOTE}`,
    security: expressAuth,
    response: ExpressWalletResponse,
    errors: [400, 401, 403, 502],
  },
  ExpressSignData: {
    summary: "Sign a 32-byte hash with the user's wallet (server-side signing)",
    description: `${EXPRESS_NOTE} ${SIGN_POLICY_NOTE} With no policy set, the built-in default refuses sign_data on the express channel (rule default.express-no-raw-hash).`,
    security: expressAuth,
    body: ExpressSignDataRequest,
    response: ExpressSignResponse,
    errors: [400, 401, 403, 415, 502],
  },
  ExpressSignMessage: {
    summary: "Sign a message with the user's wallet",
    description: `${EXPRESS_NOTE} ${SIGN_POLICY_NOTE}`,
    security: expressAuth,
    body: ExpressSignMessageRequest,
    response: ExpressSignResponse,
    errors: [400, 401, 403, 415, 502],
  },
  ExpressSignTransaction: {
    summary: "Sign a transaction with the user's wallet",
    description: `${EXPRESS_NOTE} ${SIGN_POLICY_NOTE}`,
    security: expressAuth,
    body: ExpressSignTransactionRequest,
    response: ExpressSignResponse,
    errors: [400, 401, 403, 415, 502],
  },
  ExpressWalletV1: {
    summary: 'v1 path: 308 to /v2/wallet for apps created before 2026-07-31; 403 V1_BANNED for newer apps',
    security: ['apiKey'],
    response: v.object({ success: v.literal(true), location: v.string() }),
    errors: [401, 403],
    deprecated: true,
    redirect: true,
  },
  ExpressSignV1: {
    summary: 'v1 path: 308 to /v2/wallet/sign/{operation} for apps created before 2026-07-31; 403 V1_BANNED for newer apps',
    security: ['apiKey'],
    response: v.object({ success: v.literal(true), location: v.string() }),
    errors: [401, 403, 404],
    deprecated: true,
    redirect: true,
  },
  GetIdentityProvider: {
    summary: "The application's identity provider",
    security: ['secretKey'],
    response: IdentityProviderResponse,
    errors: [401],
  },
};
