import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type Address, createPublicClient, createTestClient, erc20Abi, type Hex, http, keccak256, parseTransaction } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { EvmChain } from '../../shared/chains/evm-chain.ts';
import { candidatesOf } from '../../shared/chains/sender/candidates.ts';
import { bumpedFee, replacementFees } from '../../shared/chains/sender/evm-inclusion.ts';
import { EvmSender, evmSendOutcome } from '../../shared/chains/sender/evm-sender.ts';
import type { Broadcast, EvmSigner, GasPayer, SendJournal } from '../../shared/chains/sender/ports.ts';
import { singleSponsor } from '../../shared/chains/sender/sponsor-pool.ts';
import { SponsoredEvmSender } from '../../shared/chains/sender/sponsored-sender.ts';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { sendOnce } from '../../shared/transfers/steps/core.ts';
import { writeStep } from '../../shared/transfers/steps/store.ts';
import type { RecordedSend } from '../../shared/transfers/task.ts';
import { claimIdempotencyKey, requestHash } from '../../shared/withdrawals/idempotency.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';
import { memoryJournal, type SendEvent } from './support/memory-send-journal.ts';

/**
 * Issue 23 part 4: an EVM send the chain does not take is replaced (same nonce, higher fees,
 * journaled before its broadcast) and exactly one candidate is mined and reported. The sandbox
 * anvil strands a send for real: automine off, the send enters the pool, the next block's base
 * fee is raised over its fee cap and mined, automine back on.
 */
const USDC = 10n ** 6n;
const ETHER = 10n ** 18n;
const GWEI = 10n ** 9n;
const CODE = 'ARB';

let dataDir: string;
let evm: EvmSandbox;
let table: Table;
let stopTable: () => Promise<void>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'replacement-'));
  [evm, { table, stop: stopTable }] = await Promise.all([startEvmSandbox({ dataDir }), startDynaliteTable('replacement-test')]);
}, 120_000);

