import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { PublicKey, VersionedMessage } from '@solana/web3.js';
import bs58 from 'bs58';
import { bytesToHex, type Hex, keccak256, type TransactionSerializable } from 'viem';
import { generatePrivateKey, privateKeyToAddress, sign, signMessage, signTransaction } from 'viem/accounts';
import { ValidationError } from '../errors.ts';
import type { KeyFamily } from './networks.ts';

/**
 * Key generation and signing per key family. Secrets are 32 bytes: a secp256k1 private key
 * (EVM) or an ed25519 seed (Solana). They exist in plaintext only for one operation.
 */
export function generateSecret(family: KeyFamily): Buffer {
  return family === 'evm' ? Buffer.from(generatePrivateKey().slice(2), 'hex') : randomBytes(32);
}

/** EIP-55 checksummed address (EVM) or base58 public key (Solana). */
export function addressOf(family: KeyFamily, secret: Uint8Array): string {
  return family === 'evm' ? privateKeyToAddress(bytesToHex(secret)) : new PublicKey(ed25519.getPublicKey(secret)).toBase58();
}

/**
 * Signs 32 bytes as given, without any prefix. EVM: 65-byte r‖s‖v hex with v = 27 or 28.
 * Solana: 64-byte ed25519 signature, hex.
 */
export async function signHash(family: KeyFamily, secret: Uint8Array, hash: Hex): Promise<Hex> {
  if (family === 'evm') return sign({ hash, privateKey: bytesToHex(secret), to: 'hex' });
  return bytesToHex(ed25519.sign(Buffer.from(hash.slice(2), 'hex'), secret));
}

/** EVM: EIP-191 personal message signature. Solana: ed25519 over the raw message bytes. */
export async function signMessageBytes(family: KeyFamily, secret: Uint8Array, message: Uint8Array): Promise<Hex> {
  if (family === 'evm') return signMessage({ message: { raw: message }, privateKey: bytesToHex(secret) });
  return bytesToHex(ed25519.sign(message, secret));
}

export async function signEvmTransaction(secret: Uint8Array, transaction: TransactionSerializable) {
  const signed = await signTransaction({ privateKey: bytesToHex(secret), transaction });
  return { signed_transaction: signed, tx_hash: keccak256(signed) };
}

/**
 * Signs a serialised Solana transaction message (legacy or v0). The message must parse and
 * name this wallet among its required signers, so the enclave never signs opaque bytes as a
 * transaction.
 */
export function signSolanaMessage(secret: Uint8Array, messageBytes: Uint8Array) {
  let message: VersionedMessage;
  try {
    message = VersionedMessage.deserialize(messageBytes);
  } catch {
    throw new ValidationError('body.transaction: is not a serialised Solana transaction message', 'INVALID_TRANSACTION');
  }
  const signer = new PublicKey(ed25519.getPublicKey(secret));
  const signers = message.staticAccountKeys.slice(0, message.header.numRequiredSignatures);
  if (!signers.some((key) => key.equals(signer))) {
    throw new ValidationError('body.transaction: the wallet is not a required signer of this message', 'INVALID_TRANSACTION');
  }
  const signature = ed25519.sign(messageBytes, secret);
  return { signature: bs58.encode(signature), signer: signer.toBase58() };
}
