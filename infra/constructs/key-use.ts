import { AccountRootPrincipal, PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { SigningKeyOperation, WrappingKeyOperation } from '../../functions/routes.ts';

/**
 * Who may use which KMS key, and for what: one module read by every stack, so the key policies
 * (stateful stack) and the role tags and IAM grants (service stacks) cannot drift apart.
 *
 * The keys live in the stateful stack and the roles in the service stacks; a key policy naming
 * the roles would make each stack import from the other (a cycle), and a key policy naming role
 * ARNs by string would break on every role replacement. So the key policy names no role:
 *
 * - the account root may administer the key (describe, enable/disable, policy, rotation, tags,
 *   deletion) but not use it: no Decrypt, GenerateDataKey, Sign, Encrypt, ReEncrypt or CreateGrant;
 * - each cryptographic operation is allowed to principals of this account that carry the role
 *   tag `keyUseTag(purpose, operation)` = `allow` (aws:PrincipalTag), set by ServiceFunction on the
 *   role of a route that declares that operation in its `needs`, and that also hold an IAM grant
 *   for it (the account-root principal delegates to IAM, so both must allow);
 * - a wrapping key's Decrypt and GenerateDataKey further require the encryption context the code
 *   uses for that key's purpose (`purpose` fixed, the other keys present, no others), in the key
 *   policy and in the IAM grant alike: a data key wrapped for one purpose cannot be unwrapped
 *   through the other key or under another purpose.
 *
 * What this does not stop: an account administrator who can edit key policies (kms:PutKeyPolicy
 * must stay with the root, or KMS refuses the policy as a lockout) or tag roles (iam:TagRole). Both
 * are audited in CloudTrail; keep those rights with a small admin role.
 */
export type KeyPurpose = 'enclave-wallet' | 'account-access-keys' | 'op-jwt';
export type KeyOperation = WrappingKeyOperation | SigningKeyOperation;

/**
 * The encryption context each wrapping key is used with (shared/wallets/wallet-record.ts
 * walletEncryptionContext, shared/accounts/account-record.ts accountEncryptionContext).
 */
export const WRAPPING_CONTEXTS = {
  'enclave-wallet': { purpose: 'enclave-wallet', otherKeys: ['app_id', 'wallet_id'] },
  'account-access-keys': { purpose: 'account-access-keys', otherKeys: ['app_id', 'user_id'] },
} as const satisfies Record<Exclude<KeyPurpose, 'op-jwt'>, { purpose: string; otherKeys: readonly string[] }>;

/** What op_jwt signing sends (shared/crypto/kms-op-jwt-signer.ts): ES256 over the raw signing input. */
const SIGNING_CONDITIONS = { StringEquals: { 'kms:SigningAlgorithm': 'ECDSA_SHA_256', 'kms:MessageType': 'RAW' } };

export const KEY_USE_TAG_VALUE = 'allow';

/** IAM role tag that lets a role use `operation` on the key of `purpose`, e.g. `perp-wallet.kms.enclave-wallet.Decrypt`. */
export function keyUseTag(purpose: KeyPurpose, operation: KeyOperation): string {
  return `perp-wallet.kms.${purpose}.${operation}`;
}

/** Conditions an IAM grant and the key policy both put on `operation` of the key of `purpose`. */
export function keyUseConditions(purpose: KeyPurpose, operation: KeyOperation): Record<string, Record<string, unknown>> {
  if (purpose === 'op-jwt') return operation === 'Sign' ? SIGNING_CONDITIONS : {};
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
 * public half is published in every app's trusted_keys) the public key.
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
  'op-jwt': ['Sign', 'GetPublicKey'],
};

/** The key policy of the key of `purpose`: administration by the account, use by tagged roles only. */
export function keyPolicy(purpose: KeyPurpose): PolicyDocument {
  const account = new AccountRootPrincipal();
  const statements = [
    new PolicyStatement({
      sid: 'AdministerButNotUse',
      principals: [account],
      actions: purpose === 'op-jwt' ? [...ADMIN_ACTIONS, 'kms:GetPublicKey'] : ADMIN_ACTIONS,
      resources: ['*'],
    }),
    ...OPERATIONS[purpose].map((operation) => {
      const conditions = keyUseConditions(purpose, operation);
      return new PolicyStatement({
        sid: `${operation}OnlyByTaggedRoles`,
        principals: [account],
        actions: [`kms:${operation}`],
        resources: ['*'],
        conditions: { ...conditions, StringEquals: { ...conditions.StringEquals, [`aws:PrincipalTag/${keyUseTag(purpose, operation)}`]: KEY_USE_TAG_VALUE } },
      });
    }),
  ];
  return new PolicyDocument({ statements });
}
