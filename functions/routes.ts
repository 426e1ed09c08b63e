/**
 * Every HTTP route of the three services, the handler module that serves it, and what that
 * handler's code path needs from AWS. CDK (infra/services-stack.ts) makes one Lambda per entry
 * and one method of an API Gateway REST API per route (infra/api-resources.ts builds the resource
 * tree), and grants each Lambda exactly its `needs`; the local runtime (infra/local/) routes
 * requests to the same modules over the same tree.
 * `$default` is the `ANY` method of every resource: a wrong method gets our JSON 405 with
 * `Allow`, an unknown path our JSON 404, instead of API Gateway's 403 "Missing Authentication Token".
 */
import type { Partition, TableNeeds } from '../shared/db/partitions.ts';

export type ServiceName = 'account' | 'enclave' | 'express';

/**
 * `read`: GetItem, BatchGetItem, Query. `read-write`: those plus PutItem, UpdateItem, DeleteItem,
 * BatchWriteItem, ConditionCheckItem (never Scan, never table management). Each only under a
 * `dynamodb:LeadingKeys` condition naming the partitions of the route's TableNeeds.
 */
export type TableAccess = 'read' | 'read-write';

/** `read-write` when the route writes any partition, else `read`. */
export function tableAccess(table: TableNeeds): TableAccess {
  return (table.writes?.length ?? 0) > 0 ? 'read-write' : 'read';
}

/** KMS operations on a symmetric wrapping key (shared/crypto/kms-key-wrapper.ts). */
export type WrappingKeyOperation = 'GenerateDataKey' | 'Decrypt';

/**
 * Operations on the webhook delivery queue (SQS FIFO, issue 24): SendMessage queues deliveries
 * (SendMessageBatch is authorised by sqs:SendMessage), ChangeMessageVisibility holds a failed one
 * back for its retry backoff (shared/events/delivery-queue.ts).
 */
export type DeliveryQueueOperation = 'SendMessage' | 'ChangeMessageVisibility';

/** KMS operations on the op_jwt and gas sponsor signing keys (shared/crypto/kms-op-jwt-signer.ts; Sign needs the kid, so GetPublicKey too). */
export type SigningKeyOperation = 'Sign' | 'GetPublicKey';

/**
 * What one route's handler calls, derived from its code path (functions/** -> shared/**), not
 * from its service. An absent field means "none": no grant and no environment variable.
 * Each field, the environment variables it sets and what it grants:
 *
 * | need               | environment                                  | grant                                            |
 * |--------------------|----------------------------------------------|--------------------------------------------------|
 * | `table`            | TABLE_NAME                                   | reads: GetItem, BatchGetItem, Query on the `reads` and `writes` partitions; writes: PutItem, UpdateItem, DeleteItem, BatchWriteItem, ConditionCheckItem on the `writes` partitions (dynamodb:LeadingKeys, shared/db/partitions.ts) |
 * | `enclaveWalletKey` | KEY_PROVIDER=kms, ENCLAVE_KMS_KEY_ID         | the listed ops, encryption context purpose `enclave-wallet` |
 * | `accountAccessKey` | KEY_PROVIDER=kms, ACCOUNT_KMS_KEY_ID         | the listed ops, encryption context purpose `account-access-keys` |
 * | `webhookSecretKey` | KEY_PROVIDER=kms, ACCOUNT_KMS_KEY_ID         | the listed ops on the account key, encryption context purpose `webhook-secret` (with app_id, endpoint_id) |
 * | `opJwtKey`         | OP_JWT_SIGNER=kms, OP_JWT_KMS_KEY_ID         | the listed ops on the op_jwt signing key          |
 * | `sponsorKey`       | SPONSOR_SIGNER=kms, SPONSOR_KMS_KEY_ID       | the listed ops on the gas sponsor's signing key   |
 * | `enclaveUrl`       | TEE_URL (the enclave API's base URL)         | none (public HTTPS endpoint)                      |
 * | `chains`           | CHAINS_CONFIG (no rpc_url), RPC_URLS_SECRET  | secretsmanager:GetSecretValue, DescribeSecret on that secret |
 * | `chainData`        | CHAINS_CONFIG (no rpc_url)                   | none (public chain ids and token contracts only)  |
 * | `delegates`        | ALLOWED_7702_DELEGATES                       | none                                             |
 * | `venues`           | VENUE_URLS (JSON: venue id to API base URL)  | none (the venues' public HTTPS APIs)             |
 * | `bridge`           | BRIDGE_URL (the bridge API's base URL)       | none (the bridge's public HTTPS API)             |
 * | `platformFee`      | PLATFORM_FEE (JSON; shared/transfers/platform-fee.ts) | none                                    |
 * | `transfers`        | TRANSFER_STATE_MACHINE_ARN, TRANSFER_STEP_FUNCTIONS | states:StartExecution on the transfer machine, states:DescribeExecution on its executions |
 * | `deliveryQueue`    | DELIVERY_QUEUE_URL                           | the listed sqs: actions on the webhook delivery queue only (infra/events-stack.ts) |
 *
 * Every function also gets NODE_OPTIONS and the POWERTOOLS_* / LOG_LEVEL variables.
 */
