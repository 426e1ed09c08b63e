import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { createSolanaRpc, getAddressDecoder, getBase58Decoder, getCompiledTransactionMessageDecoder, type Signature } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SolanaSandbox, startSolanaSandbox } from '../../infra/local/solana-sandbox/index.ts';
import { BroadcastRejectedError } from '../../shared/chains/errors.ts';
import { SolanaChain } from '../../shared/chains/solana-chain.ts';
import { signSolanaMessage } from '../../shared/enclave/solana-message.ts';
import { ValidationError } from '../../shared/errors.ts';

/**
 * The Lambda-side Solana adapter (@solana/kit) against the LiteSVM sandbox RPC, signed by the
 * enclave's own signing function: what a withdrawal does, without the HTTP layers around it.
 */
const SOL = 1_000_000_000n;

let dataDir: string;
let sandbox: SolanaSandbox;
let chain: SolanaChain;

const newWallet = () => {
  const secret = ed25519.utils.randomSecretKey();
  return { secret, address: getAddressDecoder().decode(ed25519.getPublicKey(secret)) as string };
};

/** Builds, signs (enclave code), assembles and broadcasts a transfer; waits for confirmation. */
async function send(from: { secret: Uint8Array; address: string }, to: string, token: string, amount: bigint) {
  const built = await chain.transferMessage(from.address, to, token, amount);
  const { signature, signer } = signSolanaMessage(from.secret, built.messageBytes);
  expect(signer).toBe(from.address);
  const sent = await chain.broadcast(SolanaChain.assemble(built.messageBytes, signature));
  expect(sent).toBe(signature);
  expect(await chain.waitForConfirmation(signature, 10_000)).toEqual({ err: null });
  return built;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'solana-chain-'));
  sandbox = await startSolanaSandbox({ dataDir });
  chain = new SolanaChain(sandbox.chain);
}, 60_000);

