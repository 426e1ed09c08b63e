import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Keypair, PublicKey, SystemProgram, TransactionMessage } from '@solana/web3.js';
import bs58 from 'bs58';
import { validate as isUuid, version as uuidVersion } from 'uuid';
import { bytesToHex, hexToBytes, isAddress, recoverAddress, recoverMessageAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { signSolanaMessage } from '../../shared/enclave/solana-message.ts';
import { addressOf, generateSecret, signHash, signMessageBytes } from '../../shared/enclave/wallet-keys.ts';
import { deriveWalletId } from '../../shared/enclave/wallet-record.ts';
import { ValidationError } from '../../shared/errors.ts';

const randomHash = () => bytesToHex(randomBytes(32));

/** A v0 message transferring lamports, paid for (and so signed) by `payer`. */
function transferMessage(payer: PublicKey, to: PublicKey, from: PublicKey = payer) {
  return new TransactionMessage({
    payerKey: payer,
    recentBlockhash: bs58.encode(randomBytes(32)),
    instructions: [SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports: 1_000 })],
  })
    .compileToV0Message()
    .serialize();
}

describe('EVM keys', () => {
  it('generates a 32-byte secret with a checksummed address', () => {
    const secret = generateSecret('evm');
    expect(secret).toHaveLength(32);
    expect(isAddress(addressOf('evm', secret), { strict: true })).toBe(true);
  });

  it('signHash gives a 65-byte r‖s‖v signature, v 27 or 28, that recovers to the wallet address', async () => {
    const secret = generateSecret('evm');
    for (let i = 0; i < 8; i++) {
      const hash = randomHash();
      const signature = await signHash('evm', secret, hash);
      const bytes = hexToBytes(signature);
      expect(bytes).toHaveLength(65);
      expect([27, 28]).toContain(bytes[64]);
      expect(await recoverAddress({ hash, signature })).toBe(addressOf('evm', secret));
    }
  });

  it('signHash signs the hash as given, without the EIP-191 prefix', async () => {
    const secret = generateSecret('evm');
    const hash = randomHash();
    const signature = await signHash('evm', secret, hash);
    expect(await recoverMessageAddress({ message: { raw: hash }, signature })).not.toBe(addressOf('evm', secret));
  });

  it('signMessageBytes is an EIP-191 personal signature', async () => {
    const secret = generateSecret('evm');
    const message = new TextEncoder().encode('hello wallet');
    const signature = await signMessageBytes('evm', secret, message);
    expect(await recoverMessageAddress({ message: { raw: message }, signature })).toBe(addressOf('evm', secret));
  });
});

describe('Solana keys', () => {
  it('addressOf is the base58 ed25519 public key of the seed', () => {
    const secret = generateSecret('sol');
    expect(secret).toHaveLength(32);
    expect(addressOf('sol', secret)).toBe(Keypair.fromSeed(secret).publicKey.toBase58());
  });

  it('signHash gives a 64-byte ed25519 signature that verifies against the address', async () => {
    const secret = generateSecret('sol');
    const hash = randomHash();
    const signature = hexToBytes(await signHash('sol', secret, hash));
    const publicKey = bs58.decode(addressOf('sol', secret));

    expect(signature).toHaveLength(64);
    expect(ed25519.verify(signature, hexToBytes(hash), publicKey)).toBe(true);
    expect(ed25519.verify(signature, hexToBytes(randomHash()), publicKey)).toBe(false);
  });

  it('signSolanaMessage rejects bytes that are not a transaction message', () => {
    const secret = generateSecret('sol');
    for (const garbage of [randomBytes(0), Buffer.from('not a solana transaction message'), randomBytes(3)]) {
      expect(() => signSolanaMessage(secret, garbage)).toThrow(ValidationError);
      expect(() => signSolanaMessage(secret, garbage)).toThrow(expect.objectContaining({ code: 'INVALID_TRANSACTION', status: 400 }));
    }
  });

  it('signSolanaMessage rejects a valid message whose signer is another key', () => {
    const secret = generateSecret('sol');
    const other = Keypair.generate().publicKey;
    const message = transferMessage(other, Keypair.generate().publicKey);

    expect(() => signSolanaMessage(secret, message)).toThrow(ValidationError);
    expect(() => signSolanaMessage(secret, message)).toThrow(/not a required signer/);
  });

  it('signSolanaMessage rejects a message that names the wallet only as a non-signer account', () => {
    const secret = generateSecret('sol');
    const wallet = new PublicKey(bs58.decode(addressOf('sol', secret)));
    // The wallet is the transfer's recipient: in the message, but not among its signers.
    const message = transferMessage(Keypair.generate().publicKey, wallet);

    expect(() => signSolanaMessage(secret, message)).toThrow(/not a required signer/);
  });

  it('signSolanaMessage signs a message the wallet pays for, with a signature over the message bytes', () => {
    const secret = generateSecret('sol');
    const address = addressOf('sol', secret);
    const message = transferMessage(new PublicKey(address), Keypair.generate().publicKey);

    const { signature, signer } = signSolanaMessage(secret, message);

    expect(signer).toBe(address);
    const signatureBytes = bs58.decode(signature);
    expect(signatureBytes).toHaveLength(64);
    expect(ed25519.verify(signatureBytes, message, bs58.decode(address))).toBe(true);
  });
});

describe('deriveWalletId', () => {
  const identity = { iss: 'https://idp.example', sub: 'user-42' };

  it('is deterministic', () => {
    expect(deriveWalletId('app-1', identity, 'default', 'evm')).toBe(deriveWalletId('app-1', { ...identity }, 'default', 'evm'));
  });

  it('is a version-8 RFC 9562 UUID string', () => {
    const id = deriveWalletId('app-1', identity, 'default', 'sol');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isUuid(id)).toBe(true);
    expect(uuidVersion(id)).toBe(8);
  });

  it('differs when any part of the binding differs', () => {
    const base = deriveWalletId('app-1', identity, 'default', 'evm');
    const variants = [
      deriveWalletId('app-1', identity, 'trading', 'evm'),
      deriveWalletId('app-1', identity, 'default', 'sol'),
      deriveWalletId('app-1', { ...identity, sub: 'user-43' }, 'default', 'evm'),
      deriveWalletId('app-1', { ...identity, iss: 'https://other-idp.example' }, 'default', 'evm'),
      deriveWalletId('app-2', identity, 'default', 'evm'),
    ];
    expect(new Set([base, ...variants]).size).toBe(variants.length + 1);
  });

  it('does not confuse parts whose concatenation is the same', () => {
    expect(deriveWalletId('app-1', { iss: 'a', sub: 'bc' }, 'default', 'evm')).not.toBe(deriveWalletId('app-1', { iss: 'ab', sub: 'c' }, 'default', 'evm'));
  });
});
