import type * as v from 'valibot';
import { type Address, type Hex, isAddress, type SignedAuthorization, type TransactionSerializable } from 'viem';
import { ValidationError } from '../errors.ts';
import { EVM_TRANSACTION_TYPES, type EvmTransaction } from '../wallets/schemas.ts';

export type EvmTransactionInput = v.InferOutput<typeof EvmTransaction>;
type EvmTransactionType = (typeof EVM_TRANSACTION_TYPES)[keyof typeof EVM_TRANSACTION_TYPES];

const WHERE = 'body.transaction';

/** Fields each type uses besides type, chainId, nonce, from, to, value, data, input and gas (viem's serialisers ignore the others). */
const TYPE_FIELDS: Record<EvmTransactionType, readonly string[]> = {
  legacy: ['gasPrice'],
  eip2930: ['gasPrice', 'accessList'],
  eip1559: ['maxFeePerGas', 'maxPriorityFeePerGas', 'accessList'],
  eip4844: ['maxFeePerGas', 'maxPriorityFeePerGas', 'accessList', 'maxFeePerBlobGas', 'blobVersionedHashes'],
  eip7702: ['maxFeePerGas', 'maxPriorityFeePerGas', 'accessList', 'authorizationList'],
};
const TYPE_SPECIFIC = new Set(Object.values(TYPE_FIELDS).flat());

function refuse(field: string, message: string): never {
  throw new ValidationError(`${WHERE}${field ? `.${field}` : ''}: ${message}`, 'INVALID_TRANSACTION');
}

const article = (type: EvmTransactionType) => `${type === 'legacy' ? 'a' : 'an'} ${type}`;
const bigOf = (quantity: string | number) => BigInt(quantity); // decimal, 0x hex or a safe integer: exact
const numberOf = (quantity: string | number) => Number(BigInt(quantity)); // the schema held it to a safe integer
const optionalBig = (quantity: string | number | undefined) => (quantity === undefined ? undefined : bigOf(quantity));

/** The type viem would infer (getTransactionType), decided here so a refusal can name the field. */
function transactionType(tx: EvmTransactionInput): EvmTransactionType {
  if (tx.type) return EVM_TRANSACTION_TYPES[tx.type];
  if (tx.authorizationList) return 'eip7702';
  if (tx.blobVersionedHashes || tx.maxFeePerBlobGas !== undefined) return 'eip4844';
  if (tx.maxFeePerGas !== undefined || tx.maxPriorityFeePerGas !== undefined) return 'eip1559';
  if (tx.gasPrice !== undefined) return tx.accessList ? 'eip2930' : 'legacy';
  return refuse('type', 'is required when no fee field implies it (gasPrice for legacy, maxFeePerGas and maxPriorityFeePerGas for eip1559)');
}

function checksummed(field: string, address: string): Address {
  if (!isAddress(address)) refuse(field, 'has a wrong EIP-55 checksum (send it all lower case, or checksummed)');
  return address;
}

function authorization(entry: NonNullable<EvmTransactionInput['authorizationList']>[number], index: number): SignedAuthorization {
  const field = `authorizationList.${index}`;
  // The schema (SignedAuthorization) requires address or contractAddress, and yParity or v: these refusals only narrow the types.
  const given = entry.address ?? entry.contractAddress;
  if (given === undefined) refuse(`${field}.address`, 'is required');
  const address = checksummed(`${field}.${entry.address ? 'address' : 'contractAddress'}`, given);
  // v (27/28, or 0/1 as some encoders write it) is the deprecated form of yParity.
  const fromV = entry.v === undefined ? undefined : Number(bigOf(entry.v) % 27n);
  const yParity = entry.yParity === undefined ? (fromV ?? refuse(`${field}.yParity`, 'is required (or v)')) : numberOf(entry.yParity);
  if (fromV !== undefined && fromV !== yParity) refuse(`${field}.v`, 'must agree with yParity (27 is 0, 28 is 1)');
  return { address, chainId: numberOf(entry.chainId), nonce: numberOf(entry.nonce), r: entry.r as Hex, s: entry.s as Hex, yParity };
}

/**
 * A validated wire transaction as viem's TransactionSerializable (bigint quantities, number chain
 * id and nonce), refused with the field named when it cannot be what the caller meant: `from` not
 * this wallet, a field its type does not use, a field its type needs missing, a bad checksum.
 */
export function toViemTransaction(tx: EvmTransactionInput, walletAddress: string): TransactionSerializable {
  if (tx.from !== undefined && tx.from.toLowerCase() !== walletAddress.toLowerCase()) {
    refuse('from', `must be this wallet's address, ${walletAddress} (or be left out)`);
  }
  const type = transactionType(tx);
  const used = new Set(TYPE_FIELDS[type]);
  for (const field of TYPE_SPECIFIC) {
    if (tx[field as keyof EvmTransactionInput] !== undefined && !used.has(field)) refuse(field, `is not used by ${article(type)} transaction`);
  }
  if ((type === 'eip4844' || type === 'eip7702') && !tx.to) refuse('to', `is required for ${article(type)} transaction (it cannot create a contract)`);
  if (type === 'eip4844' && !tx.blobVersionedHashes) refuse('blobVersionedHashes', 'is required for an eip4844 transaction');
  if (type === 'eip7702' && !tx.authorizationList) refuse('authorizationList', 'is required for an eip7702 transaction');
  tx.blobVersionedHashes?.forEach((hash, index) => {
    if (!hash.startsWith('0x01')) refuse(`blobVersionedHashes.${index}`, 'must be a version 1 (KZG) hash: 0x01 followed by 31 bytes');
  });
  const maxFeePerGas = optionalBig(tx.maxFeePerGas);
  const maxPriorityFeePerGas = optionalBig(tx.maxPriorityFeePerGas);
  if (maxFeePerGas !== undefined && maxPriorityFeePerGas !== undefined && maxPriorityFeePerGas > maxFeePerGas) {
    refuse('maxPriorityFeePerGas', 'must not be more than maxFeePerGas');
  }
  const transaction = {
    type,
    chainId: numberOf(tx.chainId),
    nonce: numberOf(tx.nonce),
    ...(tx.to ? { to: checksummed('to', tx.to) } : {}),
    value: optionalBig(tx.value),
    data: (tx.data ?? tx.input) as Hex | undefined,
    gas: optionalBig(tx.gas),
    gasPrice: optionalBig(tx.gasPrice),
    maxFeePerGas,
    maxPriorityFeePerGas,
    maxFeePerBlobGas: optionalBig(tx.maxFeePerBlobGas),
    accessList: tx.accessList?.map((entry, index) => ({
      address: checksummed(`accessList.${index}.address`, entry.address),
      storageKeys: entry.storageKeys as Hex[],
    })),
    blobVersionedHashes: tx.blobVersionedHashes as Hex[] | undefined,
    authorizationList: tx.authorizationList?.map(authorization),
  };
  // Absent fields stay absent: viem tells types apart by which keys are defined.
  return Object.fromEntries(Object.entries(transaction).filter(([, value]) => value !== undefined)) as TransactionSerializable;
}
