import { type Address, type Hex, keccak256, parseTransaction } from 'viem';
import { logger } from '../../logger.ts';
import { describeChainError, InclusionTimeoutError, TransactionNoEffectError, TransactionRevertedError } from '../errors.ts';
import type { EvmChain } from '../evm-chain.ts';
import { candidatesOf } from './candidates.ts';
import { evmEffectHeld } from './effect.ts';
import type { Broadcast, EvmTransactionRequest, SendJournal, SendTimings } from './ports.ts';
import { timed } from './timings.ts';

/**
 * Waiting for an EVM send, and replacing it when the chain does not take it (issue 23 part 4).
 *
 * A send not mined within `afterMs` (the base fee rose past its fee cap, or a node dropped it) is
 * replaced: same nonce, same call and gas, fees raised by at least the minimum bump nodes accept
 * (geth's txpool: +10 % on both the fee cap and the tip, `--txpool.pricebump`; anvil: strictly
 * higher) and at least the chain's current estimate, at most `maxReplacements` times and never
 * above `maxFeeMultiplier` × the first candidate's fee cap. Every replacement is signed through
 * the same signer (the enclave's policy gate sees it) and journaled, with every earlier candidate,
 * BEFORE it is broadcast. All candidates share one nonce, so at most one of them is ever mined;
 * the send is done when any one is, and that one is reported (and settled in the journal).
 * The research behind the numbers: /work/shared/research/rails-and-events.md, D.
 */
export interface ReplacementPolicy {
  /** How long a candidate may stay unmined before it is replaced (measured within one wait). */
  readonly afterMs: number;
  /** Replacements per send, over all its waits (the journal keeps the count as its candidates). */
  readonly maxReplacements: number;
  /** Ceiling on a replacement's maxFeePerGas, as a multiple of the first candidate's. */
  readonly maxFeeMultiplier: bigint;
}

/**
 * Defaults: 12 s is one Ethereum slot (dozens of blocks on Arbitrum, Polygon, Ink), so an
 * ordinary send is never replaced; 3 replacements of at least +10 % each, the fee cap at most 10×
 * the first one's. With WITHDRAW_INCLUSION_TIMEOUT_MS at 20 s one request replaces at most once; a
 * retry with the same Idempotency-Key resumes the wait and may replace again.
 */
export const DEFAULT_REPLACEMENT: ReplacementPolicy = { afterMs: 12_000, maxReplacements: 3, maxFeeMultiplier: 10n };

/** geth's default `--txpool.pricebump` (%): a replacement must raise both fee cap and tip by this much. */
export const MIN_FEE_BUMP_PERCENT = 10n;

const POLL_MS = 250;

/** The smallest value a replacement may carry for a fee that was `previous`: +10 % rounded up, and strictly higher. */
export function bumpedFee(previous: bigint): bigint {
  const threshold = (previous * (100n + MIN_FEE_BUMP_PERCENT) + 99n) / 100n;
  return threshold > previous ? threshold : previous + 1n;
}

/**
 * The fees of the next replacement: each at least bumped from the latest candidate's and at least
 * the current estimate, the fee cap held under `ceiling`. Undefined when the ceiling leaves no
 * room for the minimum bump (then the send waits on what it has).
 */
