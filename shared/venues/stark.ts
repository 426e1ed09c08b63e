import { Point, Signature, pedersen as scurePedersen, sign as scureSign, verify as scureVerify, keccak as starknetKeccakBytes } from '@scure/starknet';
import QuickLRU from 'quick-lru';
import { type Hex, hexToBytes, sha256 } from 'viem';

/**
 * Stark-curve building blocks for the venues that key their accounts on it (venue_a, venue_c):
 * key grinding from an Ethereum signature, Stark keys, Pedersen hashing, ECDSA on the Stark
 * curve, Starknet contract addresses and SNIP-12 (revision 0) typed data. Field elements are
 * bigints; a "Stark key" / public key is the x-coordinate of the public point, as the venues send it.
 */

/** Order of the Stark curve's generator (starkware EC_ORDER). */
export const STARK_CURVE_ORDER = 0x800000000000010ffffffffffffffffb781126dcae7b2321e66a241adc64d2fn;
/** Field elements, message hashes and signature `r` values are below 2^251. */
export const FELT_LIMIT = 2n ** 251n;
/** Starknet's field prime, 2^251 + 17·2^192 + 1. */
const FIELD_PRIME = 2n ** 251n + 17n * 2n ** 192n + 1n;
/** Contract addresses are taken modulo 2^251 - 256. */
const ADDRESS_BOUND = 2n ** 251n - 256n;
const CONTRACT_ADDRESS_PREFIX = encodeShortString('STARKNET_CONTRACT_ADDRESS');
const SHA256_SPACE = 2n ** 256n;

export interface StarkSignature {
  readonly r: bigint;
  readonly s: bigint;
}

export interface StarkKeyPair {
  readonly privateKey: bigint;
  /** The Stark key: x-coordinate of the public point. */
  readonly publicKey: bigint;
}

/**
 * How the 32-byte `r` of an Ethereum signature seeds the grinding, where the venues' SDKs
 * differ (they agree unless `r` starts with a zero byte, about 1 wallet in 256):
 * - `fixed`: all 32 bytes (starkware-crypto-utils' getPrivateKeyFromEthSignature, used by
 *   @paradex/sdk; @scure/starknet's ethSigToPrivate);
 * - `minimal`: `r` as an integer, big-endian without leading zero bytes (Extended's
 *   fast_stark_crypto / rust-crypto-lib-base `grind_key(BigUint)`; paradex-py's `_grind_key(int)`).
 */
export type GrindSeedEncoding = 'fixed' | 'minimal';

/**
 * StarkWare's key grinding: the first `sha256(seed ‖ i)` (i as minimal big-endian bytes, 0 as one
 * zero byte) below the largest multiple of the curve order under 2^256, reduced modulo the order.
 */
export function grindKey(seed: Uint8Array): bigint {
  const limit = SHA256_SPACE - (SHA256_SPACE % STARK_CURVE_ORDER);
  for (let index = 0n; ; index++) {
    const key = bytesToBigInt(sha256(concat(seed, minimalBytes(index)), 'bytes'));
    if (key < limit) return key % STARK_CURVE_ORDER;
  }
}

/** The Stark key pair a venue derives from a (deterministic) Ethereum signature: grind_key(r, EC_ORDER). */
export function starkKeyPairFromEthSignature(signature: Hex, seedEncoding: GrindSeedEncoding): StarkKeyPair {
  const bytes = hexToBytes(signature);
  if (bytes.length !== 65) throw new Error(`an Ethereum signature is 65 bytes, got ${bytes.length}`);
  const r = bytes.subarray(0, 32);
  const seed = seedEncoding === 'fixed' ? r : minimalBytes(bytesToBigInt(r));
  const privateKey = grindKey(seed);
  return { privateKey, publicKey: starkPublicKey(privateKey) };
}

/** The Stark key (public point's x-coordinate) of a private key in [1, order). */
export function starkPublicKey(privateKey: bigint): bigint {
  assertPrivateKey(privateKey);
  return Point.BASE.multiply(privateKey).toAffine().x;
}

