/**
 * Every key of the single table, in one module. Items are addressed as `ENTITY#id`.
 *
 * | entity            | pk                                   | sk            |
 * |-------------------|--------------------------------------|---------------|
 * | application       | APP#<app_id>                         | APP           |
 * | app secret lookup | APPSECRET#<sha256(secret_key)>       | APPSECRET     |
 * | app api key lookup| APPKEY#<sha256(api_key)>             | APPKEY        |
 * | account           | ACCOUNT#<app_id>#<app_user_id>       | ACCOUNT       |
 * | enclave wallet    | WALLET#<wallet_id>                   | WALLET        |
 * | local app set     | LOCAL#APPS                           | LOCAL#APPS    |  (local runtime only)
 * | idempotency key   | IDEMP#<app_id>#<sub>#<key>           | IDEMP         |
 * | sender lease      | LEASE#<chain>#<address>              | LEASE         |  (EVM nonce order)
 * | venue setup lease | LEASE#VENUE#<venue>#<app_id>#<app_user_id> | LEASE   |  (one venue onboarding at a time)
 * | venue balance lock| LEASE#VENUEBAL#<venue>#<app_id>#<app_user_id> | LEASE |  (one transfer step moving a user's venue balance; built in shared/transfers/steps/venue-lock.ts, venueBalanceLease, so it is not in every bundle: bench:bundles)
 * | transfer task     | TASKS#<app_id>#<app_user_id>         | TASK#<task_id> |  (UUIDv7: sk order = creation order; shared/transfers/task.ts)
 * | venue payout claim| TASKS#<app_id>#<app_user_id>         | PAYOUT#<chain>#<tx_hash>#<log_index> |  (the withdrawal that a venue's on-chain payout completed, one holder per log; built in shared/transfers/steps/payout-claim.ts, payoutClaimKey, beside the steps that take it)
 * | sponsorship budget | SPONSOR#BUDGET#<app_id>#<yyyy-mm-dd> | APP, USER#<sub> |  (sponsored transactions counted per UTC day; TTL two days after)
 * | delegate deployment | SETUP#DELEGATE#<chain>#<address>   | SETUP         |  (the signed deployment transaction, recorded before broadcast: npm run sponsor:setup)
 * | sponsor top-up    | SETUP#TOPUP#<chain>#<member address> | SETUP        |  (the treasury's transfer to a gas sponsor of the pool, recorded before broadcast, deleted once included: npm run sponsor:setup, the sandbox at start)
 * | op_jwt use        | OPJWT#<app_id>#<jti>                 | OPJWT         |  (first use of an op_jwt, `ttl` = its exp: shared/auth/op-jwt-replay.ts; the enclave's roles alone write the OPJWT# prefix)
 * | signing policy    | POLICY#<app_id>                      | V#<version, 10 digits>, CURRENT |  (every PUT kept as a version; CURRENT holds the latest and is the conditional write that numbers them: shared/enclave/policy-store.ts)
 * | policy usage      | POLICYUSE#<app_id>#<sub>             | POLICYUSE     |  (a user's signatures of the rolling 24 h for max_usd_per_day, one item with a `rev` for optimistic concurrency: shared/enclave/policy-usage.ts)
 * | policy decisions  | POLICYLOG#<app_id>                   | <ISO time>#<random> |  (the audit log of policy decisions, `ttl` 90 days: shared/enclave/policy-usage.ts)
 * | webhook endpoint  | WEBHOOKS#<app_id>                    | EP#<endpoint_id> |  (an app's webhook endpoints, one partition per app: GET lists them with one Query; shared/events/endpoints.ts)
 * | webhook slots     | WEBHOOKS#<app_id>                    | SLOTS         |  (the set of the app's endpoint ids, whose size holds MAX_ENDPOINTS_PER_APP under concurrent creates: shared/events/endpoints.ts)
 * | event log         | EVENTS#<app_id>                      | <seq, 12 digits>, HEAD |  (the app's events, gap-free `seq`, `ttl` 30 days: shared/events/log.ts)
 * | withdrawal        | WITHDRAWALS#<app_id>#<sub>           | WD#<withdrawal_id> |  (a withdrawal to an external address with its events, `ttl` 30 days: shared/withdrawals/withdrawal-record.ts)
 * | event placement   | EVENTID#<app_id>#<event_id>          | EVENTID       |  (the seq an outbox entry was given in the log, so a redelivered stream record never logs it twice: shared/events/log.ts)
 */
