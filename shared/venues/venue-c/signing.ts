import { type Address, getAddress, type Hex, parseAbi, recoverTypedDataAddress, type TypedDataDefinition } from 'viem';
import type { VenueWallet } from '../driver.ts';
import {
  computeContractAddress,
  encodeShortString,
  feltToHex,
  hashOnElements,
  parseFelt,
  randomStarkPrivateKey,
  type StarkKeyPair,
  type StarknetTypedData,
  type StarkSignature,
  starkKeyPairFromEthSignature,
  starknetKeccak,
  starknetTypedDataHash,
  starkPublicKey,
  starkSign,
  starkVerify,
} from '../stark.ts';

/**
 * venue_c (modelled on Paradex), the Starknet-key onboarding path (research §3.2–3.3):
 * - the wallet signs the EIP-712 "STARK Key" message; the L2 key is grind_key(r) over all 32
 *   bytes of r (@paradex/sdk `deriveFromEthSigner`);
 * - the account address is the Starknet contract address of the Paraclear account proxy
 *   (class hashes from `GET /v1/system/config`);
 * - onboarding and JWT auth are Stark signatures over SNIP-12 revision-0 typed data, sent as
 *   `PARADEX-STARKNET-SIGNATURE: ["<r>","<s>"]` (decimal, paradex-py `flatten_signature`);
 * - a trading subkey is a random Stark key below 2^251, registered under a name.
 */

/**
 * The L1 bridge (StarkGate's StarknetTokenBridge, as tradeparadex/starkgate-contracts): `deposit`
 * is payable with the L1→L2 message fee (`estimateDepositFeeWei`), and the events the venue
 * watches. The sandbox bridge (infra/local/contracts/SandboxStarkgateBridge.sol) has exactly these.
 */
export const STARKGATE_BRIDGE_ABI = parseAbi([
  'function deposit(address token, uint256 amount, uint256 l2Recipient) payable',
  'function estimateDepositFeeWei() pure returns (uint256)',
  'event Deposit(address indexed sender, address indexed token, uint256 amount, uint256 indexed l2Recipient, uint256 nonce, uint256 fee)',
  'event Withdrawal(address indexed recipient, address indexed token, uint256 amount)',
]);

/** The subset of `GET /v1/system/config` that account derivation and signing need. */
export interface ParadexSystemConfig {
  readonly l1_chain_id: string;
  readonly starknet_chain_id: string;
  readonly paraclear_account_hash: string;
  readonly paraclear_account_proxy_hash: string;
}

/** The STARK Key EIP-712 message (domain Paradex / 1 / the L1 chain id), @paradex/sdk `buildEthereumStarkKeyTypedData`. */
export function starkKeyTypedData(l1ChainId: number) {
  return {
    domain: { name: 'Paradex', version: '1', chainId: l1ChainId },
    types: { Constant: [{ name: 'action', type: 'string' }] },
    primaryType: 'Constant',
    message: { action: 'STARK Key' },
  } as const satisfies TypedDataDefinition;
}

/** The account's L2 key pair from the wallet's STARK Key signature (@paradex/sdk: grind over the 32-byte r). */
export function deriveParadexKeyPair(starkKeySignature: Hex): StarkKeyPair {
  return starkKeyPairFromEthSignature(starkKeySignature, 'fixed');
}

/** Asks the wallet for the STARK Key signature and derives the L2 key pair from it. */
export async function deriveParadexKeyPairWithWallet(wallet: VenueWallet, l1ChainId: number): Promise<StarkKeyPair> {
  return deriveParadexKeyPair(await wallet.signTypedData(starkKeyTypedData(l1ChainId)));
}

/**
 * The account address: compute_address(class = account proxy, salt = public key, calldata =
 * [account class, selector("initialize"), 2, public key, 0 (no guardian)], deployer 0).
 */
export function paradexAccountAddress(publicKey: bigint, config: ParadexSystemConfig): bigint {
  return computeContractAddress({
    classHash: parseFelt(config.paraclear_account_proxy_hash),
    salt: publicKey,
    constructorCalldata: [parseFelt(config.paraclear_account_hash), starknetKeccak('initialize'), 2n, publicKey, 0n],
  });
}

