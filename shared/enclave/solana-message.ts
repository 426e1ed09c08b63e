import { getAddressDecoder, getBase58Decoder, getCompiledTransactionMessageCodec, getTransactionDecoder } from '@solana/kit';
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

/**
 * Whether raw bytes someone asks the wallet to sign as a "message" are a Solana transaction
 * message (legacy or v0), bare or inside a wire transaction (compact-u16 count, 64-byte
 * signatures, then the message). Solana signs a transaction as ed25519 over its message bytes,
 * with no domain of its own: a signature over such bytes from sign_message would be a valid
 * transaction signature, outside every policy (Phantom and other wallets refuse the same way).
 * A decoder that accepts a prefix is enough to refuse: a lenient reading refuses more, never less.
 */
export function isSolanaTransactionBytes(bytes: Uint8Array): boolean {
  const parses = (read: () => unknown) => {
    try {
      read();
      return true;
    } catch {
      return false;
    }
  };
  const message = parses(() => {
    const decoded = getCompiledTransactionMessageCodec().decode(bytes);
    if (decoded.version !== 'legacy' && decoded.version !== 0) throw new Error('not a version a validator accepts');
  });
  return message || parses(() => getCompiledTransactionMessageCodec().decode(getTransactionDecoder().decode(bytes).messageBytes));
}
