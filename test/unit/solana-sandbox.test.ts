import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAccount,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import {
  ComputeBudgetProgram,
  Connection,
  Keypair,
  NONCE_ACCOUNT_LENGTH,
  PublicKey,
  SendTransactionError,
  type SignatureStatus,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SolanaSandbox, startSolanaSandbox } from '../../infra/local/solana-sandbox/index.ts';

/**
 * The local Solana sandbox, driven only through @solana/web3.js v1 `Connection` and
 * @solana/spl-token, as the wallet service's withdrawal code will drive a real RPC node.
 */
const USDC = new PublicKey('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
const SOL = 1_000_000_000n;

interface RpcErrorBody {
  code: number;
  message: string;
  data?: { err: unknown; logs: string[] };
}

let dataDir: string;
let sandbox: SolanaSandbox;
let connection: Connection;
/** The JSON-RPC errors the server answered, seen through web3.js's `fetch` option. */
const rpcErrors: RpcErrorBody[] = [];

function connect(rpcUrl: string): Connection {
  return new Connection(rpcUrl, {
    commitment: 'confirmed',
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const body = (await response.clone().json()) as { error?: RpcErrorBody };
      if (body.error) rpcErrors.push(body.error);
      return response;
    },
  });
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'solana-sandbox-'));
  sandbox = await startSolanaSandbox({ dataDir });
  connection = connect(sandbox.rpcUrl);
}, 60_000);

