import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Keypair } from '@solana/web3.js';
import bs58 from 'bs58';
import { type Address, createPublicClient, erc20Abi, type Hex, http, parseTransaction } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { type SolanaSandbox, startSolanaSandbox } from '../../infra/local/solana-sandbox/index.ts';
import type { EvmChainCode } from '../../shared/chains/chain-config.ts';
import { BroadcastRejectedError, CallWouldFailError, ChainUnavailableError, TransactionNoEffectError } from '../../shared/chains/errors.ts';
import { EvmChain } from '../../shared/chains/evm-chain.ts';
import { EvmSender } from '../../shared/chains/sender/evm-sender.ts';
import { classifySendFailure } from '../../shared/chains/sender/outcome.ts';
import type { Broadcast, EvmSigner, GasPayer, SendJournal, SolanaSigner } from '../../shared/chains/sender/ports.ts';
import { SolanaSender } from '../../shared/chains/sender/solana-sender.ts';
import { singleSponsor } from '../../shared/chains/sender/sponsor-pool.ts';
import { SponsoredEvmSender } from '../../shared/chains/sender/sponsored-sender.ts';
import { SolanaChain } from '../../shared/chains/solana-chain.ts';
import { getItem, type Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { acquireLease } from '../../shared/db/lease.ts';
import { ConflictError } from '../../shared/errors.ts';
import { DYNAMO_ENGINES, startEngineTable } from './support/dynamodb-engines.ts';
import { localEvmSigner } from './support/evm-signer.ts';

/**
 * The exactly-once senders against real engines: anvil chains and the LiteSVM Solana RPC for
 * value, dynalite and DynamoDB Local for the leases. The signer ports are implemented here with
 * local keys (the enclave adapter is exercised by test/api/withdraw.test.ts).
 */
const USDC = 10n ** 6n;
const ETHER = 10n ** 18n;

let dataDir: string;
let evm: EvmSandbox;
let sol: SolanaSandbox;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sender-'));
  [evm, sol] = await Promise.all([startEvmSandbox({ dataDir }), startSolanaSandbox({ dataDir })]);
}, 120_000);

