import type { LocalKeyName, LocalKmsRequest } from '../../../shared/crypto/local-kms-guard.ts';
import type { AccessRequest } from './dynamodb.ts';
import type { SandboxIam } from './enforcer.ts';
import { localKeyId, type RolePolicies } from './role-policies.ts';

/**
 * KMS in the sandbox (docs/sandbox-iam.md): the local key wrapper and op_jwt signers ask before
 * each use (shared/crypto/local-kms-guard.ts) with the request the KMS adapters send; the guard
 * authorises it as AWS KMS does, against the calling function's role and the key's own policy
 * (a key policy must allow: by naming the role, or by delegating to IAM through the account root),
 * with KMS's context keys (`kms:EncryptionContext:<key>`, `kms:EncryptionContextKeys`,
 * `kms:SigningAlgorithm`, `kms:MessageType`). A refusal throws what the SDK throws for KMS's
 * AccessDeniedException.
 */

/** The stateful stack's construct id of each key the local stand-ins replace (infra/stateful-stack.ts). */
const KEY_CONSTRUCTS: Readonly<Record<LocalKeyName, string>> = {
  enclave: 'EnclaveWalletKey',
  account: 'AccountAccessKey',
  'op-jwt': 'OpJwtSigningKey',
  'gas-sponsor': 'GasSponsorSigningKey',
};

export function kmsGuard(iam: SandboxIam, policies: RolePolicies, region: string, account: string): (request: LocalKmsRequest) => void {
  const keys = Object.fromEntries(
    Object.entries(KEY_CONSTRUCTS).map(([name, construct]) => {
      const logicalId = Object.keys(policies.keys).find((id) => new RegExp(`^${construct}[0-9A-F]{8}$`).test(id));
      if (!logicalId) throw new Error(`sandbox IAM: the stacks have no ${construct} key (infra/local/iam/role-policies.json)`);
      return [name, { logicalId, arn: `arn:aws:kms:${region}:${account}:key/${localKeyId(logicalId)}`, policy: policies.keys[logicalId]!.policy }];
    }),
  ) as Record<LocalKeyName, { logicalId: string; arn: string; policy: RolePolicies['keys'][string]['policy'] }>;
  return (request) => {
    const key = keys[request.key];
    const refusal = iam.authorize([kmsAccessRequest(request, key.arn)], { name: `key policy of ${key.logicalId}`, document: key.policy, kind: 'kms-key' });
    if (refusal) throw kmsAccessDenied(refusal.message);
  };
}

/** What AWS authorises for the request: its action on the key, with KMS's condition keys. */
export function kmsAccessRequest(request: LocalKmsRequest, keyArn: string): AccessRequest {
  const action = `kms:${request.operation}`;
  switch (request.operation) {
    case 'GenerateDataKey':
    case 'Decrypt': {
      const context = request.encryptionContext;
      const names = Object.keys(context);
      return {
        action,
        resource: keyArn,
        context: {
          ...Object.fromEntries(names.map((name) => [`kms:EncryptionContext:${name}`, context[name]!])),
          ...(names.length ? { 'kms:EncryptionContextKeys': names } : {}),
        },
      };
    }
    case 'Sign':
      return { action, resource: keyArn, context: { 'kms:SigningAlgorithm': request.signingAlgorithm, 'kms:MessageType': request.messageType } };
    case 'GetPublicKey':
      return { action, resource: keyArn, context: {} };
  }
}

/** The error the AWS SDK throws for KMS's AccessDeniedException (its name, fault and status). */
export function kmsAccessDenied(message: string): Error {
  return Object.assign(new Error(message), { name: 'AccessDeniedException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
}