export interface RouteNeeds {
  /** The partitions the code path reads and writes (shared/db/partitions.ts); writes imply reads. */
  readonly table?: TableNeeds;
  /** Wraps wallet private keys (enclave only). */
  readonly enclaveWalletKey?: readonly WrappingKeyOperation[];
  /** Wraps the account service's stored enclave access keys. */
  readonly accountAccessKey?: readonly WrappingKeyOperation[];
  /**
   * Seals (GenerateDataKey) or opens (Decrypt) webhook endpoints' signing secrets: the account key,
   * under encryption context `{ purpose: 'webhook-secret', app_id, endpoint_id }` only, so neither
   * this grant nor `accountAccessKey`'s can open what the other sealed (issue 24).
   */
  readonly webhookSecretKey?: readonly WrappingKeyOperation[];
  /** Signs op_jwt and service tokens for users' wallets. */
  readonly opJwtKey?: readonly SigningKeyOperation[];
  /**
   * Signs the gas sponsor's tokens (its auth_jwt, op_jwt and service token for the platform
   * application, which trusts this key only): the functions that sponsor gas.
   */
  readonly sponsorKey?: readonly SigningKeyOperation[];
  /** Calls the wallet enclave over its HTTP API. */
  readonly enclaveUrl?: true;
  /** Reads chains (public chain data plus RPC URLs from Secrets Manager). */
  readonly chains?: true;
  /**
   * Reads the public chain data alone (chain ids, token contracts), never an RPC URL: the enclave's
   * signing policy names chains by code and prices USDC by contract (issue 22). Implied by `chains`.
   */
  readonly chainData?: true;
  /** Signs EIP-7702 authorisations, only to the delegates of the chains config. */
  readonly delegates?: true;
  /** Calls the venues' APIs (shared/venues: VenueDriver per venue, base URLs from VENUE_URLS). */
  readonly venues?: true;
  /** Calls the bridge's API (shared/transfers/bridge.ts, BRIDGE_URL). */
  readonly bridge?: true;
  /** Reads the platform fee and its recipients (PLATFORM_FEE). */
  readonly platformFee?: true;
  /** Starts and describes executions of the transfer state machine (statemachines/transfer.asl.json). */
  readonly transfers?: true;
  /** The webhook delivery queue (issue 24): queues deliveries (publisher, replay) or holds one back (deliverer). */
  readonly deliveryQueue?: readonly DeliveryQueueOperation[];
}

export interface RouteDefinition {
  /** Stable id, used for the Lambda's construct id (PascalCase). */
  readonly id: string;
  readonly service: ServiceName;
  /** `METHOD /path/{param}` (the method and the REST API resource path), or `$default`. */
  readonly routeKey: string;
  /** Handler module, relative to the repository root; it exports `handler`. */
  readonly entry: string;
  readonly needs: RouteNeeds;
}

/** Health and not-found: nothing at all. */
const NOTHING: RouteNeeds = {};

/**
 * Table partitions by route (shared/db/partitions.ts), traced through functions/* -> shared/*.
 * Authentication reads: the account service and the enclave resolve the app by its secret key
 * (APPSECRET# then APP#; the enclave's service tokens by app id, APP#), the express service by
 * its API key (APPKEY# then APP#). Only the enclave's functions write WALLET# and OPJWT#
 * (the op_jwt's single use, recorded where an op_jwt is verified: the v2 sign routes); no
 * function writes APP#, APPSECRET# or APPKEY# (the operator's app:create and the local runtime do).
 */
const BY_SECRET: readonly Partition[] = ['appSecret', 'app'];
const BY_API_KEY: readonly Partition[] = ['appApiKey', 'app'];
const ACCOUNT_READER: RouteNeeds['table'] = { reads: [...BY_SECRET, 'account'] };

