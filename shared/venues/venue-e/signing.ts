import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import {
  type Address,
  encodeAbiParameters,
  getAddress,
  getCreate2Address,
  type Hex,
  isAddress,
  isHex,
  keccak256,
  recoverTypedDataAddress,
  type TypedDataDefinition,
} from 'viem';
import type { VenueWallet } from '../driver.ts';

/**
 * venue_e (modelled on Polymarket, on Polygon), research §5.2–5.3:
 * - the user's Polymarket wallet is a CREATE2 address of the user's EOA: the Polymarket Proxy
 *   (ProxyWalletFactory, salt keccak256(abi.encodePacked(eoa))) or the Polymarket Safe
 *   (SafeProxyFactory, salt keccak256(abi.encode(eoa)));
 * - CLOB API credentials come from an EIP-712 `ClobAuth` signature (L1 headers); requests are
 *   then authenticated by an HMAC-SHA256 over `timestamp + METHOD + path [+ body]` (L2 headers),
 *   as @polymarket/clob-client's `createL1Headers` / `buildPolyHmacSignature`.
 */

/** Polygon mainnet chain id, the ClobAuth domain's chainId. */
export const POLYGON_CHAIN_ID = 137;

/** Polymarket Proxy factory and the init-code hash of its wallet clone (Polymarket/proxy-factories FactoryLib). */
export const PROXY_WALLET_FACTORY: Address = '0xaB45c5A4B0c941a2F231C04C3f49182e1A254052';
export const PROXY_WALLET_INIT_CODE_HASH: Hex = '0xd21df8dc65880a8606f09fe0ce3df9b8869287ab0b058be05aa9e8af6330a00b';
/** Polymarket Safe factory and GnosisSafeProxy init-code hash (@polymarket/builder-relayer-client). */
export const SAFE_WALLET_FACTORY: Address = '0xaacFeEa03eb1561C4e67d661e40682Bd20E3541b';
export const SAFE_WALLET_INIT_CODE_HASH: Hex = '0x2bce2127ff07fb632d16c8347c4ebf501f4841168bed00d9e6ef715ddb6fcecf';

/** The Polymarket Proxy wallet of `eoa` (signature type 1, POLY_PROXY). */
export function proxyWalletAddress(eoa: Address): Address {
  return getCreate2Address({ from: PROXY_WALLET_FACTORY, salt: keccak256(getAddress(eoa)), bytecodeHash: PROXY_WALLET_INIT_CODE_HASH });
}

/** The Polymarket Safe of `eoa` (signature type 2, POLY_GNOSIS_SAFE), builder-relayer-client `deriveSafe`. */
export function safeWalletAddress(eoa: Address): Address {
  return getCreate2Address({
    from: SAFE_WALLET_FACTORY,
    salt: keccak256(encodeAbiParameters([{ type: 'address' }], [getAddress(eoa)])),
    bytecodeHash: SAFE_WALLET_INIT_CODE_HASH,
  });
}

/** clob-client MSG_TO_SIGN. */
export const CLOB_AUTH_MESSAGE = 'This message attests that I control the given wallet';

export function clobAuthTypedData(input: { address: Address; timestamp: number; nonce: bigint; chainId?: number }) {
  return {
    domain: { name: 'ClobAuthDomain', version: '1', chainId: input.chainId ?? POLYGON_CHAIN_ID },
    types: {
      ClobAuth: [
        { name: 'address', type: 'address' },
        { name: 'timestamp', type: 'string' },
        { name: 'nonce', type: 'uint256' },
        { name: 'message', type: 'string' },
      ],
    },
    primaryType: 'ClobAuth',
    message: { address: input.address, timestamp: `${input.timestamp}`, nonce: input.nonce, message: CLOB_AUTH_MESSAGE },
  } as const satisfies TypedDataDefinition;
}

/** A type (not an interface) so it passes where plain header records are expected. */
export type L1Headers = {
  readonly POLY_ADDRESS: Address;
  readonly POLY_SIGNATURE: Hex;
  readonly POLY_TIMESTAMP: string;
  readonly POLY_NONCE: string;
};

/** Headers of `POST /auth/api-key` and `GET /auth/derive-api-key` (`createL1Headers`); timestamp in seconds. */
export async function createL1Headers(wallet: VenueWallet, input: { timestamp: number; nonce?: bigint; chainId?: number }): Promise<L1Headers> {
  const nonce = input.nonce ?? 0n;
  const signature = await wallet.signTypedData(clobAuthTypedData({ address: wallet.address, timestamp: input.timestamp, nonce, chainId: input.chainId }));
  return { POLY_ADDRESS: wallet.address, POLY_SIGNATURE: signature, POLY_TIMESTAMP: `${input.timestamp}`, POLY_NONCE: `${nonce}` };
}

export type L1Check = { readonly ok: true; readonly address: Address; readonly nonce: bigint } | { readonly ok: false; readonly reason: string };

