import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createKeyFileOnce } from './key-file.ts';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
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
    const key = await importJWK(privateJwk, 'ES256');
    return new SignJWT(opJwtPayload(claims)).setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: publicJwk.kid! }).sign(key);
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
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const fresh = await exportJWK(privateKey);
    await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
    privateJwk = (await createKeyFileOnce(path, JSON.stringify(fresh))) ? fresh : (JSON.parse(await readFile(path, 'utf8')) as JWK);
  }
  const { d: _d, ...publicPart } = privateJwk;
  const kid = await calculateJwkThumbprint(publicPart);
  return { privateJwk: { ...privateJwk, kid }, publicJwk: { ...publicPart, kid, alg: 'ES256', use: 'sig' } };
}
