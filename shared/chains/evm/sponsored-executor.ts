import {
  type Address,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  hexToBigInt,
  keccak256,
  numberToHex,
  type PublicClient,
  type TypedDataDefinition,
  toHex,
} from 'viem';
import { sponsoredExecutorArtifactAbi } from './contracts/sponsored-executor.artifact.ts';

/**
 * Helpers for gas-sponsored sends through the SponsoredExecutor EIP-7702 delegate
 * (contracts/SponsoredExecutor.sol): what the user's key signs, the sponsor's calldata, and the
 * account's delegation and nonce as read from a chain.
 */
export interface Call {
  readonly to: Address;
  readonly value: bigint;
  readonly data: Hex;
}

export const sponsoredExecutorAbi = sponsoredExecutorArtifactAbi;

export const EXECUTOR_DOMAIN_NAME = 'SponsoredExecutor';
export const EXECUTOR_DOMAIN_VERSION = '1';

export const EXECUTOR_TYPES = {
  Call: [
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'data', type: 'bytes' },
  ],
  Execute: [
    { name: 'calls', type: 'Call[]' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

export type ExecutorTypedData = TypedDataDefinition<typeof EXECUTOR_TYPES, 'Execute'>;

/** The nonce's storage slot in the account, by the ERC-7201 formula (namespace as in the contract). */
export const EXECUTOR_NONCE_SLOT: Hex = erc7201Slot('perp-wallet.sponsored-executor');

/**
 * What the account's own key signs (viem `signTypedData`, or `hashTypedData` for a raw digest
 * signer). The domain's verifyingContract is the account itself: under EIP-7702 the delegate's code
 * runs at the account's address, so a signature is good for that account on that chain only.
 */
export function executorTypedData(input: { chainId: number; account: Address; calls: readonly Call[]; nonce: bigint; deadline: bigint }): ExecutorTypedData {
  return {
    domain: { name: EXECUTOR_DOMAIN_NAME, version: EXECUTOR_DOMAIN_VERSION, chainId: input.chainId, verifyingContract: input.account },
    types: EXECUTOR_TYPES,
    primaryType: 'Execute',
    message: { calls: input.calls.map((call) => ({ to: call.to, value: call.value, data: call.data })), nonce: input.nonce, deadline: input.deadline },
  };
}

/** Calldata of `execute`, for a transaction the sponsor sends to the account's address. */
export function executeCalldata(calls: readonly Call[], nonce: bigint, deadline: bigint, signature: Hex): Hex {
  return encodeFunctionData({ abi: sponsoredExecutorAbi, functionName: 'execute', args: [calls, nonce, deadline, signature] });
}

/**
 * The nonce the account's next `execute` must carry. Read from the namespaced slot rather than
 * through `executorNonce()`: it is 0 for an account never delegated, and stays right while the
 * account is delegated elsewhere (storage survives re-delegation, so the count resumes there).
 */
export async function readExecutorNonce(client: Pick<PublicClient, 'getStorageAt'>, account: Address): Promise<bigint> {
  const value = await client.getStorageAt({ address: account, slot: EXECUTOR_NONCE_SLOT });
  return value === undefined || value === '0x' ? 0n : hexToBigInt(value);
}

/** True when the account's code is the EIP-7702 delegation indicator 0xef0100‖delegate. */
export async function isDelegatedTo(client: Pick<PublicClient, 'getCode'>, account: Address, delegate: Address): Promise<boolean> {
  const code = await client.getCode({ address: account });
  return code !== undefined && code.toLowerCase() === `0xef0100${delegate.slice(2).toLowerCase()}`;
}

export function erc20TransferCall(token: Address, to: Address, amount: bigint): Call {
  return { to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) };
}

/** ERC-7201: keccak256(abi.encode(uint256(keccak256(id)) - 1)) & ~bytes32(uint256(0xff)). */
function erc7201Slot(namespace: string): Hex {
  const inner = hexToBigInt(keccak256(toHex(namespace))) - 1n;
  return numberToHex(hexToBigInt(keccak256(encodeAbiParameters([{ type: 'uint256' }], [inner]))) & ~0xffn, { size: 32 });
}
