import { KMSClient } from '@aws-sdk/client-kms';
import {
  type KeyProviderConfig,
  loadKeyProviderConfig,
  loadOpJwtSignerConfig,
  loadSponsorSignerConfig,
  loadTeeUrl,
  type OpJwtSignerConfig,
  type SponsorSignerConfig,
} from '../config.ts';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import { KmsKeyWrapper } from '../crypto/kms-key-wrapper.ts';
import { KmsOpJwtSigner } from '../crypto/kms-op-jwt-signer.ts';
import { LocalKeyWrapper } from '../crypto/local-key-wrapper.ts';
import { LOCAL_SPONSOR_KEY_FILE, LocalOpJwtSigner } from '../crypto/local-op-jwt-signer.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { HttpWalletEnclave } from '../wallets/enclave-client.ts';

/**
 * The adapters that differ between AWS and the local sandbox, chosen once from configuration
 * (STYLE: ports and adapters, never `if (local)` in business code). One KMS client per container,
 * built only by a route that wraps keys or signs op_jwt.
 */
let kms: KMSClient | undefined;
const kmsClient = () => (kms ??= new KMSClient({}));

/** `name` names the local master key file (`DATA_DIR/keys/<name>.key`). */
export function createKeyWrapper(config: KeyProviderConfig, name: 'enclave' | 'account'): KeyWrapper {
  return config.KEY_PROVIDER === 'kms' ? new KmsKeyWrapper(kmsClient(), config.KMS_KEY_ID) : new LocalKeyWrapper(config.DATA_DIR, name);
}

export function createOpJwtSigner(config: OpJwtSignerConfig): OpJwtSigner {
  return config.OP_JWT_SIGNER === 'kms' ? new KmsOpJwtSigner(kmsClient(), config.OP_JWT_KMS_KEY_ID) : new LocalOpJwtSigner(config.DATA_DIR);
}

/** The gas sponsor's signer: its own KMS key, or its own key file under DATA_DIR locally. */
export function createSponsorSigner(config: SponsorSignerConfig): OpJwtSigner {
  return config.SPONSOR_SIGNER === 'kms'
    ? new KmsOpJwtSigner(kmsClient(), config.SPONSOR_KMS_KEY_ID)
    : new LocalOpJwtSigner(config.DATA_DIR, LOCAL_SPONSOR_KEY_FILE);
}

/** Need `sponsorKey`: SPONSOR_SIGNER and SPONSOR_KMS_KEY_ID (or DATA_DIR locally). */
export function sponsorSignerFromEnv(): OpJwtSigner {
  return createSponsorSigner(loadSponsorSignerConfig());
}

/** Need `accountAccessKey`: KEY_PROVIDER and ACCOUNT_KMS_KEY_ID (or DATA_DIR locally). */
export function accountKeyWrapperFromEnv(): KeyWrapper {
  return createKeyWrapper(loadKeyProviderConfig('ACCOUNT_KMS_KEY_ID'), 'account');
}

/** Need `enclaveWalletKey`: KEY_PROVIDER and ENCLAVE_KMS_KEY_ID (or DATA_DIR locally). */
export function enclaveKeyWrapperFromEnv(): KeyWrapper {
  return createKeyWrapper(loadKeyProviderConfig('ENCLAVE_KMS_KEY_ID'), 'enclave');
}

/** Need `opJwtKey`: OP_JWT_SIGNER and OP_JWT_KMS_KEY_ID (or DATA_DIR locally). */
export function opJwtSignerFromEnv(): OpJwtSigner {
  return createOpJwtSigner(loadOpJwtSignerConfig());
}

/** Need `enclaveUrl`: TEE_URL. */
export function enclaveClientFromEnv(): HttpWalletEnclave {
  return new HttpWalletEnclave(loadTeeUrl());
}
