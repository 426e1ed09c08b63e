import { createPrivateKey, createPublicKey, type KeyObject, sign } from 'node:crypto';

/**
 * Ed25519 (RFC 8032) with Node's own crypto, from a 32-byte seed as Solana wallets store it.
 * Signatures are deterministic, so they equal any other RFC 8032 implementation's; Node's is
 * native, and a curve library would add ~30 KB to every enclave bundle (bench:bundles).
 */
const PKCS8_SEED_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX_LENGTH = 12; // 302a300506032b6570032100, then the 32-byte key

function privateKey(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new Error('An ed25519 seed is 32 bytes');
  return createPrivateKey({ key: Buffer.concat([PKCS8_SEED_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  return new Uint8Array(createPublicKey(privateKey(seed)).export({ type: 'spki', format: 'der' }).subarray(SPKI_PREFIX_LENGTH));
}

export function ed25519Sign(message: Uint8Array, seed: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, privateKey(seed)));
}
