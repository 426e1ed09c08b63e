import { getAddressDecoder, getBase58Decoder, getCompiledTransactionMessageCodec } from '@solana/kit';
import { ed25519PublicKey, ed25519Sign } from '../crypto/ed25519.ts';
import { ValidationError } from '../errors.ts';

const notAMessage = () => new ValidationError('body.transaction: is not a serialised Solana transaction message', 'INVALID_TRANSACTION');

/**
 * Signs a serialised Solana transaction message (legacy or v0). The message must parse exactly
 * (canonical encoding) and name this wallet among its required signers, so the enclave never signs opaque
 * bytes as a transaction.
 */
export function signSolanaMessage(secret: Uint8Array, messageBytes: Uint8Array) {
  const codec = getCompiledTransactionMessageCodec();
  let message: ReturnType<typeof codec.decode>;
  try {
    message = codec.decode(messageBytes);
  } catch {
    throw notAMessage();
  }
  // Canonical only: re-encoding must give the same bytes (no trailing or missing bytes).
  if (!sameBytes(codec.encode(message), messageBytes)) throw notAMessage();
  if (message.version !== 'legacy' && message.version !== 0) throw notAMessage();
  const signer = getAddressDecoder().decode(ed25519PublicKey(secret));
  const signers = message.staticAccounts.slice(0, message.header.numSignerAccounts);
  if (!signers.includes(signer)) {
    throw new ValidationError('body.transaction: the wallet is not a required signer of this message', 'INVALID_TRANSACTION');
  }
  const signature = ed25519Sign(messageBytes, secret);
  return { signature: getBase58Decoder().decode(signature), signer: signer as string };
}

const sameBytes = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  a.length === b.length && Array.prototype.every.call(a, (byte: number, i: number) => byte === b[i]);
