import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { importJWK, type JWK, SignJWT } from 'jose';
import { describeEs256Jwk, generateEs256Jwk } from './es256-jwk.ts';
import { createKeyFileOnce } from './key-file.ts';
import { type OpJwtClaims, type OpJwtSigner, opJwtPayload } from './op-jwt-signer.ts';

/** Local op_jwt signer: an ES256 key pair kept as a JWK in `<dataDir>/keys/op-jwt-signer.jwk.json` (0600). */
export class LocalOpJwtSigner implements OpJwtSigner {
  readonly #path: string;
  #key: Promise<{ privateJwk: JWK; publicJwk: JWK }> | undefined;

  constructor(dataDir: string) {
    this.#path = join(dataDir, 'keys', 'op-jwt-signer.jwk.json');
  }

  async sign(claims: OpJwtClaims): Promise<string> {
    const { privateJwk, publicJwk } = await this.#load();
    const { kid } = publicJwk;
    if (kid === undefined) throw new Error('internal: the op_jwt signing key has no kid (describeEs256Jwk always sets one)');
    const key = await importJWK(privateJwk, 'ES256');
    return new SignJWT(opJwtPayload(claims)).setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid }).sign(key);
  }

  async publicJwk(): Promise<JWK> {
    return (await this.#load()).publicJwk;
  }

  #load() {
    this.#key ??= loadOrCreate(this.#path);
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