/** The Starknet chain id as the typed-data domain carries it (hex of the short string). */
function domainChainId(starknetChainId: string): Hex {
  return feltToHex(encodeShortString(starknetChainId));
}

const DOMAIN_TYPE = [
  { name: 'name', type: 'felt' },
  { name: 'chainId', type: 'felt' },
  { name: 'version', type: 'felt' },
] as const;

/** paradex-py `build_onboarding_message`: Constant{action: "Onboarding"}. */
export function onboardingTypedData(starknetChainId: string): StarknetTypedData {
  return {
    domain: { name: 'Paradex', chainId: domainChainId(starknetChainId), version: '1' },
    primaryType: 'Constant',
    types: { StarkNetDomain: DOMAIN_TYPE, Constant: [{ name: 'action', type: 'felt' }] },
    message: { action: 'Onboarding' },
  };
}

/** paradex-py `build_auth_message`: Request{POST /v1/auth, empty body, timestamp, expiration} (seconds). */
export function authTypedData(starknetChainId: string, timestamp: number, expiration: number): StarknetTypedData {
  return {
    domain: { name: 'Paradex', chainId: domainChainId(starknetChainId), version: '1' },
    primaryType: 'Request',
    types: {
      StarkNetDomain: DOMAIN_TYPE,
      Request: [
        { name: 'method', type: 'felt' },
        { name: 'path', type: 'felt' },
        { name: 'body', type: 'felt' },
        { name: 'timestamp', type: 'felt' },
        { name: 'expiration', type: 'felt' },
      ],
    },
    message: { method: 'POST', path: '/v1/auth', body: '', timestamp, expiration },
  };
}

/** Signs Starknet typed data as the account `account` with its L2 key. */
export function signParadexTypedData(typedData: StarknetTypedData, account: bigint, privateKey: bigint): StarkSignature {
  return starkSign(starknetTypedDataHash(typedData, account), privateKey);
}

export function verifyParadexTypedData(typedData: StarknetTypedData, account: bigint, publicKey: bigint, signature: StarkSignature): boolean {
  return starkVerify(signature, starknetTypedDataHash(typedData, account), publicKey);
}

/** `PARADEX-STARKNET-SIGNATURE` header value: `["<r>","<s>"]` in decimal. */
export function formatParadexSignature(signature: StarkSignature): string {
  return `["${signature.r}","${signature.s}"]`;
}

/** Parses a `PARADEX-STARKNET-SIGNATURE` header (decimal or hex felts); undefined when malformed. */
export function parseParadexSignature(header: string): StarkSignature | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(header);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || !parsed.every((part) => typeof part === 'string')) return undefined;
  try {
    return { r: parseFelt(parsed[0] as string), s: parseFelt(parsed[1] as string) };
  } catch {
    return undefined;
  }
}

/** Headers of `POST /v1/onboarding` (body `{ public_key }`), as paradex-py `onboarding_headers`. */
export function onboardingHeaders(input: {
  ethereumAccount: Address;
  account: bigint;
  keyPair: StarkKeyPair;
  starknetChainId: string;
}): Record<string, string> {
  const signature = signParadexTypedData(onboardingTypedData(input.starknetChainId), input.account, input.keyPair.privateKey);
  return {
    'PARADEX-ETHEREUM-ACCOUNT': input.ethereumAccount,
    'PARADEX-STARKNET-ACCOUNT': feltToHex(input.account),
    'PARADEX-STARKNET-SIGNATURE': formatParadexSignature(signature),
  };
}

/** Headers of `POST /v1/auth` (JWT), as paradex-py `auth_headers`. */
export function authHeaders(input: {
  account: bigint;
  privateKey: bigint;
  starknetChainId: string;
  timestamp: number;
  expiration: number;
}): Record<string, string> {
  const signature = signParadexTypedData(authTypedData(input.starknetChainId, input.timestamp, input.expiration), input.account, input.privateKey);
  return {
    'PARADEX-STARKNET-ACCOUNT': feltToHex(input.account),
    'PARADEX-STARKNET-SIGNATURE': formatParadexSignature(signature),
    'PARADEX-TIMESTAMP': String(input.timestamp),
    'PARADEX-SIGNATURE-EXPIRATION': String(input.expiration),
  };
}

