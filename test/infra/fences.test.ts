import { App, type CfnResource, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES, type RouteNeeds } from '../../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../../functions/transfer-steps.ts';
import { functionRolePath } from '../../infra/constructs/key-use.ts';
import type { ServiceStacks } from '../../infra/services-stack.ts';
import { StatefulStack } from '../../infra/stateful-stack.ts';
import { keys } from '../../shared/db/keys.ts';
import { PARTITIONS, type Partition } from '../../shared/db/partitions.ts';
import { buildStacks } from './support/stacks.ts';

/**
 * The fences of issue 21 (parts 4, 5 and the sponsor's key), read from the synthesized templates
 * without bundling (the IAM is the same; test/infra/stacks.test.ts synthesises the bundles):
 * every role's table statements carry dynamodb:LeadingKeys for exactly its route's partitions,
 * the key policies name roles by ARN (no aws:PrincipalTag), and only the sponsoring functions may
 * sign with the gas sponsor's key. Each role also gets its negative cases: a sample key of every
 * partition it must not write (or read) is refused by a small evaluator of its statements.
 */

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };
type Resources = Record<string, { Type?: string; Properties?: Record<string, unknown> }>;

const FUNCTIONS: readonly { id: string; needs: RouteNeeds }[] = [...ROUTES, ...TRANSFER_STEP_FUNCTIONS];
const READ = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'];
const WRITE = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'];
const ACCOUNT_ID = '123456789012';

/** One real partition key of each kind, built as the code builds it (shared/db/keys.ts and its neighbours). */
const SAMPLE_KEYS: Record<Partition, string> = {
  app: keys.app('acme').pk,
  appSecret: keys.appSecret('ab12').pk,
  appApiKey: keys.appApiKey('cd34').pk,
  account: keys.account('acme', 'user-1').pk,
  wallet: keys.wallet('w-1').pk,
  idempotency: keys.idempotency('acme', 'user-1', 'k-1').pk,
  senderLease: keys.senderLease('ARB', '0xAbC').pk,
  venueLease: keys.venueLease('venue_b', 'acme', 'user-1').pk,
  venueBalanceLease: 'LEASE#VENUEBAL#venue_b#acme#user-1',
  tasks: keys.tasksOf('acme', 'user-1'),
  opJwt: 'OPJWT#acme#0b4c6a53-2f0e-4c57-9d5e-6f1b7f0a9c11',
  policy: keys.currentPolicy('acme').pk,
  policyUse: keys.policyUse('acme', 'user-1').pk,
  policyLog: keys.policyDecisionsOf('acme'),
  webhooks: keys.webhookEndpoint('acme', 'we_0199a3c4-5b6e-7f80-9a1b-2c3d4e5f6a7b').pk,
  events: keys.eventsOf('acme'),
  withdrawals: keys.withdrawal('acme', 'user-1', 'wd_0192').pk,
  eventPlacement: keys.eventPlacement('acme', 'evt_0199a3c4-5b6e-7f80-9a1b-2c3d4e5f6a7b').pk,
  sponsorBudget: 'SPONSOR#BUDGET#acme#2026-11-25',
  delegateDeployment: keys.delegateDeployment('ETH', '0xAbC').pk,
  sponsorTopUp: keys.sponsorTopUp('ETH', '0xAbC').pk,
};
const KINDS = Object.keys(PARTITIONS) as Partition[];

let stateful: StatefulStack;
let services: ServiceStacks;
let statefulResources: Resources;
/** Every statement of every function role, by function id. */
const statementsOf = new Map<string, Statement[]>();
/** Every function role's ARN as IAM would show it (account 123456789012, the role's path, a generated name). */
const roleArnOf = new Map<string, string>();

const logicalId = (construct: IConstruct) => Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnResource);