/**
 * Account service. Authentication (authenticateUser) reads the app from the table; the user's
 * JWT is verified against the app's identity provider (HTTPS, no AWS).
 * - POST /account: get the account, else create two wallets through the enclave (app secret key,
 *   no op_jwt), seal their access keys (GenerateDataKey) and put the account.
 * - POST /wallet/sign, POST /withdraw: open the sealed access key (Decrypt), mint op_jwt (Sign,
 *   GetPublicKey for the kid), call the enclave. /withdraw also writes idempotency and lease items,
 *   reads chains, and the gas sponsor reads the platform app and mints its tokens with its own key (`sponsorKey`).
 * - GET /demo/wallet/balance: the account (read) and balances from the chains.
 * - Venue routes (shared/venues/service.ts): check-perp-dex-requirements reads the account, the
 *   chains (balances, gas price) and the venue's rules, signing nothing. init-perp-dex also signs
 *   the venue's onboarding with the wallet and writes the status and a lease item;
 *   init-perp-dex-trading signs and writes likewise; GET /account/perp signs where the venue's
 *   balance request is signed (only reads the table). Venue adapters read the chains (venue_e's
 *   proxy wallet). perp-credentials reads the table alone.
 */
const SIGN_WITH_ACCOUNT_WALLET: RouteNeeds = { table: ACCOUNT_READER, accountAccessKey: ['Decrypt'], opJwtKey: ['Sign', 'GetPublicKey'], enclaveUrl: true };
const VENUE_WITH_WALLET: RouteNeeds = { ...SIGN_WITH_ACCOUNT_WALLET, chains: true, venues: true };
/** init-perp-dex and init-perp-dex-trading: the venue status on the account (UpdateItem) under the venue setup lease. */
const VENUE_SETUP_TABLE: RouteNeeds['table'] = { reads: BY_SECRET, writes: ['account', 'venueLease'] };

/**
 * Transfers and tasks (shared/transfers/service.ts). All authenticate (table read) and read the
 * account. The estimate also prices the route: gas from the chains (eth_estimateGas, gas price,
 * Solana fee), the bridge's quote, the platform fee (PLATFORM_FEE); it writes nothing. Create does
 * the same, then writes the task (and an Idempotency-Key item) and starts the execution. GET /tasks
 * only reads (a Query). GET /task writes (re-kick claim, reconciled status) and starts or
 * describes executions; resume writes one conditional update and starts the new attempt. None of
 * them signs, so no KMS and no enclave; no venue API is called (venue deposit gas is estimated
 * from the mechanism's call shape, shared/transfers/gas-estimator.ts).
 */
const TRANSFER_PRICING: RouteNeeds = { chains: true, bridge: true, platformFee: true };
const TASK_EXECUTION: RouteNeeds = { table: { reads: BY_SECRET, writes: ['tasks'] }, transfers: true };

/**
 * Enclave. v2 create: get-or-create the wallet (seal: GenerateDataKey) and open its access key
 * (Decrypt). v2 sign: open the private key (Decrypt); a v1 wallet is migrated on its first v2
 * call, re-sealed under KMS (GenerateDataKey) and replaced conditionally (write). v1 create and
 * v1 sign use the scrypt-derived key of the caller's encryption_context, never KMS; v1 create
 * writes the wallet, v1 sign only reads it. Service tokens are verified against the app's trusted
 * keys in the table: no KMS. v2 sign reads the app's signing policy (POLICY#, issue 22) before
 * anything is opened; only PUT /v2/api/policies writes it (app secret key only), GET reads it.
 * v2 sign also writes the user's max_usd_per_day counter (POLICYUSE#) and the decision log (POLICYLOG#).
 */
const ENCLAVE_V2_SIGN: RouteNeeds = {
  table: { reads: [...BY_SECRET, 'policy'], writes: ['wallet', 'opJwt', 'policyUse', 'policyLog'] },
  enclaveWalletKey: ['Decrypt', 'GenerateDataKey'],
  chainData: true,
};
const ENCLAVE_V1_SIGN: RouteNeeds = { table: { reads: [...BY_SECRET, 'wallet'] } };

/**
 * Express. Authentication reads the app by API key (table). Wallet get-or-create and signing go
 * through the enclave with a service token and an op_jwt, both minted with the op_jwt key.
 * The v1 routes only authenticate and redirect.
 */
