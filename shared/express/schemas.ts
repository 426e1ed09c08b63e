import * as v from 'valibot';
import { SignDataFields, SignMessageFields, SignTransactionFields } from '../wallets/schemas.ts';

/** Express wallet service bodies: the enclave's v2 sign bodies minus op_jwt/access_key. */
const OptionalWalletId = {
  wallet_id: v.optional(v.pipe(v.string(), v.description("Optional: when given it must be the user's wallet for X-SERVICE-CHAIN."))),
};

export const ExpressSignDataRequest = v.object({ ...OptionalWalletId, ...SignDataFields });
export const ExpressSignMessageRequest = v.object({ ...OptionalWalletId, ...SignMessageFields });
export const ExpressSignTransactionRequest = v.object({ ...OptionalWalletId, ...SignTransactionFields });

export const ExpressWalletResponse = v.object({
  success: v.literal(true),
  public_address: v.pipe(v.string(), v.description('EIP-55 (every EVM chain code shares it) or base58 (SOL).')),
  chain: v.string(),
  wallet_id: v.string(),
});

export const ExpressSignResponse = v.object({
  success: v.literal(true),
  chain: v.string(),
  wallet_id: v.string(),
  public_address: v.string(),
  signature: v.optional(v.string()),
  signed_transaction: v.optional(v.string()),
  tx_hash: v.optional(v.string()),
});
