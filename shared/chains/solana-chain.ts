import { randomUUID } from 'node:crypto';
import {
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Base64EncodedWireTransaction,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createSolanaRpc,
  createTransactionMessage,
  getAddressDecoder,
  getBase58Encoder,
  getBase64Decoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  getTransactionEncoder,
  type Instruction,
  isSolanaError,
  pipe,
  type ReadonlyUint8Array,
  type Rpc,
  type Signature,
  type SignatureBytes,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SOLANA_ERROR__MALFORMED_JSON_RPC_ERROR,
  type SolanaRpcApi,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Transaction,
  type TransactionMessageBytes,
  type TransactionMessageBytesBase64,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import type { SolanaChainConfig } from './chain-config.ts';
import { BroadcastRejectedError } from './errors.ts';

/** An SPL token account's size: the rent-exempt minimum for it is what creating an ATA costs. */
const TOKEN_ACCOUNT_SIZE = 165n;
/** SPL token account layout: mint (32), owner (32), amount (u64 little-endian) at byte 64. */
const TOKEN_AMOUNT_OFFSET = 64;
/** What a fee costs when the node cannot price the message (its blockhash expired meanwhile). */
const DEFAULT_FEE_LAMPORTS = 5000n;

const COMMITMENT = 'confirmed';

/** SPL Memo (v2): logs its UTF-8 data; with no accounts it needs no signer. */
const MEMO_PROGRAM_ADDRESS = address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
/** Longest memo reference, in UTF-8 bytes (a UUID is 36; the transaction must stay under 1,232 bytes). */
const MAX_REFERENCE_BYTES = 64;

/**
 * An SPL Memo instruction carrying `reference`. Two otherwise identical transfers signed against the
 * same blockhash would be the same transaction (one signature, the cluster keeps one): the memo
 * makes each transfer its own.
 */
function memoInstruction(reference: string): Instruction {
  const data = new TextEncoder().encode(reference);
  if (data.length === 0 || data.length > MAX_REFERENCE_BYTES) throw new Error(`A transfer reference is 1 to ${MAX_REFERENCE_BYTES} UTF-8 bytes`);
  return { programAddress: MEMO_PROGRAM_ADDRESS, data };
}

/** What a simulated transaction would take out of an owner (SolanaChain.simulateOutflows). */
export interface SimulatedOutflows {
  /** The simulation's failure (the node's TransactionError), null when it ran. */
  readonly err: unknown;
  /** Lamports that would leave the owner (fee included; negative: would arrive). */
  readonly lamports: bigint;
  /** Per token account the owner holds: its mint and what would leave it (negative: would arrive). */
  readonly moved: ReadonlyMap<string, { readonly mint: string; readonly amount: bigint }>;
}

export interface SolanaTransfer {
  /** The compiled v0 message, as the fee payer signs it. */
  readonly messageBytes: Uint8Array;
  /** Lamports the network charges for the message. */
  readonly fee: bigint;
  /** Lamports for the recipient's token account when the message creates it, else 0. */
  readonly rent: bigint;
  readonly createsTokenAccount: boolean;
  /** The message is valid until the chain passes this block height. */
  readonly lastValidBlockHeight: bigint;
}

/**
 * Solana through @solana/kit (tree-shakeable, no websocket client in the bundle), against a real
 * RPC in AWS or the LiteSVM-backed sandbox RPC locally. Confirmation is polled with
 * getSignatureStatuses (no subscription). Reads use the `confirmed` commitment.
 */
export class SolanaChain {
  readonly config: SolanaChainConfig;
  readonly #rpc: Rpc<SolanaRpcApi>;

  constructor(config: SolanaChainConfig) {
    this.config = config;
    this.#rpc = createSolanaRpc(config.rpc_url);
  }

  decimals(token: string): number {
    return token === 'SOL' ? 9 : this.#token(token).decimals;
  }

  tokens(): string[] {
    return ['SOL', ...Object.keys(this.config.tokens)];
  }

  async balance(owner: string, token: string): Promise<bigint> {
    const ownerAddress = address(owner);
    if (token === 'SOL') return (await this.#rpc.getBalance(ownerAddress, { commitment: COMMITMENT }).send()).value;
    const [ata] = await findAssociatedTokenPda({ owner: ownerAddress, mint: this.#mint(token), tokenProgram: TOKEN_PROGRAM_ADDRESS });
    const { value } = await this.#rpc
      .getAccountInfo(ata, { commitment: COMMITMENT, encoding: 'base64', dataSlice: { offset: TOKEN_AMOUNT_OFFSET, length: 8 } })
      .send();
    // No account yet (or lamports sent to the address without creating it): holds no tokens.
    if (!value || value.owner !== TOKEN_PROGRAM_ADDRESS) return 0n;
    const amount = Buffer.from(value.data[0], 'base64');
    return amount.length === 8 ? amount.readBigUInt64LE(0) : 0n;
  }

  /**
   * A v0 message moving `amount` of `token` from `from` (fee payer and only signer) to `to`; for
   * SPL tokens it also creates the recipient's associated token account (idempotently) when it
   * does not exist yet. It ends with an SPL Memo of `reference` (default: a random UUID), so equal
   * transfers are distinct transactions. Returns what it costs the sender in lamports beyond `amount`.
   */
  async transferMessage(from: string, to: string, token: string, amount: bigint, reference: string = randomUUID()): Promise<SolanaTransfer> {
    const payer = createNoopSigner(address(from));
    const recipient = address(to);
    const instructions: Instruction[] = [];
    let rent = 0n;
    if (token === 'SOL') {
      instructions.push(getTransferSolInstruction({ source: payer, destination: recipient, amount }));
    } else {
      const mint = this.#mint(token);
      const [[source], [destination]] = await Promise.all([
        findAssociatedTokenPda({ owner: payer.address, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }),
        findAssociatedTokenPda({ owner: recipient, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }),
      ]);
      const existing = await this.#rpc.getAccountInfo(destination, { commitment: COMMITMENT, encoding: 'base64', dataSlice: { offset: 0, length: 0 } }).send();
      if (!existing.value) {
        instructions.push(getCreateAssociatedTokenIdempotentInstruction({ payer, ata: destination, owner: recipient, mint }));
        rent = await this.#rpc.getMinimumBalanceForRentExemption(TOKEN_ACCOUNT_SIZE, { commitment: COMMITMENT }).send();
      }
      instructions.push(getTransferCheckedInstruction({ source, mint, destination, authority: payer, amount, decimals: this.decimals(token) }));
    }
    instructions.push(memoInstruction(reference));
    const { value: lifetime } = await this.#rpc.getLatestBlockhash({ commitment: COMMITMENT }).send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(payer.address, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const { messageBytes } = compileTransaction(message);
    const { value: fee } = await this.#rpc.getFeeForMessage(toBase64(messageBytes) as TransactionMessageBytesBase64, { commitment: COMMITMENT }).send();
    return {
      messageBytes: new Uint8Array(messageBytes),
      fee: fee ?? DEFAULT_FEE_LAMPORTS,
      rent,
      createsTokenAccount: rent > 0n,
      lastValidBlockHeight: lifetime.lastValidBlockHeight,
    };
  }

  /**
   * The wire transaction for a message and the fee payer's (base58) signature. The fee payer is
   * the first signer; any other signer slot stays zero-filled (our messages have one signer).
   */
  static assemble(messageBytes: Uint8Array, signatureBase58: string): Uint8Array {
    const signature = getBase58Encoder().encode(signatureBase58);
    if (signature.length !== 64) throw new Error('A Solana signature is 64 bytes');
    const compiled = getCompiledTransactionMessageDecoder().decode(messageBytes);
    const signers = compiled.staticAccounts.slice(0, compiled.header.numSignerAccounts);
    const signatures = Object.fromEntries(signers.map((signer, index) => [signer, index === 0 ? (signature as SignatureBytes) : null]));
    const transaction = { messageBytes: messageBytes as ReadonlyUint8Array as TransactionMessageBytes, signatures } as Transaction;
    return new Uint8Array(getTransactionEncoder().encode(transaction));
  }

  /**
   * A wire transaction's message (what its fee payer signs) and the blockhash it carries. Throws
   * on bytes that are not a transaction, or one with a durable nonce instead of a blockhash.
   */
  static messageOf(wireTransaction: Uint8Array): { messageBytes: Uint8Array; blockhash: string } {
    const transaction = getTransactionDecoder().decode(wireTransaction);
    const compiled = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
    return { messageBytes: new Uint8Array(transaction.messageBytes), blockhash: compiled.lifetimeToken };
  }

  /** The wire transaction with `signer`'s (base58) signature in its slot; every other slot as it was. */
  static addSignature(wireTransaction: Uint8Array, signer: string, signatureBase58: string): Uint8Array {
    const signature = getBase58Encoder().encode(signatureBase58);
    if (signature.length !== 64) throw new Error('A Solana signature is 64 bytes');
    const transaction = getTransactionDecoder().decode(wireTransaction);
    if (!(signer in transaction.signatures)) throw new Error(`${signer} is not a signer of this transaction`);
    const signed = { ...transaction, signatures: { ...transaction.signatures, [signer]: signature as SignatureBytes } } as Transaction;
    return new Uint8Array(getTransactionEncoder().encode(signed));
  }

  /** Whether a block can still include a transaction with this blockhash (`isBlockhashValid`, processed commitment: the widest view). */
  async isBlockhashValid(blockhash: string): Promise<boolean> {
    return (await this.#rpc.isBlockhashValid(blockhash as Blockhash, { commitment: 'processed' }).send()).value;
  }

  /** The latest blockhash's lastValidBlockHeight: no transaction signed over an older blockhash lives past it. */
  async lastValidBlockHeightBound(): Promise<bigint> {
    return (await this.#rpc.getLatestBlockhash({ commitment: 'processed' }).send()).value.lastValidBlockHeight;
  }

  /** What the network charges for a message (signatures and priority fee), or the default when it cannot say. */
  async feeForMessage(messageBytes: Uint8Array): Promise<bigint> {
    const { value } = await this.#rpc.getFeeForMessage(toBase64(messageBytes) as TransactionMessageBytesBase64, { commitment: COMMITMENT }).send();
    return value ?? DEFAULT_FEE_LAMPORTS;
  }

  /**
   * What a (possibly unsigned) transaction would take out of `owner` if it ran now: the node
   * simulates it (`simulateTransaction`, sigVerify off, its own blockhash) and reports the post
   * state of `owner` and of every SPL token account `owner` holds; each is compared with its state
   * read just before. `moved` maps a token account to its mint and the amount that would leave it
   * (negative: would arrive). `err` is the simulation's failure, if any.
   */
  async simulateOutflows(wireTransaction: Uint8Array, owner: string): Promise<SimulatedOutflows> {
    const ownerAddress = address(owner);
    const held = await this.#rpc
      .getTokenAccountsByOwner(ownerAddress, { programId: TOKEN_PROGRAM_ADDRESS }, { commitment: COMMITMENT, encoding: 'base64' })
      .send();
    const before = new Map(
      held.value.map((entry) => [String(entry.pubkey), Buffer.from(entry.account.data[0], 'base64')] as const).filter(([, data]) => data.length >= 72),
    );
    const lamportsBefore = (await this.#rpc.getBalance(ownerAddress, { commitment: COMMITMENT }).send()).value;
    const addresses = [ownerAddress, ...[...before.keys()].map((key) => address(key))];
    const { value } = await this.#rpc
      .simulateTransaction(toBase64(wireTransaction) as Base64EncodedWireTransaction, {
        encoding: 'base64',
        sigVerify: false,
        replaceRecentBlockhash: false,
        commitment: COMMITMENT,
        accounts: { addresses, encoding: 'base64' },
      })
      .send();
    const after = value.accounts ?? [];
    const moved = new Map<string, { mint: string; amount: bigint }>();
    for (const [index, [key, pre]] of [...before.entries()].entries()) {
      const post = after[index + 1];
      const postData = post ? Buffer.from(post.data[0], 'base64') : undefined;
      const postAmount = postData && postData.length >= 72 ? postData.readBigUInt64LE(TOKEN_AMOUNT_OFFSET) : 0n;
      const mint = getAddressDecoder().decode(pre.subarray(0, 32));
      moved.set(key, { mint, amount: pre.readBigUInt64LE(TOKEN_AMOUNT_OFFSET) - postAmount });
    }
    const lamportsAfter = after[0]?.lamports ?? 0n;
    return { err: value.err ?? null, lamports: lamportsBefore - BigInt(lamportsAfter), moved };
  }

  /**
   * Sends with preflight simulation. A JSON-RPC error answer (failed simulation, bad signature,
   * unhealthy node) means the node took nothing: BroadcastRejectedError. A transport failure
   * (network, timeout, HTTP status) may have delivered it and propagates as it is.
   */
  async broadcast(wireTransaction: Uint8Array): Promise<string> {
    try {
      return await this.#rpc
        .sendTransaction(toBase64(wireTransaction) as Base64EncodedWireTransaction, { encoding: 'base64', preflightCommitment: COMMITMENT, maxRetries: 3n })
        .send();
    } catch (error) {
      const reason = rejectionReason(error);
      if (reason) throw new BroadcastRejectedError(reason);
      throw error;
    }
  }

  /** The finalized block height: a transaction whose lastValidBlockHeight is below it can never be included any more. */
  async finalizedBlockHeight(): Promise<bigint> {
    return this.#rpc.getBlockHeight({ commitment: 'finalized' }).send();
  }

  /** True when the node knows the signature anywhere in its history (`searchTransactionHistory`), at any commitment. */
  async knowsSignature(signature: string): Promise<boolean> {
    const { value } = await this.#rpc.getSignatureStatuses([signature as Signature], { searchTransactionHistory: true }).send();
    return value[0] !== null && value[0] !== undefined;
  }

  /** Polls until the signature is confirmed; `{ err }` when it failed, `null` when the bound passed. */
  async waitForConfirmation(signature: string, timeoutMs: number): Promise<{ err: unknown } | null> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const { value } = await this.#rpc.getSignatureStatuses([signature as Signature], { searchTransactionHistory: false }).send();
      const status = value[0];
      if (status && (status.err || status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized')) {
        return { err: status.err };
      }
      await new Promise((done) => setTimeout(done, 250));
    }
    return null;
  }

  /**
   * What `owner` received of `token` in the confirmed transaction `signature` (base units, from
   * the transaction's pre/post balances: the owner's token account for an SPL token, its lamports
   * for SOL); null when the node does not know the transaction.
   */
  async received(signature: string, owner: string, token: string): Promise<bigint | null> {
    const transaction = await this.#rpc
      .getTransaction(signature as Signature, { commitment: COMMITMENT, encoding: 'json', maxSupportedTransactionVersion: 0 })
      .send();
    if (!transaction?.meta) return null;
    const { meta } = transaction;
    if (token === 'SOL') {
      const index = transaction.transaction.message.accountKeys.indexOf(address(owner));
      if (index < 0) return 0n;
      return BigInt(meta.postBalances[index] ?? 0n) - BigInt(meta.preBalances[index] ?? 0n);
    }
    const mint = this.#mint(token);
    const amountOf = (balances: typeof meta.postTokenBalances) =>
      (balances ?? []).filter((entry) => entry.mint === mint && entry.owner === owner).reduce((sum, entry) => sum + BigInt(entry.uiTokenAmount.amount), 0n);
    return amountOf(meta.postTokenBalances) - amountOf(meta.preTokenBalances);
  }

  #token(token: string) {
    const entry = this.config.tokens[token as 'USDC'];
    if (!entry) throw new Error(`${token} is not configured on SOL`);
    return entry;
  }

  #mint(token: string): Address {
    return address(this.#token(token).mint);
  }
}

const toBase64 = (bytes: ReadonlyUint8Array) => getBase64Decoder().decode(bytes);

/**
 * A short reason when `error` is the node's JSON-RPC error answer, else undefined. Never the
 * server's own message: it may echo the request, and nothing from the RPC may reach a log.
 */
function rejectionReason(error: unknown): string | undefined {
  if (!isSolanaError(error)) return undefined;
  const code = error.context.__code;
  if (code === SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE) {
    // The cause is the transaction error the simulation hit (static text, no request data).
    const cause = error.cause;
    return `simulation failed${isSolanaError(cause) ? `: ${(cause.message.split('\n')[0] ?? '').slice(0, 160)}` : ''}`;
  }
  if (code === SOLANA_ERROR__MALFORMED_JSON_RPC_ERROR || code < 0) return `JSON-RPC error ${code}`;
  return undefined;
}
