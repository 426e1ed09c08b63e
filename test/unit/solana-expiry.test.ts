import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { getTransactionEncoder, type Transaction } from '@solana/kit';
import { Keypair } from '@solana/web3.js';
import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SolanaSandbox, startSolanaSandbox } from '../../infra/local/solana-sandbox/index.ts';
import { candidatesOf } from '../../shared/chains/sender/candidates.ts';
import type { Broadcast, SendJournal, SolanaSigner } from '../../shared/chains/sender/ports.ts';
import { SolanaSender } from '../../shared/chains/sender/solana-sender.ts';
import { SolanaChain } from '../../shared/chains/solana-chain.ts';
import { memoryJournal, type SendEvent } from './support/memory-send-journal.ts';

/**
 * Issue 23 part 4, Solana: a send whose blockhash expired is declared not sent only once the chain
 * proves it (finalized block height past lastValidBlockHeight, no status with history search),
 * then signed anew, journaled before its broadcast. The sandbox's `advanceBlocks` expires the
 * blockhash; a chain that loses broadcasts stands for a send the cluster never took.
 */
const SOL = 10n ** 9n;
/** Past MAX_PROCESSING_AGE (150) blocks. */
const EXPIRE = 160;

let dataDir: string;
let sol: SolanaSandbox;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'solana-expiry-'));
  sol = await startSolanaSandbox({ dataDir });
}, 60_000);