export type OnboardingCheck =
  | { readonly ok: true; readonly account: bigint; readonly publicKey: bigint; readonly ethereumAccount: Address }
  | { readonly ok: false; readonly reason: string };

/**
 * The venue's check of `POST /v1/onboarding`: the claimed account is the address the public key
 * derives to, and the onboarding signature verifies under that key.
 */
export function verifyOnboarding(input: {
  headers: Readonly<Record<string, string | undefined>>;
  publicKey: string;
  config: ParadexSystemConfig;
}): OnboardingCheck {
  const ethereumHeader = input.headers['PARADEX-ETHEREUM-ACCOUNT'];
  const accountHeader = input.headers['PARADEX-STARKNET-ACCOUNT'];
  const signatureHeader = input.headers['PARADEX-STARKNET-SIGNATURE'];
  if (!ethereumHeader || !accountHeader || !signatureHeader)
    return { ok: false, reason: 'missing PARADEX-ETHEREUM-ACCOUNT, PARADEX-STARKNET-ACCOUNT or PARADEX-STARKNET-SIGNATURE' };
  let ethereumAccount: Address;
  let account: bigint;
  let publicKey: bigint;
  try {
    ethereumAccount = getAddress(ethereumHeader);
    account = parseFelt(accountHeader);
    publicKey = parseFelt(input.publicKey);
  } catch {
    return { ok: false, reason: 'malformed account, Ethereum account or public key' };
  }
  if (paradexAccountAddress(publicKey, input.config) !== account) return { ok: false, reason: 'the account is not the address of this public key' };
  const signature = parseParadexSignature(signatureHeader);
  if (!signature) return { ok: false, reason: 'malformed PARADEX-STARKNET-SIGNATURE' };
  if (!verifyParadexTypedData(onboardingTypedData(input.config.starknet_chain_id), account, publicKey, signature))
    return { ok: false, reason: 'invalid onboarding signature' };
  return { ok: true, account, publicKey, ethereumAccount };
}

/** A fresh trading subkey: random below 2^251 (paradex-py `create_trading_subkey`). */
export function generateSubkey(): StarkKeyPair {
  const privateKey = randomStarkPrivateKey();
  return { privateKey, publicKey: starkPublicKey(privateKey) };
}

/**
 * The hash the main L2 key signs to register a subkey when the venue asks for a signature
 * (`CreateSubkey.signature`, `signature_timestamp`, `signature_expiry`, seconds):
 * hash_on_elements([account, subkey public key, timestamp, expiry]).
 */
export function subkeyRegistrationHash(account: bigint, subkeyPublicKey: bigint, timestamp: number, expiry: number): bigint {
  return hashOnElements([account, subkeyPublicKey, BigInt(timestamp), BigInt(expiry)]);
}

/** `POST /v1/account/keys/subkeys` body, with the main key's registration signature (hex felts). */
export function subkeyRegistrationRequest(input: {
  name: string;
  account: bigint;
  mainPrivateKey: bigint;
  subkeyPublicKey: bigint;
  timestamp: number;
  expiry: number;
}) {
  const signature = starkSign(subkeyRegistrationHash(input.account, input.subkeyPublicKey, input.timestamp, input.expiry), input.mainPrivateKey);
  return {
    name: input.name,
    public_key: feltToHex(input.subkeyPublicKey),
    state: 'active' as const,
    signature: [feltToHex(signature.r), feltToHex(signature.s)] as const,
    signature_timestamp: input.timestamp,
    signature_expiry: input.expiry,
  };
}

export function verifySubkeyRegistration(input: {
  account: bigint;
  mainPublicKey: bigint;
  subkeyPublicKey: bigint;
  timestamp: number;
  expiry: number;
  signature: StarkSignature;
}): boolean {
  return starkVerify(input.signature, subkeyRegistrationHash(input.account, input.subkeyPublicKey, input.timestamp, input.expiry), input.mainPublicKey);
}

/** The address that produced a STARK Key signature (for a venue that wants to tie the L1 wallet to the key). */
export function recoverStarkKeySigner(l1ChainId: number, signature: Hex): Promise<Address> {
  return recoverTypedDataAddress({ ...starkKeyTypedData(l1ChainId), signature });
}
