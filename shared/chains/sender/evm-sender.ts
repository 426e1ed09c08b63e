import { type Address, type Hex, keccak256 } from 'viem';
import type { Table } from '../../db/client.ts';
import { UnprocessableError } from '../../errors.ts';
import { logger } from '../../logger.ts';
import { BroadcastRejectedError, CallWouldFailError, describeChainError } from '../errors.ts';
import type { EvmCall, EvmChain } from '../evm-chain.ts';
import { evmEffectHeld } from './effect.ts';
import { awaitEvmInclusion, DEFAULT_REPLACEMENT, includedCandidate, type ReplacementPolicy, type Replacer } from './evm-inclusion.ts';
import { insufficient } from './funds.ts';
import type { Broadcast, EvmSigner, ExpectedEffect, SendJournal, SendReceipt, SendTimings } from './ports.ts';
import { type LeaseTiming, withSenderLease } from './sender-lease.ts';
import { timed } from './timings.ts';

/**
 * What moves out of the account besides gas: checked under the lease before anything is signed,
 * and on the receipt afterwards (the send's effect, effect.ts). `to`: the recipient, when the call
 * names one (a transfer); a contract that pulls the tokens (approve + deposit) names none.
 */
export interface Spend {
  readonly token: string;
  readonly amount: bigint;
  readonly to?: string;
}

/** The effect a send of `spends` from `from` must show on its receipt. */
export function expectedEffect(from: string, spends: Spend, extra: Partial<ExpectedEffect> = {}): ExpectedEffect {
  return { token: spends.token, amount: spends.amount.toString(), from, ...(spends.to ? { to: spends.to } : {}), ...extra };
}

/** One call from an EVM account that pays its own gas. */
export interface EvmSend {
  readonly chain: EvmChain;
  readonly from: Address;
  readonly call: EvmCall;
  readonly spends: Spend;
  readonly signer: EvmSigner;
  readonly journal?: SendJournal;
  readonly timings?: SendTimings;
}

export interface EvmSenderOptions {
  readonly table: Table;
  readonly inclusionTimeoutMs: number;
  readonly lease: LeaseTiming;
  readonly now?: () => number;
  /** When and how far a send the chain does not take is replaced (evm-inclusion.ts); DEFAULT_REPLACEMENT when unset. */
  readonly replacement?: ReplacementPolicy;
}

/**
 * Sends a call from an EVM account exactly once: under the account's lease it checks funds and
 * gas, picks the nonce (max of the RPC's pending nonce and the lease's stored next nonce), signs
 * through the signer port, proves the lease still held (renewing it), records the signed
 * transaction in the journal, broadcasts; then waits for the receipt, replacing the transaction
 * (same nonce, higher fees, journaled first) when the chain does not take it (evm-inclusion.ts).
 * With `journal.previous` it resumes: re-broadcasts the latest journaled candidate and waits.
 */
export class EvmSender {
  readonly #options: EvmSenderOptions;

  constructor(options: EvmSenderOptions) {
    this.#options = options;
  }