afterAll(async () => {
  await sandbox?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** confirmTransaction needs a websocket endpoint the sandbox does not have: poll the status instead. */
async function waitFinalized(signature: string, timeoutMs = 10_000): Promise<SignatureStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const {
      value: [status],
    } = await connection.getSignatureStatuses([signature]);
    if (status?.confirmationStatus === 'finalized') return status;
    if (Date.now() > deadline) throw new Error(`${signature} not finalized after ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function v0Transaction(payer: Keypair, instructions: TransactionInstruction[]): Promise<VersionedTransaction> {
  const { blockhash } = await connection.getLatestBlockhash();
  const tx = new VersionedTransaction(new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: blockhash, instructions }).compileToV0Message());
  tx.sign([payer]);
  return tx;
}

async function feeFor(tx: VersionedTransaction): Promise<bigint> {
  const { value } = await connection.getFeeForMessage(tx.message);
  if (value === null) throw new Error('getFeeForMessage: blockhash not valid');
  return BigInt(value);
}

const lamportsOf = async (key: PublicKey) => BigInt(await connection.getBalance(key));
const usdcOf = async (owner: PublicKey) => BigInt((await connection.getTokenAccountBalance(getAssociatedTokenAddressSync(USDC, owner))).value.amount);

async function expectRefused(send: Promise<string>, code: number): Promise<RpcErrorBody> {
  rpcErrors.length = 0;
  await expect(send).rejects.toBeInstanceOf(SendTransactionError);
  expect(rpcErrors).toHaveLength(1);
  expect(rpcErrors[0]!.code).toBe(code);
  return rpcErrors[0]!;
}

describe('Solana sandbox over JSON-RPC', { timeout: 30_000 }, () => {
  const alice = Keypair.generate();
  const bob = Keypair.generate();
  const carol = Keypair.generate().publicKey;

  it('describes itself as the SOL chain with the mainnet USDC mint', async () => {
    expect(sandbox.chain).toEqual({ family: 'sol', rpc_url: sandbox.rpcUrl, native: 'SOL', tokens: { USDC: { mint: USDC.toBase58(), decimals: 6 } } });
    expect((await connection.getVersion())['solana-core']).toMatch(/^litesvm-\d+\.\d+\.\d+/);
    const mint = await connection.getParsedAccountInfo(USDC);
    expect(mint.value?.owner.toBase58()).toBe('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
    expect(mint.value?.data).toMatchObject({ program: 'spl-token', parsed: { type: 'mint', info: { decimals: 6, isInitialized: true } } });
  });

  it('faucets SOL and USDC exactly to the base unit', async () => {
    await sandbox.faucet(alice.publicKey.toBase58(), 'SOL', 3n * SOL + 1n);
    await sandbox.faucet(alice.publicKey.toBase58(), 'USDC', 10_000_001n);
    await sandbox.faucet(alice.publicKey.toBase58(), 'USDC', 2n);

    expect(await lamportsOf(alice.publicKey)).toBe(3n * SOL + 1n);
    const balance = await connection.getTokenAccountBalance(getAssociatedTokenAddressSync(USDC, alice.publicKey));
    expect(balance.value).toEqual({ amount: '10000003', decimals: 6, uiAmount: 10.000003, uiAmountString: '10.000003' });
    const { value: accounts } = await connection.getTokenAccountsByOwner(alice.publicKey, { mint: USDC });
    expect(accounts.map((a) => a.pubkey.toBase58())).toEqual([getAssociatedTokenAddressSync(USDC, alice.publicKey).toBase58()]);
  });

  it('lands a raw legacy SOL transfer as finalized, and the balances add up with the fee', async () => {
    const slotBefore = await connection.getSlot();
    const aliceBefore = await lamportsOf(alice.publicKey);
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    expect(lastValidBlockHeight).toBe((await connection.getBlockHeight()) + 150);
    const tx = new Transaction({ feePayer: alice.publicKey, recentBlockhash: blockhash }).add(
      SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: bob.publicKey, lamports: 123_456_789 }),
    );
    tx.sign(alice);
    const fee = BigInt((await connection.getFeeForMessage(tx.compileMessage())).value ?? Number.NaN);
    expect(fee).toBe(5_000n);

    const signature = await connection.sendRawTransaction(tx.serialize());
    expect(signature).toBe(bs58.encode(tx.signature!));
    const status = await waitFinalized(signature);

    expect(status.err).toBeNull();
    expect(status.slot).toBeGreaterThan(slotBefore);
    expect(await lamportsOf(alice.publicKey)).toBe(aliceBefore - 123_456_789n - fee);
    expect(await lamportsOf(bob.publicKey)).toBe(123_456_789n);
    const landed = await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 });
    expect(landed?.meta?.fee).toBe(Number(fee));
    expect(landed?.meta?.err).toBeNull();
    expect(landed?.slot).toBe(status.slot);
    expect(await connection.isBlockhashValid(blockhash)).toMatchObject({ value: true });
    expect((await connection.getLatestBlockhash()).blockhash).not.toBe(blockhash);

    // Rebroadcasting the same bytes never pays twice: preflight says so, skipPreflight just echoes the id.
    const again = await expectRefused(connection.sendRawTransaction(tx.serialize()), -32002);
    expect(again.data?.err).toBe('AlreadyProcessed');
    expect(await connection.sendRawTransaction(tx.serialize(), { skipPreflight: true })).toBe(signature);
    expect(await lamportsOf(bob.publicKey)).toBe(123_456_789n);
  });

  it('sends USDC in one v0 transaction that creates the recipient token account, then again to the existing one', async () => {
    const carolAta = getAssociatedTokenAddressSync(USDC, carol);
    expect(await connection.getAccountInfo(carolAta)).toBeNull();
    const rent = BigInt(await connection.getMinimumBalanceForRentExemption(165));
    const transfer = (amount: bigint) => [
      ComputeBudgetProgram.setComputeUnitLimit({ units: 100_000 }),
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 10_000 }),
      createAssociatedTokenAccountIdempotentInstruction(alice.publicKey, carolAta, carol, USDC),
      createTransferCheckedInstruction(getAssociatedTokenAddressSync(USDC, alice.publicKey), USDC, carolAta, alice.publicKey, amount, 6),
    ];

    const solBefore = await lamportsOf(alice.publicKey);
    const first = await v0Transaction(alice, transfer(1_250_000n));
    const firstFee = await feeFor(first);
    expect(firstFee).toBe(5_000n + 1_000n); // signature + ceil(10,000 µlamports × 100,000 CU / 10^6)
    expect((await waitFinalized(await connection.sendRawTransaction(first.serialize()))).err).toBeNull();

    expect(await usdcOf(alice.publicKey)).toBe(8_750_003n);
    expect(await usdcOf(carol)).toBe(1_250_000n);
    expect(await lamportsOf(alice.publicKey)).toBe(solBefore - firstFee - rent);
    const carolAccount = await getAccount(connection, carolAta);
    expect(carolAccount.owner.toBase58()).toBe(carol.toBase58());
    expect(carolAccount.mint.toBase58()).toBe(USDC.toBase58());
    expect(carolAccount.amount).toBe(1_250_000n);

    const second = await v0Transaction(alice, transfer(250_000n));
    const secondFee = await feeFor(second);
    const signature = await connection.sendRawTransaction(second.serialize());
    expect((await waitFinalized(signature)).err).toBeNull();

    expect(await usdcOf(alice.publicKey)).toBe(8_500_003n);
    expect(await usdcOf(carol)).toBe(1_500_000n);
    expect(await lamportsOf(alice.publicKey)).toBe(solBefore - firstFee - rent - secondFee);
    const landed = await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 });
    expect(landed?.version).toBe(0);
    expect(landed?.meta?.fee).toBe(Number(secondFee));
    expect(landed?.meta?.postTokenBalances?.find((b) => b.owner === carol.toBase58())?.uiTokenAmount.amount).toBe('1500000');
  });

  it('refuses overdrafts with the preflight error (-32002) and changes no balance', async () => {
    const solBefore = await lamportsOf(alice.publicKey);
    const usdcBefore = await usdcOf(alice.publicKey);
    const bobAta = getAssociatedTokenAddressSync(USDC, bob.publicKey);

    const usdcOverdraft = await v0Transaction(alice, [
      createAssociatedTokenAccountIdempotentInstruction(alice.publicKey, bobAta, bob.publicKey, USDC),
      createTransferCheckedInstruction(getAssociatedTokenAddressSync(USDC, alice.publicKey), USDC, bobAta, alice.publicKey, usdcBefore + 1n, 6),
    ]);
    const usdcError = await expectRefused(connection.sendRawTransaction(usdcOverdraft.serialize()), -32002);
    expect(usdcError.message).toBe('Transaction simulation failed: Error processing Instruction 1: custom program error: 0x1');
    expect(usdcError.data?.err).toEqual({ InstructionError: [1, { Custom: 1 }] });
    expect(usdcError.data?.logs).toContain('Program log: Error: insufficient funds');

    const solOverdraft = await v0Transaction(alice, [SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: bob.publicKey, lamports: solBefore })]);
    const solError = await expectRefused(connection.sendRawTransaction(solOverdraft.serialize()), -32002);
    expect(solError.data?.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(solError.data?.logs.some((line) => line.startsWith('Transfer: insufficient lamports'))).toBe(true);

    expect(await lamportsOf(alice.publicKey)).toBe(solBefore);
    expect(await usdcOf(alice.publicKey)).toBe(usdcBefore);
    expect(await connection.getAccountInfo(bobAta)).toBeNull();
    const { value: statuses } = await connection.getSignatureStatuses([bs58.encode(usdcOverdraft.signatures[0]!), bs58.encode(solOverdraft.signatures[0]!)]);
    expect(statuses).toEqual([null, null]);
  });

  it('refuses a transaction with a wrong signature or an unknown blockhash', async () => {
    const solBefore = await lamportsOf(alice.publicKey);
    const forged = await v0Transaction(alice, [SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: bob.publicKey, lamports: 1_000_000 })]);
    forged.signatures[0] = new Uint8Array(64).fill(7); // well-formed, but not alice's signature
    const error = await expectRefused(connection.sendRawTransaction(forged.serialize()), -32003);
    expect(error.message).toBe('Transaction signature verification failure');

    const stale = new VersionedTransaction(
      new TransactionMessage({
        payerKey: alice.publicKey,
        recentBlockhash: Keypair.generate().publicKey.toBase58(),
        instructions: [SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: bob.publicKey, lamports: 1_000_000 })],
      }).compileToV0Message(),
    );
    stale.sign([alice]);
    const staleError = await expectRefused(connection.sendRawTransaction(stale.serialize()), -32002);
    expect(staleError).toMatchObject({ message: 'Transaction simulation failed: Blockhash not found', data: { err: 'BlockhashNotFound', logs: [] } });

    expect(await lamportsOf(alice.publicKey)).toBe(solBefore);
  });

  it("names the engine's own refusals as a validator does, in the preflight error and in a landed transaction's status", async () => {
    const stranger = Keypair.generate();
    const unfunded = await v0Transaction(stranger, [SystemProgram.transfer({ fromPubkey: stranger.publicKey, toPubkey: bob.publicKey, lamports: 1 })]);
    const unfundedError = await expectRefused(connection.sendRawTransaction(unfunded.serialize()), -32002);
    expect(unfundedError).toMatchObject({
      message: 'Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.',
      data: { err: 'AccountNotFound' },
    });

    const unknownInstruction = new TransactionInstruction({
      programId: SystemProgram.programId,
      keys: [{ pubkey: alice.publicKey, isSigner: true, isWritable: true }],
      data: Buffer.from([99, 0, 0, 0]),
    });
    const garbled = await v0Transaction(alice, [unknownInstruction]);
    const garbledError = await expectRefused(connection.sendRawTransaction(garbled.serialize()), -32002);
    expect(garbledError).toMatchObject({
      message: 'Transaction simulation failed: Error processing Instruction 0: invalid instruction data',
      data: { err: { InstructionError: [0, 'InvalidInstructionData'] } },
    });

    // One lamport to a new account leaves it below the rent-exempt minimum: refused by preflight;
    // with skipPreflight it lands (the fee is charged) and its status carries the error.
    const dust = await v0Transaction(alice, [SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1 })]);
    const belowRent = { InsufficientFundsForRent: { account_index: 1 } };
    const dustError = await expectRefused(connection.sendRawTransaction(dust.serialize()), -32002);
    expect(dustError).toMatchObject({
      message: 'Transaction simulation failed: Transaction results in an account (1) with insufficient funds for rent',
      data: { err: belowRent },
    });
    const solBefore = await lamportsOf(alice.publicKey);
    const signature = await connection.sendRawTransaction(dust.serialize(), { skipPreflight: true });
    expect((await waitFinalized(signature)).err).toEqual(belowRent);
    expect(await lamportsOf(alice.publicKey)).toBe(solBefore - 5_000n);
    expect((await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 }))?.meta?.err).toEqual(belowRent);
  });

  it('keeps a blockhash valid for 150 blocks, one block per processed transaction', async () => {
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    const tx = new Transaction({ feePayer: alice.publicKey, recentBlockhash: blockhash }).add(
      SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: bob.publicKey, lamports: 1_000 }),
    );
    tx.sign(alice);
    const filler = Keypair.generate().publicKey.toBase58();
    while ((await connection.getBlockHeight()) < lastValidBlockHeight) await sandbox.faucet(filler, 'SOL', 1_000_000n);
    expect(await connection.isBlockhashValid(blockhash)).toMatchObject({ value: true });

    await sandbox.faucet(filler, 'SOL', 1_000_000n);
    expect(await connection.isBlockhashValid(blockhash)).toMatchObject({ value: false });
    expect((await connection.getFeeForMessage(tx.compileMessage())).value).toBeNull();
    const error = await expectRefused(connection.sendRawTransaction(tx.serialize()), -32002);
    expect(error.data?.err).toBe('BlockhashNotFound');
  });

  it('lands a durable-nonce transaction long after any blockhash it could have used, once', async () => {
    const nonceAccount = Keypair.generate();
    const rent = await connection.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    const { blockhash } = await connection.getLatestBlockhash();
    const create = new Transaction({ feePayer: alice.publicKey, recentBlockhash: blockhash }).add(
      SystemProgram.createNonceAccount({ fromPubkey: alice.publicKey, noncePubkey: nonceAccount.publicKey, authorizedPubkey: alice.publicKey, lamports: rent }),
    );
    create.sign(alice, nonceAccount);
    expect((await waitFinalized(await connection.sendRawTransaction(create.serialize()))).err).toBeNull();
    const nonce = (await connection.getNonce(nonceAccount.publicKey))!.nonce;
    const tx = new Transaction({
      feePayer: alice.publicKey,
      nonceInfo: { nonce, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: nonceAccount.publicKey, authorizedPubkey: alice.publicKey }) },
    }).add(SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: bob.publicKey, lamports: 2_000 }));
    tx.sign(alice);
    const filler = Keypair.generate().publicKey.toBase58();
    for (let i = 0; i <= 150; i++) await sandbox.faucet(filler, 'SOL', 1_000_000n);

    const bobBefore = await lamportsOf(bob.publicKey);
    expect((await waitFinalized(await connection.sendRawTransaction(tx.serialize()))).err).toBeNull();
    expect(await lamportsOf(bob.publicKey)).toBe(bobBefore + 2_000n);
    expect((await connection.getNonce(nonceAccount.publicKey))!.nonce).not.toBe(nonce);
    // The nonce has moved on, so a replay fails the age check before the duplicate check, as in Agave.
    const replay = await expectRefused(connection.sendRawTransaction(tx.serialize()), -32002);
    expect(replay.data?.err).toBe('BlockhashNotFound');
  });

  it('keeps SOL and USDC balances across a restart on the same data directory, with or without the engine snapshot', async () => {
    const before = {
      aliceSol: await lamportsOf(alice.publicKey),
      aliceUsdc: await usdcOf(alice.publicKey),
      bobSol: await lamportsOf(bob.publicKey),
      carolUsdc: await usdcOf(carol),
    };
    const slot = await connection.getSlot();

    for (const dropSnapshot of [false, true]) {
      await sandbox.stop();
      if (dropSnapshot) await unlink(join(dataDir, 'chains', 'SOL.litesvm'));
      sandbox = await startSolanaSandbox({ dataDir });
      connection = connect(sandbox.rpcUrl);

      expect({
        aliceSol: await lamportsOf(alice.publicKey),
        aliceUsdc: await usdcOf(alice.publicKey),
        bobSol: await lamportsOf(bob.publicKey),
        carolUsdc: await usdcOf(carol),
      }).toEqual(before);
      expect(await connection.getSlot()).toBeGreaterThanOrEqual(slot);
    }

    // The mint authority survived too: the faucet still mints, and transfers still land.
    await sandbox.faucet(carol.toBase58(), 'USDC', 5n);
    expect(await usdcOf(carol)).toBe(before.carolUsdc + 5n);
    const tx = await v0Transaction(alice, [SystemProgram.transfer({ fromPubkey: alice.publicKey, toPubkey: bob.publicKey, lamports: 1_000 })]);
    expect((await waitFinalized(await connection.sendRawTransaction(tx.serialize()))).err).toBeNull();
    expect(await lamportsOf(bob.publicKey)).toBe(before.bobSol + 1_000n);
  }, 60_000);
});

describe('Solana sandbox durability', { timeout: 60_000 }, () => {
  it('has every acknowledged change on disk: a second sandbox opened at once on the data directory of one never stopped (as after kill -9) sees it', async () => {
    const crashDir = await mkdtemp(join(tmpdir(), 'solana-sandbox-crash-'));
    const first = await startSolanaSandbox({ dataDir: crashDir });
    let second: SolanaSandbox | undefined;
    try {
      const payer = Keypair.generate();
      const payee = Keypair.generate().publicKey;
      const rpc = new Connection(first.rpcUrl, 'confirmed');
      await first.faucet(payer.publicKey.toBase58(), 'SOL', SOL);
      await first.faucet(payer.publicKey.toBase58(), 'USDC', 7n);
      const { blockhash } = await rpc.getLatestBlockhash();
      const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
        SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: payee, lamports: 1_234_567 }),
      );
      tx.sign(payer);
      const signature = await rpc.sendRawTransaction(tx.serialize());

      // No wait and no stop(): whatever the first sandbox answered must already be durable.
      second = await startSolanaSandbox({ dataDir: crashDir });
      const after = new Connection(second.rpcUrl, 'confirmed');
      expect(BigInt(await after.getBalance(payee))).toBe(1_234_567n);
      expect(BigInt(await after.getBalance(payer.publicKey))).toBe(SOL - 1_234_567n - 5_000n);
      expect((await after.getTokenAccountBalance(getAssociatedTokenAddressSync(USDC, payer.publicKey))).value.amount).toBe('7');
      const {
        value: [status],
      } = await after.getSignatureStatuses([signature]);
      expect(status).toMatchObject({ err: null, confirmationStatus: 'finalized' });
    } finally {
      await second?.stop();
      await first.stop();
      await rm(crashDir, { recursive: true, force: true });
    }
  });

  it('answers a change it could not save with an HTTP failure (maybe sent), never a JSON-RPC refusal', async () => {
    const brokenDir = await mkdtemp(join(tmpdir(), 'solana-sandbox-unsaved-'));
    const running = await startSolanaSandbox({ dataDir: brokenDir });
    try {
      const payer = Keypair.generate();
      await running.faucet(payer.publicKey.toBase58(), 'SOL', SOL);
      const { blockhash } = await new Connection(running.rpcUrl, 'confirmed').getLatestBlockhash();
      const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
        SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 }),
      );
      tx.sign(payer);
      // The state directory becomes a file: nothing can be written any more.
      await rm(join(brokenDir, 'chains'), { recursive: true });
      await writeFile(join(brokenDir, 'chains'), 'not a directory');

      const body = { jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [tx.serialize().toString('base64'), { encoding: 'base64' }] };
      const response = await fetch(running.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(response.status).toBe(500);
      expect(await response.text()).not.toContain('jsonrpc');
      await expect(running.faucet(payer.publicKey.toBase58(), 'SOL', SOL)).rejects.toThrow(/could not be saved/);
    } finally {
      await expect(running.stop()).rejects.toThrow(/could not be saved/);
      await rm(brokenDir, { recursive: true, force: true });
    }
  });

  it('restores from SOL.json alone when the engine snapshot is newer than it (killed between the two writes)', async () => {
    const crashDir = await mkdtemp(join(tmpdir(), 'solana-sandbox-torn-'));
    const payer = Keypair.generate();
    let running = await startSolanaSandbox({ dataDir: crashDir });
    try {
      await running.faucet(payer.publicKey.toBase58(), 'SOL', SOL);
      const committed = await readFile(join(crashDir, 'chains', 'SOL.json'));
      await running.faucet(payer.publicKey.toBase58(), 'SOL', 2n * SOL);
      await running.stop();
      // The snapshot holds the second credit, SOL.json (the commit point) only the first.
      await writeFile(join(crashDir, 'chains', 'SOL.json'), committed);
      running = await startSolanaSandbox({ dataDir: crashDir });
      expect(BigInt(await new Connection(running.rpcUrl, 'confirmed').getBalance(payer.publicKey))).toBe(SOL);
    } finally {
      await running.stop();
      await rm(crashDir, { recursive: true, force: true });
    }
  });
});
