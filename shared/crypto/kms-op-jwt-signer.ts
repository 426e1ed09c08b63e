import { GetPublicKeyCommand, type KMSClient, SignCommand } from '@aws-sdk/client-kms';
import { base64url, calculateJwkThumbprint, exportJWK, importSPKI, type JWK } from 'jose';
import { derToJoseSignature } from './ecdsa-der.ts';
import { type OpJwtClaims, type OpJwtSigner, opJwtPayload } from './op-jwt-signer.ts';

/**
 * op_jwt signed by a KMS asymmetric key (ECC_NIST_P256, ECDSA_SHA_256). KMS returns a DER
 * signature; JWS ES256 wants the 64-byte r‖s form (ecdsa-der.ts converts it).
 */
export class KmsOpJwtSigner implements OpJwtSigner {
  readonly #kms: KMSClient;
  readonly #keyId: string;
  #jwk: Promise<JWK> | undefined;

  constructor(kms: KMSClient, keyId: string) {
    this.#kms = kms;
    this.#keyId = keyId;
  }

  async sign(claims: OpJwtClaims): Promise<string> {
    const { kid } = await this.publicJwk();
    const encode = (value: object) => base64url.encode(JSON.stringify(value));
    const signingInput = `${encode({ alg: 'ES256', typ: 'JWT', kid })}.${encode(opJwtPayload(claims))}`;
    const out = await this.#kms.send(
      new SignCommand({
        KeyId: this.#keyId,
        Message: Buffer.from(signingInput, 'ascii'),
        MessageType: 'RAW',
        SigningAlgorithm: 'ECDSA_SHA_256',
      }),
    );
    if (!out.Signature) throw new Error('KMS Sign returned no signature');
    const raw = derToJoseSignature(out.Signature);
    return `${signingInput}.${base64url.encode(raw)}`;
  }

  publicJwk(): Promise<JWK> {
    // A failed fetch is not cached: the next call retries rather than failing for the container's life.
    this.#jwk ??= this.#fetchPublicJwk().catch((error: unknown) => {
      this.#jwk = undefined;
      throw error;
    });
    return this.#jwk;
  }

  async #fetchPublicJwk(): Promise<JWK> {
    const out = await this.#kms.send(new GetPublicKeyCommand({ KeyId: this.#keyId }));
    if (!out.PublicKey) throw new Error('KMS GetPublicKey returned no key');
    const pem = `-----BEGIN PUBLIC KEY-----\n${Buffer.from(out.PublicKey).toString('base64')}\n-----END PUBLIC KEY-----`;
    const jwk = await exportJWK(await importSPKI(pem, 'ES256', { extractable: true }));
    return { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: 'ES256', use: 'sig' };
  }
}