  async send(request: EvmSend): Promise<SendReceipt> {
    const { chain, journal, timings } = request;
    const { table, inclusionTimeoutMs, lease: timing, now } = this.#options;
    const previous = journal?.previous;
    const wait = (sent: Broadcast) =>
      awaitEvmInclusion(chain, sent, { timeoutMs: inclusionTimeoutMs, ...(timings ? { timings } : {}), ...this.#replacer(request) });
    if (previous) {
      // The latest journaled candidate (a crash may have come between its record and its broadcast).
      await timed(timings, 'broadcast', () => rebroadcastEvm(chain, previous.raw as Hex));
      return { txHash: await wait(previous), resumed: true };
    }
    const effect = expectedEffect(request.from, request.spends);
    const sent = await withSenderLease(table, { chain: chain.code, address: request.from }, { ...timing, now }, async (lease) => {
      const { gas, fees } = await this.#checkFunds(request);
      const nonce = Math.max(await chain.pendingNonce(request.from), lease.state?.next_nonce ?? 0);
      const raw = await timed(timings, 'sign', () =>
        request.signer.signTransaction({
          type: 'eip1559',
          chainId: chain.config.chain_id,
          nonce,
          to: request.call.to,
          value: request.call.value,
          data: request.call.data,
          gas,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        }),
      );
      // Still ours? A holder that stalled past its lease must not broadcast a nonce another holder picked.
      await lease.renew();
      const broadcast: Broadcast = { tx_hash: keccak256(raw), raw, effect };
      await recordThenBroadcast(chain, broadcast, journal, timings);
      return { result: broadcast, nonce };
    });
    return { txHash: await wait(sent), resumed: false };
  }

  /**
   * Replacement needs a journal that can record it before its broadcast (SendJournal.replace):
   * without one the send only waits. No lease: a replacement keeps its nonce.
   */
  #replacer({ from, signer, journal }: EvmSend): { replacer?: Replacer } {
    const { replacement = DEFAULT_REPLACEMENT } = this.#options;
    if (!journal?.replace || replacement.maxReplacements <= 0) return {};
    const replace = journal.replace.bind(journal);
    return { replacer: { from, sign: (transaction) => signer.signTransaction(transaction), replace, policy: replacement } };
  }

  /** Under the lease: earlier sends from this account are already counted in the pending balances. */
  async #checkFunds({ chain, from, call, spends }: EvmSend) {
    const native = await chain.balance(from, chain.config.native);
    if (spends.token !== chain.config.native) {
      const available = await chain.balance(from, spends.token);
      if (available < spends.amount) throw insufficient(`${spends.token} on ${chain.code}`, spends.amount, available, chain.decimals(spends.token));
    } else if (native < spends.amount) {
      throw insufficient(`${spends.token} on ${chain.code}`, spends.amount, native, 18);
    }
    const fees = await chain.fees();
    const gas = await chain.estimateGas(from, call).catch((error: unknown) => {
      if (error instanceof CallWouldFailError)
        throw new UnprocessableError('TRANSACTION_WOULD_FAIL', `The transfer would fail on ${chain.code}: ${error.message}`);
      throw error;
    });
    const needed = gas * fees.maxFeePerGas + call.value;
    if (native < needed) throw insufficient(`${chain.config.native} on ${chain.code} for the amount and gas`, needed, native, 18);
    return { gas, fees };
  }
}

/** Journal first (a crash after it re-sends this very transaction), then the broadcast. */
export async function recordThenBroadcast(
  chain: EvmChain,
  broadcast: Broadcast,
  journal: SendJournal | undefined,
  timings: SendTimings | undefined,
): Promise<Hex> {
  await journal?.record(broadcast);
  return timed(timings, 'broadcast', () => chain.broadcast(broadcast.raw as Hex));
}

/**
 * A recorded send as the chain shows it now, without waiting: `landed` (included with its
 * effect), `failed` (reverted, or included without its effect: final, nothing moved), `unknown`
 * (not included yet, or the RPC did not answer).
 */
export async function evmSendOutcome(chain: EvmChain, broadcast: Broadcast): Promise<'landed' | 'failed' | 'unknown'> {
  const included = await includedCandidate(chain, broadcast);
  if (!included) return 'unknown';
  const { candidate, receipt } = included;
  if (receipt.status !== 'success') return 'failed';
  return !broadcast.effect || evmEffectHeld(chain, { logs: receipt.logs, raw: candidate.raw as Hex }, broadcast.effect) ? 'landed' : 'failed';
}

export async function rebroadcastEvm(chain: EvmChain, raw: Hex): Promise<void> {
  try {
    await chain.broadcast(raw);
  } catch (error) {
    // Already known or already mined: exactly what a resumed send wants. Anything else shows in
    // the receipt wait that follows.
    logger.info('re-broadcast not accepted (already known or mined)', {
      chain: chain.code,
      reason: error instanceof BroadcastRejectedError ? error.message : describeChainError(error),
    });
  }
}
