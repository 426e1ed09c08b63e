import { Stack } from 'aws-cdk-lib';
import { AccountRootPrincipal, PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import type { RouteNeeds, SigningKeyOperation, WrappingKeyOperation } from '../../functions/routes.ts';

/**
 * Who may use which KMS key, and for what: one module read by every stack, so the key policies
 * (stateful stack) and the roles' paths and IAM grants (service stacks) cannot drift apart.
 *
 * The keys live in the stateful stack and the roles in the service stacks. A key policy naming
 * the roles by reference would make each stack import from the other (a cycle), so the key policy
 * names them by ARN pattern instead, built from what both sides know at synth without a reference:
 *
 * - every function's role has the IAM path `/perp-wallet/<stateful stack name>/<function id>/`
 *   (functionRolePath; the role's name stays CloudFormation's, so a role can be replaced), and
 *   the function ids are the static route and step tables (functions/routes.ts, transfer-steps.ts);
 * - the account root may administer each key (describe, enable/disable, policy, rotation, tags,
 *   deletion) but not use it: no Decrypt, GenerateDataKey, Sign, Encrypt, ReEncrypt or CreateGrant;
 * - each cryptographic operation is allowed to principals of this account whose `aws:PrincipalArn`
 *   (for a Lambda's session: its role's ARN, path included) is the role of a function whose
 *   `needs` list that operation (ArnLike, `…/<function id>/*`), and that also hold an IAM grant for
 *   it (the account-root principal delegates to IAM, so both must allow). `aws:PrincipalArn`
 *   cannot be set by the caller, unlike `aws:PrincipalTag` (iam:TagRole, STS session tags);
 * - a wrapping key's Decrypt and GenerateDataKey further require the encryption context the code
 *   uses for that key's purpose (`purpose` fixed, the other keys present, no others), in the key
 *   policy and in the IAM grant alike: a data key wrapped for one purpose cannot be unwrapped
 *   through the other key or under another purpose.
 *
 * What this does not stop: an account administrator who can edit key policies (kms:PutKeyPolicy
 * must stay with the root, or KMS refuses the policy as a lockout) or create a role under one of
 * these paths and grant it the key (iam:CreateRole with iam:PutRolePolicy). Both are audited in
 * CloudTrail; keep those rights with a small admin role (docs/deploy.md, "Keys").
 */
export type KeyPurpose = 'enclave-wallet' | 'account-access-keys' | 'webhook-secret' | 'op-jwt' | 'gas-sponsor';
export type KeyOperation = WrappingKeyOperation | SigningKeyOperation;

/** The `needs` field that lists each key's operations. */
export const KEY_NEED = {
  'enclave-wallet': 'enclaveWalletKey',
  'account-access-keys': 'accountAccessKey',
  'webhook-secret': 'webhookSecretKey',
  'op-jwt': 'opJwtKey',
  'gas-sponsor': 'sponsorKey',
} as const satisfies Record<KeyPurpose, keyof RouteNeeds>;

/** A function that may use keys: its id (the construct id of its ServiceFunction) and its needs. */
export interface KeyUser {
  readonly id: string;
  readonly needs: RouteNeeds;
}

/** The first segment of every function role's path. */
export const ROLE_PATH_ROOT = 'perp-wallet';

/** The IAM path of the role of function `functionId` whose keys live in stack `statefulStackName`. */
export function functionRolePath(statefulStackName: string, functionId: string): string {
  return `/${ROLE_PATH_ROOT}/${statefulStackName}/${functionId}/`;
}

/** The operations of the key of `purpose` that `needs` lists. */
export function keyOperationsOf(needs: RouteNeeds, purpose: KeyPurpose): readonly KeyOperation[] {
  return needs[KEY_NEED[purpose]] ?? [];
}

/** The ARN pattern of the roles of `functionId` built against the stateful stack of `scope`. */
export function functionRoleArnPattern(scope: IConstruct, functionId: string): string {
  const stack = Stack.of(scope);
  return `arn:${stack.partition}:iam::${stack.account}:role${functionRolePath(stack.stackName, functionId)}*`;
}

/**
 * The encryption context each wrapping purpose is used with (shared/wallets/wallet-record.ts
 * walletEncryptionContext, shared/accounts/account-record.ts accountEncryptionContext, and the
 * webhook endpoints' signing secrets, shared/events/endpoints.ts: `{ purpose: 'webhook-secret',
 * app_id, endpoint_id }`). `webhook-secret` shares the account key with `account-access-keys`
 * (one key, two purposes, WRAPPING_KEY_PURPOSES): the purpose in the context, required by the
 * key policy and the IAM grant alike, keeps each purpose's users to their own sealed data.
 */
export const WRAPPING_CONTEXTS = {
  'enclave-wallet': { purpose: 'enclave-wallet', otherKeys: ['app_id', 'wallet_id'] },
  'account-access-keys': { purpose: 'account-access-keys', otherKeys: ['app_id', 'user_id'] },
  'webhook-secret': { purpose: 'webhook-secret', otherKeys: ['app_id', 'endpoint_id'] },
} as const satisfies Record<WrappingPurpose, { purpose: string; otherKeys: readonly string[] }>;

type WrappingPurpose = Exclude<KeyPurpose, 'op-jwt' | 'gas-sponsor'>;
const isSigningPurpose = (purpose: KeyPurpose): purpose is 'op-jwt' | 'gas-sponsor' => purpose === 'op-jwt' || purpose === 'gas-sponsor';

/** What op_jwt and sponsor-token signing send (shared/crypto/kms-op-jwt-signer.ts): ES256 over the raw signing input. */
const SIGNING_CONDITIONS = { StringEquals: { 'kms:SigningAlgorithm': 'ECDSA_SHA_256', 'kms:MessageType': 'RAW' } };

/** Conditions an IAM grant and the key policy both put on `operation` of the key of `purpose`. */
export function keyUseConditions(purpose: KeyPurpose, operation: KeyOperation): Record<string, Record<string, unknown>> {
  if (isSigningPurpose(purpose)) return operation === 'Sign' ? SIGNING_CONDITIONS : {};
  const { purpose: value, otherKeys } = WRAPPING_CONTEXTS[purpose];
  return {
    StringEquals: { 'kms:EncryptionContext:purpose': value },
    Null: Object.fromEntries(otherKeys.map((key) => [`kms:EncryptionContext:${key}`, 'false'])),
    'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['purpose', ...otherKeys] },
  };
}

/**
 * Key administration without use. Not kms:Create* (CreateGrant would let an admin grant itself
 * Decrypt) and not kms:Get* beyond the policy, rotation status and (for the signing key, whose
 * public half is published in every app's trusted_keys; the sponsor key's, in the platform
 * application's) the public key.
 */
const ADMIN_ACTIONS = [
  'kms:CreateAlias',
  'kms:UpdateAlias',
  'kms:DeleteAlias',
  'kms:Describe*',
  'kms:List*',
  'kms:GetKeyPolicy',
  'kms:PutKeyPolicy',
  'kms:GetKeyRotationStatus',
  'kms:EnableKeyRotation',
  'kms:DisableKeyRotation',
  'kms:RotateKeyOnDemand',
  'kms:EnableKey',
  'kms:DisableKey',
  'kms:UpdateKeyDescription',
  'kms:RevokeGrant',
  'kms:RetireGrant',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:ScheduleKeyDeletion',
  'kms:CancelKeyDeletion',
];

const OPERATIONS: Record<KeyPurpose, readonly KeyOperation[]> = {
  'enclave-wallet': ['GenerateDataKey', 'Decrypt'],
  'account-access-keys': ['GenerateDataKey', 'Decrypt'],
  'webhook-secret': ['GenerateDataKey', 'Decrypt'],
  'op-jwt': ['Sign', 'GetPublicKey'],
  'gas-sponsor': ['Sign', 'GetPublicKey'],
};

/**
 * The key policy of the key used for `purposes` in the stack of `scope`: administration by the
 * account; each operation of each purpose only by the roles of `users` whose needs list it for
 * that purpose (aws:PrincipalArn), with that purpose's conditions. An operation no user needs gets no statement: nobody may use it.
 * `operators`: role ARNs (exact, no wildcard) that may use every operation too, for the operator
 * scripts that sign as the gas sponsor (`npm run sponsor:setup`, docs/deploy.md).
 */
export function keyPolicy(
  scope: IConstruct,
  purposes: KeyPurpose | readonly KeyPurpose[],
  users: readonly KeyUser[],
  operators: readonly string[] = [],
): PolicyDocument {
  const account = new AccountRootPrincipal();
  const ids = users.map((user) => user.id);
  if (new Set(ids).size !== ids.length) throw new Error(`key users: function ids must be unique (they name the roles' paths), got ${ids.join(', ')}`);
  const all: readonly KeyPurpose[] = typeof purposes === 'string' ? [purposes] : purposes;
  const [first] = all;
  if (!first || (all.some(isSigningPurpose) && all.length > 1)) throw new Error(`key policy: one signing purpose, or wrapping purposes, got ${all.join(', ')}`);
  const statements = [
    new PolicyStatement({
      sid: 'AdministerButNotUse',
      principals: [account],
      actions: isSigningPurpose(first) ? [...ADMIN_ACTIONS, 'kms:GetPublicKey'] : ADMIN_ACTIONS,
      resources: ['*'],
    }),
    // The first purpose keeps the plain Sids (`DecryptOnlyByNamedRoles`); a key's further purposes add theirs (`DecryptWebhookSecretOnlyByNamedRoles`).
    ...all.flatMap((purpose, index) => useStatements(scope, purpose, users, operators, index === 0 ? '' : sidPart(purpose))),
  ];
  return new PolicyDocument({ statements });
}

/** `webhook-secret` -> `WebhookSecret`. */
const sidPart = (purpose: KeyPurpose) => purpose.replace(/(^|-)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());

/** One statement per operation of `purpose` some user needs: only those users' roles, with the purpose's conditions. */
function useStatements(scope: IConstruct, purpose: KeyPurpose, users: readonly KeyUser[], operators: readonly string[], sidInfix: string): PolicyStatement[] {
  const account = new AccountRootPrincipal();
  return OPERATIONS[purpose].flatMap((operation) => {
    const roles = [
      ...users.filter((user) => keyOperationsOf(user.needs, purpose).includes(operation)).map((user) => functionRoleArnPattern(scope, user.id)),
      ...operators,
    ];
    if (roles.length === 0) return [];
    return [
      new PolicyStatement({
        sid: `${operation}${sidInfix}OnlyByNamedRoles`,
        principals: [account],
        actions: [`kms:${operation}`],
        resources: ['*'],
        conditions: { ...keyUseConditions(purpose, operation), ArnLike: { 'aws:PrincipalArn': roles } },
      }),
    ];
  });
}
