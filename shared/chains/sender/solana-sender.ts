import { logger } from '../../logger.ts';
import { InclusionTimeoutError, TransactionNoEffectError, TransactionRevertedError } from '../errors.ts';
import { SolanaChain } from '../solana-chain.ts';
import { candidatesOf } from './candidates.ts';
import { insufficient } from './funds.ts';
import type { Broadcast, ExpectedEffect, SendJournal, SendReceipt, SendTimings, SolanaSigner } from './ports.ts';
import { timed } from './timings.ts';

/** A transfer of SOL or an SPL token from `from` (fee payer and signer) to `to`. */
export interface SolanaSend {
  readonly chain: SolanaChain;
  readonly from: string;
  readonly to: string;
  readonly token: string;
  readonly amount: bigint;
  /** The transfer's SPL Memo (default: a random UUID): what makes equal transfers distinct transactions. */
  readonly reference?: string;
  readonly signer: SolanaSigner;
  readonly journal?: SendJournal;
  readonly timings?: SendTimings;
}

/**
 * A transaction built by someone else (a bridge quote's `transactionRequest.data`), checked by the
 * caller before `prepare` returns it: signed as given by `from`, its fee payer.
 */
export interface PreparedSolanaTransaction {
  /** The base64 wire transaction: `from`'s signature slot empty, any other signer's already filled. */
  readonly wire: string;
  /** What it moves out of `from`: exactly `amount` of `token` (its effect, checked once it lands). */
  readonly token: string;
  readonly amount: bigint;
}

/** A send of a prepared transaction (see PreparedSolanaTransaction). */
export interface SolanaPreparedSend {
  readonly chain: SolanaChain;
  readonly from: string;
  /**
   * The transaction to sign. Asked once, and again only when the previous one's blockhash expired
   * and the chain proved it absent: a transaction carries its own blockhash, so a new one (a new
   * quote, checked again) is the only way to sign anew.
   */
  prepare(): Promise<PreparedSolanaTransaction>;
  readonly signer: SolanaSigner;
  readonly journal?: SendJournal;
  readonly timings?: SendTimings;
}

export interface SolanaSenderOptions {
  readonly inclusionTimeoutMs: number;
  /** How long past its expiry a send may still be declared not sent; DEFAULT_MAX_EXPIRED_AGE_BLOCKS when unset. */
  readonly maxExpiredAgeBlocks?: number;
}

/**
 * A send whose blockhash expired is declared not sent only while the expiry is this recent (9,000
 * blocks, about an hour at 400 ms): `getSignatureStatuses` with history search answers from the
 * node's ledger, and a node whose ledger no longer reaches back would say "absent" of a landed
 * transaction. Older sends stay unknown (504) rather than risk a second transfer.
 */
export const DEFAULT_MAX_EXPIRED_AGE_BLOCKS = 9_000;
/** How often a wait looks at the block height once the signature is not confirmed. */
const EXPIRY_CHECK_MS = 1_000;

/**
 * Sends a Solana transfer exactly once. No lease: a transaction is bound to a recent blockhash,
 * not to an account nonce, and its signature is its identity; the signed transaction is recorded
 * before the broadcast, and a retry re-sends that one (the cluster keeps at most one).
 *
 * A send that did not land is declared not sent only when the chain proves it (solana.com/docs/
 * advanced/retry): the finalized block height is past its `lastValidBlockHeight` (no block can
 * include it any more) and the node has no status for its signature with history search. Only then
 * is the transfer signed anew with a fresh blockhash, journaled (SendJournal.replace) before its
 * broadcast like the first. Until then the send waits (504 after the bound; a retry resumes).
 */
export class SolanaSender {
  readonly #options: SolanaSenderOptions;

  constructor(options: SolanaSenderOptions) {
    this.#options = options;
  }

  async send(request: SolanaSend): Promise<SendReceipt> {
    return this.#deliver(request, (store) => this.#signAndSend(request, store));
  }

  /**
   * Sends a transaction someone else built (PreparedSolanaTransaction) exactly once, by the same
   * rules: journaled before broadcast, resumed from the journal, signed anew (a new `prepare()`)
   * only once the chain proves the previous one expired and absent.
   */
  async sendPrepared(request: SolanaPreparedSend): Promise<SendReceipt> {
    return this.#deliver(request, (store) => this.#signPrepared(request, store));
  }