afterAll(async () => {
  await Promise.all([evm?.stop(), stopTable?.()]);
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const rpc = () => http(evm.chains[CODE].rpc_url);
const publicClient = () => createPublicClient({ transport: rpc() });
const testClient = () => createTestClient({ transport: rpc(), mode: 'anvil' });
const usdcBalance = (owner: Address) =>
  publicClient().readContract({ address: evm.chains[CODE].tokens.USDC!.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;

/** A local key behind the signer port, counting its signatures. */
function localSigner(): EvmSigner & { address: Address; signed: number } {
  const account = privateKeyToAccount(generatePrivateKey());
  const signer = {
    address: account.address,
    signed: 0,
    signTransaction: (transaction: Parameters<EvmSigner['signTransaction']>[0]) => {
      signer.signed++;
      return account.signTransaction(transaction as never);
    },
    signAuthorization: () => Promise.reject(new Error('not used')),
    signDigest: () => Promise.reject(new Error('not used')),
  };
  return signer;
}

type Event = SendEvent;

/**
 * The sandbox chain, logging broadcasts; with `strandFirst` the first broadcast is stranded:
 * taken into the pool with automine off, then a block whose base fee is 10× the current one is
 * mined without it (anvil drops it from the pool), and automine is back on.
 */
class SandboxChain extends EvmChain {
  readonly events: Event[];
  #strandFirst: boolean;

  constructor(events: Event[], strandFirst: boolean) {
    super(CODE, evm.chains[CODE]);
    this.events = events;
    this.#strandFirst = strandFirst;
  }

  override async broadcast(raw: Hex): Promise<Hex> {
    this.events.push({ kind: 'broadcast', tx_hash: keccak256(raw) });
    if (!this.#strandFirst) return super.broadcast(raw);
    this.#strandFirst = false;
    const test = testClient();
    await test.setAutomine(false);
    try {
      const hash = await super.broadcast(raw);
      const block = await publicClient().getBlock();
      await test.setNextBlockBaseFeePerGas({ baseFeePerGas: (block.baseFeePerGas ?? GWEI) * 10n });
      await test.mine({ blocks: 1 });
      return hash;
    } finally {
      await test.setAutomine(true);
    }
  }
}

const lease = { leaseMs: 15_000, waitMs: 30_000 };
/** Replace after 300 ms (the default is 12 s), up to 3 times, fee cap at most 100× the first. */
const replacement = { afterMs: 300, maxReplacements: 3, maxFeeMultiplier: 100n };

/** A funded account, on a chain whose base fee is back at 1 gwei (each strand raises it 10×). */
async function fundedSender() {
  await testClient().setNextBlockBaseFeePerGas({ baseFeePerGas: GWEI });
  await testClient().mine({ blocks: 1 });
  const signer = localSigner();
  await evm.faucet(CODE, signer.address, 'ETH', ETHER);
  await evm.faucet(CODE, signer.address, 'USDC', 10n * USDC);
  return signer;
}

/** Every candidate's receipt status (null: not mined), and the nonce each one carries. */
async function onChain(send: Broadcast) {
  const candidates = candidatesOf(send);
  const receipts = await Promise.all(
    candidates.map((c) =>
      publicClient()
        .getTransactionReceipt({ hash: c.tx_hash as Hex })
        .catch(() => null),
    ),
  );
  return {
    mined: candidates.filter((_, i) => receipts[i]?.status === 'success').map((c) => c.tx_hash),
    nonces: new Set(candidates.map((c) => parseTransaction(c.raw as Hex).nonce)),
  };
}

/** Each candidate's journal write comes before its first broadcast. */
function expectJournaledBeforeBroadcast(events: Event[]) {
  for (const [i, event] of events.entries()) {
    if (event.kind !== 'broadcast') continue;
    const journaled = events.findIndex((e) => e.kind !== 'broadcast' && e.tx_hash === event.tx_hash);
    expect(journaled, `journal entry of ${event.tx_hash}`).toBeGreaterThanOrEqual(0);
    expect(journaled).toBeLessThan(i);
  }
}

/** A funded sender, a fresh recipient and the request that sends it `amount` USDC over a SandboxChain. */
async function scenario(strandFirst: boolean, amount: bigint) {
  const signer = await fundedSender();
  const events: Event[] = [];
  const chain = new SandboxChain(events, strandFirst);
  const to = freshAddress();
  const request = { chain, from: signer.address, call: chain.transferCall('USDC', to, amount), spends: { token: 'USDC', amount }, signer };
  return { signer, events, chain, to, request };
}

/** Sent exactly once: of all candidates only `txHash` is mined, all on nonce 0, and `to` got `amount`. */
async function expectSentOnce(send: Broadcast, txHash: string, to: Address, amount: bigint, from: Address) {
  const { mined, nonces } = await onChain(send);
  expect(nonces).toEqual(new Set([0]));
  expect(mined).toEqual([txHash]);
  expect(await usdcBalance(to)).toBe(amount);
  expect(await publicClient().getTransactionCount({ address: from })).toBe(1);
}

describe('fee bumps', () => {
  it('raise fee cap and tip by at least 10 % (geth) and strictly (anvil), to at least the estimate, under the ceiling', () => {
    expect(bumpedFee(100n)).toBe(110n);
    expect(bumpedFee(101n)).toBe(112n); // 111.1 rounded up
    expect(bumpedFee(0n)).toBe(1n);
    expect(bumpedFee(5n)).toBe(6n);
    const latest = { maxFeePerGas: 2n * GWEI, maxPriorityFeePerGas: GWEI };
    expect(replacementFees(latest, { maxFeePerGas: GWEI, maxPriorityFeePerGas: GWEI / 2n }, 100n * GWEI)).toEqual({
      maxFeePerGas: (22n * GWEI) / 10n,
      maxPriorityFeePerGas: (11n * GWEI) / 10n,
    });
    expect(replacementFees(latest, { maxFeePerGas: 30n * GWEI, maxPriorityFeePerGas: 2n * GWEI }, 100n * GWEI)).toEqual({
      maxFeePerGas: 30n * GWEI,
      maxPriorityFeePerGas: 2n * GWEI,
    });
    expect(replacementFees(latest, { maxFeePerGas: 30n * GWEI, maxPriorityFeePerGas: 2n * GWEI }, 20n * GWEI)).toEqual({
      maxFeePerGas: 20n * GWEI,
      maxPriorityFeePerGas: 2n * GWEI,
    });
    expect(replacementFees(latest, undefined, 2n * GWEI)).toBeUndefined(); // no room for +10 %
  });
});

describe('a send the chain does not take (sandbox anvil, base fee raised past its fee cap)', { timeout: 30_000 }, () => {
  it('is replaced with the same nonce and higher fees, journaled first; exactly one candidate is mined and reported', async () => {
    const { signer, events, chain, to, request } = await scenario(true, 3n * USDC);
    const journal = memoryJournal(events);
    const sent = await new EvmSender({ table, inclusionTimeoutMs: 10_000, lease, replacement }).send({ ...request, journal });

    const final = journal.stored!;
    const candidates = candidatesOf(final);
    expect(candidates.length).toBeGreaterThanOrEqual(2);
    expect(events.filter((e) => e.kind === 'replace').length).toBeGreaterThanOrEqual(1);
    expectJournaledBeforeBroadcast(events);
    const first = parseTransaction(candidates[0]!.raw as Hex);
    const second = parseTransaction(candidates[1]!.raw as Hex);
    expect(second.maxFeePerGas! * 100n).toBeGreaterThanOrEqual(first.maxFeePerGas! * 110n);
    expect(second.maxPriorityFeePerGas! * 100n).toBeGreaterThanOrEqual(first.maxPriorityFeePerGas! * 110n);
    await expectSentOnce(final, sent.txHash, to, 3n * USDC, signer.address); // exactly one mined, the reported one
    expect(sent.txHash).not.toBe(candidates[0]!.tx_hash); // the stranded one never made it
    expect(final.tx_hash).toBe(sent.txHash);
    expect(sent.resumed).toBe(false);
    expect(await evmSendOutcome(chain, final)).toBe('landed');
  });

  /** The first attempt strands, journals its replacement and dies before broadcasting it. */
  async function crashAfterReplacementJournaled(amount: bigint) {
    const setup = await scenario(true, amount);
    const crashing = memoryJournal(setup.events, undefined, true);
    const sender = new EvmSender({ table, inclusionTimeoutMs: 10_000, lease, replacement });
    await expect(sender.send({ ...setup.request, journal: crashing })).rejects.toThrow('process died');
    return { ...setup, sender, saved: crashing.stored! };
  }

  it('a crash after a replacement is journaled, before its broadcast: the retry broadcasts that replacement, signs nothing, sends once', async () => {
    const { signer, events, chain, to, request, sender, saved } = await crashAfterReplacementJournaled(2n * USDC);
    expect(candidatesOf(saved)).toHaveLength(2);
    expect(events.map((e) => e.kind)).toEqual(['record', 'broadcast', 'replace']); // the replacement never left
    expect(await usdcBalance(to)).toBe(0n);
    expect(await evmSendOutcome(chain, saved)).toBe('unknown');

    const signedBefore = signer.signed;
    const resumedJournal = memoryJournal(events, saved);
    const resumed = await sender.send({ ...request, journal: resumedJournal });
    expect(resumed).toEqual({ txHash: saved.tx_hash, resumed: true });
    expect(signer.signed).toBe(signedBefore); // no new signature, no fresh nonce
    const again = await sender.send({ ...request, journal: memoryJournal(events, resumedJournal.stored) });
    expect(again).toEqual(resumed);
    await expectSentOnce(saved, saved.tx_hash, to, 2n * USDC, signer.address);
  });

  it('a crash after the replacement was broadcast: the retry finds it mined, signs nothing, sends once', async () => {
    const { signer, events, chain, to, request, sender, saved } = await crashAfterReplacementJournaled(USDC);
    // What the dead process did next: the broadcast of the journaled replacement.
    await chain.broadcast(saved.raw as Hex);
    await publicClient().waitForTransactionReceipt({ hash: saved.tx_hash as Hex, pollingInterval: 50, timeout: 5_000 });

    const signedBefore = signer.signed;
    const resumed = await sender.send({ ...request, journal: memoryJournal(events, saved) });
    expect(resumed).toEqual({ txHash: saved.tx_hash, resumed: true });
    expect(signer.signed).toBe(signedBefore);
    await expectSentOnce(saved, saved.tx_hash, to, USDC, signer.address);
  });

  it('a crash while the stranded original is the only candidate: the retry replaces it (journaled first), and one is mined', async () => {
    const { signer, events, chain, to, request } = await scenario(true, USDC);
    // The first attempt journals and broadcasts, then gives up waiting without replacing (no `replace` in its journal).
    const plain: SendJournal & { stored?: Broadcast } = {
      record: async (broadcast) => {
        plain.stored = broadcast;
        events.push({ kind: 'record', tx_hash: broadcast.tx_hash });
      },
    };
    const timeout = new EvmSender({ table, inclusionTimeoutMs: 1_000, lease, replacement });
    await expect(timeout.send({ ...request, journal: plain })).rejects.toMatchObject({ code: 'INCLUSION_TIMEOUT' });
    const saved = plain.stored!;
    expect(await evmSendOutcome(chain, saved)).toBe('unknown');

    const journal = memoryJournal(events, saved);
    const resumed = await new EvmSender({ table, inclusionTimeoutMs: 10_000, lease, replacement }).send({ ...request, journal });
    expect(resumed.resumed).toBe(true);
    expect(resumed.txHash).not.toBe(saved.tx_hash);
    expectJournaledBeforeBroadcast(events);
    expect(journal.stored!.tx_hash).toBe(resumed.txHash);
    await expectSentOnce(journal.stored!, resumed.txHash, to, USDC, signer.address);
  });

  it('an earlier candidate mined while a later one is journaled: the resume reports (and journals) the mined one, signs nothing', async () => {
    const { signer, events, chain, to, request } = await scenario(false, USDC);
    const journal = memoryJournal(events);
    const sender = new EvmSender({ table, inclusionTimeoutMs: 10_000, lease, replacement });
    const mined = await sender.send({ ...request, journal });
    // A replacement signed and journaled just as the original was mined (its broadcast then refused: nonce too low).
    const original = journal.stored!;
    const tx = parseTransaction(original.raw as Hex);
    const later = await signer.signTransaction({
      type: 'eip1559',
      chainId: tx.chainId!,
      nonce: tx.nonce!,
      to: tx.to!,
      value: tx.value ?? 0n,
      data: tx.data!,
      gas: tx.gas!,
      maxFeePerGas: bumpedFee(tx.maxFeePerGas!),
      maxPriorityFeePerGas: bumpedFee(tx.maxPriorityFeePerGas!),
    });
    const laterHash = keccak256(later);
    const saved: Broadcast = {
      ...original,
      tx_hash: laterHash,
      raw: later,
      candidates: [
        { tx_hash: original.tx_hash, raw: original.raw },
        { tx_hash: laterHash, raw: later },
      ],
    };
    expect(await evmSendOutcome(chain, saved)).toBe('landed');

    const signedBefore = signer.signed;
    const resumedJournal = memoryJournal(events, saved);
    const resumed = await sender.send({ ...request, journal: resumedJournal });
    expect(resumed).toEqual({ txHash: mined.txHash, resumed: true });
    expect(resumedJournal.stored!.tx_hash).toBe(mined.txHash);
    expect(resumedJournal.stored!.candidates).toHaveLength(2);
    expect(signer.signed).toBe(signedBefore);
    expect((await onChain(saved)).mined).toEqual([mined.txHash]);
    expect(await usdcBalance(to)).toBe(USDC);
  });

  it('an ordinary send is not replaced', async () => {
    const { signer, events, request } = await scenario(false, USDC);
    const journal = memoryJournal(events);
    const sent = await new EvmSender({ table, inclusionTimeoutMs: 10_000, lease, replacement }).send({ ...request, journal });
    expect(events.map((e) => e.kind)).toEqual(['record', 'broadcast']);
    expect(journal.stored!.candidates).toBeUndefined();
    expect(sent.txHash).toBe(journal.stored!.tx_hash);
    expect(signer.signed).toBe(1);
  });
});

describe('a sponsored send the chain does not take (EIP-7702, the sponsor pays)', { timeout: 30_000 }, () => {
  it("the sponsor's transaction is replaced (sponsor's nonce, same execute and authorisation); one is mined, the user signs nothing more", async () => {
    await fundedSender(); // base fee back at 1 gwei
    const sponsorKey = privateKeyToAccount(generatePrivateKey());
    await evm.faucet(CODE, sponsorKey.address, 'ETH', ETHER);
    const sponsor: GasPayer = { address: async () => sponsorKey.address, signTransaction: (transaction) => sponsorKey.signTransaction(transaction as never) };
    const user = privateKeyToAccount(generatePrivateKey());
    await evm.faucet(CODE, user.address, 'USDC', 5n * USDC);
    let userSignatures = 0;
    const userSigner: EvmSigner = {
      signTransaction: () => Promise.reject(new Error('the user pays no gas')),
      signAuthorization: async (request) => {
        userSignatures++;
        const signed = await user.signAuthorization(request);
        return { address: signed.address, chainId: signed.chainId, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity ?? 0 };
      },
      signDigest: (digest) => {
        userSignatures++;
        return user.sign({ hash: digest });
      },
    };
    const events: Event[] = [];
    const chain = new SandboxChain(events, true);
    const to = freshAddress();
    const journal = memoryJournal(events);
    const sender = new SponsoredEvmSender({ table, sponsors: singleSponsor(sponsor), inclusionTimeoutMs: 10_000, lease, replacement });
    const sent = await sender.send({
      chain,
      account: user.address,
      call: chain.transferCall('USDC', to, 2n * USDC),
      spends: { token: 'USDC', amount: 2n * USDC },
      signer: userSigner,
      journal,
    });
    const final = journal.stored!;
    const candidates = candidatesOf(final);
    expect(candidates.length).toBeGreaterThanOrEqual(2);
    expectJournaledBeforeBroadcast(events);
    expect(candidates.map((c) => parseTransaction(c.raw as Hex).type)).toEqual(candidates.map(() => 'eip7702'));
    expect(userSignatures).toBe(2); // one authorisation, one execute digest: none for the replacement
    await expectSentOnce(final, sent.txHash, to, 2n * USDC, sponsorKey.address);
    expect(await chain.executorNonce(user.address)).toBe(1n);
  });
});

describe('a transfer step journal (steps[i].sends[label])', { timeout: 30_000 }, () => {
  const APP = 'app-replacement';

  /** A task item with one submitted step, as the store's conditions want it, and a ctx for sendOnce. */
  async function stepContext(chain: EvmChain) {
    const ref = { app_id: APP, app_user_id: `user-${randomUUID()}`, task_id: randomUUID() };
    const key = keys.task(ref.app_id, ref.app_user_id, ref.task_id);
    await table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: { ...key, attempt: 1, status: 'in_progress', steps: [{ try: 1, status: 'submitted', action: 'deposit', sends: {} }] },
      }),
    );
    const ctx = {
      deps: { table, now: () => new Date(), chains: { evm: async () => chain } },
      kind: { action: 'deposit' },
      inv: { task: ref, attempt: 1, index: 0 },
      step: { try: 1, status: 'submitted', action: 'deposit', sends: {} },
    };
    const stored = async () => {
      const item = (await table.doc.send(new GetCommand({ TableName: table.name, Key: key }))).Item!;
      return item.steps[0].sends as Record<string, RecordedSend>;
    };
    return { ctx, ref, stored };
  }

  it('a stranded step send is replaced through the step record, which ends naming the mined candidate', async () => {
    const { signer, chain, to, request } = await scenario(true, 2n * USDC);
    const { ctx, stored } = await stepContext(chain);
    const sender = new EvmSender({ table, inclusionTimeoutMs: 10_000, lease, replacement });
    const txHash = await sendOnce(ctx as never, 'deposit_0', CODE, (journal) => sender.send({ ...request, journal }));
    const entry = (await stored()).deposit_0!;
    expect(entry.tx_hash).toBe(txHash);
    expect(entry.candidates!.length).toBeGreaterThanOrEqual(2);
    expect(entry.candidates!.map((c) => c.tx_hash)).toContain(txHash);
    await expectSentOnce(entry, txHash, to, 2n * USDC, signer.address);
  });

  it('a replacement over an entry another invocation changed is refused (nothing overwritten)', async () => {
    const { ref, stored } = await stepContext(new SandboxChain([], false));
    const write = { ref, attempt: 1, index: 0, tryNumber: 1, stepStatusIn: ['submitted' as const], now: new Date().toISOString() };
    const first: RecordedSend = { chain: CODE, tx_hash: '0xaa', raw: '0x01' };
    expect(await writeStep(table, { ...write, sends: { deposit_0: first } })).toBe(true);
    const next: RecordedSend = { ...first, tx_hash: '0xbb', raw: '0x02', candidates: [first, { tx_hash: '0xbb', raw: '0x02' }] };
    expect(await writeStep(table, { ...write, replaceSend: { label: 'deposit_0', send: next, current: '0xcc' } })).toBe(false);
    expect((await stored()).deposit_0!.tx_hash).toBe('0xaa');
    expect(await writeStep(table, { ...write, replaceSend: { label: 'deposit_0', send: next, current: '0xaa' } })).toBe(true);
    expect((await stored()).deposit_0).toEqual(next);
  });
});

describe('a withdrawal journal (the Idempotency-Key record)', { timeout: 30_000 }, () => {
  it('a stranded withdrawal is replaced through the key record; a resume after a crash before the broadcast completes it once', async () => {
    const { signer, to, request } = await scenario(true, 4n * USDC);
    const scope = { appId: 'app-replacement', sub: `sub-${randomUUID()}`, key: randomUUID() };
    const claim = await claimIdempotencyKey(table, scope, requestHash({ to }), Date.now(), 60_000);
    if (claim.kind !== 'new') throw new Error('expected a new claim');
    // The process dies right after the replacement is stored, before its broadcast.
    const record = claim.record;
    const replaceThenDie = async (next: Broadcast, current: Broadcast) => {
      await record.replace(next, current);
      throw new Error('process died');
    };
    const journal: SendJournal = { record: (b) => record.record(b), replace: replaceThenDie };
    const sender = new EvmSender({ table, inclusionTimeoutMs: 10_000, lease, replacement });
    await expect(sender.send({ ...request, journal })).rejects.toThrow('process died');
    expect(await usdcBalance(to)).toBe(0n);

    // The claim's lease ran out (the process is gone): a retry with the key resumes the stored replacement.
    const retry = await claimIdempotencyKey(table, scope, requestHash({ to }), Date.now() + 61_000, 60_000);
    if (retry.kind !== 'resume') throw new Error('expected a resume');
    const stored = retry.record.previous!;
    expect(candidatesOf(stored)).toHaveLength(2);
    const signedBefore = signer.signed;
    const sent = await sender.send({ ...request, journal: retry.record });
    expect(sent).toEqual({ txHash: stored.tx_hash, resumed: true });
    expect(signer.signed).toBe(signedBefore);
    await expectSentOnce(stored, sent.txHash, to, 4n * USDC, signer.address);
  });
});
