import { describe, expect, it } from 'vitest';
import {
  type AuthorizationRequest,
  type Decision,
  denialMessage,
  evaluate,
  type PolicyDocument,
  type PolicyStatement,
  type RequestContext,
  UnsupportedPolicyError,
} from '../../infra/local/iam/evaluate.ts';

/**
 * The evaluator against the examples of AWS's docs: IAM User Guide "Policy evaluation logic",
 * "The difference between explicit and implicit denies", "IAM JSON policy elements: Condition
 * operators", "Single-valued vs. multivalued context keys", "Troubleshoot access denied error
 * messages"; DynamoDB "Using IAM policy conditions for fine-grained access control"; KMS "Key
 * policies in AWS KMS", "Default key policy" and "AWS KMS condition keys".
 */
const ACCOUNT = '111122223333';
const ROLE = `arn:aws:iam::${ACCOUNT}:role/orders-api`;
const ROOT = `arn:aws:iam::${ACCOUNT}:root`;
const TABLE = `arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/Orders`;
const KEY = `arn:aws:kms:us-east-1:${ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab`;

const request = (action: string, resource: string, context: RequestContext = {}, principalArn = ROLE): AuthorizationRequest => ({
  principalArn,
  action,
  resource,
  context,
});
const doc = (...Statement: PolicyStatement[]): PolicyDocument => ({ Version: '2012-10-17', Statement });
const identity = (...statements: PolicyStatement[]) => ({ identity: [{ name: 'inline', document: doc(...statements) }] });
const decide = (req: AuthorizationRequest, ...statements: PolicyStatement[]) => evaluate(req, identity(...statements));
const allowed = (decision: Decision) => decision.allowed;

describe('explicit and implicit deny ("The difference between explicit and implicit denies")', () => {
  // The page's example: read-only IAM, minus its reports.
  const policy = doc(
    { Sid: 'AllowGetList', Effect: 'Allow', Action: ['iam:Get*', 'iam:List*'], Resource: '*' },
    { Sid: 'DenyReports', Effect: 'Deny', Action: 'iam:*Report', Resource: '*' },
  );
  const policies = { identity: [{ name: 'ReadOnlyIam', document: policy }] };

  it('an explicit Deny wins over the Allow that also matches', () => {
    expect(evaluate(request('iam:GetOrganizationsAccessReport', '*'), policies)).toEqual({
      allowed: false,
      reason: 'explicit-deny',
      statement: { policy: 'ReadOnlyIam', sid: 'DenyReports', index: 1 },
    });
  });

  it('an Allow decides when no Deny applies, and names its statement', () => {
    expect(evaluate(request('iam:GetRole', '*'), policies)).toEqual({ allowed: true, statement: { policy: 'ReadOnlyIam', sid: 'AllowGetList', index: 0 } });
  });

  it('no applicable statement is an implicit deny', () => {
    expect(evaluate(request('iam:CreatePolicy', '*'), policies)).toEqual({ allowed: false, reason: 'no-identity-allow' });
    expect(evaluate(request('iam:GetRole', '*'), { identity: [] })).toEqual({ allowed: false, reason: 'no-identity-allow' });
  });

  it('a Deny in a second identity policy wins over the first one’s Allow', () => {
    const decision = evaluate(request('dynamodb:DeleteItem', TABLE), {
      identity: [
        { name: 'tables', document: doc({ Effect: 'Allow', Action: 'dynamodb:*', Resource: TABLE }) },
        { name: 'guard', document: doc({ Sid: 'NoDeletes', Effect: 'Deny', Action: 'dynamodb:DeleteItem', Resource: '*' }) },
      ],
    });
    expect(decision).toEqual({ allowed: false, reason: 'explicit-deny', statement: { policy: 'guard', sid: 'NoDeletes', index: 0 } });
  });
});

