import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, createPublicClient, erc20Abi, getAddress, type Hex, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import type { EvmChainCode } from '../../shared/chains/chain-config.ts';
import { topUpSponsors } from '../../shared/chains/evm/sponsor-top-up.ts';
import { EvmChain } from '../../shared/chains/evm-chain.ts';
import type { Broadcast, GasPayer, SendJournal, SponsorPool } from '../../shared/chains/sender/ports.ts';
import { type SponsorBelowFloor, sponsorBalanceFloor } from '../../shared/chains/sender/sponsor-pool.ts';
import { SponsoredEvmSender } from '../../shared/chains/sender/sponsored-sender.ts';
import { getItem, type Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';
import { localEvmSigner } from './support/evm-signer.ts';

/**
 * The pool of gas sponsors (issue 25) on real engines: anvil chains, dynalite leases. Sponsors
 * and users sign with local keys here (the enclave adapter is exercised through the API tests);
 * each sponsor signature takes 60 ms, about an enclave round trip, so concurrent sends overlap as
 * they do behind the enclave.
 */
const USDC = 10n ** 6n;
const ETHER = 10n ** 18n;
const SPONSOR_SIGNATURE_MS = 60;

let dataDir: string;
let evm: EvmSandbox;
let table: Table;
let stopTable: () => Promise<void>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sponsor-pool-'));
  [evm, { table, stop: stopTable }] = await Promise.all([startEvmSandbox({ dataDir }), startDynaliteTable('sponsor-pool-test')]);
}, 120_000);

