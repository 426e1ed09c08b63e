import { type Address, getAddress, type Hex, isAddress, isHex, parseAbi, recoverMessageAddress, recoverTypedDataAddress, type TypedDataDefinition } from 'viem';
import type { VenueWallet } from '../driver.ts';
import { feltToHex, parseFelt, pedersen, type StarkKeyPair, type StarkSignature, starkKeyPairFromEthSignature, starkSign, starkVerify } from '../stark.ts';

/**
 * venue_a (modelled on Extended, Starknet era), from the official Python SDK (research §2.2,
 * x10/signing/onboarding.py; key grinding from x10xchange/rust-crypto-lib-base):
 * - EIP-712 `AccountCreation` (domain `{ name: <signing domain> }` only) → its signature's r is
 *   ground into the Stark key (r as an integer: leading zero bytes dropped);
 * - EIP-712 `AccountRegistration` + the L2 proof `stark_sign(pedersen(wallet, stark key))`
 *   → `POST {onboarding}/auth/onboard`;
 * - EIP-191 `"{request_path}@{time}"` in `L1_SIGNATURE` / `L1_MESSAGE_TIME` for the account
 *   endpoints (accounts list, API key).
 * The signing domain and host are configuration: the live venue's, or the sandbox's own.
 */
export interface ExtendedSigningConfig {
  /** EIP-712 domain name (`signing_domain`). */
  readonly signingDomain: string;
  /** `host` in AccountRegistration: the venue's onboarding URL. */
  readonly onboardingHost: string;
}

/** The live venue's values (x10/perpetual/configuration.py, mainnet). */
export const EXTENDED_MAINNET_SIGNING: ExtendedSigningConfig = { signingDomain: 'extended.exchange', onboardingHost: 'https://api.starknet.extended.exchange' };

/**
 * The EVM deposit bridge (rhino.fi's DVFDepositContract, docs.rhino.fi/contracts/evm): the call a
 * deposit makes after committing the venue's bridge quote (commitmentId = quote id), and the
 * events the venue watches. The sandbox bridge (infra/local/contracts/SandboxRhinoBridge.sol)
 * has exactly these.
 */
export const RHINO_BRIDGE_ABI = parseAbi([
  'function depositWithId(address token, uint256 amount, uint256 commitmentId)',
  'event BridgedDepositWithId(address sender, address origin, address token, uint256 amount, uint256 commitmentId)',
  'event BridgedWithdrawal(address user, address token, uint256 amount, string withdrawalId)',
]);

export const REGISTER_ACTION = 'REGISTER';
export const SUB_ACCOUNT_ACTION = 'CREATE_SUB_ACCOUNT';

export interface AccountRegistration {
  readonly accountIndex: number;
  readonly wallet: Address;
  readonly tosAccepted: boolean;
  /** `%Y-%m-%dT%H:%M:%SZ` UTC. */
  readonly time: string;
  readonly action: string;
  readonly host: string;
}

/** The body of `POST /auth/onboard` (the SDK's OnboardingPayLoad.to_json). */
export interface OnboardingPayload {
  readonly l1Signature: Hex;
  readonly l2Key: Hex;
  readonly l2Signature: { readonly r: Hex; readonly s: Hex };
  readonly accountCreation: AccountRegistration;
  readonly referralCode: string | null;
}

export function accountCreationTypedData(signingDomain: string, wallet: Address, accountIndex: number) {
  assertAccountIndex(accountIndex);
  return {
    domain: { name: signingDomain },
    types: {
      AccountCreation: [
        { name: 'accountIndex', type: 'int8' },
        { name: 'wallet', type: 'address' },
        { name: 'tosAccepted', type: 'bool' },
      ],
    },
    primaryType: 'AccountCreation',
    message: { accountIndex, wallet, tosAccepted: true },
  } as const satisfies TypedDataDefinition;
}

export function accountRegistrationTypedData(signingDomain: string, registration: AccountRegistration) {
  assertAccountIndex(registration.accountIndex);
  return {
    domain: { name: signingDomain },
    types: {
      AccountRegistration: [
        { name: 'accountIndex', type: 'int8' },
        { name: 'wallet', type: 'address' },
        { name: 'tosAccepted', type: 'bool' },
        { name: 'time', type: 'string' },
        { name: 'action', type: 'string' },
        { name: 'host', type: 'string' },
      ],
    },
    primaryType: 'AccountRegistration',
    message: { ...registration },
  } as const satisfies TypedDataDefinition;
}