afterAll(async () => {
  await sol?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

type Event = SendEvent;

/** The sandbox RPC, except that the next `lose` broadcasts never reach it. */
class LossyChain extends SolanaChain {
  lose = 0;
  readonly events: Event[];

  constructor(events: Event[]) {
    super(sol.chain);
    this.events = events;
  }

  override async broadcast(wire: Uint8Array): Promise<string> {
    const signature = bs58.encode(wire.subarray(1, 65));
    if (this.lose > 0) {
      this.lose--;
      this.events.push({ kind: 'lost', tx_hash: signature });
      return signature;
    }
    this.events.push({ kind: 'broadcast', tx_hash: signature });
    return super.broadcast(wire);
  }
}

function localSigner(keypair: Keypair): SolanaSigner & { signed: number } {
  const signer = {
    signed: 0,
    signMessage: async (bytes: Uint8Array) => {
      signer.signed++;
      return bs58.encode(ed25519.sign(bytes, keypair.secretKey.slice(0, 32)));
    },
  };
  return signer;
}

async function scenario() {
  const from = Keypair.generate();
  await sol.faucet(from.publicKey.toBase58(), 'SOL', SOL);
  const events: Event[] = [];
  const chain = new LossyChain(events);
  const signer = localSigner(from);
  const to = Keypair.generate().publicKey.toBase58();
  const request = { chain, from: from.publicKey.toBase58(), to, token: 'SOL', amount: SOL / 10n, signer };
  return { events, chain, signer, to, request };
}

describe('a Solana send whose blockhash expired (sandbox, blocks advanced)', { timeout: 30_000 }, () => {
  it('waits while the blockhash is valid; once expired and absent it is signed anew, journaled first, and lands once', async () => {
    const { events, chain, signer, to, request } = await scenario();
    chain.lose = 2; // the first broadcast and the first resume's re-broadcast never reach the cluster
    const sender = new SolanaSender({ inclusionTimeoutMs: 600 });
    const journal = memoryJournal(events);
    await expect(sender.send({ ...request, journal })).rejects.toMatchObject({ code: 'INCLUSION_TIMEOUT' });
    const first = journal.stored!;
    expect(first.last_valid_block_height).toBeDefined();

    // Blockhash still valid: not proven absent, so no second signature, only waiting.
    const waiting = memoryJournal(events, first);
    await expect(sender.send({ ...request, journal: waiting })).rejects.toMatchObject({ code: 'INCLUSION_TIMEOUT' });
    expect(signer.signed).toBe(1);
    expect(events.some((e) => e.kind === 'replace')).toBe(false);
    expect(await chain.balance(to, 'SOL')).toBe(0n);

    await sol.advanceBlocks(EXPIRE);
    expect(await chain.finalizedBlockHeight()).toBeGreaterThan(BigInt(first.last_valid_block_height!));
    expect(await chain.knowsSignature(first.tx_hash)).toBe(false);
    const resumedJournal = memoryJournal(events, first);
    const sent = await new SolanaSender({ inclusionTimeoutMs: 10_000 }).send({ ...request, journal: resumedJournal });
    expect(sent.resumed).toBe(true);
    expect(sent.txHash).not.toBe(first.tx_hash);
    expect(signer.signed).toBe(2);
    const final = resumedJournal.stored!;
    expect(final.tx_hash).toBe(sent.txHash);
    expect(candidatesOf(final).map((c) => c.tx_hash)).toEqual([first.tx_hash, sent.txHash]);
    const replaced = events.findIndex((e) => e.kind === 'replace' && e.tx_hash === sent.txHash);
    const broadcast = events.findIndex((e) => e.kind === 'broadcast' && e.tx_hash === sent.txHash);
    expect(replaced).toBeGreaterThanOrEqual(0);
    expect(replaced).toBeLessThan(broadcast); // journaled before its broadcast
    expect(await chain.balance(to, 'SOL')).toBe(SOL / 10n); // exactly once
    expect(await chain.knowsSignature(first.tx_hash)).toBe(false);
  });

  it('a send that landed is never signed again, however long ago its blockhash expired', async () => {
    const { events, chain, signer, to, request } = await scenario();
    const journal = memoryJournal(events);
    const sender = new SolanaSender({ inclusionTimeoutMs: 10_000 });
    const sent = await sender.send({ ...request, journal });
    await sol.advanceBlocks(EXPIRE);
    const again = await sender.send({ ...request, journal: memoryJournal(events, journal.stored) });
    expect(again).toEqual({ txHash: sent.txHash, resumed: true });
    expect(signer.signed).toBe(1);
    expect(await chain.balance(to, 'SOL')).toBe(SOL / 10n);
  });

  it('a crash after the new signature is journaled, before its broadcast: the retry sends that one, signs nothing, lands once', async () => {
    const { events, chain, signer, to, request } = await scenario();
    chain.lose = 1;
    const sender = new SolanaSender({ inclusionTimeoutMs: 600 });
    const journal = memoryJournal(events);
    await expect(sender.send({ ...request, journal })).rejects.toMatchObject({ code: 'INCLUSION_TIMEOUT' });
    await sol.advanceBlocks(EXPIRE);
    const crashing = memoryJournal(events, journal.stored, true);
    await expect(new SolanaSender({ inclusionTimeoutMs: 10_000 }).send({ ...request, journal: crashing })).rejects.toThrow('process died');
    const saved = crashing.stored!;
    expect(candidatesOf(saved)).toHaveLength(2);
    expect(await chain.balance(to, 'SOL')).toBe(0n);

    const resumed = await new SolanaSender({ inclusionTimeoutMs: 10_000 }).send({ ...request, journal: memoryJournal(events, saved) });
    expect(resumed).toEqual({ txHash: saved.tx_hash, resumed: true });
    expect(signer.signed).toBe(2);
    expect(await chain.balance(to, 'SOL')).toBe(SOL / 10n);
  });

  it('a journal without replace (older callers) only waits: no new signature', async () => {
    const { chain, signer, request } = await scenario();
    chain.lose = 2;
    const sender = new SolanaSender({ inclusionTimeoutMs: 600 });
    let stored: Broadcast | undefined;
    const plain: SendJournal = {
      record: async (broadcast) => {
        stored = broadcast;
      },
    };
    await expect(sender.send({ ...request, journal: plain })).rejects.toMatchObject({ code: 'INCLUSION_TIMEOUT' });
    await sol.advanceBlocks(EXPIRE);
    await expect(sender.send({ ...request, journal: { previous: stored, record: plain.record } })).rejects.toMatchObject({ code: 'INCLUSION_TIMEOUT' });
    expect(signer.signed).toBe(1);
  });

  it('a prepared transaction (a bridge quote’s) is signed as given, journaled before its broadcast; one whose blockhash is already stale is never signed, another is asked for', async () => {
    const from = Keypair.generate();
    const owner = from.publicKey.toBase58();
    await sol.faucet(owner, 'SOL', SOL);
    await sol.faucet(owner, 'USDC', 5_000_000n);
    const events: Event[] = [];
    const chain = new LossyChain(events);
    const signer = localSigner(from);
    const to = Keypair.generate().publicKey.toBase58();
    const unsigned = async () => {
      const { messageBytes } = await chain.transferMessage(owner, to, 'USDC', 2_000_000n, `quote-${events.length}-${Date.now()}`);
      return Buffer.from(getTransactionEncoder().encode({ messageBytes, signatures: { [owner]: null } } as unknown as Transaction)).toString('base64');
    };
    const stale = await unsigned();
    await sol.advanceBlocks(EXPIRE);
    const given = [stale, await unsigned()];
    let asked = 0;
    const prepare = async () => ({ wire: given[asked++]!, token: 'USDC', amount: 2_000_000n });
    const journal = memoryJournal(events);
    const sent = await new SolanaSender({ inclusionTimeoutMs: 10_000 }).sendPrepared({ chain, from: owner, prepare, signer, journal });
    expect(asked).toBe(2);
    expect(signer.signed).toBe(1);
    expect(journal.stored).toMatchObject({ tx_hash: sent.txHash, effect: { token: 'USDC', amount: '2000000', from: owner } });
    expect(SolanaChain.messageOf(Uint8Array.from(Buffer.from(journal.stored!.raw, 'base64'))).messageBytes).toEqual(
      SolanaChain.messageOf(Uint8Array.from(Buffer.from(given[1]!, 'base64'))).messageBytes,
    );
    expect(events.map((e) => e.kind)).toEqual(['record', 'broadcast']);
    expect(await chain.balance(to, 'USDC')).toBe(2_000_000n);
    expect(await chain.balance(owner, 'USDC')).toBe(3_000_000n);
  });
});