afterAll(async () => {
  await Promise.all([evm?.stop(), stopTable?.()]);
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

function slowPayer(key: ReturnType<typeof localEvmSigner>): GasPayer {
  return {
    address: async () => key.address,
    signTransaction: async (transaction) => {
      await new Promise((done) => setTimeout(done, SPONSOR_SIGNATURE_MS));
      return key.signTransaction(transaction);
    },
  };
}

/** A pool of `size` local-key sponsors and a treasury. */
function localPool(size: number): SponsorPool & { keys: ReturnType<typeof localEvmSigner>[]; treasuryKey: ReturnType<typeof localEvmSigner> } {
  const members = Array.from({ length: size }, () => localEvmSigner(generatePrivateKey()));
  const treasuryKey = localEvmSigner(generatePrivateKey());
  return {
    size,
    keys: members,
    treasuryKey,
    member: (slot) => slowPayer(members[slot] as ReturnType<typeof localEvmSigner>),
    treasury: slowPayer(treasuryKey),
  };
}

function memoryJournal(previous?: Broadcast): SendJournal & { recorded: Broadcast[] } {
  const recorded: Broadcast[] = [];
  return { ...(previous ? { previous } : {}), recorded, record: async (broadcast) => void recorded.push(broadcast) };
}

const chain = (code: EvmChainCode) => new EvmChain(code, evm.chains[code]);
const client = (code: EvmChainCode) => createPublicClient({ transport: http(evm.chains[code].rpc_url) });
const usdc = (code: EvmChainCode, owner: Address) =>
  client(code).readContract({ address: evm.chains[code].tokens.USDC?.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
const lease = { leaseMs: 15_000, waitMs: 30_000 };

describe('a pool of gas sponsors', { timeout: 60_000 }, () => {
  it('12 users at once on 4 sponsors: sends from several sponsors, each sponsor’s nonces gap-free, every balance to the unit', async () => {
    const arb = chain('ARB');
    const pool = localPool(4);
    await Promise.all(pool.keys.map((key) => evm.faucet('ARB', key.address, 'ETH', ETHER)));
    const users = Array.from({ length: 12 }, () => localEvmSigner(generatePrivateKey()));
    const amounts = users.map((_, i) => BigInt(i + 1) * USDC + 7n); // distinct, with odd units
    await Promise.all(users.map((user) => evm.faucet('ARB', user.address, 'USDC', 20n * USDC)));
    const recipients = users.map(() => privateKeyToAccount(generatePrivateKey()).address);
    const sponsorBefore = await Promise.all(pool.keys.map((key) => client('ARB').getBalance({ address: key.address })));
    const sender = new SponsoredEvmSender({ table, sponsors: pool, inclusionTimeoutMs: 20_000, lease });

    const journals = users.map(() => memoryJournal());
    const sent = await Promise.all(
      users.map((user, i) =>
        sender.send({
          chain: arb,
          account: user.address,
          call: arb.transferCall('USDC', recipients[i] as Address, amounts[i] as bigint),
          spends: { token: 'USDC', amount: amounts[i] as bigint, to: recipients[i] as Address },
          signer: user,
          journal: journals[i] as SendJournal,
        }),
      ),
    );

    // Every journal names the sponsor that signed its transaction, before the broadcast.
    const bySponsor = new Map<string, { hash: Hex; nonce: number }[]>();
    for (const [i, journal] of journals.entries()) {
      expect(journal.recorded).toHaveLength(1);
      const recorded = journal.recorded[0] as Broadcast;
      const transaction = await client('ARB').getTransaction({ hash: sent[i]?.txHash as Hex });
      const from = getAddress(transaction.from);
      expect(recorded.sponsor?.address).toBe(from);
      expect(pool.keys[recorded.sponsor?.slot ?? -1]?.address).toBe(from);
      const list = bySponsor.get(from) ?? [];
      list.push({ hash: transaction.hash, nonce: transaction.nonce });
      bySponsor.set(from, list);
    }
    expect(bySponsor.size).toBeGreaterThanOrEqual(3);

    // Nonces per sponsor: 0 … n-1, no gap, no repeat, and the chain's count agrees.
    for (const key of pool.keys) {
      const nonces = (bySponsor.get(key.address) ?? []).map((t) => t.nonce).sort((a, b) => a - b);
      expect(nonces).toEqual(nonces.map((_, i) => i));
      expect(await client('ARB').getTransactionCount({ address: key.address })).toBe(nonces.length);
    }

    // Balances to the unit: each recipient got its amount, each user kept the rest and paid no gas,
    // each sponsor paid exactly the gas of its own transactions.
    for (const [i, user] of users.entries()) {
      expect(await usdc('ARB', recipients[i] as Address)).toBe(amounts[i]);
      expect(await usdc('ARB', user.address)).toBe(20n * USDC - (amounts[i] as bigint));
      expect(await client('ARB').getBalance({ address: user.address })).toBe(0n);
    }
    for (const [slot, key] of pool.keys.entries()) {
      let gas = 0n;
      for (const { hash } of bySponsor.get(key.address) ?? []) {
        const receipt = await client('ARB').getTransactionReceipt({ hash });
        gas += receipt.gasUsed * receipt.effectiveGasPrice;
      }
      expect(await client('ARB').getBalance({ address: key.address })).toBe((sponsorBefore[slot] as bigint) - gas);
    }
  });

  it('a sponsor below the balance floor is skipped and reported; with every sponsor below it, one that can pay still sends', async () => {
    const ink = chain('INK');
    const pool = localPool(3);
    const floor = sponsorBalanceFloor((await ink.fees()).maxFeePerGas);
    await evm.faucet('INK', pool.keys[0]?.address as Address, 'ETH', floor / 4n); // enough for a few sends, under the floor
    await Promise.all(pool.keys.slice(1).map((key) => evm.faucet('INK', key.address, 'ETH', ETHER)));
    const reported: SponsorBelowFloor[] = [];
    const sender = (sponsors: SponsorPool) =>
      new SponsoredEvmSender({ table, sponsors, inclusionTimeoutMs: 20_000, lease, random: () => 0, onSponsorBelowFloor: (event) => reported.push(event) });
    const user = localEvmSigner(generatePrivateKey());
    await evm.faucet('INK', user.address, 'USDC', 10n * USDC);
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const send = (sponsors: SponsorPool, amount: bigint) =>
      sender(sponsors).send({
        chain: ink,
        account: user.address,
        call: ink.transferCall('USDC', to, amount),
        spends: { token: 'USDC', amount, to },
        signer: user,
        journal: memoryJournal(),
      });

    // Starting at slot 0 (random 0): slot 0 is under the floor, so slot 1 sends.
    const first = await send(pool, 2n * USDC);
    expect(getAddress((await client('INK').getTransaction({ hash: first.txHash as Hex })).from)).toBe(pool.keys[1]?.address);
    // The floor follows the fee cap of the moment (20 first sends' gas), so it is checked, not fixed.
    expect(reported).toEqual([{ chain: 'INK', slot: 0, address: pool.keys[0]?.address, balance: floor / 4n, floor: expect.any(BigInt) }]);
    expect(reported[0]?.floor).toBeGreaterThan(floor / 4n);
    expect(await client('INK').getTransactionCount({ address: pool.keys[0]?.address as Address })).toBe(0);

    // A pool of only that sponsor: below the floor but able to pay this send, it sends (and is reported again).
    const lowOnly: SponsorPool = { size: 1, member: () => pool.member(0), treasury: pool.treasury };
    const second = await send(lowOnly, 3n * USDC);
    expect(getAddress((await client('INK').getTransaction({ hash: second.txHash as Hex })).from)).toBe(pool.keys[0]?.address);
    expect(reported).toHaveLength(2);
    expect(await usdc('INK', to)).toBe(5n * USDC);
    expect(await usdc('INK', user.address)).toBe(5n * USDC);
  });

  it('a crash after the record: the resume re-broadcasts the same transaction from the same sponsor, whatever slot it would start at now', async () => {
    const pol = chain('POL');
    const pool = localPool(3);
    await Promise.all(pool.keys.map((key) => evm.faucet('POL', key.address, 'POL', ETHER)));
    const user = localEvmSigner(generatePrivateKey());
    await evm.faucet('POL', user.address, 'USDC', 10n * USDC);
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const request = {
      chain: pol,
      account: user.address,
      call: pol.transferCall('USDC', to, 4n * USDC),
      spends: { token: 'USDC', amount: 4n * USDC, to },
      signer: user,
    };
    // The process dies right after the journal write, before the broadcast.
    const recorded: Broadcast[] = [];
    const crashing: SendJournal = {
      record: async (broadcast) => {
        recorded.push(broadcast);
        throw new Error('killed after the record');
      },
    };
    await expect(
      new SponsoredEvmSender({ table, sponsors: pool, inclusionTimeoutMs: 20_000, lease, random: () => 0.9 }).send({ ...request, journal: crashing }),
    ).rejects.toThrow('killed after the record');
    const journaled = recorded[0] as Broadcast;
    expect(journaled.sponsor?.slot).toBe(2);
    expect(await client('POL').getTransactionCount({ address: pool.keys[2]?.address as Address })).toBe(0); // nothing broadcast
    // The sponsor's lease was released without consuming its nonce; the user's lease too.
    expect((await getItem(table, keys.senderLease('POL', pool.keys[2]?.address as Address)))?.owner).toBeUndefined();

    const resumed = await new SponsoredEvmSender({ table, sponsors: pool, inclusionTimeoutMs: 20_000, lease, random: () => 0 }).send({
      ...request,
      journal: memoryJournal(journaled),
    });
    expect(resumed).toEqual({ txHash: journaled.tx_hash, resumed: true });
    const mined = await client('POL').getTransaction({ hash: journaled.tx_hash as Hex });
    expect(getAddress(mined.from)).toBe(pool.keys[2]?.address);
    for (const slot of [0, 1]) expect(await client('POL').getTransactionCount({ address: pool.keys[slot]?.address as Address })).toBe(0);
    expect(await usdc('POL', to)).toBe(4n * USDC);
    expect(await usdc('POL', user.address)).toBe(6n * USDC);
  });

  it('the treasury tops each member up to the target exactly once; a second run sends nothing', async () => {
    const eth = chain('ETH');
    const pool = localPool(3);
    await evm.faucet('ETH', pool.treasuryKey.address, 'ETH', 10n * ETHER);
    await evm.faucet('ETH', pool.keys[1]?.address as Address, 'ETH', 3n * ETHER); // already past the target
    const target = 2n * ETHER + 1n;
    const first = await topUpSponsors({ table, chain: eth, pool, target });
    expect(first.map(({ slot, before, after }) => ({ slot, before, after }))).toEqual([
      { slot: 0, before: 0n, after: target },
      { slot: 1, before: 3n * ETHER, after: 3n * ETHER },
      { slot: 2, before: 0n, after: target },
    ]);
    expect(first[1]?.txHash).toBeUndefined();
    expect(await client('ETH').getTransactionCount({ address: pool.treasuryKey.address })).toBe(2);
    for (const slot of [0, 2]) expect(await getItem(table, keys.sponsorTopUp('ETH', pool.keys[slot]?.address as Address))).toBeUndefined();

    const again = await topUpSponsors({ table, chain: eth, pool, target });
    expect(again.every((result) => result.txHash === undefined && result.after === result.before)).toBe(true);
    expect(await client('ETH').getTransactionCount({ address: pool.treasuryKey.address })).toBe(2);
  });
});
