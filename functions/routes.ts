/**
 * Every HTTP route of the three services and the handler module that serves it.
 * CDK (infra/services-stack.ts) makes one Lambda per entry and one API Gateway HTTP API
 * route per path; the local runtime (infra/local/) routes requests to the same modules.
 * `$default` catches unknown routes so they get our JSON 404 instead of API Gateway's.
 */
export type ServiceName = 'account' | 'enclave' | 'express';

export interface RouteDefinition {
  /** Stable id, used for the Lambda's construct id (PascalCase). */
  readonly id: string;
  readonly service: ServiceName;
  /** `METHOD /path/{param}` as API Gateway HTTP APIs write it, or `$default`. */
  readonly routeKey: string;
  /** Handler module, relative to the repository root; it exports `handler`. */
  readonly entry: string;
}

export const ROUTES: readonly RouteDefinition[] = [
  { id: 'AccountHealth', service: 'account', routeKey: 'GET /health', entry: 'functions/common/health.ts' },
  { id: 'AccountNotFound', service: 'account', routeKey: '$default', entry: 'functions/common/not-found.ts' },
  { id: 'CreateAccount', service: 'account', routeKey: 'POST /account', entry: 'functions/account/create-account.ts' },
  { id: 'GetAccount', service: 'account', routeKey: 'GET /account', entry: 'functions/account/get-account.ts' },
  { id: 'SignWithWallet', service: 'account', routeKey: 'POST /wallet/sign', entry: 'functions/account/sign-with-wallet.ts' },
  { id: 'GetDemoBalance', service: 'account', routeKey: 'GET /demo/wallet/balance', entry: 'functions/account/get-demo-balance.ts' },
  { id: 'Withdraw', service: 'account', routeKey: 'POST /withdraw', entry: 'functions/account/withdraw.ts' },

  { id: 'EnclaveHealth', service: 'enclave', routeKey: 'GET /health', entry: 'functions/common/health.ts' },
  { id: 'EnclaveNotFound', service: 'enclave', routeKey: '$default', entry: 'functions/common/not-found.ts' },
  { id: 'CreateWalletV2', service: 'enclave', routeKey: 'POST /v2/api/wallet', entry: 'functions/enclave/create-wallet.ts' },
  { id: 'SignDataV2', service: 'enclave', routeKey: 'POST /v2/api/wallet/sign_data', entry: 'functions/enclave/sign-data.ts' },
  { id: 'SignMessageV2', service: 'enclave', routeKey: 'POST /v2/api/wallet/sign_message', entry: 'functions/enclave/sign-message.ts' },
  { id: 'SignTransactionV2', service: 'enclave', routeKey: 'POST /v2/api/wallet/sign_transaction', entry: 'functions/enclave/sign-transaction.ts' },
  { id: 'SignAuthorizationV2', service: 'enclave', routeKey: 'POST /v2/api/wallet/sign_authorization', entry: 'functions/enclave/sign-authorization.ts' },
  { id: 'CreateWalletV1', service: 'enclave', routeKey: 'POST /v1/api/wallet', entry: 'functions/enclave/v1-create-wallet.ts' },
  { id: 'SignDataV1', service: 'enclave', routeKey: 'POST /v1/api/wallet/sign_data', entry: 'functions/enclave/v1-sign-data.ts' },
  { id: 'SignMessageV1', service: 'enclave', routeKey: 'POST /v1/api/wallet/sign_message', entry: 'functions/enclave/v1-sign-message.ts' },
  { id: 'SignTransactionV1', service: 'enclave', routeKey: 'POST /v1/api/wallet/sign_transaction', entry: 'functions/enclave/v1-sign-transaction.ts' },

  { id: 'ExpressHealth', service: 'express', routeKey: 'GET /health', entry: 'functions/common/health.ts' },
  { id: 'ExpressNotFound', service: 'express', routeKey: '$default', entry: 'functions/common/not-found.ts' },
  { id: 'GetIdentityProvider', service: 'express', routeKey: 'GET /v1/identity/provider', entry: 'functions/express/get-identity-provider.ts' },
  { id: 'GetOrCreateExpressWallet', service: 'express', routeKey: 'POST /v2/wallet', entry: 'functions/express/get-or-create-wallet.ts' },
  { id: 'ExpressSignData', service: 'express', routeKey: 'POST /v2/wallet/sign/data', entry: 'functions/express/sign-data.ts' },
  { id: 'ExpressSignMessage', service: 'express', routeKey: 'POST /v2/wallet/sign/message', entry: 'functions/express/sign-message.ts' },
  { id: 'ExpressSignTransaction', service: 'express', routeKey: 'POST /v2/wallet/sign/transaction', entry: 'functions/express/sign-transaction.ts' },
  { id: 'ExpressWalletV1', service: 'express', routeKey: 'POST /v1/wallet', entry: 'functions/express/v1-wallet.ts' },
  { id: 'ExpressSignV1', service: 'express', routeKey: 'POST /v1/wallet/sign/{operation}', entry: 'functions/express/v1-wallet.ts' },
];

/** Which AWS resources a service's functions need; infra grants exactly these. */
export interface ServiceNeeds {
  readonly table: boolean;
  readonly enclaveKey: boolean;
  readonly accountKey: boolean;
  readonly opJwtKey: boolean;
  /** TEE_URL: the service's functions reach the wallet enclave over its HTTP API. */
  readonly enclaveUrl: boolean;
  /** CHAINS_CONFIG: RPC URLs, chain ids and tokens of the chains. */
  readonly chains: boolean;
  /** ALLOWED_7702_DELEGATES: the delegates of the chains config the enclave may authorise. */
  readonly delegates: boolean;
}

export const SERVICE_NEEDS: Record<ServiceName, ServiceNeeds> = {
  account: { table: true, enclaveKey: false, accountKey: true, opJwtKey: true, enclaveUrl: true, chains: true, delegates: false },
  enclave: { table: true, enclaveKey: true, accountKey: false, opJwtKey: false, enclaveUrl: false, chains: false, delegates: true },
  express: { table: true, enclaveKey: false, accountKey: false, opJwtKey: true, enclaveUrl: true, chains: false, delegates: false },
};
