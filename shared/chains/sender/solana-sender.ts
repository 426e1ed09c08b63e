import { logger } from '../../logger.ts';
import { InclusionTimeoutError, TransactionNoEffectError, TransactionRevertedError } from '../errors.ts';
import { SolanaChain } from '../solana-chain.ts';
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

export interface SolanaSenderOptions {
  readonly inclusionTimeoutMs: number;
}

/**
 * Sends a Solana transfer exactly once. No lease: a transaction is bound to a recent blockhash,
 * not to an account nonce, and its signature is its identity; the signed transaction is recorded
 * before the broadcast, and a retry re-sends that one (the cluster keeps at most one).
 */
export class SolanaSender {
  readonly #options: SolanaSenderOptions;

  constructor(options: SolanaSenderOptions) {
    this.#options = options;
  }

  async send(request: SolanaSend): Promise<SendReceipt> {
    const { chain, journal, timings } = request;
    let signature: string;
    const resumed = journal?.previous;
    if (resumed) {
      signature = resumed.tx_hash;
      await timed(timings, 'broadcast', () =>
        chain.broadcast(Buffer.from(resumed.raw, 'base64')).catch(() => {
          logger.info('re-broadcast not accepted (already known or landed)', { chain: 'SOL' });
          return signature;
        }),
      );
    } else {
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
      signature = await timed(timings, 'sign', () => request.signer.signMessage(built.messageBytes));
      const wire = SolanaChain.assemble(built.messageBytes, signature);
      await journal?.record({
        tx_hash: signature,
        raw: Buffer.from(wire).toString('base64'),
        effect: { token: request.token, amount: request.amount.toString(), from: request.from, to: request.to },
      });
      await timed(timings, 'broadcast', () => chain.broadcast(wire));
    }
    const status = await timed(timings, 'inclusion', () => chain.waitForConfirmation(signature, this.#options.inclusionTimeoutMs));
    if (!status) throw new InclusionTimeoutError(signature, this.#options.inclusionTimeoutMs, 'confirmed');
    if (status.err) throw new TransactionRevertedError(signature, 'failed on chain; nothing was sent');
    // Decided by the effect: the recipient's balance went up by the amount in this very transaction.
    const effect = resumed ? resumed.effect : { token: request.token, amount: request.amount.toString(), from: request.from, to: request.to };
    if (!(await solanaEffectHeld(chain, signature, effect))) {
      logger.error('transaction confirmed without its effect', { chain: 'SOL', tx_hash: signature, token: effect?.token });
      throw new TransactionNoEffectError(signature);
    }
    return { txHash: signature, resumed: Boolean(resumed) };
  }
}

/** True when the confirmed transaction moved the effect's amount to its recipient (no effect recorded: true). */
async function solanaEffectHeld(chain: SolanaChain, signature: string, effect: ExpectedEffect | undefined): Promise<boolean> {
  if (!effect?.to) return true;
  return (await chain.received(signature, effect.to, effect.token)) === BigInt(effect.amount);
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