/** `%Y-%m-%dT%H:%M:%SZ` in UTC (whole seconds), the SDK's time format for signed messages. */
export function formatExtendedTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** Parses `%Y-%m-%dT%H:%M:%SZ`; undefined for any other shape. */
export function parseExtendedTime(text: string): Date | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(text)) return undefined;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) || formatExtendedTime(date) !== text ? undefined : date;
}

/** The Stark key pair from the AccountCreation signature (fast_stark_crypto `generate_keypair_from_eth_signature`). */
export function deriveExtendedKeyPair(accountCreationSignature: Hex): StarkKeyPair {
  return starkKeyPairFromEthSignature(accountCreationSignature, 'minimal');
}

/** Asks the wallet for the AccountCreation signature of `accountIndex` and derives its Stark key pair. */
export async function deriveExtendedKeyPairWithWallet(wallet: VenueWallet, config: ExtendedSigningConfig, accountIndex = 0): Promise<StarkKeyPair> {
  return deriveExtendedKeyPair(await wallet.signTypedData(accountCreationTypedData(config.signingDomain, wallet.address, accountIndex)));
}

/** What the L2 proof signs: pedersen(int(wallet), stark public key). */
export function l2KeyProofHash(wallet: Address, starkPublicKey: bigint): bigint {
  return pedersen(BigInt(wallet), starkPublicKey);
}

export function signL2KeyProof(wallet: Address, keyPair: StarkKeyPair): StarkSignature {
  return starkSign(l2KeyProofHash(wallet, keyPair.publicKey), keyPair.privateKey);
}

/**
 * The onboarding request body: the wallet signs AccountRegistration (REGISTER, account 0) and
 * the derived Stark key signs the L2 proof.
 */
export async function buildOnboardingPayload(
  wallet: VenueWallet,
  config: ExtendedSigningConfig,
  keyPair: StarkKeyPair,
  options: { readonly now: Date; readonly referralCode?: string | null },
): Promise<OnboardingPayload> {
  const registration: AccountRegistration = {
    accountIndex: 0,
    wallet: getAddress(wallet.address),
    tosAccepted: true,
    time: formatExtendedTime(options.now),
    action: REGISTER_ACTION,
    host: config.onboardingHost,
  };
  const l1Signature = await wallet.signTypedData(accountRegistrationTypedData(config.signingDomain, registration));
  const l2 = signL2KeyProof(registration.wallet, keyPair);
  return {
    l1Signature,
    l2Key: feltToHex(keyPair.publicKey),
    l2Signature: { r: feltToHex(l2.r), s: feltToHex(l2.s) },
    accountCreation: registration,
    referralCode: options.referralCode ?? null,
  };
}

export type OnboardingCheck =
  | { readonly ok: true; readonly wallet: Address; readonly starkPublicKey: bigint }
  | { readonly ok: false; readonly reason: string };

/**
 * The venue's check of `POST /auth/onboard`: the registration is for this venue (domain, host,
 * REGISTER, account 0, terms accepted) and recent, the wallet signed it, and the Stark key signed
 * the L2 proof for that wallet.
 */
