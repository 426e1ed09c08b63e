import type { Table } from '../../db/client.ts';
import { EvmSender } from './evm-sender.ts';
import type { GasPayer } from './ports.ts';
import { DEFAULT_LEASE_TIMING, type LeaseTiming } from './sender-lease.ts';
import { SolanaSender } from './solana-sender.ts';
import { SponsoredEvmSender } from './sponsored-sender.ts';

export { classifySendFailure, type SendFailure } from './outcome.ts';

/**
 * The exactly-once senders, one per chain kind, built once in a composition root. `/withdraw`
 * uses them today; venue deposits and transfer steps are meant to call the same ones:
 *
 *   senders.evm.send({ chain, from, call, spends, signer, journal?, timings? })
 *   senders.sponsored.send({ chain, account, call, spends, signer, journal?, timings? })
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
  sponsor: GasPayer;
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
    sponsored: new SponsoredEvmSender({ table: options.table, sponsor: options.sponsor, inclusionTimeoutMs: options.inclusionTimeoutMs, lease, now }),
    solana: new SolanaSender({ inclusionTimeoutMs: options.inclusionTimeoutMs }),
  };
}