/** The venue's check of L1 headers: well-formed, recent, and signed by POLY_ADDRESS for that timestamp and nonce. */
export async function verifyL1Headers(
  headers: Readonly<Record<string, string | undefined>>,
  options: { now: Date; maxSkewSeconds: number; chainId?: number },
): Promise<L1Check> {
  const { POLY_ADDRESS: address, POLY_SIGNATURE: signature, POLY_TIMESTAMP: timestamp, POLY_NONCE: nonce = '0' } = headers;
  if (
    !address ||
    !isAddress(address, { strict: false }) ||
    !signature ||
    !isHex(signature) ||
    !timestamp ||
    !/^\d{1,12}$/.test(timestamp) ||
    !/^\d{1,78}$/.test(nonce)
  ) {
    return { ok: false, reason: 'missing or malformed POLY_ADDRESS, POLY_SIGNATURE, POLY_TIMESTAMP or POLY_NONCE' };
  }
  if (Math.abs(options.now.getTime() / 1000 - Number(timestamp)) > options.maxSkewSeconds) return { ok: false, reason: 'POLY_TIMESTAMP is too far from now' };
  const owner = getAddress(address);
  const typedData = clobAuthTypedData({ address: owner, timestamp: Number(timestamp), nonce: BigInt(nonce), chainId: options.chainId });
  let signer: Address;
  try {
    signer = await recoverTypedDataAddress({ ...typedData, signature });
  } catch {
    return { ok: false, reason: 'malformed POLY_SIGNATURE' };
  }
  if (signer !== owner) return { ok: false, reason: 'POLY_SIGNATURE is not by POLY_ADDRESS' };
  return { ok: true, address: owner, nonce: BigInt(nonce) };
}

/** CLOB API credentials: `apiKey` (UUID), `secret` (base64url of 32 bytes), `passphrase` (64 hex). */
export interface ClobApiCredentials {
  readonly apiKey: string;
  readonly secret: string;
  readonly passphrase: string;
}

/** New credentials in the venue's format (what `POST /auth/api-key` hands out). */
export function generateClobApiCredentials(): ClobApiCredentials {
  return { apiKey: randomUUID(), secret: randomBytes(32).toString('base64url').padEnd(44, '='), passphrase: randomBytes(32).toString('hex') };
}

/**
 * `buildPolyHmacSignature`: HMAC-SHA256 keyed with the base64(url)-decoded secret over
 * `timestamp + method + requestPath [+ body]`, as URL-safe base64 keeping the `=` padding.
 */
export function polyHmacSignature(secret: string, timestamp: number, method: string, requestPath: string, body?: string): string {
  const key = Buffer.from(
    secret
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .replace(/[^A-Za-z0-9+/=]/g, ''),
    'base64',
  );
  const message = `${timestamp}${method}${requestPath}${body ?? ''}`;
  return createHmac('sha256', key).update(message).digest('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

export type L2Headers = {
  readonly POLY_ADDRESS: Address;
  readonly POLY_SIGNATURE: string;
  readonly POLY_TIMESTAMP: string;
  readonly POLY_API_KEY: string;
  readonly POLY_PASSPHRASE: string;
};

/** `createL2Headers`: per-request authentication with the API credentials (POLY_ADDRESS is the EOA). */
export function createL2Headers(
  address: Address,
  credentials: ClobApiCredentials,
  request: { timestamp: number; method: string; requestPath: string; body?: string },
): L2Headers {
  return {
    POLY_ADDRESS: address,
    POLY_SIGNATURE: polyHmacSignature(credentials.secret, request.timestamp, request.method, request.requestPath, request.body),
    POLY_TIMESTAMP: `${request.timestamp}`,
    POLY_API_KEY: credentials.apiKey,
    POLY_PASSPHRASE: credentials.passphrase,
  };
}

/**
 * The venue's check of L2 headers for credentials it looked up by POLY_API_KEY: the passphrase
 * matches, the timestamp is recent, and the HMAC over this request is right (constant-time compares).
 */
export function verifyL2Headers(
  headers: Readonly<Record<string, string | undefined>>,
  credentials: ClobApiCredentials,
  request: { method: string; requestPath: string; body?: string; now: Date; maxSkewSeconds: number },
): boolean {
  const { POLY_SIGNATURE: signature, POLY_TIMESTAMP: timestamp, POLY_API_KEY: apiKey, POLY_PASSPHRASE: passphrase } = headers;
  if (!signature || !timestamp || !/^\d{1,12}$/.test(timestamp) || apiKey !== credentials.apiKey || !passphrase) return false;
  if (Math.abs(request.now.getTime() / 1000 - Number(timestamp)) > request.maxSkewSeconds) return false;
  const expected = polyHmacSignature(credentials.secret, Number(timestamp), request.method, request.requestPath, request.body);
  return equalStrings(passphrase, credentials.passphrase) && equalStrings(signature, expected);
}

function equalStrings(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