describe('actions and resources', () => {
  it('matches actions case-insensitively, with * and ? wildcards', () => {
    const get: PolicyStatement = { Effect: 'Allow', Action: 'DynamoDB:getitem', Resource: TABLE };
    expect(allowed(decide(request('dynamodb:GetItem', TABLE), get))).toBe(true);
    const generate: PolicyStatement = { Effect: 'Allow', Action: 'kms:Generate*', Resource: '*' };
    expect(allowed(decide(request('kms:GenerateDataKey', KEY), generate))).toBe(true);
    expect(allowed(decide(request('kms:generatemac', KEY), generate))).toBe(true);
    expect(allowed(decide(request('kms:Decrypt', KEY), generate))).toBe(false);
    const oneChar: PolicyStatement = { Effect: 'Allow', Action: 'dynamodb:?etItem', Resource: TABLE };
    expect(allowed(decide(request('dynamodb:GetItem', TABLE), oneChar))).toBe(true);
    expect(allowed(decide(request('dynamodb:BatchGetItem', TABLE), oneChar))).toBe(false);
  });

  it('NotAction allows everything but the listed actions', () => {
    const statement: PolicyStatement = { Effect: 'Allow', NotAction: ['dynamodb:Scan', 'dynamodb:Delete*'], Resource: TABLE };
    expect(allowed(decide(request('dynamodb:Query', TABLE), statement))).toBe(true);
    expect(allowed(decide(request('dynamodb:Scan', TABLE), statement))).toBe(false);
    expect(allowed(decide(request('dynamodb:DeleteItem', TABLE), statement))).toBe(false);
  });

  it('matches resources case-sensitively; * runs across / ; NotResource excludes', () => {
    expect(allowed(decide(request('dynamodb:Query', TABLE), { Effect: 'Allow', Action: 'dynamodb:Query', Resource: TABLE.toLowerCase() }))).toBe(false);
    const indexes: PolicyStatement = { Effect: 'Allow', Action: 'dynamodb:Query', Resource: `${TABLE}/*` };
    expect(allowed(decide(request('dynamodb:Query', `${TABLE}/index/by-user`), indexes))).toBe(true);
    expect(allowed(decide(request('dynamodb:Query', TABLE), indexes))).toBe(false);
    const notOrders: PolicyStatement = { Effect: 'Allow', Action: 'dynamodb:Query', NotResource: `${TABLE}*` };
    expect(allowed(decide(request('dynamodb:Query', `arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/Audit`), notOrders))).toBe(true);
    expect(allowed(decide(request('dynamodb:Query', `${TABLE}/index/by-user`), notOrders))).toBe(false);
  });
});

