import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { ed25519PublicKey, ed25519Sign } from '../../shared/crypto/ed25519.ts';

/** Node's native Ed25519 from a 32-byte seed gives what @noble/curves (an independent RFC 8032 implementation) gives. */
describe('ed25519 with node:crypto', () => {
  it('derives the same public key and the same (deterministic) signatures as @noble/curves', () => {
    for (let i = 0; i < 50; i++) {
      const seed = randomBytes(32);
      const message = randomBytes(i * 7);
      expect(ed25519PublicKey(seed)).toEqual(ed25519.getPublicKey(seed));
      const signature = ed25519Sign(message, seed);
      expect(signature).toEqual(ed25519.sign(message, seed));
      expect(ed25519.verify(signature, message, ed25519.getPublicKey(seed))).toBe(true);
    }
  });

  it('matches RFC 8032 test vector 1 and refuses a seed that is not 32 bytes', () => {
    const seed = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
    expect(Buffer.from(ed25519PublicKey(seed)).toString('hex')).toBe('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    expect(Buffer.from(ed25519Sign(new Uint8Array(0), seed)).toString('hex')).toBe(
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
    );
    expect(() => ed25519Sign(new Uint8Array(1), randomBytes(31))).toThrow('32 bytes');
  });
});
