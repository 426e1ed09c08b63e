import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { derToJoseSignature } from '../../shared/crypto/ecdsa-der.ts';

/** KMS answers ECDSA_SHA_256 with a DER signature; op_jwt needs r‖s. Checked against Node's own encoder. */
describe('derToJoseSignature', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  it('gives the r‖s form Node verifies as IEEE P1363, over many signatures (short r and s included)', () => {
    // About 1 in 128 signatures has an r or s under 32 bytes: sign until 200 signatures and at
    // least 3 such were checked (the bound only stops a broken test from running forever).
    let shortComponents = 0;
    for (let i = 0; (i < 200 || shortComponents < 3) && i < 100_000; i++) {
      const message = Buffer.from(`message ${i}`);
      const der = sign('sha256', message, { key: privateKey, dsaEncoding: 'der' });
      const jose = derToJoseSignature(der);
      expect(jose).toHaveLength(64);
      expect(verify('sha256', message, { key: publicKey, dsaEncoding: 'ieee-p1363' }, jose)).toBe(true);
      if (jose[0] === 0 || jose[32] === 0) shortComponents++;
    }
    expect(shortComponents).toBeGreaterThanOrEqual(3);
  });

  it('refuses what is not a minimal DER SEQUENCE of two positive INTEGERs', () => {
    const der = sign('sha256', Buffer.from('x'), { key: privateKey, dsaEncoding: 'der' });
    const bad = [
      new Uint8Array(0),
      Uint8Array.from([...der, 0]), // trailing byte
      der.subarray(0, der.length - 1), // truncated
      Uint8Array.from([0x31, ...der.subarray(1)]), // SET, not SEQUENCE
      Uint8Array.from([0x30, 0x06, 0x02, 0x01, 0x80, 0x02, 0x01, 0x01]), // negative r
      Uint8Array.from([0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01]), // non-minimal r
      Uint8Array.from([0x30, 0x26, 0x02, 0x21, 0x01, ...new Uint8Array(32), 0x02, 0x01, 0x01]), // r wider than the curve
    ];
    for (const bytes of bad) expect(() => derToJoseSignature(bytes)).toThrow('not a DER ECDSA signature');
  });
});
