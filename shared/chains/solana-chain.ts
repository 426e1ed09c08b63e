import {
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import { Connection, PublicKey, SendTransactionError, SystemProgram, type TransactionInstruction, TransactionMessage, VersionedMessage, VersionedTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { SolanaChainConfig } from './chain-config.ts';
import { BroadcastRejectedError, redact } from './errors.ts';

/** An SPL token account's size: the rent-exempt minimum for it is what creating an ATA costs. */
const TOKEN_ACCOUNT_SIZE = 165;

/**
 * Solana through @solana/web3.js v1 (the classic API: Connection, VersionedTransaction), against a
 * real RPC in AWS or the LiteSVM-backed sandbox RPC locally. Confirmation is polled with
 * getSignatureStatuses (no websocket subscription).
 */
export class SolanaChain {
  readonly config: SolanaChainConfig;
  readonly connection: Connection;

  constructor(config: SolanaChainConfig) {
    this.config = config;
    this.connection = new Connection(config.rpc_url, { commitment: 'confirmed', disableRetryOnRateLimit: false });
  }

  mint(token: string): PublicKey | undefined {
    if (token === 'SOL') return undefined;
    const entry = this.config.tokens[token as 'USDC'];
    if (!entry) throw new Error(`${token} is not configured on SOL`);
    return new PublicKey(entry.mint);
  }

  decimals(token: string): number {
    return token === 'SOL' ? 9 : this.config.tokens[token as 'USDC']!.decimals;
  }

  tokens(): string[] {
    return ['SOL', ...Object.keys(this.config.tokens)];
  }

  async balance(owner: string, token: string): Promise<bigint> {
    const mint = this.mint(token);
    const ownerKey = new PublicKey(owner);
    if (!mint) return BigInt(await this.connection.getBalance(ownerKey, 'confirmed'));
    const ata = getAssociatedTokenAddressSync(mint, ownerKey, true);
    const info = await this.connection.getAccountInfo(ata, 'confirmed');
    if (!info) return 0n;
    return BigInt((await this.connection.getTokenAccountBalance(ata, 'confirmed')).value.amount);
  }

  /**
   * A v0 message moving `amount` of `token` from `from` (fee payer and signer) to `to`; for SPL
   * tokens it creates the recipient's associated token account when it does not exist yet.
   * Returns the message and the lamports it costs the sender beyond `amount` (fee, ATA rent).
   */
  async transferMessage(from: string, to: string, token: string, amount: bigint) {
    const fromKey = new PublicKey(from);
    const toKey = new PublicKey(to);
    const mint = this.mint(token);
    const instructions: TransactionInstruction[] = [];
    let rent = 0n;
    if (!mint) {
      instructions.push(SystemProgram.transfer({ fromPubkey: fromKey, toPubkey: toKey, lamports: amount }));
    } else {
      const source = getAssociatedTokenAddressSync(mint, fromKey, true);
      const destination = getAssociatedTokenAddressSync(mint, toKey, true);
      if (!(await this.connection.getAccountInfo(destination, 'confirmed'))) {
        instructions.push(createAssociatedTokenAccountIdempotentInstruction(fromKey, destination, toKey, mint));
        rent = BigInt(await this.connection.getMinimumBalanceForRentExemption(TOKEN_ACCOUNT_SIZE));
      }
      instructions.push(createTransferCheckedInstruction(source, mint, destination, fromKey, amount, this.decimals(token)));
    }
    const { blockhash, lastValidBlockHeight } = await this.connection.getLatestBlockhash('confirmed');
    const message = new TransactionMessage({ payerKey: fromKey, recentBlockhash: blockhash, instructions }).compileToV0Message();
    const fee = BigInt((await this.connection.getFeeForMessage(message, 'confirmed')).value ?? 5000);
    return { messageBytes: message.serialize(), fee, rent, createsTokenAccount: rent > 0n, lastValidBlockHeight: BigInt(lastValidBlockHeight) };
  }

  /** The wire transaction for a serialised message and its (base58) signature by the fee payer. */
  static assemble(messageBytes: Uint8Array, signature: string): Uint8Array {
    return new VersionedTransaction(VersionedMessage.deserialize(messageBytes), [bs58.decode(signature)]).serialize();
  }

  /** BroadcastRejectedError when the node refuses it (preflight failed): nothing was sent. */
  async broadcast(transaction: Uint8Array): Promise<string> {
    try {
      return await this.connection.sendRawTransaction(transaction, { skipPreflight: false, preflightCommitment: 'confirmed', maxRetries: 3 });
    } catch (error) {
      if (error instanceof SendTransactionError) throw new BroadcastRejectedError(redact(error.message.split('\n')[0] ?? 'rejected'));
      throw error;
    }
  }

  /** Polls until the signature is confirmed; `{ err }` when it failed, `null` when the bound passed. */
  async waitForConfirmation(signature: string, timeoutMs: number): Promise<{ err: unknown } | null> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const { value } = await this.connection.getSignatureStatuses([signature], { searchTransactionHistory: false });
      const status = value[0];
      if (status && (status.err || status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized')) {
        return { err: status.err };
      }
      await new Promise((done) => setTimeout(done, 250));
    }
    return null;
  }
}
