import { type Address, type Hex, hashTypedData, keccak256 } from 'viem';
import type { Table } from '../../db/client.ts';
import { type Lease, LeaseLostError } from '../../db/lease.ts';
import { UnprocessableError, UpstreamError } from '../../errors.ts';
import { logger } from '../../logger.ts';
import { executeCalldata, executorTypedData } from '../evm/sponsored-executor.ts';
import type { EvmCall, EvmChain } from '../evm-chain.ts';
import { awaitEvmInclusion, DEFAULT_REPLACEMENT, type ReplacementPolicy, type Replacer } from './evm-inclusion.ts';
import { expectedEffect, rebroadcastEvm, recordThenBroadcast, type Spend } from './evm-sender.ts';
import { insufficient } from './funds.ts';
import type { Broadcast, EvmSigner, SendJournal, SendReceipt, SendTimings, SignedAuthorization, SponsorPool, SponsorRef } from './ports.ts';
import { type LeaseTiming, type NonceState, senderBusy, tryAcquireSenderLease, underSenderLease, withSenderLease } from './sender-lease.ts';
import { FIRST_SPONSORED_SEND_GAS, type SponsorBelowFloor, sponsorBalanceFloor } from './sponsor-pool.ts';
import { timed } from './timings.ts';

/**
 * Sponsored calls must execute within this long after the account signs them. A signed execute
 * that was included without effect (TRANSACTION_NO_EFFECT: its delegation was skipped) stays valid
 * for its executor nonce until then; the next sponsored send of the wallet signs that same nonce,
 * so at most one of the two can ever run, but a third party could submit the old one first. With
 * the wallet's own lease held around the authorisation, our own sends no longer cause that case.
 */
const EXECUTE_DEADLINE_SECONDS = 600n;
/**
 * Time kept back from the account's lease for the work after the sponsor's lease is granted
 * (sponsor signature through the enclave, record, broadcast): the wait for the sponsor's lease
 * ends this long before the account's lease would expire.
 */
export const SPONSOR_WORK_RESERVE_MS = 5_000;
/** The longest pause between two looks at the pool's leases while every sponsor is busy (a release in this process wakes a waiter at once). */
const HAND_OFF_POLL_MS = 250;
/** How long a first sponsored send waits for the wallet's pending transactions before signing its authorisation. */
const AUTHORIZATION_SETTLE_MS = 10_000;

/** One call from an account whose gas a sponsor pays (EIP-7702 through the SponsoredExecutor). */
export interface SponsoredSend {
  readonly chain: EvmChain;
  readonly account: Address;
  readonly call: EvmCall;
  readonly spends: Spend;
  /** The account's signer: the delegation (first time only) and the EIP-712 execute digest. */
  readonly signer: EvmSigner;
  readonly journal?: SendJournal;
  readonly timings?: SendTimings;
}

export interface SponsoredSenderOptions {
  readonly table: Table;
  /** The sponsors: each send takes the first free member from a random slot (sponsor-pool.ts). */
  readonly sponsors: SponsorPool;
  /** A member below its balance floor was skipped (the composition roots count it: SponsorBelowFloor). */
  readonly onSponsorBelowFloor?: (event: SponsorBelowFloor) => void;
  /** [0, 1): where a send starts looking in the pool; Math.random unless a test fixes it. */
  readonly random?: () => number;
  readonly inclusionTimeoutMs: number;
  readonly lease: LeaseTiming;
  readonly now?: () => number;
  /** When and how far a sponsor's transaction the chain does not take is replaced; DEFAULT_REPLACEMENT when unset. */
  readonly replacement?: ReplacementPolicy;
}

/**
 * EIP-7702 path: the account delegates to our SponsoredExecutor (authorisation signed only when
 * not delegated yet) and signs the call batch (EIP-712, with the executor's nonce and a
 * deadline); a sponsor of the pool sends the transaction and pays the gas. Two leases: the wallet's
 * own (the one its plain sends take too) orders its account nonce (the authorisation's) and its
 * executor nonces, the chosen sponsor's orders that sponsor's own nonces. Concurrent sends spread
 * over the pool: each starts at a random slot and takes the first member whose lease is free and
 * whose balance is above the floor (a member below it is skipped and reported); with every member
 * busy it queues, trying one member after another. The journal names the sponsor, so a resume
 * re-broadcasts (and replaces) from that same one. The wait for a sponsor's lease is bounded by
 * what is left of the account's lease, and the account's lease is renewed (proved still ours)
 * before the sponsor signs: two sends can never carry one executor nonce.
 */