describe('identity-based and resource-based policies in one account ("Policy evaluation logic")', () => {
  const QUEUE = `arn:aws:sqs:us-east-1:${ACCOUNT}:orders`;
  const queuePolicy = (...statements: PolicyStatement[]) => ({ name: 'queue-policy', document: doc(...statements), kind: 'other' as const });

  it('an Allow in the resource policy naming the role suffices without any identity Allow', () => {
    const resource = queuePolicy({ Sid: 'RoleSends', Effect: 'Allow', Principal: { AWS: ROLE }, Action: 'sqs:SendMessage', Resource: QUEUE });
    expect(evaluate(request('sqs:SendMessage', QUEUE), { identity: [], resource })).toEqual({
      allowed: true,
      statement: { policy: 'queue-policy', sid: 'RoleSends', index: 0 },
    });
  });

  it('an identity Allow suffices when the resource policy says nothing about the action', () => {
    const resource = queuePolicy({ Effect: 'Allow', Principal: { AWS: ROLE }, Action: 'sqs:GetQueueUrl', Resource: QUEUE });
    expect(evaluate(request('sqs:SendMessage', QUEUE), { ...identity({ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: QUEUE }), resource })).toEqual({
      allowed: true,
      statement: { policy: 'inline', index: 0 },
    });
  });

  it('a resource statement naming another principal, or only the account root, does not allow by itself', () => {
    const other = queuePolicy({ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${ACCOUNT}:role/other` }, Action: 'sqs:*' });
    expect(evaluate(request('sqs:SendMessage', QUEUE), { identity: [], resource: other })).toEqual({ allowed: false, reason: 'no-identity-allow' });
    const root = queuePolicy({ Effect: 'Allow', Principal: { AWS: ROOT }, Action: 'sqs:*' });
    expect(evaluate(request('sqs:SendMessage', QUEUE), { identity: [], resource: root })).toEqual({ allowed: false, reason: 'no-identity-allow' });
  });

  it('Principal "*" and a statement without Resource apply to the resource', () => {
    const everyone = queuePolicy({ Effect: 'Allow', Principal: '*', Action: 'sqs:SendMessage' });
    expect(allowed(evaluate(request('sqs:SendMessage', QUEUE), { identity: [], resource: everyone }))).toBe(true);
  });

  it('a Deny in the resource policy wins over an identity Allow, also when it names the account', () => {
    const resource = queuePolicy({ Sid: 'NoPurge', Effect: 'Deny', Principal: { AWS: ACCOUNT }, Action: 'sqs:PurgeQueue', Resource: QUEUE });
    const decision = evaluate(request('sqs:PurgeQueue', QUEUE), { ...identity({ Effect: 'Allow', Action: 'sqs:*', Resource: '*' }), resource });
    expect(decision).toEqual({ allowed: false, reason: 'explicit-deny', statement: { policy: 'queue-policy', sid: 'NoPurge', index: 0 } });
  });
});

describe('KMS key policies ("Key policies in AWS KMS", "Default key policy")', () => {
  const keyPolicy = (...statements: PolicyStatement[]) => ({ name: 'key-policy', document: doc(...statements), kind: 'kms-key' as const });
  // The default key policy's first statement: the account, that is IAM, decides.
  const enableIam: PolicyStatement = { Sid: 'Enable IAM User Permissions', Effect: 'Allow', Principal: { AWS: ROOT }, Action: 'kms:*', Resource: '*' };
  const iamDecrypt = identity({ Sid: 'Decrypt', Effect: 'Allow', Action: 'kms:Decrypt', Resource: KEY });

  it('root delegation allows with an IAM Allow, and refuses without one', () => {
    expect(evaluate(request('kms:Decrypt', KEY), { ...iamDecrypt, resource: keyPolicy(enableIam) })).toEqual({
      allowed: true,
      statement: { policy: 'inline', sid: 'Decrypt', index: 0 },
    });
    expect(evaluate(request('kms:Decrypt', KEY), { identity: [], resource: keyPolicy(enableIam) })).toEqual({ allowed: false, reason: 'no-identity-allow' });
  });

  it('a key-policy statement naming the role allows by itself', () => {
    const useKey: PolicyStatement = {
      Sid: 'Allow use of the key',
      Effect: 'Allow',
      Principal: { AWS: ROLE },
      Action: ['kms:Encrypt', 'kms:Decrypt'],
      Resource: '*',
    };
    expect(evaluate(request('kms:Decrypt', KEY), { identity: [], resource: keyPolicy(useKey) })).toEqual({
      allowed: true,
      statement: { policy: 'key-policy', sid: 'Allow use of the key', index: 0 },
    });
  });

  it('Principal "*" with a condition on aws:PrincipalArn allows by itself', () => {
    const anyRoleOfTheService: PolicyStatement = {
      Effect: 'Allow',
      Principal: '*',
      Action: 'kms:Decrypt',
      Resource: '*',
      Condition: { ArnLike: { 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/orders-*` } },
    };
    const resource = keyPolicy(anyRoleOfTheService);
    expect(allowed(evaluate(request('kms:Decrypt', KEY, { 'aws:PrincipalArn': ROLE }), { identity: [], resource }))).toBe(true);
    const stranger = `arn:aws:iam::${ACCOUNT}:role/billing`;
    expect(evaluate(request('kms:Decrypt', KEY, { 'aws:PrincipalArn': stranger }, stranger), { identity: [], resource })).toEqual({
      allowed: false,
      reason: 'no-resource-allow',
    });
  });

  it('an IAM Allow without a key-policy Allow is refused: no-resource-allow', () => {
    const onlyAdmin = keyPolicy({ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${ACCOUNT}:role/KeyAdmin` }, Action: 'kms:*', Resource: '*' });
    expect(evaluate(request('kms:Decrypt', KEY), { ...iamDecrypt, resource: onlyAdmin })).toEqual({ allowed: false, reason: 'no-resource-allow' });
    // Root delegation of other actions only: the key policy still does not allow Decrypt.
    const adminOnly = keyPolicy({ ...enableIam, Action: ['kms:Describe*', 'kms:List*'] });
    expect(evaluate(request('kms:Decrypt', KEY), { ...iamDecrypt, resource: adminOnly })).toEqual({ allowed: false, reason: 'no-resource-allow' });
  });

  it('a Deny in the key policy wins over a key-policy Allow naming the role', () => {
    const resource = keyPolicy(
      { Effect: 'Allow', Principal: { AWS: ROLE }, Action: 'kms:*', Resource: '*' },
      { Sid: 'NoDeletion', Effect: 'Deny', Principal: '*', Action: 'kms:ScheduleKeyDeletion', Resource: '*' },
    );
    expect(evaluate(request('kms:ScheduleKeyDeletion', KEY), { identity: [], resource })).toEqual({
      allowed: false,
      reason: 'explicit-deny',
      statement: { policy: 'key-policy', sid: 'NoDeletion', index: 1 },
    });
  });
});

describe('DynamoDB fine-grained access ("Using IAM policy conditions for fine-grained access control")', () => {
  const fenced: PolicyStatement = {
    Sid: 'OwnPartitions',
    Effect: 'Allow',
    Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
    Resource: TABLE,
    Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['APP#alpha#*', 'CONFIG'] }, Null: { 'dynamodb:LeadingKeys': 'false' } },
  };
  const get = (keys: readonly string[] | string | undefined) =>
    decide(request('dynamodb:BatchGetItem', TABLE, keys === undefined ? {} : { 'dynamodb:LeadingKeys': keys }), fenced);

  it('allows a batch whose every partition key matches', () => {
    expect(get(['APP#alpha#u1', 'APP#alpha#u2', 'CONFIG'])).toEqual({ allowed: true, statement: { policy: 'inline', sid: 'OwnPartitions', index: 0 } });
    expect(allowed(get('APP#alpha#u1'))).toBe(true); // a single-valued key is a one-element set
  });

  it('refuses a batch with one key outside the patterns', () => {
    expect(get(['APP#alpha#u1', 'APP#beta#u1'])).toEqual({ allowed: false, reason: 'no-identity-allow' });
  });

  it('refuses a request without the key: ForAllValues alone would hold, Null "false" does not', () => {
    expect(get(undefined)).toEqual({ allowed: false, reason: 'no-identity-allow' });
    expect(get([])).toEqual({ allowed: false, reason: 'no-identity-allow' });
    const withoutNull = { ...fenced, Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['APP#alpha#*'] } } };
    expect(allowed(decide(request('dynamodb:Scan', TABLE), { ...withoutNull, Action: 'dynamodb:Scan' }))).toBe(true);
  });

  it('reads context key names case-insensitively', () => {
    expect(allowed(decide(request('dynamodb:GetItem', TABLE, { 'DynamoDB:leadingkeys': ['CONFIG'] }), fenced))).toBe(true);
  });
});

describe('KMS encryption context ("AWS KMS condition keys")', () => {
  const contextKeys: PolicyStatement = {
    Effect: 'Allow',
    Action: 'kms:GenerateDataKey',
    Resource: KEY,
    Condition: { 'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['purpose', 'app_id', 'wallet_id'] } },
  };
  const generate = (context: RequestContext, ...statements: PolicyStatement[]) => decide(request('kms:GenerateDataKey', KEY, context), ...statements);

  it('ForAllValues:StringEquals on kms:EncryptionContextKeys allows a listed subset and forbids an unlisted key', () => {
    expect(allowed(generate({ 'kms:EncryptionContextKeys': ['purpose', 'app_id', 'wallet_id'] }, contextKeys))).toBe(true);
    expect(allowed(generate({ 'kms:EncryptionContextKeys': ['purpose'] }, contextKeys))).toBe(true);
    expect(allowed(generate({ 'kms:EncryptionContextKeys': ['purpose', 'user_id'] }, contextKeys))).toBe(false);
  });

  it('ForAnyValue is false when the key is absent or empty', () => {
    const anyPurpose: PolicyStatement = { ...contextKeys, Condition: { 'ForAnyValue:StringEquals': { 'kms:EncryptionContextKeys': 'purpose' } } };
    expect(allowed(generate({}, anyPurpose))).toBe(false);
    expect(allowed(generate({ 'kms:EncryptionContextKeys': [] }, anyPurpose))).toBe(false);
    expect(allowed(generate({ 'kms:EncryptionContextKeys': ['app_id', 'purpose'] }, anyPurpose))).toBe(true);
    expect(allowed(generate({ 'kms:EncryptionContextKeys': ['app_id'] }, anyPurpose))).toBe(false);
  });

  it('StringEquals on kms:EncryptionContext:purpose needs that pair in the context', () => {
    const purpose: PolicyStatement = { ...contextKeys, Condition: { StringEquals: { 'kms:EncryptionContext:purpose': 'enclave-wallet' } } };
    expect(allowed(generate({ 'kms:EncryptionContext:purpose': 'enclave-wallet' }, purpose))).toBe(true);
    expect(allowed(generate({ 'kms:EncryptionContext:purpose': 'Enclave-Wallet' }, purpose))).toBe(false);
    expect(allowed(generate({ 'kms:EncryptionContext:purpose': 'account-access-keys' }, purpose))).toBe(false);
    expect(allowed(generate({}, purpose))).toBe(false);
  });

  it('all operators and all keys of a statement must hold', () => {
    const both: PolicyStatement = {
      ...contextKeys,
      Condition: {
        StringEquals: { 'kms:EncryptionContext:purpose': 'enclave-wallet' },
        Null: { 'kms:EncryptionContext:app_id': 'false', 'kms:EncryptionContext:wallet_id': 'false' },
      },
    };
    const full = { 'kms:EncryptionContext:purpose': 'enclave-wallet', 'kms:EncryptionContext:app_id': 'a1', 'kms:EncryptionContext:wallet_id': 'w1' };
    expect(allowed(generate(full, both))).toBe(true);
    expect(allowed(generate({ ...full, 'kms:EncryptionContext:purpose': 'webhook-secret' }, both))).toBe(false);
    const { 'kms:EncryptionContext:wallet_id': _, ...noWallet } = full;
    expect(allowed(generate(noWallet, both))).toBe(false);
  });
});

describe('condition operators ("IAM JSON policy elements: Condition operators")', () => {
  const on = (Condition: PolicyStatement['Condition'], Effect: 'Allow' | 'Deny' = 'Allow'): PolicyStatement => ({
    Effect,
    Action: 'dynamodb:Query',
    Resource: TABLE,
    Condition,
  });
  const query = (context: RequestContext, ...statements: PolicyStatement[]) => decide(request('dynamodb:Query', TABLE, context), ...statements);
  const allowAll: PolicyStatement = { Effect: 'Allow', Action: '*', Resource: '*' };

  it('ArnLike on aws:PrincipalArn with a * wildcard, segment by segment', () => {
    const roles = on({ ArnLike: { 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/service/orders-*` } });
    expect(allowed(query({ 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/service/orders-api-Fn1A2B` }, roles))).toBe(true);
    expect(allowed(query({ 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/service/billing-api` }, roles))).toBe(false);
    expect(allowed(query({}, roles))).toBe(false);
    // A * in the account component does not reach into the next one.
    const anyAccount = on({ ArnLike: { 'aws:PrincipalArn': 'arn:aws:iam::*:role/orders-api' } });
    expect(allowed(query({ 'aws:PrincipalArn': ROLE }, anyAccount))).toBe(true);
    expect(allowed(query({ 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:x:role/orders-api` }, anyAccount))).toBe(false);
    // ArnNotLike: true of a non-matching ARN and of an absent key.
    const notOrders = on({ ArnNotLike: { 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/orders-*` } });
    expect(allowed(query({ 'aws:PrincipalArn': ROLE }, notOrders))).toBe(false);
    expect(allowed(query({ 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/billing` }, notOrders))).toBe(true);
    expect(allowed(query({}, notOrders))).toBe(true);
  });

  it('a Deny under StringNotEqualsIfExists applies when the key is absent or different, not when it equals', () => {
    const outsideVpc = on({ StringNotEqualsIfExists: { 'aws:SourceVpc': 'vpc-1a2b3c4d' } }, 'Deny');
    expect(query({}, allowAll, outsideVpc)).toEqual({ allowed: false, reason: 'explicit-deny', statement: { policy: 'inline', index: 1 } });
    expect(allowed(query({ 'aws:SourceVpc': 'vpc-99999999' }, allowAll, outsideVpc))).toBe(false);
    expect(allowed(query({ 'aws:SourceVpc': 'vpc-1a2b3c4d' }, allowAll, outsideVpc))).toBe(true);
  });

  it('negated operators hold for an absent key; positive ones only with IfExists', () => {
    expect(allowed(query({}, on({ StringNotEquals: { 'aws:SourceVpc': 'vpc-1' } })))).toBe(true);
    expect(allowed(query({}, on({ StringNotLike: { 'aws:SourceVpc': 'vpc-*' } })))).toBe(true);
    expect(allowed(query({}, on({ NumericNotEquals: { 's3:max-keys': 10 } })))).toBe(true);
    expect(allowed(query({}, on({ StringEquals: { 'aws:SourceVpc': 'vpc-1' } })))).toBe(false);
    expect(allowed(query({}, on({ StringEqualsIfExists: { 'aws:SourceVpc': 'vpc-1' } })))).toBe(true);
    expect(allowed(query({ 'aws:SourceVpc': 'vpc-2' }, on({ StringEqualsIfExists: { 'aws:SourceVpc': 'vpc-1' } })))).toBe(false);
    expect(allowed(query({}, on({ 'ForAnyValue:StringEqualsIfExists': { 'aws:TagKeys': 'team' } })))).toBe(true);
  });

  it('Null "true" holds iff the key is absent', () => {
    const untagged = on({ Null: { 'aws:ResourceTag/owner': 'true' } });
    expect(allowed(query({}, untagged))).toBe(true);
    expect(allowed(query({ 'aws:ResourceTag/owner': 'alice' }, untagged))).toBe(false);
    const noMfaDeny = on({ Null: { 'aws:MultiFactorAuthAge': true } }, 'Deny');
    expect(allowed(query({}, allowAll, noMfaDeny))).toBe(false);
    expect(allowed(query({ 'aws:MultiFactorAuthAge': '300' }, allowAll, noMfaDeny))).toBe(true);
  });

  it('values of one key are OR-ed; strings compare exactly, IgnoreCase and Like as named', () => {
    const regions = on({ StringEquals: { 'aws:RequestedRegion': ['eu-west-1', 'us-east-1'] } });
    expect(allowed(query({ 'aws:RequestedRegion': 'us-east-1' }, regions))).toBe(true);
    expect(allowed(query({ 'aws:RequestedRegion': 'US-EAST-1' }, regions))).toBe(false);
    expect(allowed(query({ 'aws:RequestedRegion': 'US-EAST-1' }, on({ StringEqualsIgnoreCase: { 'aws:RequestedRegion': 'us-east-1' } })))).toBe(true);
    expect(allowed(query({ 'aws:RequestedRegion': 'us-east-1' }, on({ StringNotEqualsIgnoreCase: { 'aws:RequestedRegion': 'US-EAST-1' } })))).toBe(false);
    const like = on({ StringLike: { 'aws:userid': 'AROA?????:orders-*' } });
    expect(allowed(query({ 'aws:userid': 'AROA12345:orders-api' }, like))).toBe(true);
    expect(allowed(query({ 'aws:userid': 'AROA1234:orders-api' }, like))).toBe(false);
  });

  it('Bool and numeric operators compare booleans and numbers given as JSON or text', () => {
    // The S3 example that refuses requests without TLS.
    const insecure = on({ Bool: { 'aws:SecureTransport': false } }, 'Deny');
    expect(allowed(query({ 'aws:SecureTransport': 'false' }, allowAll, insecure))).toBe(false);
    expect(allowed(query({ 'aws:SecureTransport': 'true' }, allowAll, insecure))).toBe(true);
    expect(allowed(query({}, on({ Bool: { 'aws:SecureTransport': 'true' } })))).toBe(false);
    expect(allowed(query({}, on({ BoolIfExists: { 'aws:SecureTransport': 'true' } })))).toBe(true);
    // The page's example: at most 10 keys per ListBucket.
    const maxKeys = on({ NumericLessThanEquals: { 's3:max-keys': '10' } });
    expect(allowed(query({ 's3:max-keys': '10' }, maxKeys))).toBe(true);
    expect(allowed(query({ 's3:max-keys': '11' }, maxKeys))).toBe(false);
    expect(allowed(query({ 's3:max-keys': 'ten' }, maxKeys))).toBe(false);
    expect(allowed(query({ n: '2.5' }, on({ NumericGreaterThan: { n: 2 }, NumericLessThan: { n: 3 } })))).toBe(true);
    expect(allowed(query({ n: '3' }, on({ NumericGreaterThanEquals: { n: 3 }, NumericEquals: { n: [1, 3] } })))).toBe(true);
    expect(allowed(query({ n: '3' }, on({ NumericNotEquals: { n: [1, 3] } })))).toBe(false);
  });

  it('ArnEquals takes wildcards like ArnLike; ArnNotEquals negates', () => {
    expect(allowed(query({ 'aws:SourceArn': TABLE }, on({ ArnEquals: { 'aws:SourceArn': `arn:aws:dynamodb:*:${ACCOUNT}:table/Orders` } })))).toBe(true);
    expect(allowed(query({ 'aws:SourceArn': TABLE }, on({ ArnNotEquals: { 'aws:SourceArn': TABLE } })))).toBe(false);
  });

  it('ForAllValues with a negated operator: no request value may match', () => {
    const noAdminTag = on({ 'ForAllValues:StringNotLike': { 'aws:TagKeys': 'admin*' } });
    expect(allowed(query({ 'aws:TagKeys': ['team', 'cost-center'] }, noAdminTag))).toBe(true);
    expect(allowed(query({ 'aws:TagKeys': ['team', 'admin-level'] }, noAdminTag))).toBe(false);
  });
});

describe('what the evaluator does not know throws UnsupportedPolicyError', () => {
  const on = (statement: Partial<PolicyStatement> & Record<string, unknown>) => () =>
    decide(request('dynamodb:Query', TABLE, { 'aws:CurrentTime': '2024-01-01T00:00:00Z' }), {
      Effect: 'Allow',
      Action: '*',
      Resource: '*',
      ...statement,
    } as PolicyStatement);

  it('an unknown operator, named in the message', () => {
    expect(on({ Condition: { DateGreaterThan: { 'aws:CurrentTime': '2020-01-01T00:00:00Z' } } })).toThrow(UnsupportedPolicyError);
    expect(on({ Condition: { DateGreaterThan: { 'aws:CurrentTime': '2020-01-01T00:00:00Z' } } })).toThrow(/DateGreaterThan/);
    expect(on({ Condition: { StringEqualz: { k: 'v' } } })).toThrow(/StringEqualz/);
  });

  it('an unknown set prefix, Null with IfExists, an unknown element', () => {
    expect(on({ Condition: { 'ForSomeValues:StringEquals': { k: 'v' } } })).toThrow(/ForSomeValues/);
    expect(on({ Condition: { NullIfExists: { k: 'true' } } })).toThrow(UnsupportedPolicyError);
    expect(on({ NotPrincipal: { AWS: ROLE } })).toThrow(/NotPrincipal/);
  });

  it('throws even when the statement would not apply to the request', () => {
    expect(on({ Action: 's3:GetObject', Condition: { IpAddress: { 'aws:SourceIp': '203.0.113.0/24' } } })).toThrow(/IpAddress/);
  });

  it('policy variables in a Resource or a condition value', () => {
    expect(on({ Resource: `arn:aws:s3:::bucket/\${aws:username}/*` })).toThrow(/policy variables/);
    expect(on({ Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [`\${www.amazon.com:user_id}`] } } })).toThrow(UnsupportedPolicyError);
  });

  it('a multivalued key under an operator without a set prefix', () => {
    const plain: PolicyStatement = { Effect: 'Allow', Action: '*', Resource: '*', Condition: { StringLike: { 'dynamodb:LeadingKeys': 'APP#*' } } };
    expect(() => decide(request('dynamodb:Query', TABLE, { 'dynamodb:LeadingKeys': ['APP#1', 'APP#2'] }), plain)).toThrow(/ForAllValues/);
  });
});

describe('denialMessage ("Troubleshoot access denied error messages")', () => {
  it('an implicit deny of a DynamoDB Query, the role shown as its STS session', () => {
    const req = request('dynamodb:Query', TABLE);
    const decision = decide(req, { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: TABLE });
    expect(decision.allowed).toBe(false);
    if (decision.allowed) return;
    expect(denialMessage(req, decision)).toBe(
      `User: arn:aws:sts::${ACCOUNT}:assumed-role/orders-api/orders-api is not authorized to perform: dynamodb:Query on resource: ${TABLE} because no identity-based policy allows the dynamodb:Query action`,
    );
  });

  it('an explicit deny names the kind of policy that denied; a role path is not part of the session ARN', () => {
    const pathRole = `arn:aws:iam::${ACCOUNT}:role/service/orders-api`;
    const req = request('dynamodb:Query', TABLE, {}, pathRole);
    const identityDeny = decide(req, { Effect: 'Deny', Action: 'dynamodb:*', Resource: '*' });
    expect(identityDeny.allowed).toBe(false);
    if (identityDeny.allowed) return;
    expect(denialMessage(req, identityDeny)).toBe(
      `User: arn:aws:sts::${ACCOUNT}:assumed-role/orders-api/orders-api is not authorized to perform: dynamodb:Query on resource: ${TABLE} with an explicit deny in an identity-based policy`,
    );
    const resourceDeny = evaluate(req, {
      identity: [],
      resource: { name: 'table-policy', kind: 'other', document: doc({ Effect: 'Deny', Principal: '*', Action: 'dynamodb:Query' }) },
    });
    expect(resourceDeny.allowed).toBe(false);
    if (resourceDeny.allowed) return;
    expect(denialMessage(req, resourceDeny)).toMatch(/ with an explicit deny in a resource-based policy$/);
    expect(denialMessage(req, resourceDeny, 'service control')).toMatch(/ with an explicit deny in a service control policy$/);
  });

  it('a key policy that does not allow: no resource-based policy allows', () => {
    const req = request('kms:Decrypt', KEY);
    const decision = evaluate(req, {
      ...identity({ Effect: 'Allow', Action: 'kms:Decrypt', Resource: KEY }),
      resource: { name: 'key-policy', kind: 'kms-key', document: doc({ Effect: 'Allow', Principal: { AWS: ROOT }, Action: 'kms:Describe*', Resource: '*' }) },
    });
    expect(decision).toEqual({ allowed: false, reason: 'no-resource-allow' });
    if (decision.allowed) return;
    expect(denialMessage(req, decision)).toBe(
      `User: arn:aws:sts::${ACCOUNT}:assumed-role/orders-api/orders-api is not authorized to perform: kms:Decrypt on resource: ${KEY} because no resource-based policy allows the kms:Decrypt action`,
    );
  });
});