export async function verifyOnboardingPayload(
  body: unknown,
  config: ExtendedSigningConfig,
  options: { readonly now: Date; readonly maxSkewSeconds: number },
): Promise<OnboardingCheck> {
  if (typeof body !== 'object' || body === null) return { ok: false, reason: 'the body must be an object' };
  const payload = body as Partial<Record<keyof OnboardingPayload, unknown>>;
  const creation = payload.accountCreation as Partial<Record<keyof AccountRegistration, unknown>> | undefined;
  const l2Signature = payload.l2Signature as { r?: unknown; s?: unknown } | undefined;
  if (
    typeof creation !== 'object' ||
    creation === null ||
    typeof creation.wallet !== 'string' ||
    !isAddress(creation.wallet, { strict: false }) ||
    typeof creation.time !== 'string' ||
    typeof payload.l1Signature !== 'string' ||
    typeof payload.l2Key !== 'string' ||
    typeof l2Signature !== 'object' ||
    l2Signature === null ||
    typeof l2Signature.r !== 'string' ||
    typeof l2Signature.s !== 'string'
  ) {
    return { ok: false, reason: 'malformed onboarding payload' };
  }
  if (creation.accountIndex !== 0 || creation.action !== REGISTER_ACTION || creation.tosAccepted !== true)
    return { ok: false, reason: 'expected accountIndex 0, action REGISTER, tosAccepted true' };
  if (creation.host !== config.onboardingHost)
    return { ok: false, reason: `the registration is for host ${String(creation.host)}, not ${config.onboardingHost}` };
  const time = parseExtendedTime(creation.time);
  if (!time) return { ok: false, reason: 'time must be %Y-%m-%dT%H:%M:%SZ' };
  if (Math.abs(options.now.getTime() - time.getTime()) > options.maxSkewSeconds * 1000)
    return { ok: false, reason: 'the registration time is too far from now' };

  // The Python SDK sends HexBytes.hex(), which has no 0x.
  const l1Signature = (payload.l1Signature.startsWith('0x') ? payload.l1Signature : `0x${payload.l1Signature}`) as Hex;
  if (!isHex(l1Signature)) return { ok: false, reason: 'malformed l1Signature' };
  const wallet = getAddress(creation.wallet);
  const registration: AccountRegistration = {
    accountIndex: 0,
    wallet,
    tosAccepted: true,
    time: creation.time,
    action: REGISTER_ACTION,
    host: config.onboardingHost,
  };
  if (!(await typedDataSignedBy(accountRegistrationTypedData(config.signingDomain, registration), l1Signature, wallet)))
    return { ok: false, reason: 'the wallet did not sign this AccountRegistration' };

  let starkPublicKey: bigint;
  let r: bigint;
  let s: bigint;
  try {
    starkPublicKey = parseFelt(payload.l2Key);
    r = parseFelt(l2Signature.r);
    s = parseFelt(l2Signature.s);
  } catch {
    return { ok: false, reason: 'malformed l2Key or l2Signature' };
  }
  if (!starkVerify({ r, s }, l2KeyProofHash(wallet, starkPublicKey), starkPublicKey)) return { ok: false, reason: 'invalid L2 key proof' };
  return { ok: true, wallet, starkPublicKey };
}

/** The EIP-191 text that authorises one account-endpoint request: `"{request_path}@{time}"`. */
export function apiRequestMessage(requestPath: string, time: string): string {
  return `${requestPath}@${time}`;
}

/** `L1_SIGNATURE` / `L1_MESSAGE_TIME` headers for `requestPath` (e.g. `/api/v1/user/account/api-key`). */
export async function signApiRequest(wallet: VenueWallet, requestPath: string, now: Date): Promise<{ L1_SIGNATURE: Hex; L1_MESSAGE_TIME: string }> {
  const time = formatExtendedTime(now);
  return { L1_SIGNATURE: await wallet.signMessage(apiRequestMessage(requestPath, time)), L1_MESSAGE_TIME: time };
}

/**
 * The venue's check of an account-endpoint request: the time is well-formed and recent, and
 * the signature of `"{path}@{time}"` recovers to an address (returned: the venue looks the
 * account up by it). The SDK sends the signature hex without `0x` (HexBytes.hex()); both forms pass.
 */
export async function recoverApiRequestSigner(input: {
  requestPath: string;
  signature: string;
  time: string;
  now: Date;
  maxSkewSeconds: number;
}): Promise<Address | undefined> {
  const time = parseExtendedTime(input.time);
  if (!time || Math.abs(input.now.getTime() - time.getTime()) > input.maxSkewSeconds * 1000) return undefined;
  const signature = (input.signature.startsWith('0x') ? input.signature : `0x${input.signature}`) as Hex;
  if (!isHex(signature) || signature.length !== 132) return undefined;
  try {
    return await recoverMessageAddress({ message: apiRequestMessage(input.requestPath, input.time), signature });
  } catch {
    return undefined;
  }
}

async function typedDataSignedBy(typedData: TypedDataDefinition, signature: Hex, expected: Address): Promise<boolean> {
  try {
    return (await recoverTypedDataAddress({ ...typedData, signature } as Parameters<typeof recoverTypedDataAddress>[0])) === expected;
  } catch {
    return false;
  }
}

function assertAccountIndex(accountIndex: number): void {
  if (!Number.isInteger(accountIndex) || accountIndex < 0 || accountIndex > 127)
    throw new Error(`accountIndex must be an int8 in [0, 127], got ${accountIndex}`);
}