afterAll(async () => {
  await sandbox?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('SolanaChain (@solana/kit)', () => {
  it('lists its tokens and their decimals from the config', () => {
    expect(chain.tokens()).toEqual(['SOL', 'USDC']);
    expect(chain.decimals('SOL')).toBe(9);
    expect(chain.decimals('USDC')).toBe(6);
  });

  it('sends SOL: the sender pays the amount plus exactly the quoted fee', async () => {
    const sender = newWallet();
    const recipient = newWallet();
    await sandbox.faucet(sender.address, 'SOL', 2n * SOL);
    const built = await send(sender, recipient.address, 'SOL', SOL / 4n);
    expect(built.fee).toBeGreaterThan(0n);
    expect(built.rent).toBe(0n);
    expect(built.createsTokenAccount).toBe(false);
    expect(built.lastValidBlockHeight).toBeTypeOf('bigint');
    expect(await chain.balance(recipient.address, 'SOL')).toBe(SOL / 4n);
    expect(await chain.balance(sender.address, 'SOL')).toBe(2n * SOL - SOL / 4n - built.fee);
  });

  it('sends USDC, creating the recipient token account once and charging its rent to the sender', async () => {
    const sender = newWallet();
    const recipient = newWallet();
    await sandbox.faucet(sender.address, 'SOL', SOL);
    await sandbox.faucet(sender.address, 'USDC', 5_000_000n);
    expect(await chain.balance(recipient.address, 'USDC')).toBe(0n); // no token account yet

    const rentExempt = await createSolanaRpc(sandbox.rpcUrl).getMinimumBalanceForRentExemption(165n).send();
    const first = await send(sender, recipient.address, 'USDC', 1_250_000n);
    expect(first.createsTokenAccount).toBe(true);
    expect(first.rent).toBe(rentExempt);
    expect(await chain.balance(recipient.address, 'USDC')).toBe(1_250_000n);
    expect(await chain.balance(sender.address, 'USDC')).toBe(3_750_000n);
    expect(await chain.balance(sender.address, 'SOL')).toBe(SOL - first.fee - first.rent);

    const second = await send(sender, recipient.address, 'USDC', 750_000n);
    expect(second.createsTokenAccount).toBe(false);
    expect(second.rent).toBe(0n);
    expect(await chain.balance(recipient.address, 'USDC')).toBe(2_000_000n);
  });

  it('makes equal transfers against the same blockhash distinct transactions with an SPL Memo, and both land', async () => {
    const sender = newWallet();
    const recipient = newWallet();
    await sandbox.faucet(sender.address, 'SOL', SOL);
    const [one, two] = await Promise.all([
      chain.transferMessage(sender.address, recipient.address, 'SOL', SOL / 100n),
      chain.transferMessage(sender.address, recipient.address, 'SOL', SOL / 100n, 'withdrawal 42'),
    ]);
    const decode = (bytes: Uint8Array) => getCompiledTransactionMessageDecoder().decode(bytes);
    expect(decode(one.messageBytes).lifetimeToken).toBe(decode(two.messageBytes).lifetimeToken);
    expect(one.messageBytes).not.toEqual(two.messageBytes);

    const signatures = await Promise.all(
      [one, two].map(async (built) => {
        const { signature } = signSolanaMessage(sender.secret, built.messageBytes);
        expect(await chain.broadcast(SolanaChain.assemble(built.messageBytes, signature))).toBe(signature);
        expect(await chain.waitForConfirmation(signature, 10_000)).toEqual({ err: null });
        return signature;
      }),
    );
    expect(new Set(signatures).size).toBe(2);
    expect(await chain.balance(recipient.address, 'SOL')).toBe(SOL / 50n);
    // The quoted fee is what was charged, memo included.
    expect(await chain.balance(sender.address, 'SOL')).toBe(SOL - SOL / 50n - one.fee - two.fee);
    const landed = await createSolanaRpc(sandbox.rpcUrl)
      .getTransaction(signatures[1] as Signature, { maxSupportedTransactionVersion: 0, encoding: 'json' })
      .send();
    expect(landed?.meta?.logMessages).toEqual(
      expect.arrayContaining(['Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr invoke [1]', 'Program log: withdrawal 42']),
    );

    await expect(chain.transferMessage(sender.address, recipient.address, 'SOL', 1n, '')).rejects.toThrow(/reference/);
    await expect(chain.transferMessage(sender.address, recipient.address, 'SOL', 1n, 'x'.repeat(65))).rejects.toThrow(/reference/);
  });

  it('turns a failed simulation into BroadcastRejectedError and leaves balances as they were', async () => {
    const sender = newWallet();
    await sandbox.faucet(sender.address, 'SOL', SOL / 100n);
    const built = await chain.transferMessage(sender.address, newWallet().address, 'SOL', SOL);
    const { signature } = signSolanaMessage(sender.secret, built.messageBytes);
    const refused = chain.broadcast(SolanaChain.assemble(built.messageBytes, signature));
    await expect(refused).rejects.toBeInstanceOf(BroadcastRejectedError);
    await expect(refused).rejects.toThrow(/simulation failed/);
    expect(await chain.balance(sender.address, 'SOL')).toBe(SOL / 100n);
  });

  it("refuses a wire transaction whose signature is not the fee payer's (node answers with an error)", async () => {
    const sender = newWallet();
    await sandbox.faucet(sender.address, 'SOL', SOL);
    const built = await chain.transferMessage(sender.address, newWallet().address, 'SOL', 1n);
    const forged = getBase58Decoder().decode(ed25519.sign(built.messageBytes, newWallet().secret));
    await expect(chain.broadcast(SolanaChain.assemble(built.messageBytes, forged))).rejects.toBeInstanceOf(BroadcastRejectedError);
    expect(await chain.balance(sender.address, 'SOL')).toBe(SOL);
  });

  it('lets a transport failure propagate as it is (maybe sent), never as a refusal', async () => {
    const sender = newWallet();
    await sandbox.faucet(sender.address, 'SOL', SOL);
    const built = await chain.transferMessage(sender.address, newWallet().address, 'SOL', 1n);
    const wire = SolanaChain.assemble(built.messageBytes, signSolanaMessage(sender.secret, built.messageBytes).signature);

    // An HTTP 502 from a load balancer in front of the node.
    const gateway: Server = createServer((_req, res) => res.writeHead(502).end('bad gateway'));
    await new Promise<void>((done) => gateway.listen(0, '127.0.0.1', done));
    try {
      const behindGateway = new SolanaChain({ ...sandbox.chain, rpc_url: `http://127.0.0.1:${(gateway.address() as AddressInfo).port}` });
      const error = await behindGateway.broadcast(wire).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(BroadcastRejectedError);
    } finally {
      await new Promise((done) => gateway.close(done));
    }
    // Nobody listening at all.
    const unreachable = new SolanaChain({ ...sandbox.chain, rpc_url: 'http://127.0.0.1:9' });
    const error = await unreachable.broadcast(wire).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(BroadcastRejectedError);
  });

  it('assembles one signature slot per required signer, the fee payer first', async () => {
    const sender = newWallet();
    const built = await chain.transferMessage(sender.address, newWallet().address, 'SOL', 1n);
    const { signature } = signSolanaMessage(sender.secret, built.messageBytes);
    const wire = SolanaChain.assemble(built.messageBytes, signature);
    expect(wire[0]).toBe(1); // shortvec: one signature
    expect(ed25519.verify(wire.subarray(1, 65), built.messageBytes, ed25519.getPublicKey(sender.secret))).toBe(true);
    expect(wire.subarray(65)).toEqual(built.messageBytes);
    expect(() => SolanaChain.assemble(built.messageBytes, '1111')).toThrow(/64 bytes/);
  });
});

describe('signSolanaMessage (enclave)', () => {
  it('refuses a message this wallet is not a signer of, and bytes with anything after the message', async () => {
    const payer = newWallet();
    const built = await chain.transferMessage(payer.address, newWallet().address, 'SOL', 1n);
    expect(() => signSolanaMessage(newWallet().secret, built.messageBytes)).toThrow(/not a required signer/);
    const trailing = new Uint8Array([...built.messageBytes, 0]);
    expect(() => signSolanaMessage(payer.secret, trailing)).toThrow(ValidationError);
    expect(() => signSolanaMessage(payer.secret, built.messageBytes.subarray(0, built.messageBytes.length - 1))).toThrow(ValidationError);
  });
});
