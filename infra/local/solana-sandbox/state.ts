import { randomBytes } from 'node:crypto';
import { type Address, lamports as toLamports } from '@solana/kit';
import {
  createAssociatedTokenAccountIdempotentInstruction,
  createMintToCheckedInstruction,
  getAssociatedTokenAddressSync,
  MINT_SIZE,
  MintLayout,
} from '@solana/spl-token';
import { Keypair, PublicKey, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { Clock, FailedTransactionMetadata, LiteSVM, type TransactionMetadata } from 'litesvm';
import { FaucetRefusedError, tooLarge } from '../faucet-refused.ts';
import { ADDRESS_LOOKUP_TABLE_PROGRAM, MAX_PROCESSING_AGE, SYSTEM_PROGRAM, TOKEN_PROGRAM, U64_MAX, USDC_DECIMALS, USDC_MINT } from './constants.ts';
import { describeFailure, preflightError, simpleFailure, type TxFailure } from './errors.ts';
import { computeUnitPrice, transactionFee } from './fees.ts';
import { type PersistedAccount, type PersistedState, portableCopy, readChainFiles, writeChainFiles } from './persistence.ts';
import { readMint, readTokenAccount, uiTokenAmount } from './spl.ts';
import { JsonRpcError, PersistenceError } from './transport.ts';
import type { AccountState, TokenBalance, TransactionRecord } from './types.ts';
import { isWritableStatic, type ParsedMessage, parseWireTransaction, signaturesVerify, type WireTransaction } from './wire.ts';

/**
 * The chain: the engine, its clock and blockhashes, the transactions it processed, the faucet and
 * the USDC mint, saved after every change (persistence.ts).
 */

/** Processed transactions kept for getTransaction and getSignatureStatuses. */
const RECORD_LIMIT = 1000;

interface Execution {
  readonly landed: boolean;
  readonly failure: TxFailure | null;
  readonly logs: readonly string[];
  readonly unitsConsumed: number;
}

export class SandboxChain {
  readonly svm: LiteSVM;
  readonly genesisHash: string;
  readonly authority: Keypair;
  slot: number;
  blockHeight: number;
  transactionCount: number;
  /** Recent blockhashes and the block height each was the latest at. */
  readonly blockhashes: Map<string, number>;
  readonly records: Map<string, TransactionRecord>;
  /** Every account the sandbox has seen, with its last portable copy (null: nothing to keep, e.g. closed). */
  private readonly portable: Map<string, PersistedAccount | null>;
  /** Accounts changed since the last save: only these are read back for the portable copy. */
  private readonly dirty: Set<string>;
  private readonly dir: string;

  private constructor(dir: string, svm: LiteSVM, state: PersistedState | undefined) {
    this.dir = dir;
    // The engine accepts only its latest blockhash, so the sandbox checks blockhash age (and,
    // to answer -32003 as a validator does, signatures) itself and turns both engine checks off.
    this.svm = svm.withSigverify(false).withBlockhashCheck(false);
    this.genesisHash = state?.genesisHash ?? bs58.encode(randomBytes(32));
    this.authority = state ? Keypair.fromSecretKey(bs58.decode(state.mintAuthority)) : Keypair.generate();
    this.slot = state?.slot ?? Number(svm.getClock().slot);
    this.blockHeight = state?.blockHeight ?? this.slot;
    this.transactionCount = state?.transactionCount ?? 0;
    this.blockhashes = new Map(state?.blockhashes ?? []);
    this.records = new Map((state?.transactions ?? []).map((record) => [record.signature, record]));
    this.portable = new Map(Object.entries(state?.accounts ?? {}));
    this.dirty = new Set([...this.portable.keys(), USDC_MINT]);
  }

  /** Restores from the engine snapshot when it is from this litesvm version, else from the portable copy, else starts fresh. */
  static open(dir: string): SandboxChain {
    const { state, snapshot } = readChainFiles(dir);
    let svm: LiteSVM | undefined;
    if (snapshot !== undefined) {
      try {
        svm = LiteSVM.fromBytes(snapshot);
      } catch {
        svm = undefined; // an unreadable snapshot: fall back to the portable copy in SOL.json
      }
    }
    const restoredFromSnapshot = svm !== undefined;
    svm ??= new LiteSVM();
    if (state && !restoredFromSnapshot) {
      for (const [key, account] of Object.entries(state.accounts)) {
        const data = new Uint8Array(Buffer.from(account.data, 'base64'));
        svm.setAccount({
          address: key as Address,
          lamports: toLamports(BigInt(account.lamports)),
          programAddress: account.owner as Address,
          executable: account.executable,
          data,
          space: BigInt(data.length),
        });
      }
    }
    const chain = new SandboxChain(dir, svm, state);
    if (!restoredFromSnapshot) {
      // A fresh engine starts at its own genesis blockhash: move past it so nothing signed before a
      // portable restore can be replayed, and put the clock where the state left it.
      chain.blockhashes.clear();
      chain.advance();
    }
    chain.ensureMint();
    chain.blockhashes.set(chain.svm.latestBlockhash(), chain.blockhashes.get(chain.svm.latestBlockhash()) ?? chain.blockHeight);
    chain.saveNow();
    return chain;
  }

  // --- clock and blockhashes

  latestBlockhash(): { blockhash: string; lastValidBlockHeight: number } {
    const blockhash = this.svm.latestBlockhash();
    return { blockhash, lastValidBlockHeight: (this.blockhashes.get(blockhash) ?? this.blockHeight) + MAX_PROCESSING_AGE };
  }

  isBlockhashValid(blockhash: string): boolean {
    const height = this.blockhashes.get(blockhash);
    return height !== undefined && this.blockHeight <= height + MAX_PROCESSING_AGE;
  }

  /** A durable-nonce transaction (first instruction System AdvanceNonceAccount) is valid while the nonce account holds its lifetime token. */
  isLifetimeValid(message: ParsedMessage): boolean {
    if (this.isBlockhashValid(message.lifetimeToken)) return true;
    const first = message.compiled.instructions[0];
    if (!first || message.staticKeys[first.programAddressIndex] !== SYSTEM_PROGRAM) return false;
    const data = first.data;
    const nonceIndex = first.accountIndices?.[0];
    if (!data || data.length < 4 || Buffer.from(data).readUInt32LE(0) !== 4 || nonceIndex === undefined) return false;
    const nonceKey = message.staticKeys[nonceIndex];
    const nonce = nonceKey === undefined ? null : this.account(nonceKey);
    if (!nonce || nonce.owner !== SYSTEM_PROGRAM || nonce.data.length !== 80) return false;
    const buffer = Buffer.from(nonce.data);
    return buffer.readUInt32LE(4) === 1 && bs58.encode(buffer.subarray(40, 72)) === message.lifetimeToken;
  }

  /** One block per transaction: the slot, block height, clock and blockhash move on. */
  advance(): void {
    this.slot += 1;
    this.blockHeight += 1;
    const { epoch } = this.epochOf(this.slot);
    const previous = this.svm.getClock();
    const now = BigInt(Math.floor(Date.now() / 1000));
    const epochStart = previous.epoch === BigInt(epoch) ? previous.epochStartTimestamp : now;
    this.svm.setClock(new Clock(BigInt(this.slot), epochStart, BigInt(epoch), BigInt(epoch + 1), now));
    this.svm.expireBlockhash();
    this.blockhashes.set(this.svm.latestBlockhash(), this.blockHeight);
    for (const [blockhash, height] of this.blockhashes) {
      if (height >= this.blockHeight - 2 * MAX_PROCESSING_AGE) break;
      this.blockhashes.delete(blockhash);
    }
  }

  /** Empty blocks (tests: expire a blockhash), durable before it returns. */
  advanceBlocks(count: number): void {
    for (let i = 0; i < count; i++) this.advance();
    this.saveNow();
  }

  /** Agave's EpochSchedule::get_epoch_and_slot_index, warmup epochs included. */
  epochOf(slot: number): { epoch: number; slotIndex: number; slotsInEpoch: number } {
    const schedule = this.svm.getEpochSchedule();
    const slotsPerEpoch = Number(schedule.slotsPerEpoch);
    const firstNormalSlot = Number(schedule.firstNormalSlot);
    const firstNormalEpoch = Number(schedule.firstNormalEpoch);
    const minimum = 32;
    if (schedule.warmup && slot < firstNormalSlot) {
      const epoch = Math.log2(nextPowerOfTwo(slot + minimum + 1)) - Math.log2(minimum) - 1;
      const slotsInEpoch = 2 ** (epoch + Math.log2(minimum));
      return { epoch, slotIndex: slot - (slotsInEpoch - minimum), slotsInEpoch };
    }
    const normalSlot = schedule.warmup ? slot - firstNormalSlot : slot;
    const normalEpoch = schedule.warmup ? firstNormalEpoch : 0;
    return { epoch: normalEpoch + Math.floor(normalSlot / slotsPerEpoch), slotIndex: normalSlot % slotsPerEpoch, slotsInEpoch: slotsPerEpoch };
  }

  // --- accounts

  account(key: string): AccountState | null {
    const found = this.svm.getAccount(key as Address);
    if (!found.exists || (found.lamports === 0n && found.data.length === 0)) return null;
    return { lamports: found.lamports, owner: found.programAddress, data: new Uint8Array(found.data), executable: found.executable };
  }

  /** Static keys then the writable and read-only keys loaded from address lookup tables, or null if a table cannot be read. */
  accountKeys(message: ParsedMessage): { keys: string[]; loaded: { writable: string[]; readonly: string[] } } | null {
    const loaded = { writable: [] as string[], readonly: [] as string[] };
    if (message.compiled.version === 0) {
      for (const lookup of message.compiled.addressTableLookups ?? []) {
        const table = this.account(lookup.lookupTableAddress);
        if (!table || table.owner !== ADDRESS_LOOKUP_TABLE_PROGRAM || table.data.length < 56) return null;
        const entries = (table.data.length - 56) / 32;
        const at = (index: number) => (index < entries ? bs58.encode(table.data.subarray(56 + index * 32, 88 + index * 32)) : null);
        for (const [indexes, into] of [
          [lookup.writableIndexes, loaded.writable],
          [lookup.readonlyIndexes, loaded.readonly],
        ] as const) {
          for (const index of indexes) {
            const key = at(index);
            if (key === null) return null;
            into.push(key);
          }
        }
      }
    }
    return { keys: [...message.staticKeys, ...loaded.writable, ...loaded.readonly], loaded };
  }

  tokenBalances(keys: readonly string[]): TokenBalance[] {
    const balances: TokenBalance[] = [];
    keys.forEach((key, accountIndex) => {
      const account = this.account(key);
      const token = account && readTokenAccount(account);
      const mintAccount = token && this.account(token.mint);
      const mint = mintAccount && readMint(mintAccount);
      if (account && token && mint)
        balances.push({
          accountIndex,
          mint: token.mint,
          owner: token.owner,
          programId: account.owner,
          uiTokenAmount: uiTokenAmount(token.amount, mint.decimals),
        });
    });
    return balances;
  }

  // --- transactions

  /**
   * sendTransaction. With preflight (the default) a transaction that would fail changes nothing and
   * is answered like a validator's failed preflight; with skipPreflight it is executed as a leader
   * would, landing (fee charged, error recorded) or being dropped (returned id, never a status).
   */
  submit(tx: WireTransaction, skipPreflight: boolean): string {
    if (!skipPreflight) {
      if (!signaturesVerify(tx)) throw new JsonRpcError(-32003, 'Transaction signature verification failure');
      const failure = this.preflight(tx);
      if (failure) throw preflightError(failure.failure, failure.logs, failure.unitsConsumed);
    } else if (!signaturesVerify(tx) || !this.isLifetimeValid(tx.message) || this.records.has(tx.id)) {
      return tx.id;
    }
    const execution = this.execute(tx);
    if (!execution.landed && !skipPreflight)
      throw preflightError(execution.failure ?? simpleFailure('AccountNotFound'), execution.logs, execution.unitsConsumed);
    return tx.id;
  }

  /** The checks and simulation a validator's preflight runs; null when the transaction would succeed. */
  preflight(tx: WireTransaction): { failure: TxFailure; logs: readonly string[]; unitsConsumed: number } | null {
    if (!this.isLifetimeValid(tx.message)) return { failure: simpleFailure('BlockhashNotFound'), logs: [], unitsConsumed: 0 };
    if (this.records.has(tx.id)) return { failure: simpleFailure('AlreadyProcessed'), logs: [], unitsConsumed: 0 };
    const simulated = this.svm.simulateTransaction(tx.kit);
    if (simulated instanceof FailedTransactionMetadata) {
      const meta = simulated.meta();
      return { failure: describeFailure(simulated.err()), logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) };
    }
    return null;
  }

  /** Runs the transaction in the engine; it lands when it succeeded or its fee was charged. */
  execute(tx: WireTransaction): Execution {
    const resolved = this.accountKeys(tx.message);
    const keys = resolved?.keys ?? [...tx.message.staticKeys];
    const preBalances = keys.map((key) => this.account(key)?.lamports ?? 0n);
    const preTokenBalances = this.tokenBalances(keys);
    const result = this.svm.sendTransaction(tx.kit);
    const postBalances = keys.map((key) => this.account(key)?.lamports ?? 0n);
    const failed = result instanceof FailedTransactionMetadata;
    const meta: TransactionMetadata = failed ? result.meta() : result;
    const failure = failed ? describeFailure(result.err()) : null;
    const logs = meta.logs();
    const unitsConsumed = Number(meta.computeUnitsConsumed());
    const landed = !failed || postBalances[0] !== preBalances[0];
    if (!landed) return { landed, failure, logs, unitsConsumed };

    this.advance();
    const returnData = meta.returnData();
    const returnBytes = returnData.data();
    const { compiled } = tx.message;
    this.remember({
      signature: tx.id,
      slot: this.slot,
      blockTime: Math.floor(Date.now() / 1000),
      version: tx.message.version,
      wire: Buffer.from(tx.bytes).toString('base64'),
      err: failure?.json ?? null,
      fee: transactionFee(tx.message).toString(),
      preBalances: preBalances.map(String),
      postBalances: postBalances.map(String),
      preTokenBalances,
      postTokenBalances: this.tokenBalances(keys),
      logs,
      innerInstructions: meta
        .innerInstructions()
        .map((inner, index) => ({
          index,
          instructions: inner.map((ix) => {
            const compiledInner = ix.instruction();
            return {
              programIdIndex: compiledInner.programIdIndex(),
              accounts: [...compiledInner.accounts()],
              data: bs58.encode(compiledInner.data()),
              stackHeight: ix.stackHeight(),
            };
          }),
        }))
        .filter((entry) => entry.instructions.length > 0),
      computeUnitsConsumed: unitsConsumed,
      loadedAddresses: resolved?.loaded ?? { writable: [], readonly: [] },
      returnData: returnBytes.length ? { programId: bs58.encode(returnData.programId()), data: [Buffer.from(returnBytes).toString('base64'), 'base64'] } : null,
      computeUnitPrice: computeUnitPrice(tx.message).toString(),
      writableKeys: [...compiled.staticAccounts.filter((_key, index) => isWritableStatic(compiled, index)), ...(resolved?.loaded.writable ?? [])],
    });
    for (const key of keys) this.dirty.add(key);
    this.saveNow();
    return { landed, failure, logs, unitsConsumed };
  }

  private remember(record: TransactionRecord): void {
    this.records.set(record.signature, record);
    this.transactionCount += 1;
    for (const signature of this.records.keys()) {
      if (this.records.size <= RECORD_LIMIT) break;
      this.records.delete(signature);
    }
  }

  // --- faucet and the USDC mint

  faucet(owner: string, token: 'SOL' | 'USDC', amount: bigint): void {
    let ownerKey: PublicKey;
    try {
      ownerKey = new PublicKey(owner);
    } catch {
      throw new Error(`faucet: "${owner}" is not a base-58 Solana address`);
    }
    if (typeof amount !== 'bigint' || amount <= 0n || amount > U64_MAX) throw new Error('faucet: amount must be a positive u64 bigint of base units');
    // Only a wallet (a system account, or none yet) is credited: not a program, sysvar or token account.
    const existing = this.account(ownerKey.toBase58());
    if (ownerKey.equals(PublicKey.default) || (existing && (existing.executable || existing.owner !== SYSTEM_PROGRAM))) {
      throw new FaucetRefusedError(
        'INVALID_ADDRESS',
        'body.address: must be a wallet (a system account), not the zero key, a program or a program-owned account',
      );
    }
    if (token === 'SOL') {
      if ((existing?.lamports ?? 0n) + amount > U64_MAX) throw tooLarge('the balance', 'sol');
      this.airdrop(ownerKey.toBase58(), amount);
    } else if (token === 'USDC') {
      this.ensureMint();
      if (MintLayout.decode(this.account(USDC_MINT)!.data).supply + amount > U64_MAX) throw tooLarge("USDC's total supply", 'sol');
      this.mintUsdc(ownerKey, amount);
    } else throw new Error(`faucet: unknown token ${String(token)}`);
  }

  /** Credits lamports directly, as anvil's setBalance does: LiteSVM's own airdrop draws on a 1,000,000 SOL pool that runs dry. */
  private airdrop(key: string, amount: bigint): void {
    const found = this.svm.getAccount(key as Address);
    if (found.exists) this.svm.setAccount({ ...found, lamports: toLamports(found.lamports + amount) });
    else
      this.svm.setAccount({
        address: key as Address,
        lamports: toLamports(amount),
        programAddress: SYSTEM_PROGRAM as Address,
        executable: false,
        data: new Uint8Array(),
        space: 0n,
      });
    this.dirty.add(key);
    this.advance();
    this.saveNow();
  }

  /** MintTo into the owner's associated token account (created first, idempotently), signed by the sandbox mint authority. */
  private mintUsdc(owner: PublicKey, amount: bigint): void {
    const authority = this.authority.publicKey;
    if ((this.account(authority.toBase58())?.lamports ?? 0n) < 100_000_000n) this.airdrop(authority.toBase58(), 1_000_000_000n);
    const mint = new PublicKey(USDC_MINT);
    const ata = getAssociatedTokenAddressSync(mint, owner, true);
    const tx = new Transaction({ feePayer: authority, recentBlockhash: this.svm.latestBlockhash() }).add(
      createAssociatedTokenAccountIdempotentInstruction(authority, ata, owner, mint),
      createMintToCheckedInstruction(mint, ata, authority, amount, USDC_DECIMALS),
    );
    tx.sign(this.authority);
    try {
      this.submit(parseWireTransaction(new Uint8Array(tx.serialize())), false);
    } catch (error) {
      throw new Error(`faucet: minting ${amount} USDC units to ${owner.toBase58()} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private ensureMint(): void {
    if (this.account(USDC_MINT)) return;
    const data = Buffer.alloc(MINT_SIZE);
    MintLayout.encode(
      {
        mintAuthorityOption: 1,
        mintAuthority: this.authority.publicKey,
        supply: 0n,
        decimals: USDC_DECIMALS,
        isInitialized: true,
        freezeAuthorityOption: 0,
        freezeAuthority: PublicKey.default,
      },
      data,
    );
    const rent = this.svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE));
    this.svm.setAccount({
      address: USDC_MINT as Address,
      lamports: toLamports(rent),
      programAddress: TOKEN_PROGRAM as Address,
      executable: false,
      data: new Uint8Array(data),
      space: BigInt(MINT_SIZE),
    });
    this.dirty.add(USDC_MINT);
  }

  // --- persistence

  /** Writes and fsyncs the whole state: called after every change, before it is acknowledged. */
  saveNow(): void {
    try {
      this.write();
    } catch (error) {
      throw new PersistenceError(`Solana sandbox: the state could not be saved to ${this.dir}`, { cause: error });
    }
  }

  private write(): void {
    for (const key of this.dirty) this.portable.set(key, portableCopy(this.account(key)));
    this.dirty.clear();
    const accounts: Record<string, PersistedAccount> = {};
    for (const [key, copy] of this.portable) if (copy) accounts[key] = copy;
    writeChainFiles(this.dir, this.svm.toBytes(), {
      genesisHash: this.genesisHash,
      mintAuthority: bs58.encode(this.authority.secretKey),
      slot: this.slot,
      blockHeight: this.blockHeight,
      transactionCount: this.transactionCount,
      blockhashes: [...this.blockhashes],
      transactions: [...this.records.values()],
      accounts,
    });
  }

  /** Every change is already on disk; writes once more so a stop always leaves a current snapshot. */
  close(): void {
    this.saveNow();
  }
}

function nextPowerOfTwo(value: number): number {
  return 2 ** Math.ceil(Math.log2(value));
}
