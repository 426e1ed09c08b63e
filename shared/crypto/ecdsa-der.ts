/**
 * ECDSA signature DER (X.690: SEQUENCE { INTEGER r, INTEGER s }, what KMS returns) to the JWS
 * form (RFC 7518 §3.4: r‖s, each left-padded to the curve size). A few lines instead of a curve
 * library in every bundle that signs op_jwt with KMS. Strict: anything else is refused.
 */
export function derToJoseSignature(der: Uint8Array, size = 32): Uint8Array {
  const fail = (): never => {
    throw new Error('not a DER ECDSA signature');
  };
  let offset = 0;
  const byte = (): number => {
    const value = der[offset];
    if (value === undefined) return fail(); // past the end
    offset++;
    return value;
  };
  const integer = (): Uint8Array => {
    if (byte() !== 0x02) fail();
    const length = byte();
    if (length === 0 || length > size + 1 || offset + length > der.length) fail(); // short-form lengths only
    let value = der.subarray(offset, offset + length);
    offset += length;
    const first = value[0];
    const second = value[1];
    if (first === undefined) return fail(); // length 0 is refused above
    if (first & 0x80) fail(); // negative
    if (second !== undefined && first === 0 && !(second & 0x80)) fail(); // non-minimal
    if (first === 0) value = value.subarray(1);
    if (value.length > size) fail();
    return value;
  };
  if (byte() !== 0x30) fail();
  const total = byte();
  if (total & 0x80 || offset + total !== der.length) fail();
  const r = integer();
  const s = integer();
  if (offset !== der.length) fail();
  const out = new Uint8Array(size * 2);
  out.set(r, size - r.length);
  out.set(s, size * 2 - s.length);
  return out;
}
