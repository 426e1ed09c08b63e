import type { Hex } from 'viem';
import { ForbiddenError, ValidationError } from '../errors.ts';
import type { KeyFamily } from '../wallets/networks.ts';
import { isSolanaTransactionBytes } from './solana-message.ts';
import { signEvmAuthorization, signHash, signMessageBytes } from './wallet-keys.ts';

/**
 * The signing operations, shared by the v1 and v2 endpoints (and so by every door that reaches
 * them). Each takes the wallet, its private key for this call, and the validated body.
 * Transactions live in sign-transaction-operation.ts: Solana message parsing pulls in
 * @solana/web3.js, which the other endpoints' bundles should not carry.
 */
export interface SigningWallet {
  readonly wallet_id: string;
  readonly public_address: string;
  readonly family: KeyFamily;
}

export function identity(wallet: SigningWallet) {
  return { wallet_id: wallet.wallet_id, public_address: wallet.public_address };
}

export async function signData(wallet: SigningWallet, secret: Uint8Array, body: { raw_data_hash: string }) {
  return { ...identity(wallet), signature: await signHash(wallet.family, secret, body.raw_data_hash as Hex) };
}

function messageBytes(message: string, encoding: 'utf8' | 'hex'): Buffer {
  if (encoding === 'utf8') return Buffer.from(message, 'utf8');
  if (!/^0x([0-9a-fA-F]{2})+$/.test(message)) throw new ValidationError('body.message: must be 0x-prefixed hex bytes when encoding is "hex"');
  return Buffer.from(message.slice(2), 'hex');
}

/**
 * EIP-191 personal message (EVM) or the raw bytes (SOL). On Solana, bytes that are a transaction
 * message are refused (solana-message.ts isSolanaTransactionBytes): their signature would sign that
 * transaction, which only sign_transaction may do, under the app's policy.
 */
export async function signMessage(wallet: SigningWallet, secret: Uint8Array, body: { message: string; encoding: 'utf8' | 'hex' }) {
  const bytes = messageBytes(body.message, body.encoding);
  if (wallet.family === 'sol' && isSolanaTransactionBytes(bytes)) {
    throw new ValidationError(
      'body.message: these bytes are a Solana transaction (or its message); a signature over them would authorise it: sign it with sign_transaction instead',
      'MESSAGE_IS_TRANSACTION',
    );
  }
  return { ...identity(wallet), signature: await signMessageBytes(wallet.family, secret, bytes) };
}

/**
 * EIP-7702 authorisation for an EVM wallet, only to a delegate on the enclave's allow-list: an
 * authorisation hands the account's code to that contract, so the enclave never signs one for an
 * arbitrary address.
 */
export async function signAuthorization(
  wallet: SigningWallet,
  secret: Uint8Array,
  body: { chain_id: number; contract_address: string; nonce: number },
  allowedDelegates: ReadonlySet<string>,
) {
  if (wallet.family !== 'evm') throw new ValidationError('EIP-7702 authorisations exist for EVM wallets only', 'NOT_EVM_WALLET');
  if (!allowedDelegates.has(body.contract_address.toLowerCase())) {
    throw new ForbiddenError('DELEGATE_NOT_ALLOWED', 'body.contract_address: is not an allowed EIP-7702 delegate');
  }
  const authorization = await signEvmAuthorization(secret, { contractAddress: body.contract_address as Hex, chainId: body.chain_id, nonce: body.nonce });
  return { ...identity(wallet), authorization };
}