afterAll(async () => {
  await Promise.all([evm?.stop(), sol?.stop()]);
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

function localSolanaSigner(keypair: Keypair): SolanaSigner {
  return { signMessage: async (bytes) => bs58.encode(ed25519.sign(bytes, keypair.secretKey.slice(0, 32))) };
}

/** A journal in memory: what the sender recorded, in order. */
function memoryJournal(previous?: Broadcast): SendJournal & { recorded: Broadcast[] } {
  const recorded: Broadcast[] = [];
  return { previous, recorded, record: async (broadcast) => void recorded.push(broadcast) };
}

/** An RPC behind a load balancer whose pending nonce lags: it keeps answering what it saw first. */
class LaggingNonceChain extends EvmChain {
  readonly #seen = new Map<string, Promise<number>>();
  override pendingNonce(address: Address): Promise<number> {
    let first = this.#seen.get(address);
    if (!first) {
      first = super.pendingNonce(address);
      this.#seen.set(address, first);
    }
    return first;
  }
}

/** A gas payer with a local key, funded with 10 of the chain's native coin. */
async function fundedSponsor(code: EvmChainCode, native: 'ETH' | 'POL'): Promise<{ payerKey: ReturnType<typeof localEvmSigner>; sponsor: GasPayer }> {
  const payerKey = localEvmSigner(generatePrivateKey());
  await evm.faucet(code, payerKey.address, native, 10n * ETHER);
  return { payerKey, sponsor: { address: async () => payerKey.address, signTransaction: payerKey.signTransaction } };
}

const chain = (code: EvmChainCode) => new EvmChain(code, evm.chains[code]);
const publicClient = (code: EvmChainCode) => createPublicClient({ transport: http(evm.chains[code].rpc_url) });
const usdcBalance = (code: EvmChainCode, owner: Address) =>
  publicClient(code).readContract({ address: evm.chains[code].tokens.USDC!.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;

describe.each(DYNAMO_ENGINES)('exactly-once senders, leases on %s', { timeout: 90_000 }, (engine) => {
  let table: Table;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ table, stop } = await startEngineTable(engine, 'sender-test'));
  }, 90_000);
  afterAll(() => stop?.());

  const lease = { leaseMs: 15_000, waitMs: 30_000 };

  it('20 concurrent sends from one wallet behind an RPC whose pending nonce lags: 20 distinct nonces, all land', async () => {
    const signer = localEvmSigner(generatePrivateKey());
    await evm.faucet('ARB', signer.address, 'ETH', ETHER);
    await evm.faucet('ARB', signer.address, 'USDC', 20n * USDC);
    const lagging = new LaggingNonceChain('ARB', evm.chains.ARB);
    const sender = new EvmSender({ table, inclusionTimeoutMs: 20_000, lease });
    const to = freshAddress();
    const journals = Array.from({ length: 20 }, () => memoryJournal());
    const sent = await Promise.all(
      journals.map((journal) =>
        sender.send({
          chain: lagging,
          from: signer.address,
          call: lagging.transferCall('USDC', to, USDC),
          spends: { token: 'USDC', amount: USDC },
          signer,
          journal,
        }),
      ),
    );
    expect(await lagging.pendingNonce(signer.address)).toBe(0); // the wrapper really lags
    const nonces = journals.map((journal) => parseTransaction(journal.recorded[0]!.raw as Hex).nonce);
    expect(new Set(nonces)).toEqual(new Set(Array.from({ length: 20 }, (_, i) => i)));
    expect(new Set(sent.map((s) => s.txHash)).size).toBe(20);
    for (const { txHash } of sent) expect((await publicClient('ARB').getTransactionReceipt({ hash: txHash as Hex })).status).toBe('success');
    expect(await usdcBalance('ARB', to)).toBe(20n * USDC);
    expect(await publicClient('ARB').getTransactionCount({ address: signer.address })).toBe(20);
  });

  it('a holder that stalls past its lease while another takes it over does not broadcast', async () => {
    const key = localEvmSigner(generatePrivateKey());
    await evm.faucet('ARB', key.address, 'ETH', ETHER);
    await evm.faucet('ARB', key.address, 'USDC', 5n * USDC);
    let rival: Awaited<ReturnType<typeof acquireLease>> | undefined;
    const slowSigner: EvmSigner = {
      ...key,
      signTransaction: async (transaction) => {
        await new Promise((done) => setTimeout(done, 1_300)); // the 1 s lease runs out meanwhile
        rival = await acquireLease(table, keys.senderLease('ARB', key.address), { leaseMs: 10_000, waitMs: 0 });
        return key.signTransaction(transaction);
      },
    };
    const arb = chain('ARB');
    const journal = memoryJournal();
    const outcome = await new EvmSender({ table, inclusionTimeoutMs: 20_000, lease: { leaseMs: 1_000, waitMs: 5_000 } })
      .send({
        chain: arb,
        from: key.address,
        call: arb.transferCall('USDC', freshAddress(), USDC),
        spends: { token: 'USDC', amount: USDC },
        signer: slowSigner,
        journal,
      })
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(ConflictError);
    expect((outcome as ConflictError).code).toBe('SENDER_BUSY');
    expect(journal.recorded).toEqual([]);
    expect(await publicClient('ARB').getTransactionCount({ address: key.address, blockTag: 'pending' })).toBe(0);
    await rival?.release();
  });

  it('a crash after the record and before the broadcast: the retry sends that very transaction, once', async () => {
    const signer = localEvmSigner(generatePrivateKey());
    await evm.faucet('POL', signer.address, 'POL', ETHER);
    await evm.faucet('POL', signer.address, 'USDC', 5n * USDC);
    const pol = chain('POL');
    const sender = new EvmSender({ table, inclusionTimeoutMs: 20_000, lease });
    const to = freshAddress();
    let saved: Broadcast | undefined;
    const crashing: SendJournal = {
      record: async (broadcast) => {
        saved = broadcast;
        throw new Error('process died');
      },
    };
    const request = { chain: pol, from: signer.address, call: pol.transferCall('USDC', to, 2n * USDC), spends: { token: 'USDC', amount: 2n * USDC }, signer };
    await expect(sender.send({ ...request, journal: crashing })).rejects.toThrow('process died');
    expect(await usdcBalance('POL', to)).toBe(0n); // recorded, never broadcast
    const first = await sender.send({ ...request, journal: memoryJournal(saved) });
    const again = await sender.send({ ...request, journal: memoryJournal(saved) });
    expect(first).toEqual({ txHash: saved!.tx_hash, resumed: true });
    expect(again).toEqual(first);
    expect(await usdcBalance('POL', to)).toBe(2n * USDC);
    expect(await publicClient('POL').getTransactionCount({ address: signer.address })).toBe(1);
  });

  it('sponsored: the sponsor pays, and the wait for a busy sponsor ends before the account lease would expire', async () => {
    const { payerKey, sponsor } = await fundedSponsor('ETH', 'ETH');
    const user = localEvmSigner(generatePrivateKey());
    await evm.faucet('ETH', user.address, 'USDC', 10n * USDC);
    const eth = chain('ETH');
    const to = freshAddress();
    const request = {
      chain: eth,
      account: user.address,
      call: eth.transferCall('USDC', to, 3n * USDC),
      spends: { token: 'USDC', amount: 3n * USDC },
      signer: user,
    };

    const sent = await new SponsoredEvmSender({ table, sponsors: singleSponsor(sponsor), inclusionTimeoutMs: 20_000, lease }).send({
      ...request,
      journal: memoryJournal(),
    });
    expect((await publicClient('ETH').getTransaction({ hash: sent.txHash as Hex })).type).toBe('eip7702');
    expect(await usdcBalance('ETH', to)).toBe(3n * USDC);
    expect(await publicClient('ETH').getBalance({ address: user.address })).toBe(0n);
    const executorNonce = await eth.executorNonce(user.address);
    expect(executorNonce).toBe(1n);

    // Another process holds the sponsor's lease. The account lease lasts 6 s and 5 s are kept for
    // the work after the sponsor's lease: the wait gives up after about 1 s, not after waitMs (30 s).
    const held = await acquireLease(table, keys.senderLease('ETH', payerKey.address), { leaseMs: 60_000, waitMs: 0 });
    const journal = memoryJournal();
    const started = Date.now();
    const busy = await new SponsoredEvmSender({
      table,
      sponsors: singleSponsor(sponsor),
      inclusionTimeoutMs: 20_000,
      lease: { leaseMs: 6_000, waitMs: 30_000 },
    })
      .send({ ...request, journal })
      .catch((error: unknown) => error);
    const waited = Date.now() - started;
    expect(busy).toBeInstanceOf(ConflictError);
    expect((busy as ConflictError).code).toBe('SENDER_BUSY');
    expect((busy as ConflictError).retryAfterSeconds).toBe(2); // sent as Retry-After by the error handler
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(4_000);
    expect(journal.recorded).toEqual([]);
    expect(classifySendFailure(busy, journal.recorded.length > 0)).toBe('not_sent');
    expect(await eth.executorNonce(user.address)).toBe(executorNonce);
    await held.release();
  });

  it('a plain send and a first sponsored send of one wallet at once: the authorisation is never made stale, both move exactly their amounts', async () => {
    const { sponsor } = await fundedSponsor('ARB', 'ETH');
    const user = localEvmSigner(generatePrivateKey());
    await evm.faucet('ARB', user.address, 'ETH', ETHER);
    await evm.faucet('ARB', user.address, 'USDC', 10n * USDC);
    const arb = chain('ARB');
    const plain = new EvmSender({ table, inclusionTimeoutMs: 20_000, lease });
    const sponsored = new SponsoredEvmSender({ table, sponsors: singleSponsor(sponsor), inclusionTimeoutMs: 20_000, lease });
    const [toPlain, toSponsored] = [freshAddress(), freshAddress()];
    let plainSend: Promise<unknown> | undefined;
    // The interleaving of issue 19: the wallet's plain send (a transfer step) starts right after the
    // sponsored send signed its authorisation over the wallet's nonce, and may take that nonce first.
    const racing: EvmSigner = {
      ...user,
      signAuthorization: async (request) => {
        const signed = await user.signAuthorization(request);
        plainSend = plain.send({
          chain: arb,
          from: user.address,
          call: arb.transferCall('USDC', toPlain, 2n * USDC),
          spends: { token: 'USDC', amount: 2n * USDC, to: toPlain },
          signer: user,
        });
        await Promise.race([plainSend.catch(() => undefined), new Promise((done) => setTimeout(done, 1_500))]);
        return signed;
      },
    };
    const spends = { token: 'USDC', amount: 3n * USDC, to: toSponsored };
    const sent = await sponsored.send({
      chain: arb,
      account: user.address,
      call: arb.transferCall('USDC', toSponsored, 3n * USDC),
      spends,
      signer: racing,
      journal: memoryJournal(),
    });
    await plainSend;
    expect((await publicClient('ARB').getTransaction({ hash: sent.txHash as Hex })).type).toBe('eip7702');
    expect(await usdcBalance('ARB', toSponsored)).toBe(3n * USDC);
    expect(await usdcBalance('ARB', toPlain)).toBe(2n * USDC);
    expect(await usdcBalance('ARB', user.address)).toBe(5n * USDC);
    expect(await arb.executorNonce(user.address)).toBe(1n);
    // The lease's stored nonce followed the authorisation: the plain send took the next one.
    expect(await publicClient('ARB').getTransactionCount({ address: user.address })).toBe(2);
  });

  it('a sponsored send whose authorisation the chain skips is included, succeeds and moves nothing: TRANSACTION_NO_EFFECT, never reported sent', async () => {
    const { sponsor } = await fundedSponsor('POL', 'POL');
    const user = localEvmSigner(generatePrivateKey());
    await evm.faucet('POL', user.address, 'USDC', 10n * USDC);
    const pol = chain('POL');
    // An authorisation over a nonce the wallet does not have (what a stale one looks like to the chain).
    const stale: EvmSigner = { ...user, signAuthorization: (request) => user.signAuthorization({ ...request, nonce: request.nonce + 1 }) };
    const to = freshAddress();
    const journal = memoryJournal();
    const outcome = await new SponsoredEvmSender({ table, sponsors: singleSponsor(sponsor), inclusionTimeoutMs: 20_000, lease })
      .send({
        chain: pol,
        account: user.address,
        call: pol.transferCall('USDC', to, 4n * USDC),
        spends: { token: 'USDC', amount: 4n * USDC, to },
        signer: stale,
        journal,
      })
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(TransactionNoEffectError);
    expect((outcome as TransactionNoEffectError).code).toBe('TRANSACTION_NO_EFFECT');
    const hash = journal.recorded[0]!.tx_hash as Hex;
    expect((await publicClient('POL').getTransactionReceipt({ hash })).status).toBe('success'); // the receipt alone says success
    expect(classifySendFailure(outcome, true)).toBe('failed');
    expect(await usdcBalance('POL', to)).toBe(0n);
    expect(await usdcBalance('POL', user.address)).toBe(10n * USDC);
    // A resume of the recorded transaction reaches the same verdict (the effect is recorded with it).
    await expect(
      new SponsoredEvmSender({ table, sponsors: singleSponsor(sponsor), inclusionTimeoutMs: 20_000, lease }).send({
        chain: pol,
        account: user.address,
        call: pol.transferCall('USDC', to, 4n * USDC),
        spends: { token: 'USDC', amount: 4n * USDC, to },
        signer: user,
        journal: memoryJournal(journal.recorded[0]),
      }),
    ).rejects.toBeInstanceOf(TransactionNoEffectError);
  });

  it('a plain send whose receipt lacks the transfer it was sent for is not reported sent', async () => {
    const signer = localEvmSigner(generatePrivateKey());
    await evm.faucet('INK', signer.address, 'ETH', ETHER);
    await evm.faucet('INK', signer.address, 'USDC', 5n * USDC);
    const ink = chain('INK');
    const to = freshAddress();
    // The call moves 1 USDC; the send says it spends 2: the receipt carries no Transfer of 2 to `to`.
    const outcome = await new EvmSender({ table, inclusionTimeoutMs: 20_000, lease })
      .send({
        chain: ink,
        from: signer.address,
        call: ink.transferCall('USDC', to, USDC),
        spends: { token: 'USDC', amount: 2n * USDC, to },
        signer,
        journal: memoryJournal(),
      })
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(TransactionNoEffectError);
  });

  it('sponsored: when the account lease was taken over during the wait (clock skew), nothing is signed by the sponsor or sent', async () => {
    const payerKey = localEvmSigner(generatePrivateKey());
    await evm.faucet('INK', payerKey.address, 'ETH', 10n * ETHER);
    let sponsorSigned = 0;
    const sponsor: GasPayer = {
      address: async () => payerKey.address,
      signTransaction: (tx) => {
        sponsorSigned++;
        return payerKey.signTransaction(tx);
      },
    };
    const user = localEvmSigner(generatePrivateKey());
    await evm.faucet('INK', user.address, 'USDC', 10n * USDC);
    const ink = chain('INK');
    const held = await acquireLease(table, keys.senderLease('INK', payerKey.address), { leaseMs: 60_000, waitMs: 0 });
    const journal = memoryJournal();
    const sending = new SponsoredEvmSender({ table, sponsors: singleSponsor(sponsor), inclusionTimeoutMs: 20_000, lease: { leaseMs: 30_000, waitMs: 20_000 } })
      .send({
        chain: ink,
        account: user.address,
        call: ink.transferCall('USDC', freshAddress(), USDC),
        spends: { token: 'USDC', amount: USDC },
        signer: user,
        journal,
      })
      .catch((error: unknown) => error);
    const accountLease = keys.senderLease('INK', user.address);
    while (!(await getItem(table, accountLease))?.owner) await new Promise((done) => setTimeout(done, 20));
    await new Promise((done) => setTimeout(done, 300)); // the sender is now queueing for the sponsor
    // A process whose clock runs 40 s ahead sees the account lease expired and takes it.
    const rival = await acquireLease(table, accountLease, { leaseMs: 30_000, waitMs: 0, now: () => Date.now() + 40_000 });
    await held.release();
    const outcome = await sending;
    expect(outcome).toBeInstanceOf(ConflictError);
    expect((outcome as ConflictError).code).toBe('SENDER_BUSY');
    expect(sponsorSigned).toBe(0);
    expect(journal.recorded).toEqual([]);
    expect(await ink.executorNonce(user.address)).toBe(0n);
    await rival.release();
  });
});

