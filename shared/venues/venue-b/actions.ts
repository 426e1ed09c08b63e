import type { Address, Hex, TypedDataDefinition } from 'viem';
import { parseSignature, serializeSignature } from 'viem';

/**
 * venue_b (modelled on Hyperliquid): the user-signed actions and their EIP-712 typed data, as the
 * venue defines them (research §1.1, §1.4, §1.5; [O] H3, H9). The driver signs with these, the
 * sandbox venue verifies with these, and test/unit/venue-b-signing.test.ts proves them equal to
 * the official SDK's (@nktkas/hyperliquid) for the same key and message.
 */

/** Hyperliquid's legacy bridge on Arbitrum ("Bridge2"): a plain USDC transfer to it is a deposit of the sender ([O] H1). */
export const VENUE_B_BRIDGE: Address = '0x2df1c51e09aecf9cacb7bc98cb1742757f163df7';
/** Native USDC on Arbitrum One ([O] H1); the sandbox's ARB chain has its token at the same address. */
export const ARBITRUM_USDC: Address = '0xaf88d065e77c8cC2239327C5EDb3A432268e5831';
/** USDC on the venue has 6 decimals on the wire ("12.3"), as on Arbitrum. */
export const VENUE_B_DECIMALS = 6;

export type HyperliquidChain = 'Mainnet' | 'Testnet';

export const APPROVE_AGENT_TYPES = {
  'HyperliquidTransaction:ApproveAgent': [
    { name: 'hyperliquidChain', type: 'string' },
    { name: 'agentAddress', type: 'address' },
    { name: 'agentName', type: 'string' },
    { name: 'nonce', type: 'uint64' },
  ],
} as const;

export const APPROVE_BUILDER_FEE_TYPES = {
  'HyperliquidTransaction:ApproveBuilderFee': [
    { name: 'hyperliquidChain', type: 'string' },
    { name: 'maxFeeRate', type: 'string' },
    { name: 'builder', type: 'address' },
    { name: 'nonce', type: 'uint64' },
  ],
} as const;

export const WITHDRAW_TYPES = {
  'HyperliquidTransaction:Withdraw': [
    { name: 'hyperliquidChain', type: 'string' },
    { name: 'destination', type: 'string' },
    { name: 'amount', type: 'string' },
    { name: 'time', type: 'uint64' },
  ],
} as const;

interface UserSignedBase {
  readonly hyperliquidChain: HyperliquidChain;
  /** The chain id the wallet signs with, hex ("0xa4b1"); any chain, the domain carries it ([O] H9). */
  readonly signatureChainId: Hex;
}

export interface ApproveAgentAction extends UserSignedBase {
  readonly type: 'approveAgent';
  readonly agentAddress: Address;
  /** Omitted on the wire for an unnamed agent, signed as "" ([O] H9 exchange.py). */
  readonly agentName?: string;
  readonly nonce: number;
}

export interface ApproveBuilderFeeAction extends UserSignedBase {
  readonly type: 'approveBuilderFee';
  /** Percent string, e.g. "0.01%". */
  readonly maxFeeRate: string;
  readonly builder: Address;
  readonly nonce: number;
}

export interface Withdraw3Action extends UserSignedBase {
  readonly type: 'withdraw3';
  readonly destination: string;
  /** Decimal string of USDC ("12.3"). */
  readonly amount: string;
  readonly time: number;
}

export type UserSignedAction = ApproveAgentAction | ApproveBuilderFeeAction | Withdraw3Action;

/** The wire signature: `{ r, s, v }` with v 27 or 28. */
export interface WireSignature {
  readonly r: Hex;
  readonly s: Hex;
  readonly v: number;
}

/** The action's nonce: `nonce`, or `time` for withdraw3; the request's outer `nonce` must equal it ([O] H3). */
export function actionNonce(action: UserSignedAction): number {
  return action.type === 'withdraw3' ? action.time : action.nonce;
}

/** The EIP-712 typed data the main wallet signs for a user-signed action (domain of [O] H9 `user_signed_payload`). */
export function userSignedTypedData(action: UserSignedAction): TypedDataDefinition {
  const domain = {
    name: 'HyperliquidSignTransaction',
    version: '1',
    chainId: Number.parseInt(action.signatureChainId, 16),
    verifyingContract: '0x0000000000000000000000000000000000000000',
  } as const;
  switch (action.type) {
    case 'approveAgent':
      return {
        domain,
        types: APPROVE_AGENT_TYPES,
        primaryType: 'HyperliquidTransaction:ApproveAgent',
        message: {
          hyperliquidChain: action.hyperliquidChain,
          agentAddress: action.agentAddress,
          agentName: action.agentName ?? '',
          nonce: BigInt(action.nonce),
        },
      };
    case 'approveBuilderFee':
      return {
        domain,
        types: APPROVE_BUILDER_FEE_TYPES,
        primaryType: 'HyperliquidTransaction:ApproveBuilderFee',
        message: { hyperliquidChain: action.hyperliquidChain, maxFeeRate: action.maxFeeRate, builder: action.builder, nonce: BigInt(action.nonce) },
      };
    case 'withdraw3':
      return {
        domain,
        types: WITHDRAW_TYPES,
        primaryType: 'HyperliquidTransaction:Withdraw',
        message: { hyperliquidChain: action.hyperliquidChain, destination: action.destination, amount: action.amount, time: BigInt(action.time) },
      };
  }
}

export function toWireSignature(signature: Hex): WireSignature {
  const { r, s, v, yParity } = parseSignature(signature);
  return { r, s, v: Number(v ?? BigInt(27 + (yParity ?? 0))) };
}

export function fromWireSignature(signature: WireSignature): Hex {
  return serializeSignature({ r: signature.r, s: signature.s, v: BigInt(signature.v) });
}
