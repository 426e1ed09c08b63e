import { EVM_CHAIN_CODES } from '../chains/chain-config.ts';

/**
 * The single table's partitions by kind: the `pk` patterns of the items of shared/db/keys.ts
 * (IAM `StringLike` patterns, `*` for the rest of the key). A route declares the kinds it reads
 * and writes (functions/routes.ts `RouteNeeds.table`) and CDK grants its role the item actions
 * only under a `dynamodb:LeadingKeys` condition listing these patterns (infra/constructs/service-function.ts).
 * No two kinds overlap: `LEASE#VENUE#*` does not match `LEASE#VENUEBAL#…`, a sender lease is
 * `LEASE#<EVM chain>#…` (the four codes, never `VENUE`), `APP#*` does not match `APPSECRET#…`.
 * The table has no secondary index, so the table's own partition key is the only leading key.
 */
export const PARTITIONS = {
  /** `APP#<app_id>`: the application (its identity provider, trusted keys, hashed credentials). */
  app: ['APP#*'],
  /** `APPSECRET#<sha256(secret_key)>`: secret-key lookup (account and enclave authentication). */
  appSecret: ['APPSECRET#*'],
  /** `APPKEY#<sha256(api_key)>`: API-key lookup (express authentication). */
  appApiKey: ['APPKEY#*'],
  /** `ACCOUNT#<app_id>#<app_user_id>`. */
  account: ['ACCOUNT#*'],
  /** `WALLET#<wallet_id>`: enclave wallets (sealed private keys). */
  wallet: ['WALLET#*'],
  /** `IDEMP#<app_id>#<sub>#<key>`: Idempotency-Key records (withdraw, create transfer). */
  idempotency: ['IDEMP#*'],
  /** `LEASE#<chain>#<address>`: the EVM senders' nonce leases (shared/chains/sender/sender-lease.ts). */
  senderLease: EVM_CHAIN_CODES.map((chain) => `LEASE#${chain}#*`),
  /** `LEASE#VENUE#<venue>#<app_id>#<app_user_id>`: one venue onboarding at a time. */
  venueLease: ['LEASE#VENUE#*'],
  /** `LEASE#VENUEBAL#<venue>#<app_id>#<app_user_id>`: a transfer step moving a user's venue balance. */
  venueBalanceLease: ['LEASE#VENUEBAL#*'],
  /** `TASKS#<app_id>#<app_user_id>`: transfer tasks with their steps' exactly-once records. */
  tasks: ['TASKS#*'],
  /** `OPJWT#<app_id>#<jti>`: an op_jwt's single use, recorded by the enclave functions that verify op_jwts (issue 21, part 2). */
  opJwt: ['OPJWT#*'],
  /** `POLICY#<app_id>`: the app's signing policy, its versions and CURRENT (issue 22); written by PUT /v2/api/policies only, read by the enclave's v2 sign routes. */
  policy: ['POLICY#*'],
  /** `POLICYUSE#<app_id>#<sub>`: a user's signatures counted by max_usd_per_day (issue 22); written by the enclave's v2 sign routes only. */
  policyUse: ['POLICYUSE#*'],
  /** `POLICYLOG#<app_id>`: the audit log of policy decisions (issue 22); written by the enclave's v2 sign routes, read by GET /v2/api/policies/decisions. */
  policyLog: ['POLICYLOG#*'],
  /** `WEBHOOKS#<app_id>`: the app's webhook endpoints and their signing secrets (issue 24); written by the /webhook-endpoints routes, read by the publisher and the deliverer. */
  webhooks: ['WEBHOOKS#*'],
  /** `WITHDRAWALS#<app_id>#<sub>`: withdrawals to external addresses with their events (issue 24); written by POST /withdraw. */
  withdrawals: ['WITHDRAWALS#*'],
  /** `EVENTS#<app_id>`: the app's event log (issue 24); written by the publisher only, read by GET /events, replay and the deliverer. */
  events: ['EVENTS#*'],
  /** `EVENTID#<app_id>#<event_id>`: where the publisher placed an outbox entry in the log (issue 24); the publisher only. */
  eventPlacement: ['EVENTID#*'],
  /** `SPONSOR#BUDGET#…`: the gas sponsorship budget counters, written by the functions that sponsor gas (issue 21, part 6). */
  sponsorBudget: ['SPONSOR#BUDGET#*'],
  /** `SETUP#DELEGATE#<chain>#<address>`: written by the operator's `npm run sponsor:setup` only; no function. */
  delegateDeployment: ['SETUP#DELEGATE#*'],
  /** `SETUP#TOPUP#<chain>#<member>`: the treasury's top-ups of the gas sponsors, written by `npm run sponsor:setup` (and the sandbox at start) only; no function. */
  sponsorTopUp: ['SETUP#TOPUP#*'],
} as const satisfies Record<string, readonly string[]>;

export type Partition = keyof typeof PARTITIONS;

/** What a function may do in the table: `reads` are read only; `writes` are read and written. */
export interface TableNeeds {
  readonly reads?: readonly Partition[];
  readonly writes?: readonly Partition[];
}

/** The partition patterns of `kinds`, sorted and without repeats. */
export function partitionPatterns(kinds: readonly Partition[]): string[] {
  return [...new Set(kinds.flatMap((kind) => PARTITIONS[kind]))].sort();
}

/** True when `pk` lies in one of `kinds` (the same test IAM's StringLike makes: `*` matches anything). */
export function inPartitions(pk: string, kinds: readonly Partition[]): boolean {
  return partitionPatterns(kinds).some((pattern) => pk.startsWith(pattern.slice(0, -1)));
}
