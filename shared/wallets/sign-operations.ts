import type { Hex, TransactionSerializable } from 'viem';
import { ValidationError } from '../errors.ts';
import type { KeyFamily } from './networks.ts';
import type { EvmTransaction } from './schemas.ts';
import { signSolanaMessage } from './solana-message.ts';
import { signEvmAuthorization, signEvmTransaction, signHash, signMessageBytes } from './wallet-keys.ts';
import { ForbiddenError } from '../errors.ts';
import type * as v from 'valibot';

/**
 * The three signing operations, shared by the v1 and v2 endpoints (and so by every door that
 * reaches them). Each takes the wallet, its private key for this call, and the validated body.
 */
export interface SigningWallet {
  readonly wallet_id: string;
  readonly public_address: string;
  readonly family: KeyFamily;
}

function identity(wallet: SigningWallet) {
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

/** EIP-191 personal message (EVM) or the raw bytes (SOL). */
export async function signMessage(wallet: SigningWallet, secret: Uint8Array, body: { message: string; encoding: 'utf8' | 'hex' }) {
  return { ...identity(wallet), signature: await signMessageBytes(wallet.family, secret, messageBytes(body.message, body.encoding)) };
}

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
    throw new ForbiddenError('DELEGATE_NOT_ALLOWED', `${body.contract_address} is not an allowed EIP-7702 delegate`);
  }
  const authorization = await signEvmAuthorization(secret, { contractAddress: body.contract_address as Hex, chainId: body.chain_id, nonce: body.nonce });
  return { ...identity(wallet), authorization };
}
