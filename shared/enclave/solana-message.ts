import { ed25519 } from '@noble/curves/ed25519.js';
import { PublicKey, VersionedMessage } from '@solana/web3.js';
import bs58 from 'bs58';
import { ValidationError } from '../errors.ts';

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