const EXPRESS_THROUGH_ENCLAVE: RouteNeeds = { table: { reads: BY_API_KEY }, opJwtKey: ['Sign', 'GetPublicKey'], enclaveUrl: true };

export const ROUTES: readonly RouteDefinition[] = [
  { id: 'AccountHealth', service: 'account', routeKey: 'GET /health', entry: 'functions/common/health.ts', needs: NOTHING },
  { id: 'AccountNotFound', service: 'account', routeKey: '$default', entry: 'functions/common/not-found.ts', needs: NOTHING },
  {
    id: 'CreateAccount',
    service: 'account',
    routeKey: 'POST /account',
    entry: 'functions/account/create-account.ts',
    needs: { table: { reads: BY_SECRET, writes: ['account'] }, accountAccessKey: ['GenerateDataKey'], enclaveUrl: true },
  },
  { id: 'GetAccount', service: 'account', routeKey: 'GET /account', entry: 'functions/account/get-account.ts', needs: { table: ACCOUNT_READER } },
  { id: 'SignWithWallet', service: 'account', routeKey: 'POST /wallet/sign', entry: 'functions/account/sign-with-wallet.ts', needs: SIGN_WITH_ACCOUNT_WALLET },
  {
    id: 'GetDemoBalance',
    service: 'account',
    routeKey: 'GET /demo/wallet/balance',
    entry: 'functions/account/get-demo-balance.ts',
    needs: { table: ACCOUNT_READER, chains: true },
  },
  {
    id: 'Withdraw',
    service: 'account',
    routeKey: 'POST /withdraw',
    entry: 'functions/account/withdraw.ts',
    // The gas sponsor (shared/withdrawals/gas-sponsor.ts) reads the platform app (APP#) and signs with its own key.
    needs: {
      ...SIGN_WITH_ACCOUNT_WALLET,
      table: { reads: [...BY_SECRET, 'account'], writes: ['idempotency', 'senderLease', 'sponsorBudget', 'withdrawals'] },
      chains: true,
      sponsorKey: ['Sign', 'GetPublicKey'],
    },
  },
  {
    id: 'CheckPerpDexRequirements',
    service: 'account',
    routeKey: 'POST /account/check-perp-dex-requirements',
    entry: 'functions/account/check-perp-dex-requirements.ts',
    needs: { table: ACCOUNT_READER, chains: true, venues: true },
  },
  {
    id: 'InitPerpDex',
    service: 'account',
    routeKey: 'POST /account/init-perp-dex',
    entry: 'functions/account/init-perp-dex.ts',
    needs: { ...VENUE_WITH_WALLET, table: VENUE_SETUP_TABLE },
  },
  {
    id: 'InitPerpDexTrading',
    service: 'account',
    routeKey: 'POST /account/init-perp-dex-trading',
    entry: 'functions/account/init-perp-dex-trading.ts',
    needs: { ...VENUE_WITH_WALLET, table: VENUE_SETUP_TABLE },
  },
  { id: 'GetPerp', service: 'account', routeKey: 'GET /account/perp', entry: 'functions/account/get-perp.ts', needs: VENUE_WITH_WALLET },
  {
    id: 'GetPerpCredentials',
    service: 'account',
    routeKey: 'GET /account/perp-credentials',
    entry: 'functions/account/get-perp-credentials.ts',
    needs: { table: ACCOUNT_READER },
  },
  {
    id: 'EstimateTransferCost',
    service: 'account',
    routeKey: 'POST /transfer/estimate-transfer-cost',
    entry: 'functions/account/estimate-transfer-cost.ts',
    needs: { table: ACCOUNT_READER, ...TRANSFER_PRICING },
  },
  {
    id: 'CreateTransfer',
    service: 'account',
    routeKey: 'POST /transfer',
    entry: 'functions/account/create-transfer.ts',
    needs: { ...TRANSFER_PRICING, ...TASK_EXECUTION, table: { reads: [...BY_SECRET, 'account'], writes: ['idempotency', 'tasks'] } },
  },
  {
    id: 'ListTasks',
    service: 'account',
    routeKey: 'GET /tasks',
    entry: 'functions/account/list-tasks.ts',
    needs: { table: { reads: [...BY_SECRET, 'account', 'tasks'] } },
  },
  { id: 'GetTask', service: 'account', routeKey: 'GET /task/{task_id}', entry: 'functions/account/get-task.ts', needs: TASK_EXECUTION },
  // The app's event log (issue 24): app secret key only; reads EVENTS# and nothing else of the app's users.
  {
    id: 'ListEvents',
    service: 'account',
    routeKey: 'GET /events',
    entry: 'functions/account/list-events.ts',
    needs: { table: { reads: [...BY_SECRET, 'events'] } },
  },
  { id: 'ResumeTask', service: 'account', routeKey: 'POST /task/{task_id}/resume', entry: 'functions/account/resume-task.ts', needs: TASK_EXECUTION },
  // Webhook endpoints (issue 24): app-level, the secret key alone (no user, no ACCOUNT#). Create and
  // rotate seal a new signing secret (GenerateDataKey); rotate moves the old one aside sealed, so
  // no route here opens a secret (only the deliverer does). List only reads; delete only writes.
  {
    id: 'CreateWebhookEndpoint',
    service: 'account',
    routeKey: 'POST /webhook-endpoints',
    entry: 'functions/account/create-webhook-endpoint.ts',
    needs: { table: { reads: BY_SECRET, writes: ['webhooks'] }, webhookSecretKey: ['GenerateDataKey'] },
  },
  {
    id: 'ListWebhookEndpoints',
    service: 'account',
    routeKey: 'GET /webhook-endpoints',
    entry: 'functions/account/list-webhook-endpoints.ts',
    needs: { table: { reads: [...BY_SECRET, 'webhooks'] } },
  },
  {
    id: 'DeleteWebhookEndpoint',
    service: 'account',
    routeKey: 'DELETE /webhook-endpoints/{id}',
    entry: 'functions/account/delete-webhook-endpoint.ts',
    needs: { table: { reads: BY_SECRET, writes: ['webhooks'] } },
  },
  {
    id: 'RotateWebhookEndpointSecret',
    service: 'account',
    routeKey: 'POST /webhook-endpoints/{id}/rotate-secret',
    entry: 'functions/account/rotate-webhook-endpoint-secret.ts',
    needs: { table: { reads: BY_SECRET, writes: ['webhooks'] }, webhookSecretKey: ['GenerateDataKey'] },
  },
  // Reads the endpoint and the log; writes nothing in the table: the deliveries go on the queue.
  {
    id: 'ReplayWebhookEndpoint',
    service: 'account',
    routeKey: 'POST /webhook-endpoints/{id}/replay',
    entry: 'functions/account/replay-webhook-endpoint.ts',
    needs: { table: { reads: [...BY_SECRET, 'webhooks', 'events'] }, deliveryQueue: ['SendMessage'] },
  },

  { id: 'EnclaveHealth', service: 'enclave', routeKey: 'GET /health', entry: 'functions/common/health.ts', needs: NOTHING },
  { id: 'EnclaveNotFound', service: 'enclave', routeKey: '$default', entry: 'functions/common/not-found.ts', needs: NOTHING },
  {
    id: 'CreateWalletV2',
    service: 'enclave',
    routeKey: 'POST /v2/api/wallet',
    entry: 'functions/enclave/create-wallet.ts',
    needs: { table: { reads: BY_SECRET, writes: ['wallet'] }, enclaveWalletKey: ['GenerateDataKey', 'Decrypt'] },
  },
  { id: 'SignDataV2', service: 'enclave', routeKey: 'POST /v2/api/wallet/sign_data', entry: 'functions/enclave/sign-data.ts', needs: ENCLAVE_V2_SIGN },
  { id: 'SignMessageV2', service: 'enclave', routeKey: 'POST /v2/api/wallet/sign_message', entry: 'functions/enclave/sign-message.ts', needs: ENCLAVE_V2_SIGN },
  {
    id: 'SignTransactionV2',
    service: 'enclave',
    routeKey: 'POST /v2/api/wallet/sign_transaction',
    entry: 'functions/enclave/sign-transaction.ts',
    // The one signature that can move a native coin: a policy's USD limit prices it from the
    // Chainlink feeds on the ETH chain (issue 22), so it reads the ETH RPC URL.
    needs: { ...ENCLAVE_V2_SIGN, chains: true },
  },
  {
    id: 'SignAuthorizationV2',
    service: 'enclave',
    routeKey: 'POST /v2/api/wallet/sign_authorization',
    entry: 'functions/enclave/sign-authorization.ts',
    needs: { ...ENCLAVE_V2_SIGN, delegates: true },
  },
  {
    id: 'PutPolicy',
    service: 'enclave',
    routeKey: 'PUT /v2/api/policies',
    entry: 'functions/enclave/put-policy.ts',
    needs: { table: { reads: BY_SECRET, writes: ['policy'] } },
  },
  // The app's audit log of policy decisions (POLICYLOG#, written by the v2 sign routes), newest first.
  {
    id: 'GetPolicyDecisions',
    service: 'enclave',
    routeKey: 'GET /v2/api/policies/decisions',
    entry: 'functions/enclave/get-policy-decisions.ts',
    needs: { table: { reads: [...BY_SECRET, 'policyLog'] } },
  },
  // `delegates`: the built-in default it shows names the platform's EIP-7702 delegates.
  {
    id: 'GetPolicy',
    service: 'enclave',
    routeKey: 'GET /v2/api/policies',
    entry: 'functions/enclave/get-policy.ts',
    needs: { table: { reads: [...BY_SECRET, 'policy'] }, delegates: true },
  },
  // Reads only: the policy and the user's max_usd_per_day use (POLICYUSE#); signs, counts and logs
  // nothing. Chains: native coin prices, as sign_transaction reads them.
  {
    id: 'EvaluatePolicy',
    service: 'enclave',
    routeKey: 'POST /v2/api/policies/evaluate',
    entry: 'functions/enclave/evaluate-policy.ts',
    needs: { table: { reads: [...BY_SECRET, 'policy', 'policyUse'] }, chains: true, delegates: true },
  },
  {
    id: 'CreateWalletV1',
    service: 'enclave',
    routeKey: 'POST /v1/api/wallet',
    entry: 'functions/enclave/v1-create-wallet.ts',
    needs: { table: { reads: BY_SECRET, writes: ['wallet'] } },
  },
  { id: 'SignDataV1', service: 'enclave', routeKey: 'POST /v1/api/wallet/sign_data', entry: 'functions/enclave/v1-sign-data.ts', needs: ENCLAVE_V1_SIGN },
  {
    id: 'SignMessageV1',
    service: 'enclave',
    routeKey: 'POST /v1/api/wallet/sign_message',
    entry: 'functions/enclave/v1-sign-message.ts',
    needs: ENCLAVE_V1_SIGN,
  },
  {
    id: 'SignTransactionV1',
    service: 'enclave',
    routeKey: 'POST /v1/api/wallet/sign_transaction',
    entry: 'functions/enclave/v1-sign-transaction.ts',
    needs: ENCLAVE_V1_SIGN,
  },

  { id: 'ExpressHealth', service: 'express', routeKey: 'GET /health', entry: 'functions/common/health.ts', needs: NOTHING },
  { id: 'ExpressNotFound', service: 'express', routeKey: '$default', entry: 'functions/common/not-found.ts', needs: NOTHING },
  {
    id: 'GetIdentityProvider',
    service: 'express',
    routeKey: 'GET /v1/identity/provider',
    entry: 'functions/express/get-identity-provider.ts',
    // X-SERVICE-SECRET-KEY authenticates it (shared/auth/authenticate.ts authenticateApp): the secret's lookup, then the app.
    needs: { table: { reads: BY_SECRET } },
  },
  {
    id: 'GetOrCreateExpressWallet',
    service: 'express',
    routeKey: 'POST /v2/wallet',
    entry: 'functions/express/get-or-create-wallet.ts',
    needs: EXPRESS_THROUGH_ENCLAVE,
  },
  { id: 'ExpressSignData', service: 'express', routeKey: 'POST /v2/wallet/sign/data', entry: 'functions/express/sign-data.ts', needs: EXPRESS_THROUGH_ENCLAVE },
  {
    id: 'ExpressSignMessage',
    service: 'express',
    routeKey: 'POST /v2/wallet/sign/message',
    entry: 'functions/express/sign-message.ts',
    needs: EXPRESS_THROUGH_ENCLAVE,
  },
  {
    id: 'ExpressSignTransaction',
    service: 'express',
    routeKey: 'POST /v2/wallet/sign/transaction',
    entry: 'functions/express/sign-transaction.ts',
    needs: EXPRESS_THROUGH_ENCLAVE,
  },
  { id: 'ExpressWalletV1', service: 'express', routeKey: 'POST /v1/wallet', entry: 'functions/express/v1-wallet.ts', needs: { table: { reads: BY_API_KEY } } },
  {
    id: 'ExpressSignV1',
    service: 'express',
    routeKey: 'POST /v1/wallet/sign/{operation}',
    entry: 'functions/express/v1-wallet.ts',
    needs: { table: { reads: BY_API_KEY } },
  },
];