export class SponsoredEvmSender {
  readonly #options: SponsoredSenderOptions;
  /** Sends of this process waiting for a sponsor, per chain, oldest first (#handOff). */
  readonly #waiters = new Map<string, ((slot: number) => void)[]>();
  readonly #held = new Map<string, Set<number>>();

  constructor(options: SponsoredSenderOptions) {
    this.#options = options;
  }

  async send(request: SponsoredSend): Promise<SendReceipt> {
    const { chain, account, journal, timings } = request;
    const { table, inclusionTimeoutMs } = this.#options;
    const previous = journal?.previous;
    const wait = async (sent: Broadcast) =>
      awaitEvmInclusion(chain, sent, { timeoutMs: inclusionTimeoutMs, ...(timings ? { timings } : {}), ...(await this.#replacer(sent.sponsor, journal)) });
    if (previous) {
      // The latest journaled candidate (a crash may have come between its record and its broadcast):
      // signed by the sponsor the journal names, and replaced by that one only.
      await timed(timings, 'broadcast', () => rebroadcastEvm(chain, previous.raw as Hex));
      return { txHash: await wait(previous), resumed: true };
    }
    const delegate = chain.config.delegate as Address | undefined;
    if (!delegate) throw new UnprocessableError('GAS_SPONSORSHIP_UNAVAILABLE', `Gas sponsorship is not configured on ${chain.code}`);
    // The wallet's own lease, the very one its plain sends take (EvmSender): an authorisation is
    // signed over the wallet's account nonce, so no other send of the wallet may take that nonce
    // between the signature and the inclusion (issue 19: the chain skips a stale authorisation).
    const accountLeaseName = { chain: chain.code, address: account };

    const sent = await withSenderLease(table, accountLeaseName, this.#timing(), async (accountLease) => {
      const execute = await this.#signExecute(request, delegate, accountLease);
      const renewAccountLease = () =>
        accountLease.renew().catch((error: unknown) => {
          throw error instanceof LeaseLostError ? senderBusy(accountLeaseName.chain, account) : error;
        });
      const waitMs = Math.min(this.#options.lease.waitMs, accountLease.expiresAt - this.#now() - SPONSOR_WORK_RESERVE_MS);
      if (waitMs < 0) throw senderBusy(accountLeaseName.chain, account);
      const fees = await chain.fees();
      const picked = await this.#acquireSponsor(chain, fees.maxFeePerGas, waitMs);
      const handOff = () => this.#handOff(chain.code, picked.sponsor.slot);
      const result = await underSenderLease(picked.lease, { chain: chain.code, address: picked.sponsor.address }, async (sponsorLease) => {
        await renewAccountLease(); // before the sponsor signs anything
        const { raw, nonce } = await this.#signAsSponsor(request, picked, execute, fees, sponsorLease.state?.next_nonce);
        // Both leases still ours after the sponsor's signature: only then record and broadcast.
        await Promise.all([sponsorLease.renew(), renewAccountLease()]);
        const broadcast: Broadcast = {
          tx_hash: keccak256(raw),
          raw,
          effect: expectedEffect(account, request.spends, { executor_nonce: execute.executorNonce.toString() }),
          sponsor: picked.sponsor,
        };
        await recordThenBroadcast(chain, broadcast, journal, timings);
        return { result: broadcast, nonce };
      }).finally(handOff);
      // An included authorisation consumes the wallet's account nonce: the next holder starts after it.
      return { result, ...(execute.authorizationNonce === undefined ? {} : { nonce: execute.authorizationNonce }) };
    });
    return { txHash: await wait(sent), resumed: false };
  }

  /**
   * A pool member's lease: from a random slot, the first member whose lease is free (one
   * conditional update each, no waiting) and whose balance is at least the floor (one below it is
   * skipped and reported). None: queue, trying one member per pause (5 ms doubling to
   * HAND_OFF_POLL_MS, jittered; a sponsor released in this process is handed over at once) until
   * `waitMs`, funded members first; once every member has been seen below the floor, any member
   * will do (the send's own gas is checked under the lease). Members a send of this process holds
   * are not asked for.
   */
  async #acquireSponsor(chain: EvmChain, maxFeePerGas: bigint, waitMs: number) {
    const { sponsors, table } = this.#options;
    const start = Math.floor((this.#options.random ?? Math.random)() * sponsors.size) % sponsors.size;
    const order = Array.from({ length: sponsors.size }, (_, i) => (start + i) % sponsors.size);
    const floor = sponsorBalanceFloor(maxFeePerGas);
    const belowFloor = new Set<number>();
    const held = this.#heldHere(chain.code);
    const take = async (slot: number, lowAllowed: boolean) => {
      if (held.has(slot)) return undefined; // a send of this process holds it: no need to ask the table
      const sponsor: SponsorRef = { slot, address: await sponsors.member(slot).address() };
      if (held.has(slot)) return undefined;
      const lease = await tryAcquireSenderLease(table, { chain: chain.code, address: sponsor.address }, { ...this.#timing(), waitMs: 0 });
      if (!lease) return undefined;
      const balance = await chain.balance(sponsor.address as Address, chain.config.native).catch(async (error: unknown) => {
        await lease.release();
        throw error;
      });
      if (balance >= floor || lowAllowed) {
        held.add(slot);
        return { sponsor, lease, balance };
      }
      await lease.release();
      if (!belowFloor.has(slot)) this.#reportBelowFloor(chain, sponsor, balance, floor);
      belowFloor.add(slot);
      return undefined;
    };
    for (const slot of order) {
      const picked = await take(slot, false);
      if (picked) return picked;
    }
    const deadline = this.#now() + waitMs;
    let handedOver: number | undefined;
    for (let attempt = 0; ; attempt++) {
      const funded = order.filter((slot) => !belowFloor.has(slot));
      const candidates = (funded.length > 0 ? funded : order).filter((slot) => !held.has(slot));
      const slot = handedOver ?? candidates[attempt % Math.max(1, candidates.length)];
      const picked = slot === undefined ? undefined : await take(slot, funded.length === 0);
      if (picked) return picked;
      if (this.#now() >= deadline) throw senderBusy(chain.code, `the ${sponsors.size} gas sponsors`);
      const pause = Math.min(HAND_OFF_POLL_MS, 5 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random());
      handedOver = await this.#awaitHandOff(chain.code, Math.max(0, Math.min(pause, deadline - this.#now() + 1)));
    }
  }

  /**
   * A send of this process released a sponsor: the longest waiter of this process tries that
   * slot at once, instead of finding out by polling the table. Waiters still poll (for sponsors
   * that other processes release), only less often. In Lambda one container runs one send at a
   * time, so this is the local runtime's case (every function in one process) and a no-op there.
   */
  #handOff(chain: string, slot: number): void {
    this.#heldHere(chain).delete(slot);
    this.#waiters.get(chain)?.shift()?.(slot);
  }

  /** The slots whose lease a send of this process holds now, per chain. */
  #heldHere(chain: string): Set<number> {
    let held = this.#held.get(chain);
    if (!held) {
      held = new Set();
      this.#held.set(chain, held);
    }
    return held;
  }

  /** Resolves with a released slot, or undefined after `ms`. */
  #awaitHandOff(chain: string, ms: number): Promise<number | undefined> {
    return new Promise((resolve) => {
      const queue = this.#waiters.get(chain) ?? [];
      this.#waiters.set(chain, queue);
      const timer = setTimeout(() => {
        const at = queue.indexOf(wake);
        if (at >= 0) queue.splice(at, 1);
        resolve(undefined);
      }, ms);
      const wake = (slot: number) => {
        clearTimeout(timer);
        resolve(slot);
      };
      queue.push(wake);
    });
  }

  #reportBelowFloor(chain: EvmChain, sponsor: SponsorRef, balance: bigint, floor: bigint) {
    const event: SponsorBelowFloor = { chain: chain.code, slot: sponsor.slot, address: sponsor.address, balance, floor };
    logger.warn('gas sponsor below its balance floor: skipped (top it up: npm run sponsor:setup)', {
      chain: chain.code,
      sponsor: sponsor.address,
      slot: sponsor.slot,
      balance: balance.toString(),
      floor: floor.toString(),
    });
    this.#options.onSponsorBelowFloor?.(event);
  }

  /**
   * The sponsor's transaction is replaced like an own-gas send (evm-inclusion.ts): the sponsor's
   * nonce, the same execute calldata and authorisation, higher fees, signed by the same sponsor
   * (the journal names it; records from before the pool: the treasury) and journaled first. The
   * account signs nothing again; its executor nonce lets one execute run.
   */
  async #replacer(sponsor: SponsorRef | undefined, journal: SendJournal | undefined): Promise<{ replacer?: Replacer }> {
    const { replacement = DEFAULT_REPLACEMENT, sponsors } = this.#options;
    if (!journal?.replace || replacement.maxReplacements <= 0) return {};
    const replace = journal.replace.bind(journal);
    const payer = sponsor ? sponsors.member(sponsor.slot) : sponsors.treasury;
    const from = (sponsor?.address as Address | undefined) ?? (await payer.address());
    return { replacer: { from, sign: (transaction) => payer.signTransaction(transaction), replace, policy: replacement } };
  }

  /**
   * Under the account's lease: funds, the delegation (first time only) and the signed execute
   * calldata. An authorisation is signed only when the wallet is not delegated to the executor
   * yet, and only once none of the wallet's own transactions is pending: its nonce is then the
   * one the chain will check (the pending count, or the lease's stored next nonce if higher).
   */
  async #signExecute({ chain, account, call, spends, signer, timings }: SponsoredSend, delegate: Address, lease: Lease<NonceState>) {
    const available = await chain.balance(account, spends.token);
    if (available < spends.amount) throw insufficient(`${spends.token} on ${chain.code}`, spends.amount, available, chain.decimals(spends.token));
    const authorizationList: SignedAuthorization[] = [];
    let authorizationNonce: number | undefined;
    if (!(await chain.isDelegatedTo(account, delegate))) {
      authorizationNonce = Math.max(await this.#settledNonce(chain, account, lease), lease.state?.next_nonce ?? 0);
      const nonce = authorizationNonce;
      authorizationList.push(
        await timed(timings, 'sign', () => signer.signAuthorization({ chainId: chain.config.chain_id, contractAddress: delegate, nonce })),
      );
    }
    const executorNonce = await chain.executorNonce(account);
    const deadline = BigInt(Math.floor(this.#now() / 1000)) + EXECUTE_DEADLINE_SECONDS;
    const digest = hashTypedData(executorTypedData({ chainId: chain.config.chain_id, account, calls: [call], nonce: executorNonce, deadline }));
    const signature = await timed(timings, 'sign', () => signer.signDigest(digest));
    return { authorizationList, authorizationNonce, executorNonce, data: executeCalldata([call], executorNonce, deadline, signature) };
  }

  /**
   * The wallet's nonce once its pending transactions are included (polled for at most
   * AUTHORIZATION_SETTLE_MS, within the lease): an authorisation over a nonce that a pending
   * transaction then takes would be skipped. Still pending after that: 409 SENDER_BUSY.
   */
  async #settledNonce(chain: EvmChain, account: Address, lease: Lease<NonceState>): Promise<number> {
    const until = Math.min(this.#now() + AUTHORIZATION_SETTLE_MS, lease.expiresAt - SPONSOR_WORK_RESERVE_MS);
    for (;;) {
      const [pending, included] = await Promise.all([chain.pendingNonce(account), chain.includedNonce(account)]);
      if (pending === included) return included;
      if (this.#now() >= until) throw senderBusy(chain.code, account);
      await new Promise((wake) => setTimeout(wake, 250));
    }
  }

  /** Under the sponsor's lease: gas, the sponsor's funds (read as its lease was taken) and nonce, and the sponsor's signature. */
  async #signAsSponsor(
    { chain, account, timings }: SponsoredSend,
    picked: { readonly sponsor: SponsorRef; readonly balance: bigint },
    execute: { readonly authorizationList: SignedAuthorization[]; readonly data: Hex },
    fees: { readonly maxFeePerGas: bigint; readonly maxPriorityFeePerGas: bigint },
    storedNonce: number | undefined,
  ) {
    const { authorizationList, data } = execute;
    const sponsor = picked.sponsor.address as Address;
    const gas =
      authorizationList.length > 0
        ? FIRST_SPONSORED_SEND_GAS
        : await chain.estimateGas(sponsor, { to: account, value: 0n, data }).catch(() => FIRST_SPONSORED_SEND_GAS);
    if (picked.balance < gas * fees.maxFeePerGas) {
      logger.error('gas sponsor is out of funds', { chain: chain.code, sponsor, slot: picked.sponsor.slot });
      throw new UpstreamError('SPONSOR_UNAVAILABLE', `The gas sponsor cannot pay for gas on ${chain.code} right now`);
    }
    const nonce = Math.max(await chain.pendingNonce(sponsor), storedNonce ?? 0);
    // Type 4 only while the delegation is being set (EIP-7702 forbids an empty authorisation
    // list); once delegated, the account keeps its code and a plain type-2 call reaches it.
    const raw = await timed(timings, 'sign', () =>
      this.#options.sponsors.member(picked.sponsor.slot).signTransaction({
        type: authorizationList.length ? 'eip7702' : 'eip1559',
        chainId: chain.config.chain_id,
        nonce,
        to: account,
        value: 0n,
        data,
        gas,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        ...(authorizationList.length ? { authorizationList } : {}),
      }),
    );
    return { raw, nonce };
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  #timing() {
    return { ...this.#options.lease, now: this.#options.now };
  }
}