  async #deliver(
    request: Pick<SolanaSend, 'chain' | 'journal' | 'timings'>,
    signAndSend: (store: (broadcast: Broadcast) => Promise<void> | undefined) => Promise<Broadcast>,
  ): Promise<SendReceipt> {
    const { chain, journal, timings } = request;
    const { inclusionTimeoutMs } = this.#options;
    const resumed = journal?.previous;
    let current: Broadcast;
    if (resumed) {
      current = resumed;
      await timed(timings, 'broadcast', () =>
        chain.broadcast(Buffer.from(resumed.raw, 'base64')).catch(() => {
          logger.info('re-broadcast not accepted (already known, landed or expired)', { chain: 'SOL' });
          return resumed.tx_hash;
        }),
      );
    } else {
      current = await signAndSend((broadcast) => journal?.record(broadcast));
    }
    const deadline = Date.now() + inclusionTimeoutMs;
    let status: { err: unknown } | null = null;
    // A resumed send may have expired long ago: its first look (one status poll) comes before the first expiry check.
    let slice = resumed ? 1 : EXPIRY_CHECK_MS;
    for (;;) {
      const signature = current.tx_hash;
      const wait = Math.max(1, Math.min(slice, deadline - Date.now()));
      status = await timed(timings, 'inclusion', () => chain.waitForConfirmation(signature, wait));
      slice = EXPIRY_CHECK_MS;
      if (status || Date.now() >= deadline) break;
      if (journal?.replace && (await this.#provenNotSent(chain, current))) {
        const replace = journal.replace.bind(journal);
        const expired = current;
        logger.info('send expired and absent: signing it anew', { chain: 'SOL', tx_hash: expired.tx_hash });
        current = await signAndSend((next) => replace({ ...next, candidates: [...candidatesOf(expired), { tx_hash: next.tx_hash, raw: next.raw }] }, expired));
      }
    }
    const signature = current.tx_hash;
    if (!status) throw new InclusionTimeoutError(signature, inclusionTimeoutMs, 'confirmed');
    if (status.err) throw new TransactionRevertedError(signature, 'failed on chain; nothing was sent');
    // Decided by the effect: the recipient's balance went up by the amount in this very transaction.
    if (!(await solanaEffectHeld(chain, signature, current.effect))) {
      logger.error('transaction confirmed without its effect', { chain: 'SOL', tx_hash: signature, token: current.effect?.token });
      throw new TransactionNoEffectError(signature);
    }
    return { txHash: signature, resumed: Boolean(resumed) };
  }

  /** Funds, message (fresh blockhash), signature, journal (`store`), broadcast. */
  async #signAndSend(request: SolanaSend, store: (broadcast: Broadcast) => Promise<void> | undefined): Promise<Broadcast> {
    const { chain, timings } = request;
    const built = await chain.transferMessage(request.from, request.to, request.token, request.amount, request.reference);
    const lamports = await chain.balance(request.from, 'SOL');
    if (request.token !== 'SOL') {
      const available = await chain.balance(request.from, request.token);
      if (available < request.amount) throw insufficient(`${request.token} on SOL`, request.amount, available, chain.decimals(request.token));
    }
    const neededLamports = built.fee + built.rent + (request.token === 'SOL' ? request.amount : 0n);
    if (lamports < neededLamports) {
      const what = built.createsTokenAccount
        ? 'SOL for the fee and the recipient token account'
        : request.token === 'SOL'
          ? 'SOL for the amount and the fee'
          : 'SOL for the fee';
      throw insufficient(what, neededLamports, lamports, 9);
    }
    const signature = await timed(timings, 'sign', () => request.signer.signMessage(built.messageBytes));
    const wire = SolanaChain.assemble(built.messageBytes, signature);
    const broadcast: Broadcast = {
      tx_hash: signature,
      raw: Buffer.from(wire).toString('base64'),
      effect: { token: request.token, amount: request.amount.toString(), from: request.from, to: request.to },
      last_valid_block_height: built.lastValidBlockHeight.toString(),
    };
    await store(broadcast);
    await timed(timings, 'broadcast', () => chain.broadcast(wire));
    return broadcast;
  }

  /**
   * A prepared transaction: funds (the token amount and the network's fee for the message), our
   * wallet's signature in its fee-payer slot (any other signature kept as given), journal, broadcast.
   * Its blockhash is its own: one no longer valid is asked for again (at most three times). The
   * journaled `last_valid_block_height` is the latest blockhash's, read after the check: the
   * transaction's own blockhash is no newer, so the expiry proof waits at least as long as it must.
   */
  async #signPrepared(request: SolanaPreparedSend, store: (broadcast: Broadcast) => Promise<void> | undefined): Promise<Broadcast> {
    const { chain, timings } = request;
    for (let attempt = 0; ; attempt++) {
      const prepared = await request.prepare();
      const wire = Uint8Array.from(Buffer.from(prepared.wire, 'base64'));
      const message = SolanaChain.messageOf(wire);
      if (!(await chain.isBlockhashValid(message.blockhash))) {
        if (attempt < 2) continue;
        throw new Error('the prepared Solana transaction’s blockhash kept expiring before it could be signed');
      }
      const lastValidBlockHeight = await chain.lastValidBlockHeightBound();
      const [fee, lamports, available] = await Promise.all([
        chain.feeForMessage(message.messageBytes),
        chain.balance(request.from, 'SOL'),
        prepared.token === 'SOL' ? Promise.resolve(0n) : chain.balance(request.from, prepared.token),
      ]);
      if (prepared.token !== 'SOL' && available < prepared.amount)
        throw insufficient(`${prepared.token} on SOL`, prepared.amount, available, chain.decimals(prepared.token));
      const neededLamports = fee + (prepared.token === 'SOL' ? prepared.amount : 0n);
      if (lamports < neededLamports) throw insufficient('SOL for the fee', neededLamports, lamports, 9);
      const signature = await timed(timings, 'sign', () => request.signer.signMessage(message.messageBytes));
      const signed = SolanaChain.addSignature(wire, request.from, signature);
      const broadcast: Broadcast = {
        tx_hash: signature,
        raw: Buffer.from(signed).toString('base64'),
        effect: { token: prepared.token, amount: prepared.amount.toString(), from: request.from },
        last_valid_block_height: lastValidBlockHeight.toString(),
      };
      await store(broadcast);
      await timed(timings, 'broadcast', () => chain.broadcast(signed));
      return broadcast;
    }
  }

  /**
   * The chain's proof that `send` was not and will never be included: its blockhash expired at the
   * finalized height (read first), then no status for its signature in the node's history. Any
   * doubt (no recorded height, an RPC failure, an expiry too old for the node's history) is "no".
   */
  async #provenNotSent(chain: SolanaChain, send: Broadcast): Promise<boolean> {
    if (send.last_valid_block_height === undefined) return false;
    const lastValid = BigInt(send.last_valid_block_height);
    try {
      const height = await chain.finalizedBlockHeight();
      if (height <= lastValid) return false;
      if (height - lastValid > BigInt(this.#options.maxExpiredAgeBlocks ?? DEFAULT_MAX_EXPIRED_AGE_BLOCKS)) {
        logger.warn('send expired too long ago to prove it absent; left unknown', { chain: 'SOL', tx_hash: send.tx_hash });
        return false;
      }
      return !(await chain.knowsSignature(send.tx_hash));
    } catch {
      return false;
    }
  }
}

/**
 * True when the confirmed transaction moved the effect's amount to its recipient, or, for an effect
 * that names none (a prepared transaction: a bridge program takes the tokens), out of its sender
 * (no effect recorded: true).
 */
async function solanaEffectHeld(chain: SolanaChain, signature: string, effect: ExpectedEffect | undefined): Promise<boolean> {
  if (!effect) return true;
  if (effect.to) return (await chain.received(signature, effect.to, effect.token)) === BigInt(effect.amount);
  if (BigInt(effect.amount) === 0n) return true;
  return (await chain.received(signature, effect.from, effect.token)) === -BigInt(effect.amount);
}

/** A recorded Solana send as the cluster shows it now, without waiting (see evmSendOutcome). */
export async function solanaSendOutcome(chain: SolanaChain, broadcast: Broadcast): Promise<'landed' | 'failed' | 'unknown'> {
  try {
    const status = await chain.waitForConfirmation(broadcast.tx_hash, 1);
    if (!status) return 'unknown';
    if (status.err) return 'failed';
    return (await solanaEffectHeld(chain, broadcast.tx_hash, broadcast.effect)) ? 'landed' : 'failed';
  } catch {
    return 'unknown';
  }
}
