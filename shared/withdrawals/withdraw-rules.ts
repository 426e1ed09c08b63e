import { isAddress as isSolanaAddress } from '@solana/kit';
import * as v from 'valibot';
import { parseEvmAddress } from '../chains/evm-address.ts';
import { ValidationError } from '../errors.ts';

/** Spec, Endpoints: "Supported token per chain for withdrawal". */
export const WITHDRAW_TOKENS = {
  ETH: ['ETH', 'USDC'],
  ARB: ['ETH', 'USDC', 'USDC.E'],
  POL: ['POL', 'USDC', 'USDC.E'],
  SOL: ['SOL', 'USDC'],
  INK: ['ETH', 'USDC'],
} as const;

export type WithdrawChain = keyof typeof WITHDRAW_TOKENS;
export const TOKEN_CODES = ['ETH', 'USDC', 'USDC.E', 'POL', 'SOL'] as const;
export type TokenCode = (typeof TOKEN_CODES)[number];

export const WithdrawRequest = v.object({
  to_address: v.pipe(v.string('must be a string'), v.minLength(1, 'is required'), v.maxLength(64, 'is too long')),
  amount: v.pipe(
    v.string('must be a decimal string'),
    v.maxLength(128, 'must be at most 128 characters'),
    v.description(
      'Decimal string, e.g. "12.5"; at most the token\'s decimals, and at most what the token can hold (2^256 - 1 base units on EVM chains, 2^64 - 1 on Solana).',
    ),
  ),
  token: v.optional(v.picklist(TOKEN_CODES, `must be one of ${TOKEN_CODES.join(', ')}`), 'USDC'),
  chain: v.optional(v.picklist(Object.keys(WITHDRAW_TOKENS) as WithdrawChain[], 'must be one of ETH, ARB, POL, SOL, INK'), 'ARB'),
  gas_sponsored: v.optional(v.boolean('must be a boolean'), false),
});
export type WithdrawInput = v.InferOutput<typeof WithdrawRequest>;

export function assertWithdrawable(chain: WithdrawChain, token: TokenCode): void {
  if (!(WITHDRAW_TOKENS[chain] as readonly string[]).includes(token)) {
    throw new ValidationError(`body.token: ${token} cannot be withdrawn on ${chain}; supported: ${WITHDRAW_TOKENS[chain].join(', ')}`, 'UNSUPPORTED_TOKEN');
  }
}

/** EVM: parseEvmAddress (EIP-55: a wrong mixed-case checksum and the zero address are refused). Solana: a base58 32-byte public key (on or off the curve). */
export function normaliseRecipient(chain: WithdrawChain, address: string): string {
  if (chain === 'SOL') {
    // isAddress: base58 of 32-44 characters that decodes to exactly 32 bytes.
    if (!isSolanaAddress(address)) throw new ValidationError('body.to_address: must be a base58 Solana address (32 bytes)', 'INVALID_ADDRESS');
    return address;
  }
  return parseEvmAddress(address, 'body.to_address', { destination: true });
}