/** A fresh random private key below 2^251 (as the venues' SDKs generate trading subkeys). */
export function randomStarkPrivateKey(): bigint {
  for (;;) {
    const candidate = bytesToBigInt(crypto.getRandomValues(new Uint8Array(32))) % FELT_LIMIT;
    if (candidate !== 0n) return candidate;
  }
}

/** The last Pedersen results, least recently used out: quick-lru keeps 2,048 to 4,096 of them (its two generations), at most about 0.7 MB. */
const pedersenMemo = new QuickLRU<string, bigint>({ maxSize: 2048 });

/**
 * Pedersen hash of two field elements. @scure/starknet computes one in about 1.3 ms of CPU (252
 * point additions), and the venues' hashes repeat most of theirs: a typed-data hash re-hashes the
 * same domain struct (5 of its ~15 Pedersen hashes), and an account's contract address is the same
 * 12 hashes every time it is derived. So the last results are kept (public inputs
 * only: messages, keys' x-coordinates, addresses; no private key is ever Pedersen-hashed).
 * `npm run bench:stark` on the 2-core machine: an account's contract address derived again
 * 16.6 -> 0.09 ms of CPU, a venue_c auth typed-data hash 21.4 -> 7.1 ms (its domain struct and
 * account prefix are reused; the new timestamp's hashes are not).
 */
export function pedersen(a: bigint, b: bigint): bigint {
  const key = `${a.toString(16)}:${b.toString(16)}`;
  const known = pedersenMemo.get(key);
  if (known !== undefined) return known;
  const hash = BigInt(scurePedersen(a, b));
  pedersenMemo.set(key, hash);
  return hash;
}

/** compute_hash_on_elements: h(h(h(0, e0), e1) …, n). */
export function hashOnElements(elements: readonly bigint[]): bigint {
  return pedersen(
    elements.reduce((hash, element) => pedersen(hash, element), 0n),
    BigInt(elements.length),
  );
}

/** starknet_keccak: keccak256 truncated to 250 bits (selectors, SNIP-12 type hashes). */
export function starknetKeccak(text: string): bigint {
  return starknetKeccakBytes(new TextEncoder().encode(text));
}

/** A Cairo short string (at most 31 ASCII characters) as a field element. */
export function encodeShortString(text: string): bigint {
  if (!/^\p{ASCII}{0,31}$/u.test(text)) throw new Error(`"${text}" is not a Cairo short string (at most 31 ASCII characters)`);
  let value = 0n;
  for (const char of text) value = (value << 8n) | BigInt(char.charCodeAt(0));
  return value;
}

/** Deterministic (RFC 6979) Stark ECDSA over a message hash below 2^251. */
export function starkSign(messageHash: bigint, privateKey: bigint): StarkSignature {
  assertPrivateKey(privateKey);
  if (messageHash < 0n || messageHash >= FELT_LIMIT) throw new Error('a Stark message hash must be in [0, 2^251)');
  const signature = scureSign(messageHash.toString(16), privateKey.toString(16).padStart(64, '0'));
  return { r: signature.r, s: signature.s };
}

/**
 * Verifies a Stark signature against a Stark key (x-coordinate only, so both points with that x
 * are tried, as starkware's `verify` does for an int public key). False for anything malformed.
 */
export function starkVerify(signature: StarkSignature, messageHash: bigint, starkKey: bigint): boolean {
  if (messageHash < 0n || messageHash >= FELT_LIMIT) return false;
  if (starkKey <= 0n || starkKey >= FIELD_PRIME) return false;
  let parsed: InstanceType<typeof Signature>;
  try {
    parsed = new Signature(signature.r, signature.s);
  } catch {
    return false;
  }
  const x = starkKey.toString(16).padStart(64, '0');
  for (const prefix of ['02', '03']) {
    try {
      if (scureVerify(parsed, messageHash.toString(16), `${prefix}${x}`)) return true;
    } catch {
      return false;
    }
  }
  return false;
}

