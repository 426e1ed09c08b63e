import { randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { bytesToHex, type Hex, keccak256, type TransactionSerializable } from 'viem';
import { generatePrivateKey, privateKeyToAddress, sign, signAuthorization, signMessage, signTransaction } from 'viem/accounts';
import { ed25519PublicKey, ed25519Sign } from '../crypto/ed25519.ts';
import type { KeyFamily } from '../wallets/networks.ts';

/**
 * Key generation and signing per key family. Secrets are 32 bytes: a secp256k1 private key
 * (EVM) or an ed25519 seed (Solana). They exist in plaintext only for one operation.
 * No @solana/web3.js here: it would add ~600 kB to every enclave bundle (see solana-message.ts).
 */
export function generateSecret(family: KeyFamily): Buffer {
  return family === 'evm' ? Buffer.from(generatePrivateKey().slice(2), 'hex') : randomBytes(32);
}

/** EIP-55 checksummed address (EVM) or base58 public key (Solana). */
export function addressOf(family: KeyFamily, secret: Uint8Array): string {
  return family === 'evm' ? privateKeyToAddress(bytesToHex(secret)) : bs58.encode(ed25519PublicKey(secret));
}

/**
 * Signs 32 bytes as given, without any prefix. EVM: 65-byte r‖s‖v hex with v = 27 or 28.
 * Solana: 64-byte ed25519 signature, hex.
 */
export async function signHash(family: KeyFamily, secret: Uint8Array, hash: Hex): Promise<Hex> {
  if (family === 'evm') return sign({ hash, privateKey: bytesToHex(secret), to: 'hex' });
  return bytesToHex(ed25519Sign(Buffer.from(hash.slice(2), 'hex'), secret));
}

/** EVM: EIP-191 personal message signature. Solana: ed25519 over the raw message bytes. */
export async function signMessageBytes(family: KeyFamily, secret: Uint8Array, message: Uint8Array): Promise<Hex> {
  if (family === 'evm') return signMessage({ message: { raw: message }, privateKey: bytesToHex(secret) });
  return bytesToHex(ed25519Sign(message, secret));
}

export async function signEvmTransaction(secret: Uint8Array, transaction: TransactionSerializable) {
  const signed = await signTransaction({ privateKey: bytesToHex(secret), transaction });
  return { signed_transaction: signed, tx_hash: keccak256(signed) };
}

/** EIP-7702: authorises `contractAddress` as this account's code on `chainId` at account nonce `nonce`. */
export async function signEvmAuthorization(secret: Uint8Array, request: { contractAddress: `0x${string}`; chainId: number; nonce: number }) {
  const signed = await signAuthorization({
    privateKey: bytesToHex(secret),
    contractAddress: request.contractAddress,
    chainId: request.chainId,
    nonce: request.nonce,
  });
  return { address: signed.address, chainId: signed.chainId, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity };
}
