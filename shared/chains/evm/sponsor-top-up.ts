import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { type Address, type Hex, parseTransaction } from 'viem';
import type { Table } from '../../db/client.ts';
import { getItem, isConditionalCheckFailed } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import type { EvmChain } from '../evm-chain.ts';
import { EvmSender } from '../sender/evm-sender.ts';
import type { Broadcast, SendJournal, SponsorPool } from '../sender/ports.ts';
import { DEFAULT_LEASE_TIMING } from '../sender/sender-lease.ts';
import { gasPayerSigner, sponsorBalanceTarget } from '../sender/sponsor-pool.ts';
import { discardBroadcastRecord } from './broadcast-record.ts';

/** What one member's top-up came to (native base units). */
export interface TopUpResult {
  readonly slot: number;
  readonly address: Address;
  readonly before: bigint;
  readonly after: bigint;
  /** The transfer sent (or finished) for it, if any. */
  readonly txHash?: string;
  /** It needed a top-up the treasury could not pay: this much more in the treasury would do. */
  readonly short?: bigint;
}

const INCLUSION_TIMEOUT_MS = 120_000;
/** The gas kept back in the treasury for each transfer of a run: 21,000 at twice the current fee cap. */
const TRANSFER_GAS = 21_000n;

/**
 * Brings every pool member under `target` (default: SPONSOR_TARGET_SENDS first-time sponsored
 * sends at the current fee cap) back up to it, from the treasury. Each top-up is a plain native
 * transfer sent exactly once: the EVM sender (the treasury's own lease and nonce) records it under
 * `SETUP#TOPUP#<chain>#<member>` before its broadcast, so a run stopped mid-way re-broadcasts that
 * very transfer and waits for it instead of paying twice (one whose nonce the treasury has since
 * used elsewhere can never be mined: dropped, the balance decides afresh). The record is deleted
 * once the transfer is included. Members at once: the treasury's sender lease orders its nonces.
 */
export async function topUpSponsors(input: {
  readonly table: Table;
  readonly chain: EvmChain;
  readonly pool: SponsorPool;
  readonly target?: bigint;
}): Promise<TopUpResult[]> {
  const { table, chain, pool } = input;
  const native = chain.config.native;
  const sender = new EvmSender({ table, inclusionTimeoutMs: INCLUSION_TIMEOUT_MS, lease: { ...DEFAULT_LEASE_TIMING, waitMs: 60_000 } });
  const treasury = await pool.treasury.address();
  const signer = gasPayerSigner(pool.treasury);
  const target = input.target ?? sponsorBalanceTarget((await chain.fees()).maxFeePerGas);
  // All members at once: the treasury's lease orders their nonces, their inclusions overlap.
  return Promise.all(
    Array.from({ length: pool.size }, async (_, slot): Promise<TopUpResult> => {
      const address = await pool.member(slot).address();
      const journal = new TopUpJournal(table, chain.code, address);
      let recorded = await journal.load();
      if (recorded && (await isStale(chain, treasury, recorded))) {
        await journal.discard(recorded);
        recorded = undefined;
      }
      const before = await chain.balance(address, native);
      let txHash: string | undefined;
      if (recorded) {
        // A run stopped after recording it: that very transfer, never a second one.
        const resumed = journal.forSend(recorded);
        txHash = (await sender.send({ chain, from: treasury, call: noCall(address), spends: { token: native, amount: 0n }, signer, journal: resumed })).txHash;
        await journal.discard(recorded);
      } else if (before < target) {
        const amount = target - before;
        const available = await chain.balance(treasury, native);
        const reserve = BigInt(pool.size) * 2n * TRANSFER_GAS * (await chain.fees()).maxFeePerGas;
        if (available < amount + reserve) return { slot, address, before, after: before, short: amount + reserve - available };
        const call = { to: address, value: amount, data: '0x' as Hex };
        const journaled = journal.forSend(undefined);
        txHash = (await sender.send({ chain, from: treasury, call, spends: { token: native, amount, to: address }, signer, journal: journaled })).txHash;
        await journal.discard(await journal.load());
      }
      return { slot, address, before, after: txHash ? await chain.balance(address, native) : before, ...(txHash ? { txHash } : {}) };
    }),
  );
}

const noCall = (to: Address) => ({ to, value: 0n, data: '0x' as Hex });

async function isStale(chain: EvmChain, from: Address, recorded: Broadcast): Promise<boolean> {
  if (await chain.receipt(recorded.tx_hash as Hex).catch(() => null)) return false;
  const { nonce } = parseTransaction(recorded.raw as Hex);
  return nonce !== undefined && (await chain.includedNonce(from)) > nonce;
}

class TopUpRecordedElsewhere extends Error {}

/** One member's top-up record: written only if absent (two runs at once: the second broadcasts nothing and fails). */
class TopUpJournal {
  readonly #table: Table;
  readonly #key: { pk: string; sk: string };

  constructor(table: Table, chain: string, member: Address) {
    this.#table = table;
    this.#key = keys.sponsorTopUp(chain, member);
  }

  async load(): Promise<Broadcast | undefined> {
    const item = await getItem(this.#table, this.#key);
    return item ? { tx_hash: item.tx_hash as string, raw: item.raw as string } : undefined;
  }

  forSend(previous: Broadcast | undefined): SendJournal {
    const put = async (broadcast: Broadcast, condition: { expression: string; values?: Record<string, unknown> }) => {
      try {
        await this.#table.doc.send(
          new PutCommand({
            TableName: this.#table.name,
            Item: { ...this.#key, tx_hash: broadcast.tx_hash, raw: broadcast.raw, recorded_at: new Date().toISOString() },
            ConditionExpression: condition.expression,
            ...(condition.values ? { ExpressionAttributeValues: condition.values } : {}),
          }),
        );
      } catch (error) {
        if (isConditionalCheckFailed(error)) throw new TopUpRecordedElsewhere('another run recorded a top-up of this sponsor first; run the command again');
        throw error;
      }
    };
    return {
      ...(previous ? { previous } : {}),
      record: (broadcast) => put(broadcast, { expression: 'attribute_not_exists(pk)' }),
      replace: (next, current) => put(next, { expression: 'tx_hash = :current', values: { ':current': current.tx_hash } }),
    };
  }

  discard(recorded: Broadcast | undefined): Promise<void> {
    return discardBroadcastRecord(this.#table, this.#key, recorded);
  }
}
