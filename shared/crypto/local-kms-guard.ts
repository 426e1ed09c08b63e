import type { EncryptionContext } from './key-wrapper.ts';

/**
 * Where the local stand-ins for KMS (local-key-wrapper.ts, local-op-jwt-signer.ts) ask, before
 * they use a key, whether KMS would let the caller: the sandbox installs a guard that evaluates the
 * calling function's role and the key's policy (infra/local/iam/, docs/sandbox-iam.md) for exactly
 * the request the KMS adapter would send (kms-key-wrapper.ts, kms-op-jwt-signer.ts), and throws
 * what KMS throws on a refusal. Without a guard (a test of the adapter alone) nothing is asked.
 * In AWS the local stand-ins are never built.
 */
export type LocalKeyName = 'enclave' | 'account' | 'op-jwt' | 'gas-sponsor';

export type LocalKmsRequest =
  | { readonly key: LocalKeyName; readonly operation: 'GenerateDataKey' | 'Decrypt'; readonly encryptionContext: EncryptionContext }
  | { readonly key: LocalKeyName; readonly operation: 'Sign'; readonly signingAlgorithm: 'ECDSA_SHA_256'; readonly messageType: 'RAW' }
  | { readonly key: LocalKeyName; readonly operation: 'GetPublicKey' };

let guard: ((request: LocalKmsRequest) => void) | undefined;

/** The sandbox's guard (one per process), or none. */
export function setLocalKmsGuard(next: ((request: LocalKmsRequest) => void) | undefined): void {
  guard = next;
}

/** Throws as KMS would when the guard refuses the request. */
export function checkLocalKms(request: LocalKmsRequest): void {
  guard?.(request);
}
