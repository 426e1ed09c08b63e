import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type CryptoKey, importJWK, type JWK, SignJWT } from 'jose';
import { describeEs256Jwk, generateEs256Jwk } from './es256-jwk.ts';
import { createKeyFileOnce } from './key-file.ts';
import { checkLocalKms, type LocalKeyName } from './local-kms-guard.ts';
import { type OpJwtClaims, type OpJwtSigner, opJwtPayload } from './op-jwt-signer.ts';

/** The local op_jwt key's file under `<dataDir>/keys/`. */
export const LOCAL_OP_JWT_KEY_FILE = 'op-jwt-signer.jwk.json';
/** The local gas sponsor key's file under `<dataDir>/keys/`: a key of its own, as in AWS. */
export const LOCAL_SPONSOR_KEY_FILE = 'gas-sponsor-signer.jwk.json';

/** Local op_jwt signer: an ES256 key pair kept as a JWK in `<dataDir>/keys/<file>` (0600; the op_jwt key by default). */
export class LocalOpJwtSigner implements OpJwtSigner {
  readonly #path: string;
  /** The key pair, and the private key imported once for signing (jose would import the JWK on every sign). */
  #key: Promise<{ publicJwk: JWK; signingKey: CryptoKey | Uint8Array }> | undefined;

  readonly #keyName: LocalKeyName;

  constructor(dataDir: string, file: typeof LOCAL_OP_JWT_KEY_FILE | typeof LOCAL_SPONSOR_KEY_FILE = LOCAL_OP_JWT_KEY_FILE) {
    this.#path = join(dataDir, 'keys', file);
    this.#keyName = file === LOCAL_SPONSOR_KEY_FILE ? 'gas-sponsor' : 'op-jwt';
  }

  /** As KmsOpJwtSigner: GetPublicKey for the kid, then Sign of the digest (RAW, ECDSA_SHA_256). */
  async sign(claims: OpJwtClaims): Promise<string> {
    checkLocalKms({ key: this.#keyName, operation: 'GetPublicKey' });
    checkLocalKms({ key: this.#keyName, operation: 'Sign', signingAlgorithm: 'ECDSA_SHA_256', messageType: 'RAW' });
    const { publicJwk, signingKey } = await this.#load();
    const { kid } = publicJwk;
    if (kid === undefined) throw new Error('internal: the op_jwt signing key has no kid (describeEs256Jwk always sets one)');
    return new SignJWT(opJwtPayload(claims)).setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid }).sign(signingKey);
  }

  async publicJwk(): Promise<JWK> {
    checkLocalKms({ key: this.#keyName, operation: 'GetPublicKey' });
    return (await this.#load()).publicJwk;
  }

  #load() {
    this.#key ??= loadOrCreate(this.#path).then(async ({ privateJwk, publicJwk }) => ({ publicJwk, signingKey: await importJWK(privateJwk, 'ES256') }));
    return this.#key;
  }
}

async function loadOrCreate(path: string): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  let privateJwk: JWK;
  try {
    privateJwk = JSON.parse(await readFile(path, 'utf8')) as JWK;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    const fresh = (await generateEs256Jwk()).privateJwk;
    await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
    privateJwk = (await createKeyFileOnce(path, JSON.stringify(fresh))) ? fresh : (JSON.parse(await readFile(path, 'utf8')) as JWK);
  }
  return describeEs256Jwk(privateJwk);
}
