import { type Address, keccak256, toHex } from 'viem';
import { encodeShortString, feltToHex, type StarknetTypedData, type StarkSignature } from '../stark.ts';

/**
 * venue_c's withdrawal request: a SANDBOX CHOICE in Paradex's style. On Paradex a withdrawal is a
 * Starknet invoke transaction signed by the account's L2 key: `paraclear.withdraw(l2 token,
 * amount in Paraclear's 8 decimals)` batched with the bridge's `initiate_token_withdraw(l1 token,
 * l1 recipient, amount)` (@paradex/sdk `Paraclear.withdraw`, research [O] P7, P10). The sandbox
 * has no Starknet, so it takes the same facts over HTTP (`POST /v1/withdrawals`, JWT of the main
 * key), signed by the main L2 key as SNIP-12 revision-0 typed data in the domain the venue's
 * onboarding and auth messages use. Subkeys cannot withdraw ([O] P8): only the main key's
 * signature is accepted. The venue's own record of it is a `GET /v1/transfers` entry (Paradex's
 * TransferResult, kind WITHDRAWAL).
 */
export interface WithdrawalMessage {
  /** The token's L2 address (`bridged_tokens[].l2_token_address`). */
  readonly token: bigint;
  /** Paraclear's 8-decimal chain amount ([O] P10). */
  readonly amount: bigint;
  /** The Ethereum address paid on L1. */
  readonly recipient: Address;
  /** The client's id for this withdrawal: a retry with the same nonce is the same withdrawal. */
  readonly nonce: bigint;
  /** Unix seconds after which the signature is refused. */
  readonly expiration: number;
}

/** Paraclear's chain amounts have 8 decimals; USDC has 6 ([O] P10). */
export const PARACLEAR_DECIMALS = 8;

export function withdrawalTypedData(starknetChainId: string, message: WithdrawalMessage): StarknetTypedData {
  return {
    domain: { name: 'Paradex', chainId: feltToHex(encodeShortString(starknetChainId)), version: '1' },
    primaryType: 'Withdrawal',
    types: {
      StarkNetDomain: [
        { name: 'name', type: 'felt' },
        { name: 'chainId', type: 'felt' },
        { name: 'version', type: 'felt' },
      ],
      Withdrawal: [
        { name: 'token', type: 'felt' },
        { name: 'amount', type: 'felt' },
        { name: 'recipient', type: 'felt' },
        { name: 'nonce', type: 'felt' },
        { name: 'expiration', type: 'felt' },
      ],
    },
    message: { token: message.token, amount: message.amount, recipient: BigInt(message.recipient), nonce: message.nonce, expiration: message.expiration },
  };
}

/** The request body of `POST /v1/withdrawals`: amounts as decimal strings, the signature as hex felts. */
export interface WithdrawalRequestBody {
  readonly token: string;
  /** USDC as a decimal string ("5.25"). */
  readonly amount: string;
  readonly recipient: Address;
  /** Decimal string of the nonce felt. */
  readonly nonce: string;
  readonly expiration: number;
  readonly signature: readonly [string, string];
}

export function formatWithdrawalSignature(signature: StarkSignature): readonly [string, string] {
  return [feltToHex(signature.r), feltToHex(signature.s)];
}

/** A withdrawal nonce from an idempotency key: the first 60 bits of its keccak (a felt, stable per key). */
export function withdrawalNonceFromKey(idempotencyKey: string): bigint {
  return BigInt(keccak256(toHex(idempotencyKey)).slice(0, 17));
}
