import type { Table } from '../../db/client.ts';
import { EvmSender } from './evm-sender.ts';
import type { SponsorPool } from './ports.ts';
import { DEFAULT_LEASE_TIMING, type LeaseTiming } from './sender-lease.ts';
import { SolanaSender } from './solana-sender.ts';
import type { SponsorBelowFloor } from './sponsor-pool.ts';
import { SponsoredEvmSender } from './sponsored-sender.ts';

export { classifySendFailure, type SendFailure } from './outcome.ts';

/**
 * The exactly-once senders, one per chain kind, built once in a composition root. `/withdraw`
 * uses them today; venue deposits and transfer steps are meant to call the same ones:
 *
 *   senders.evm.send({ chain, from, call, spends, signer, journal?, timings? })
 *   senders.sponsored.send({ chain, account, call, spends, signer, journal?, timings? })   (gas from a pool of sponsors: sponsor-pool.ts)
 *   senders.solana.send({ chain, from, to, token, amount, signer, journal?, timings? })
 *     -> { txHash, resumed }
 *
 * Each one: funds checked under the sender's lease (EVM: one conditional UpdateItem per lease
 * step, next nonce stored in the lease), sign through the signer port (enclave-signers.ts),
 * lease proved still held, `journal.record` before the broadcast, broadcast, wait for inclusion.
 * With `journal.previous` (an earlier attempt recorded a transaction) it re-broadcasts that one
 * and waits: never a second transaction. A send the chain does not take is replaced (EVM: same
 * nonce, higher fees, evm-inclusion.ts) or signed anew (Solana: only once its blockhash expired
 * and the node has no status for it), each through `journal.replace` before its broadcast. Failures are typed: 422 INSUFFICIENT_FUNDS /
 * TRANSACTION_WOULD_FAIL / TRANSACTION_REVERTED, 409 SENDER_BUSY, 502 BROADCAST_REJECTED /
 * CHAIN_UNAVAILABLE / SPONSOR_UNAVAILABLE, 504 INCLUSION_TIMEOUT; classifySendFailure tells the
 * caller whether anything may have left (outcome.ts).
 */
export interface Senders {
  readonly evm: EvmSender;
  readonly sponsored: SponsoredEvmSender;
  readonly solana: SolanaSender;
}

export function createSenders(options: {
  table: Table;
  /** The gas sponsors of sponsored sends (sponsor-pool.ts; the enclave's in the composition roots). */
  sponsors: SponsorPool;
  /** A sponsor below its balance floor was skipped (the roots count it: SponsorBelowFloor metric). */
  onSponsorBelowFloor?: (event: SponsorBelowFloor) => void;
  inclusionTimeoutMs: number;
  lease?: LeaseTiming;
  /** Epoch ms, or a Date source as the composition roots have it. */
  now?: () => Date | number;
}): Senders {
  const lease = options.lease ?? DEFAULT_LEASE_TIMING;
  const clock = options.now;
  const now = clock ? () => Number(clock()) : undefined;
  return {
    evm: new EvmSender({ table: options.table, inclusionTimeoutMs: options.inclusionTimeoutMs, lease, now }),
    sponsored: new SponsoredEvmSender({
      table: options.table,
      sponsors: options.sponsors,
      ...(options.onSponsorBelowFloor ? { onSponsorBelowFloor: options.onSponsorBelowFloor } : {}),
      inclusionTimeoutMs: options.inclusionTimeoutMs,
      lease,
      now,
    }),
    solana: new SolanaSender({ inclusionTimeoutMs: options.inclusionTimeoutMs }),
  };
}