/** Starknet's contract address: pedersen chain over (prefix, deployer, salt, class hash, h(calldata)) mod 2^251 - 256. */
export function computeContractAddress(input: { classHash: bigint; salt: bigint; constructorCalldata: readonly bigint[]; deployer?: bigint }): bigint {
  const calldataHash = hashOnElements(input.constructorCalldata);
  return hashOnElements([CONTRACT_ADDRESS_PREFIX, input.deployer ?? 0n, input.salt, input.classHash, calldataHash]) % ADDRESS_BOUND;
}

/** A field element as the venues print it: lowercase hex, no padding. */
export function feltToHex(value: bigint): Hex {
  return `0x${value.toString(16)}`;
}

/** Parses a felt given as 0x-hex or decimal; throws for anything else or a value outside the field. */
export function parseFelt(value: string): bigint {
  if (!/^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$/.test(value)) throw new Error(`"${value}" is not a field element`);
  const parsed = BigInt(value);
  if (parsed >= FIELD_PRIME) throw new Error(`"${value}" is outside the Stark field`);
  return parsed;
}

// ---------------------------------------------------------------------------------------------
// SNIP-12 revision 0 ("StarkNetDomain") typed data, the subset the venues use: struct types whose
// members are `felt` (numbers, numeric strings and hex as numbers, other strings as short strings).
// ---------------------------------------------------------------------------------------------

export interface StarknetTypedData {
  readonly types: Readonly<Record<string, readonly { readonly name: string; readonly type: string }[]>>;
  readonly primaryType: string;
  readonly domain: Readonly<Record<string, string | number | bigint>>;
  readonly message: Readonly<Record<string, string | number | bigint>>;
}

/** The hash a Starknet account signs for `typedData` (starknet.js `typedData.getMessageHash`, revision 0). */
export function starknetTypedDataHash(typedData: StarknetTypedData, account: bigint): bigint {
  if (!typedData.types.StarkNetDomain) throw new Error('only revision-0 typed data (a StarkNetDomain type) is supported');
  return hashOnElements([
    encodeShortString('StarkNet Message'),
    structHash(typedData, 'StarkNetDomain', typedData.domain),
    account,
    structHash(typedData, typedData.primaryType, typedData.message),
  ]);
}

function structHash(typedData: StarknetTypedData, typeName: string, data: Readonly<Record<string, string | number | bigint>>): bigint {
  const members = typedData.types[typeName];
  if (!members) throw new Error(`typed data has no type "${typeName}"`);
  const encoded = members.map((member) => {
    if (member.type !== 'felt') throw new Error(`typed data member ${typeName}.${member.name} has type "${member.type}"; only felt is supported`);
    const value = data[member.name];
    if (value === undefined) throw new Error(`typed data is missing ${typeName}.${member.name}`);
    return feltValue(value);
  });
  const typeHash = starknetKeccak(`${typeName}(${members.map((member) => `${member.name}:${member.type}`).join(',')})`);
  return hashOnElements([typeHash, ...encoded]);
}

/** As starknet.js `getHex` for revision 0: numbers and numeric or hex strings as numbers, other strings as short strings. */
function feltValue(value: string | number | bigint): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return BigInt(value);
  if (/^0x[0-9a-fA-F]+$/.test(value) || /^[0-9]+$/.test(value)) return BigInt(value);
  return encodeShortString(value);
}

function assertPrivateKey(privateKey: bigint): void {
  if (privateKey <= 0n || privateKey >= STARK_CURVE_ORDER) throw new Error('a Stark private key must be in [1, curve order)');
}

function bytesToBigInt(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

/** Big-endian bytes without leading zeros; 0 is one zero byte (as num-bigint's to_bytes_be). */
function minimalBytes(value: bigint): Uint8Array {
  let hex = value.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  return hexToBytes(`0x${hex}`);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
