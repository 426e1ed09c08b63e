import type * as v from 'valibot';
import type { Hex, TransactionSerializable } from 'viem';
import { ValidationError } from '../errors.ts';
import type { EvmTransaction } from '../wallets/schemas.ts';
import { identity, type SigningWallet } from './sign-operations.ts';
import { signSolanaMessage } from './solana-message.ts';
import { signEvmTransaction } from './wallet-keys.ts';

type EvmTransactionInput = v.InferOutput<typeof EvmTransaction>;

/** Wire quantities are decimal strings; viem takes bigints. */
function toViemTransaction(tx: EvmTransactionInput): TransactionSerializable {
  const big = (value: string | undefined) => (value === undefined ? undefined : BigInt(value));
  return {
    ...tx,
    value: big(tx.value),
    gas: big(tx.gas),
    gasPrice: big(tx.gasPrice),
    maxFeePerGas: big(tx.maxFeePerGas),
    maxPriorityFeePerGas: big(tx.maxPriorityFeePerGas),
    to: tx.to as Hex | undefined,
    data: tx.data as Hex | undefined,
    accessList: tx.accessList as TransactionSerializable['accessList'],
    authorizationList: tx.authorizationList as TransactionSerializable['authorizationList'],
  } as TransactionSerializable;
}

/**
 * EVM wallets: a transaction object in, the signed serialised transaction and its hash out.
 * SOL wallets: a base64 message in, the base58 signature out.
 */
export async function signTransaction(wallet: SigningWallet, secret: Uint8Array, body: { transaction: string | EvmTransactionInput }) {
  if (wallet.family === 'sol') {
    if (typeof body.transaction !== 'string') throw new ValidationError('body.transaction: a SOL wallet signs a base64 transaction message');
    return { ...identity(wallet), signature: signSolanaMessage(secret, Buffer.from(body.transaction, 'base64')).signature };
  }
  if (typeof body.transaction === 'string') throw new ValidationError('body.transaction: an EVM wallet signs a transaction object');
  try {
    return { ...identity(wallet), ...(await signEvmTransaction(secret, toViemTransaction(body.transaction))) };
  } catch (error) {
    // viem rejects inconsistent transactions (e.g. fee fields of another type) before signing.
    throw new ValidationError(`body.transaction: ${(error as Error).message.split('\n')[0]}`, 'INVALID_TRANSACTION');
  }
}