beforeAll(() => {
  ({ stateful, services } = buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { prefix: 'Fence' }));
  statefulResources = Template.fromStack(stateful).toJSON().Resources as Resources;
  const templates = new Map(services.stacks.map((stack) => [stack, Template.fromStack(stack).toJSON().Resources as Resources]));
  for (const { id } of FUNCTIONS) {
    const fn = services.functions.get(id);
    if (!fn) throw new Error(`no function ${id}`);
    const resources = templates.get(Stack.of(fn))!;
    const roleLogicalId = logicalId(fn.role);
    const statements: Statement[] = [];
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      const props = resource.Properties as { PolicyDocument: { Statement: Statement[] }; Roles: Array<{ Ref: string }> };
      if (props.Roles.some((role) => role.Ref === roleLogicalId)) statements.push(...props.PolicyDocument.Statement);
    }
    statementsOf.set(id, statements);
    const path = resources[roleLogicalId]?.Properties?.Path as string;
    roleArnOf.set(id, `arn:aws:iam::${ACCOUNT_ID}:role${path}${Stack.of(fn).stackName}-${id}Role-ABCDEF123456`);
  }
}, 60_000);

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);
const glob = (pattern: string, value: string) => new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`).test(value);
const escapeRegExp = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/** The table's ARN as the service stacks import it. */
const isTableResource = (resource: unknown) => JSON.stringify(resource).includes(logicalId(stateful.table));

/**
 * Would `statements` allow `action` on the table item whose partition key is `pk`? Allow
 * statements only (there are no Deny ones); a condition this evaluator does not know fails the test.
 */
function allowsItem(statements: readonly Statement[], action: string, pk: string): boolean {
  return statements.some((statement) => {
    if (statement.Effect !== 'Allow' || !asArray(statement.Action).some((a) => a === action || a === 'dynamodb:*' || a === '*')) return false;
    if (!asArray(statement.Resource).some((r) => r === '*' || isTableResource(r))) return false;
    return Object.entries(statement.Condition ?? {}).every(([operator, values]) => {
      if (operator === 'ForAllValues:StringLike') return asArray(values['dynamodb:LeadingKeys']).some((p) => glob(String(p), pk));
      if (operator === 'Null') return values['dynamodb:LeadingKeys'] === 'false';
      throw new Error(`unexpected condition ${operator} on a table statement`);
    });
  });
}

const tableStatements = (id: string) => statementsOf.get(id)!.filter((s) => asArray(s.Action).some((a) => String(a).startsWith('dynamodb:')));
const writesOf = (needs: RouteNeeds) => new Set<Partition>(needs.table?.writes ?? []);
const readsOf = (needs: RouteNeeds) => new Set<Partition>([...(needs.table?.reads ?? []), ...(needs.table?.writes ?? [])]);
const writers = (kind: Partition) =>
  new Set(FUNCTIONS.filter(({ id }) => WRITE.some((a) => allowsItem(statementsOf.get(id)!, a, SAMPLE_KEYS[kind]))).map((f) => f.id));

describe('table fence (dynamodb:LeadingKeys)', () => {
  it('samples every partition kind, and each sample lies in its own kind only', () => {
    for (const kind of KINDS) {
      const matching = KINDS.filter((other) => PARTITIONS[other].some((pattern) => glob(pattern, SAMPLE_KEYS[kind])));
      expect(matching, kind).toEqual([kind]);
    }
  });

  it('gives every table statement of every role a LeadingKeys condition, and no role Scan or table-wide access', () => {
    let statements = 0;
    for (const { id } of FUNCTIONS) {
      for (const statement of tableStatements(id)) {
        statements++;
        expect(statement.Condition, id).toEqual({
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': expect.any(Array) },
          Null: { 'dynamodb:LeadingKeys': 'false' },
        });
        for (const action of asArray(statement.Action)) expect([...READ, ...WRITE], `${id} ${action}`).toContain(action);
      }
    }
    expect(statements).toBeGreaterThan(FUNCTIONS.length);
  });

  it('lets each role read and write exactly the partitions its route declares, and refuses every other partition (the negative cases)', () => {
    for (const { id, needs } of FUNCTIONS) {
      const statements = statementsOf.get(id)!;
      for (const kind of KINDS) {
        const pk = SAMPLE_KEYS[kind];
        for (const action of READ) expect(allowsItem(statements, action, pk), `${id} ${action} ${pk}`).toBe(readsOf(needs).has(kind));
        for (const action of WRITE) expect(allowsItem(statements, action, pk), `${id} ${action} ${pk}`).toBe(writesOf(needs).has(kind));
      }
      // And nothing outside the known partitions (a made-up prefix, an empty key).
      for (const pk of ['OTHER#x', '', 'APPX#1'])
        for (const action of [...READ, ...WRITE]) expect(allowsItem(statements, action, pk), `${id} ${pk}`).toBe(false);
    }
  });

  it("lets only the enclave's wallet-creating and signing functions write wallets and op_jwt uses, and no function write application items", () => {
    const enclave = (ids: string[]) => new Set(ids);
    expect(writers('wallet')).toEqual(enclave(['CreateWalletV2', 'SignDataV2', 'SignMessageV2', 'SignTransactionV2', 'SignAuthorizationV2', 'CreateWalletV1']));
    expect(writers('opJwt')).toEqual(enclave(['SignDataV2', 'SignMessageV2', 'SignTransactionV2', 'SignAuthorizationV2']));
    for (const kind of ['app', 'appSecret', 'appApiKey', 'delegateDeployment', 'sponsorTopUp'] as const) expect(writers(kind), kind).toEqual(new Set());
    for (const id of writers('wallet')) expect(ROUTES.find((route) => route.id === id)?.service, id).toBe('enclave');
    // Readers of wallets: the enclave alone (v1 sign reads, v2 writes).
    const walletReaders = FUNCTIONS.filter(({ id }) => allowsItem(statementsOf.get(id)!, 'dynamodb:GetItem', SAMPLE_KEYS.wallet)).map(({ id }) => id);
    for (const id of walletReaders) expect(ROUTES.find((route) => route.id === id)?.service, id).toBe('enclave');
  });

  it("lets only PUT /v2/api/policies write an app's signing policy, and only the enclave read it (issue 22)", () => {
    expect(writers('policy')).toEqual(new Set(['PutPolicy']));
    const readers = FUNCTIONS.filter(({ id }) => allowsItem(statementsOf.get(id)!, 'dynamodb:GetItem', SAMPLE_KEYS.policy)).map(({ id }) => id);
    expect(new Set(readers)).toEqual(
      new Set(['PutPolicy', 'GetPolicy', 'EvaluatePolicy', 'SignDataV2', 'SignMessageV2', 'SignTransactionV2', 'SignAuthorizationV2']),
    );
  });

  it("lets only the enclave's v2 sign routes write the max_usd_per_day counters and the decision log, which GET /v2/api/policies/decisions reads (issue 22)", () => {
    const signers = new Set(['SignDataV2', 'SignMessageV2', 'SignTransactionV2', 'SignAuthorizationV2']);
    expect(writers('policyUse')).toEqual(signers);
    expect(writers('policyLog')).toEqual(signers);
    const logReaders = FUNCTIONS.filter(({ id }) => allowsItem(statementsOf.get(id)!, 'dynamodb:Query', SAMPLE_KEYS.policyLog)).map(({ id }) => id);
    expect(new Set(logReaders)).toEqual(new Set([...signers, 'GetPolicyDecisions']));
  });

  it('reads application items only where the code authenticates (by secret key, by API key, or the steps and the sponsor by app id)', () => {
    const readers = (kind: Partition) =>
      new Set(FUNCTIONS.filter(({ id }) => allowsItem(statementsOf.get(id)!, 'dynamodb:GetItem', SAMPLE_KEYS[kind])).map((f) => f.id));
    const service = (name: string) => ROUTES.filter((route) => route.service === name && route.needs.table).map((route) => route.id);
    // The express identity-provider lookup authenticates with the app's secret key (X-SERVICE-SECRET-KEY), the other express routes with its API key.
    const bySecret = ['GetIdentityProvider'];
    expect(readers('appApiKey')).toEqual(new Set(service('express').filter((id) => !bySecret.includes(id))));
    expect(readers('appSecret')).toEqual(new Set([...service('account'), ...service('enclave'), ...bySecret]));
    expect(readers('app')).toEqual(
      new Set([
        ...service('account'),
        ...service('enclave'),
        ...service('express'),
        ...['TransferWithdrawalStep', 'TransferBridgeStep', 'TransferDepositStep'],
      ]),
    );
    expect(readers('app').has('TransferSettle')).toBe(false);
  });

  it('fences the roles the review named: GetTask, TransferSettle, CreateAccount and the steps', () => {
    const only = (id: string, kinds: Partition[]) =>
      expect(
        KINDS.filter((kind) => WRITE.some((action) => allowsItem(statementsOf.get(id)!, action, SAMPLE_KEYS[kind]))),
        id,
      ).toEqual(kinds);
    only('GetTask', ['tasks']);
    only('ResumeTask', ['tasks']);
    only('TransferSettle', ['venueBalanceLease', 'tasks']);
    only('CreateAccount', ['account']);
    only('CreateTransfer', ['idempotency', 'tasks']);
    only('Withdraw', ['idempotency', 'senderLease', 'withdrawals', 'sponsorBudget']);
    only('TransferWithdrawalStep', ['senderLease', 'venueBalanceLease', 'tasks']);
    only('TransferBridgeStep', ['senderLease', 'tasks', 'sponsorBudget']);
    only('TransferDepositStep', ['senderLease', 'venueBalanceLease', 'tasks', 'sponsorBudget']);
    for (const id of ['GetAccount', 'SignWithWallet', 'GetPerp', 'ListTasks', 'ExpressSignData', 'SignDataV1', 'GetIdentityProvider']) only(id, []);
    expect(writers('sponsorBudget')).toEqual(new Set(['Withdraw', 'TransferBridgeStep', 'TransferDepositStep']));
  });
});

/** A key policy's statements with their ArnLike patterns resolved for account 123456789012 in partition aws. */
function keyPolicyOf(key: IConstruct): Statement[] {
  const policy = statefulResources[logicalId(key)]!.Properties!.KeyPolicy as { Statement: Statement[] };
  const resolved = JSON.stringify(policy.Statement).replace(
    /\{"Fn::Join":\["",\["arn:",\{"Ref":"AWS::Partition"\},":iam::",\{"Ref":"AWS::AccountId"\},":role([^"]*)"\]\]\}/g,
    `"arn:aws:iam::${ACCOUNT_ID}:role$1"`,
  );
  return JSON.parse(resolved) as Statement[];
}

/** Function ids whose role ARN the key policy of `key` lets use `operation` (the account-root statements' aws:PrincipalArn). */
function keyPolicyUsers(key: IConstruct, operation: string): Set<string> {
  const statements = keyPolicyOf(key).filter((s) => asArray(s.Action).includes(`kms:${operation}`));
  return new Set(
    FUNCTIONS.filter(({ id }) =>
      statements.some((s) => asArray(s.Condition?.ArnLike?.['aws:PrincipalArn']).some((pattern) => glob(String(pattern), roleArnOf.get(id)!))),
    ).map((f) => f.id),
  );
}

/** Function ids whose role's own policy allows `kms:<operation>` on `key`. */
function identityPolicyUsers(key: IConstruct, operation: string): Set<string> {
  return new Set(
    FUNCTIONS.filter(({ id }) =>
      statementsOf.get(id)!.some((s) => asArray(s.Action).includes(`kms:${operation}`) && JSON.stringify(s.Resource).includes(logicalId(key))),
    ).map((f) => f.id),
  );
}

describe('key policies name roles (aws:PrincipalArn)', () => {
  it('mention aws:PrincipalTag nowhere, and no role carries a key-use tag', () => {
    expect(JSON.stringify(statefulResources)).not.toContain('PrincipalTag');
    for (const stack of services.stacks) expect(JSON.stringify(Template.fromStack(stack).toJSON())).not.toMatch(/PrincipalTag|perp-wallet\.kms\./);
  });

  it("let each operation be used exactly by the roles whose route needs it, by the role's ARN under its path, in the key policy and the role's own policy alike", () => {
    const operations = {
      enclaveKey: ['GenerateDataKey', 'Decrypt'],
      accountKey: ['GenerateDataKey', 'Decrypt'],
      opJwtKey: ['Sign', 'GetPublicKey'],
      sponsorKey: ['Sign', 'GetPublicKey'],
    };
    // The account key serves two purposes (account access keys, webhook signing secrets): its users are both needs' (each purpose's own
    // context, and the events stack's deliverer: events.test.ts).
    const need = {
      enclaveKey: ['enclaveWalletKey'],
      accountKey: ['accountAccessKey', 'webhookSecretKey'],
      opJwtKey: ['opJwtKey'],
      sponsorKey: ['sponsorKey'],
    } as const;
    for (const [name, ops] of Object.entries(operations) as Array<[keyof typeof need, string[]]>) {
      for (const operation of ops) {
        const expected = new Set(
          FUNCTIONS.filter(({ needs }) => need[name].some((field) => (needs[field] as readonly string[] | undefined)?.includes(operation))).map((f) => f.id),
        );
        expect(expected.size, `${name} ${operation}`).toBeGreaterThan(0);
        expect(keyPolicyUsers(stateful[name], operation), `${name} ${operation} key policy`).toEqual(expected);
        expect(identityPolicyUsers(stateful[name], operation), `${name} ${operation} role policy`).toEqual(expected);
      }
    }
  });

  it("put each role under /perp-wallet/<stateful stack>/<function id>/, so no role matches another function's pattern", () => {
    for (const { id } of FUNCTIONS) expect(roleArnOf.get(id), id).toContain(`:role${functionRolePath(stateful.stackName, id)}`);
    // A function whose id starts like another's (SignDataV1 / SignDataV2) is not caught by the other's pattern: the path ends in "/".
    expect(keyPolicyUsers(stateful.enclaveKey, 'Decrypt').has('SignDataV1')).toBe(false);
  });
});

describe("the gas sponsor's own key", () => {
  const SPONSORS = new Set(['Withdraw', 'TransferBridgeStep', 'TransferDepositStep']);

  it('is a separate ECC_NIST_P256 signing key, retained', () => {
    expect(logicalId(stateful.sponsorKey)).not.toBe(logicalId(stateful.opJwtKey));
    expect(statefulResources[logicalId(stateful.sponsorKey)]).toMatchObject({
      Type: 'AWS::KMS::Key',
      DeletionPolicy: 'Retain',
      Properties: { KeySpec: 'ECC_NIST_P256', KeyUsage: 'SIGN_VERIFY' },
    });
  });

  it('may be signed with only by the functions that sponsor gas (withdraw, the bridge and deposit steps)', () => {
    expect(keyPolicyUsers(stateful.sponsorKey, 'Sign')).toEqual(SPONSORS);
    expect(identityPolicyUsers(stateful.sponsorKey, 'Sign')).toEqual(SPONSORS);
    expect(SPONSORS.has('TransferWithdrawalStep')).toBe(false);
  });

  it('cannot be signed with by any op_jwt signer that does not sponsor (express, GetPerp, SignWithWallet, …)', () => {
    const opJwtSigners = keyPolicyUsers(stateful.opJwtKey, 'Sign');
    expect(opJwtSigners.size).toBeGreaterThanOrEqual(12);
    for (const id of ['GetPerp', 'SignWithWallet', 'ExpressSignData', 'GetOrCreateExpressWallet', 'InitPerpDex', 'TransferWithdrawalStep']) {
      expect(opJwtSigners.has(id), id).toBe(true);
      expect(keyPolicyUsers(stateful.sponsorKey, 'Sign').has(id), id).toBe(false);
      expect(identityPolicyUsers(stateful.sponsorKey, 'Sign').has(id), id).toBe(false);
      expect(identityPolicyUsers(stateful.sponsorKey, 'GetPublicKey').has(id), id).toBe(false);
    }
  });

  it('is given to the sponsoring functions as SPONSOR_SIGNER=kms and SPONSOR_KMS_KEY_ID, to nobody else', () => {
    for (const { id, needs } of FUNCTIONS) {
      const fn = services.functions.get(id)!;
      const env = (Template.fromStack(Stack.of(fn)).toJSON().Resources as Resources)[logicalId(fn.lambda)]!.Properties!.Environment as {
        Variables: Record<string, unknown>;
      };
      expect(env.Variables.SPONSOR_SIGNER, id).toBe(needs.sponsorKey ? 'kms' : undefined);
      expect(env.Variables.SPONSOR_KMS_KEY_ID !== undefined, id).toBe(SPONSORS.has(id));
    }
  });

  it('gives SPONSOR_POOL_SIZE (-c sponsorPoolSize) to the sponsoring functions only, sets none by default, and refuses a size out of 1-64 at synth', () => {
    const variables = (stacks: ServiceStacks, id: string) => {
      const fn = stacks.functions.get(id)!;
      return (
        (Template.fromStack(Stack.of(fn)).toJSON().Resources as Resources)[logicalId(fn.lambda)]!.Properties!.Environment as {
          Variables: Record<string, unknown>;
        }
      ).Variables;
    };
    for (const { id } of FUNCTIONS) expect(variables(services, id).SPONSOR_POOL_SIZE, id).toBeUndefined();
    const sized = buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { prefix: 'Pool', services: { sponsorPoolSize: 16 } }).services;
    for (const { id, needs } of FUNCTIONS) expect(variables(sized, id).SPONSOR_POOL_SIZE, id).toBe(needs.sponsorKey ? '16' : undefined);
    expect(() => buildStacks(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), { prefix: 'Big', services: { sponsorPoolSize: 65 } })).toThrow(
      /SPONSOR_POOL_SIZE: must be a whole number, 1 to 64/,
    );
  });

  it('names an operator role (sponsor:setup) only when asked, by its exact ARN, on the sponsor key alone', () => {
    const operator = 'arn:aws:iam::123456789012:role/ops/sponsor-setup';
    const stack = new StatefulStack(new App(), 'WithOperator', { sponsorOperatorRoleArns: [operator] });
    const resources = Template.fromStack(stack).toJSON().Resources as Resources;
    const policy = (key: IConstruct) => JSON.stringify(resources[logicalId(key)]!.Properties!.KeyPolicy);
    expect(policy(stack.sponsorKey)).toContain(operator);
    for (const key of [stack.opJwtKey, stack.enclaveKey, stack.accountKey]) expect(policy(key)).not.toContain(operator);
    expect(JSON.stringify(statefulResources)).not.toContain(':role/ops/');
    expect(() => new StatefulStack(new App(), 'Wild', { sponsorOperatorRoleArns: ['arn:aws:iam::123456789012:role/*'] })).toThrow(/exact, no wildcard/);
  });
});