export function replacementFees(
  latest: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  estimate: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined,
  ceiling: bigint,
): { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined {
  const max = (a: bigint, b: bigint) => (a > b ? a : b);
  const min = (a: bigint, b: bigint) => (a < b ? a : b);
  const minTip = bumpedFee(latest.maxPriorityFeePerGas);
  const minFee = bumpedFee(latest.maxFeePerGas);
  const tip = max(minTip, estimate?.maxPriorityFeePerGas ?? 0n);
  const fee = min(max(max(minFee, estimate?.maxFeePerGas ?? 0n), tip), ceiling);
  const cappedTip = min(tip, fee);
  if (fee < minFee || cappedTip < minTip) return undefined;
  return { maxFeePerGas: fee, maxPriorityFeePerGas: cappedTip };
}

/** The candidate that is included, with its receipt, if any (no waiting; an RPC failure counts as "none yet"). */
export async function includedCandidate(chain: EvmChain, send: Broadcast) {
  for (const candidate of [...candidatesOf(send)].reverse()) {
    const receipt = await chain.receipt(candidate.tx_hash as Hex).catch(() => null);
    if (receipt) return { candidate, receipt };
  }
  return undefined;
}

/** What a wait may replace with: the account, its signer, and the journal's way to record a replacement. */
export interface Replacer {
  readonly from: Address;
  readonly sign: (transaction: EvmTransactionRequest) => Promise<Hex>;
  /** The journal's `replace` (SendJournal): durable before the broadcast. */
  readonly replace: NonNullable<SendJournal['replace']>;
  readonly policy: ReplacementPolicy;
}

/**
 * Waits up to `timeoutMs` for any candidate of `send` to be included, replacing the latest one as
 * the policy says when a replacer is given; then decides by status and effect (effect.ts) on the
 * included candidate's own transaction. Returns the included candidate's hash; the journal then
 * holds that candidate as the send's transaction.
 */
export async function awaitEvmInclusion(
  chain: EvmChain,
  send: Broadcast,
  options: { timeoutMs: number; timings?: SendTimings; replacer?: Replacer; now?: () => number },
): Promise<Hex> {
  const now = options.now ?? Date.now;
  const started = now();
  const deadline = started + options.timeoutMs;
  let current = send;
  let lastSentAt = started;
  for (;;) {
    const included = await timed(options.timings, 'inclusion', () => includedCandidate(chain, current));
    if (included) return settle(chain, current, included, options.replacer?.replace);
    if (now() >= deadline) break;
    if (options.replacer && now() - lastSentAt >= options.replacer.policy.afterMs) {
      const next = await replace(chain, current, options.replacer, options.timings);
      if (next) current = next;
      lastSentAt = now();
    }
    await timed(options.timings, 'inclusion', () => sleep(Math.max(0, Math.min(POLL_MS, deadline - now()))));
  }
  throw new InclusionTimeoutError(current.tx_hash, options.timeoutMs);
}

async function settle(
  chain: EvmChain,
  send: Broadcast,
  included: NonNullable<Awaited<ReturnType<typeof includedCandidate>>>,
  replaceInJournal: Replacer['replace'] | undefined,
): Promise<Hex> {
  const { candidate, receipt } = included;
  const hash = candidate.tx_hash as Hex;
  if (receipt.status !== 'success') throw new TransactionRevertedError(hash);
  if (send.effect && !evmEffectHeld(chain, { logs: receipt.logs, raw: candidate.raw as Hex }, send.effect)) {
    logger.error('transaction included without its effect', { chain: chain.code, tx_hash: hash, token: send.effect.token });
    throw new TransactionNoEffectError(hash);
  }
  if (replaceInJournal && candidate.tx_hash !== send.tx_hash) {
    // An earlier candidate was mined: the journal names it, so every later reader reports it.
    await replaceInJournal({ ...send, tx_hash: candidate.tx_hash, raw: candidate.raw }, send);
  }
  return hash;
}

/**
 * Signs, journals, then broadcasts the next candidate; undefined when the policy allows none (cap,
 * ceiling, the nonce already taken) or the signer refused. A broadcast the node refuses (fee still
 * under the base fee, nonce too low because a candidate was just mined) is not an error: the wait
 * goes on over every candidate. A journal that refuses (taken over) stops the send here.
 */
async function replace(chain: EvmChain, current: Broadcast, replacer: Replacer, timings: SendTimings | undefined): Promise<Broadcast | undefined> {
  const candidates = candidatesOf(current);
  if (candidates.length > replacer.policy.maxReplacements) return undefined;
  const latest = parseTransaction(current.raw as Hex);
  const first = parseTransaction((candidates[0] ?? current).raw as Hex);
  if (latest.nonce === undefined || latest.to == null || latest.gas === undefined || latest.maxFeePerGas === undefined) return undefined;
  if (latest.maxPriorityFeePerGas === undefined || first.maxFeePerGas === undefined) return undefined;
  const nonce = latest.nonce;
  const taken = await chain.includedNonce(replacer.from).then(
    (included) => included > nonce,
    () => true, // cannot tell: do not sign on a guess
  );
  if (taken) return undefined;
  const estimate = await chain.fees().catch(() => undefined);
  const fees = replacementFees(
    { maxFeePerGas: latest.maxFeePerGas, maxPriorityFeePerGas: latest.maxPriorityFeePerGas },
    estimate,
    first.maxFeePerGas * replacer.policy.maxFeeMultiplier,
  );
  if (!fees) {
    logger.warn('send not mined, replacement would pass the fee ceiling', { chain: chain.code, tx_hash: current.tx_hash });
    return undefined;
  }
  const request: EvmTransactionRequest = {
    type: latest.authorizationList?.length ? 'eip7702' : 'eip1559',
    chainId: chain.config.chain_id,
    nonce,
    to: latest.to,
    value: latest.value ?? 0n,
    data: latest.data ?? '0x',
    gas: latest.gas,
    ...fees,
    ...(latest.authorizationList?.length ? { authorizationList: latest.authorizationList.map((a) => ({ ...a, yParity: a.yParity ?? 0 })) } : {}),
  };
  let raw: Hex;
  try {
    raw = await timed(timings, 'sign', () => replacer.sign(request));
  } catch (error) {
    logger.warn('replacement not signed; waiting on the candidates sent', { chain: chain.code, tx_hash: current.tx_hash, reason: describeChainError(error) });
    return undefined;
  }
  const next: Broadcast = {
    ...current,
    tx_hash: keccak256(raw),
    raw,
    candidates: [...candidates, { tx_hash: keccak256(raw), raw }],
  };
  await replacer.replace(next, current);
  logger.info('send not mined in time: replaced with higher fees', {
    chain: chain.code,
    nonce,
    replaces: current.tx_hash,
    tx_hash: next.tx_hash,
    max_fee_per_gas: fees.maxFeePerGas.toString(),
  });
  await timed(timings, 'broadcast', () => chain.broadcast(raw)).catch((error: unknown) => {
    logger.info('replacement not accepted; waiting on every candidate', { chain: chain.code, tx_hash: next.tx_hash, reason: describeChainError(error) });
  });
  return next;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