describe('chain errors name no RPC URL', () => {
  it('a dead RPC is a ChainUnavailableError without its URL; a refusal is a BroadcastRejectedError; a reverting call is CallWouldFailError', async () => {
    const dead = new EvmChain('ARB', { ...evm.chains.ARB, rpc_url: 'http://127.0.0.1:9/v2/secret-api-key-123' });
    const failure = await dead.balance(freshAddress(), 'USDC').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ChainUnavailableError);
    expect((failure as Error).message).not.toMatch(/secret-api-key-123|127\.0\.0\.1/);

    const live = chain('ARB');
    const refused = await live.broadcast('0x02c0').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BroadcastRejectedError);
    expect((refused as Error).message).not.toContain(evm.chains.ARB.rpc_url.replace('http://', ''));

    const poor = freshAddress();
    const reverting = await live.estimateGas(poor, live.transferCall('USDC', freshAddress(), USDC)).catch((error: unknown) => error);
    expect(reverting).toBeInstanceOf(CallWouldFailError);
    expect((reverting as Error).message).not.toContain('127.0.0.1');
  });
});

describe('Solana sender', { timeout: 60_000 }, () => {
  it('sends USDC once; a retry after a crash between record and broadcast sends that very transaction', async () => {
    const owner = Keypair.generate();
    const from = owner.publicKey.toBase58();
    await sol.faucet(from, 'SOL', 1_000_000_000n);
    await sol.faucet(from, 'USDC', 10n * USDC);
    const solana = new SolanaChain(sol.chain);
    const sender = new SolanaSender({ inclusionTimeoutMs: 20_000 });
    const to = Keypair.generate().publicKey.toBase58();
    const signer = localSolanaSigner(owner);

    const first = await sender.send({ chain: solana, from, to, token: 'USDC', amount: 3n * USDC, signer, journal: memoryJournal() });
    expect(first.resumed).toBe(false);
    expect(await solana.balance(to, 'USDC')).toBe(3n * USDC);

    let saved: Broadcast | undefined;
    const crashing: SendJournal = {
      record: async (broadcast) => {
        saved = broadcast;
        throw new Error('process died');
      },
    };
    await expect(sender.send({ chain: solana, from, to, token: 'USDC', amount: 2n * USDC, signer, journal: crashing })).rejects.toThrow('process died');
    expect(await solana.balance(to, 'USDC')).toBe(3n * USDC);
    const resumed = await sender.send({ chain: solana, from, to, token: 'USDC', amount: 2n * USDC, signer, journal: memoryJournal(saved) });
    const again = await sender.send({ chain: solana, from, to, token: 'USDC', amount: 2n * USDC, signer, journal: memoryJournal(saved) });
    expect(resumed).toEqual({ txHash: saved!.tx_hash, resumed: true });
    expect(again).toEqual(resumed);
    expect(await solana.balance(to, 'USDC')).toBe(5n * USDC);
    expect(await solana.balance(from, 'USDC')).toBe(5n * USDC);
  });
});
