import { type Address, type Hex, keccak256, type TypedDataDefinition, toHex } from 'viem';
import { POLYGON_CHAIN_ID } from './signing.ts';

/**
 * venue_e (modelled on Polymarket, research §5.1, §5.4): the tokens on Polygon and the withdrawal
 * request the driver signs and the sandbox venue verifies.
 */

/** USDC.e on Polygon ([O] M1); the sandbox POL chain has its token at the same address. */
export const POLYGON_USDC_E: Address = '0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174';
/** pUSD, "the collateral token used for all trading on Polymarket", 6 decimals ([O] M2, M3). */
export const PUSD: Address = '0xC011a7E12a19f7B1f670d46F03B03f3342E82DFB';
/** The live CLOB and Bridge API hosts ([O] M12, M14). */
export const CLOB_URL = 'https://clob.polymarket.com';
export const BRIDGE_URL = 'https://bridge.polymarket.com';
/** Order / CLOB signature type of the Polymarket Proxy wallet ([O] M12: 1 = POLY_PROXY). */
export const POLY_PROXY_SIGNATURE_TYPE = 1;

/**
 * The user's authorisation of a withdrawal from the proxy wallet. SANDBOX CHOICE: live, a
 * withdrawal is `POST /withdraw` on the Bridge API (unauthenticated; it returns a one-shot address)
 * followed by a pUSD transfer out of the proxy wallet that the relayer executes on the owner's
 * signature over the proxy call. The sandbox folds both into one `POST /withdraw` carrying this
 * EIP-712 signature by the proxy's owner over exactly what moves (wallet, recipient, chain, token,
 * amount) and the withdrawal's id (the idempotency key's hash), so a replay cannot pay twice.
 */
export function withdrawTypedData(input: {
  proxyWallet: Address;
  recipientAddr: Address;
  toChainId: bigint;
  toTokenAddress: Address;
  amount: bigint;
  withdrawalId: Hex;
  chainId?: number;
}) {
  return {
    domain: { name: 'Polymarket Bridge Withdraw (sandbox)', version: '1', chainId: input.chainId ?? POLYGON_CHAIN_ID },
    types: {
      Withdraw: [
        { name: 'proxyWallet', type: 'address' },
        { name: 'recipientAddr', type: 'address' },
        { name: 'toChainId', type: 'uint256' },
        { name: 'toTokenAddress', type: 'address' },
        { name: 'amount', type: 'uint256' },
        { name: 'withdrawalId', type: 'bytes32' },
      ],
    },
    primaryType: 'Withdraw',
    message: {
      proxyWallet: input.proxyWallet,
      recipientAddr: input.recipientAddr,
      toChainId: input.toChainId,
      toTokenAddress: input.toTokenAddress,
      amount: input.amount,
      withdrawalId: input.withdrawalId,
    },
  } as const satisfies TypedDataDefinition;
}

/** The withdrawal id of an idempotency key: one key, one withdrawal at the venue. */
export function withdrawalIdOf(idempotencyKey: string): Hex {
  return keccak256(toHex(`venue_e withdrawal:${idempotencyKey}`));
}