export const keys = {
  app: (appId: string) => ({ pk: `APP#${appId}`, sk: 'APP' }),
  appSecret: (secretHash: string) => ({ pk: `APPSECRET#${secretHash}`, sk: 'APPSECRET' }),
  appApiKey: (apiKeyHash: string) => ({ pk: `APPKEY#${apiKeyHash}`, sk: 'APPKEY' }),
  account: (appId: string, appUserId: string) => ({ pk: `ACCOUNT#${appId}#${appUserId}`, sk: 'ACCOUNT' }),
  wallet: (walletId: string) => ({ pk: `WALLET#${walletId}`, sk: 'WALLET' }),
  /** The app ids the local runtime seeded last time, so apps dropped from APPS_FILE are removed. */
  localApps: () => ({ pk: 'LOCAL#APPS', sk: 'LOCAL#APPS' }),
  idempotency: (appId: string, sub: string, key: string) => ({ pk: `IDEMP#${appId}#${sub}#${key}`, sk: 'IDEMP' }),
  senderLease: (chain: string, address: string) => ({ pk: `LEASE#${chain}#${address.toLowerCase()}`, sk: 'LEASE' }),
  /** Held while a user's account or trading setup at one venue is being created (init-perp-dex, init-perp-dex-trading). */
  venueLease: (venue: string, appId: string, appUserId: string) => ({ pk: `LEASE#VENUE#${venue}#${appId}#${appUserId}`, sk: 'LEASE' }),
  /** A transfer task with its steps' exactly-once records (one item; GET /tasks queries the partition newest first). */
  task: (appId: string, appUserId: string, taskId: string) => ({ pk: `TASKS#${appId}#${appUserId}`, sk: `TASK#${taskId}` }),
  tasksOf: (appId: string, appUserId: string) => `TASKS#${appId}#${appUserId}`,
  /** Sponsored transactions counted for an app (`sub` unset) or one of its users on one UTC day (shared/withdrawals/sponsorship-budget.ts). */
  sponsorshipBudget: (appId: string, day: string, sub?: string) => ({ pk: `SPONSOR#BUDGET#${appId}#${day}`, sk: sub === undefined ? 'APP' : `USER#${sub}` }),
  /** The SponsoredExecutor's deployment transaction on one chain (shared/chains/evm/delegate-deployment.ts). */
  delegateDeployment: (chain: string, address: string) => ({ pk: `SETUP#DELEGATE#${chain}#${address.toLowerCase()}`, sk: 'SETUP' }),
  /** The treasury's top-up of one pool sponsor, until it is included (shared/chains/evm/sponsor-top-up.ts). */
  sponsorTopUp: (chain: string, member: string) => ({ pk: `SETUP#TOPUP#${chain}#${member.toLowerCase()}`, sk: 'SETUP' }),
  /** An op_jwt's first use (its `jti`), kept until the token expires: a second use is a replay. */
  opJwtUse: (appId: string, jti: string) => ({ pk: `${OP_JWT_USE_PREFIX}${appId}#${jti}`, sk: 'OPJWT' }),
  /** The app's signing policy as it is now (its version number included). */
  currentPolicy: (appId: string) => ({ pk: `POLICY#${appId}`, sk: 'CURRENT' }),
  /** One kept version of the app's signing policy; zero-padded so sk order is version order. */
  policyVersion: (appId: string, version: number) => ({ pk: `POLICY#${appId}`, sk: `V#${String(version).padStart(10, '0')}` }),
  /** A user's signatures counted by max_usd_per_day in the rolling 24 h (one item per app and op_jwt `sub`). */
  policyUse: (appId: string, sub: string) => ({ pk: `POLICYUSE#${appId}#${sub}`, sk: 'POLICYUSE' }),
  /** One policy decision in the app's audit log; sk order is time order. */
  policyDecision: (appId: string, sk: string) => ({ pk: `POLICYLOG#${appId}`, sk }),
  policyDecisionsOf: (appId: string) => `POLICYLOG#${appId}`,
  /** One webhook endpoint of an app (issue 24). */
  webhookEndpoint: (appId: string, endpointId: string) => ({ pk: `WEBHOOKS#${appId}`, sk: `EP#${endpointId}` }),
  webhookEndpointsOf: (appId: string) => `WEBHOOKS#${appId}`,
  /** The ids of the app's endpoints (a string set): the conditional write that holds the per-app limit. */
  webhookEndpointSlots: (appId: string) => ({ pk: `WEBHOOKS#${appId}`, sk: 'SLOTS' }),
  /** A withdrawal to an external address and its events (issue 24). */
  withdrawal: (appId: string, sub: string, withdrawalId: string) => ({ pk: `WITHDRAWALS#${appId}#${sub}`, sk: `WD#${withdrawalId}` }),
  /** One event of the app's log; zero-padded so sk order is seq order. */
  event: (appId: string, seq: number) => ({ pk: `EVENTS#${appId}`, sk: String(seq).padStart(12, '0') }),
  eventsOf: (appId: string) => `EVENTS#${appId}`,
  /** The highest seq the app's log has given (so a log emptied by its TTL never reuses a seq). */
  eventHead: (appId: string) => ({ pk: `EVENTS#${appId}`, sk: 'HEAD' }),
  /** Where an outbox entry was placed in the log (its seq). */
  eventPlacement: (appId: string, eventId: string) => ({ pk: `EVENTID#${appId}#${eventId}`, sk: 'EVENTID' }),
};

/** Leading key of the op_jwt use records, for IAM `dynamodb:LeadingKeys` fences (`OPJWT#<app_id>#*`). */
export const OP_JWT_USE_PREFIX = 'OPJWT#';
