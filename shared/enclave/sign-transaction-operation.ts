import { BaseError } from 'viem';
import { ValidationError } from '../errors.ts';
import { type EvmTransactionInput, toViemTransaction } from './evm-transaction.ts';
import { identity, type SigningWallet } from './sign-operations.ts';
import { signSolanaMessage } from './solana-message.ts';
import { signEvmTransaction } from './wallet-keys.ts';

/**
 * EVM wallets: a transaction object in (viem's TransactionSerializable in JSON), the signed
 * serialised transaction and its hash out. SOL wallets: a base64 message in, the base58 signature out.
 */
export async function signTransaction(wallet: SigningWallet, secret: Uint8Array, body: { transaction: string | EvmTransactionInput }) {
  if (wallet.family === 'sol') {
    if (typeof body.transaction !== 'string') throw new ValidationError('body.transaction: a SOL wallet signs a base64 transaction message');
    return { ...identity(wallet), signature: signSolanaMessage(secret, Buffer.from(body.transaction, 'base64')).signature };
  }
  if (typeof body.transaction === 'string') throw new ValidationError('body.transaction: an EVM wallet signs a transaction object');
  const transaction = toViemTransaction(body.transaction, wallet.public_address);
  try {
    return { ...identity(wallet), ...(await signEvmTransaction(secret, transaction)) };
  } catch (error) {
    // What toViemTransaction does not foresee, viem refuses before signing; its message names the field in backticks.
    if (!(error instanceof BaseError)) throw error;
    const field = /`(\w+)`/.exec(error.shortMessage)?.[1];
    throw new ValidationError(`body.transaction${field && field in body.transaction ? `.${field}` : ''}: ${error.shortMessage}`, 'INVALID_TRANSACTION');
  }
}
