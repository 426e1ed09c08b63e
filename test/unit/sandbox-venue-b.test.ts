import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExchangeClient, HttpTransport, InfoClient } from '@nktkas/hyperliquid';
import { v7 as uuidv7 } from 'uuid';
import { type Address, encodeFunctionData, erc20Abi, type Hex, pad } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { readDurableDocument, replaceDurableDocument } from '../../infra/local/venues/durable-state.ts';
import { type SandboxVenues, startSandboxVenues } from '../../infra/local/venues/framework.ts';
import { VenueRuleError } from '../../shared/venues/driver.ts';
import { transferLogsOf } from '../../shared/venues/payouts.ts';
import { ARBITRUM_USDC, toWireSignature, userSignedTypedData, VENUE_B_BRIDGE } from '../../shared/venues/venue-b/actions.ts';
import { VenueBDriver, VenueBRefusedError } from '../../shared/venues/venue-b/driver.ts';
import { depositThroughPlan, eventually, fundedTestWallet, sandboxChainClient, tokenBalance } from './support/venue-test-wallets.ts';

/** The venues' tick here (their pollMs): a wait for "nothing happens" lasts a few ticks. */
const TICK_MS = 50;
const ticks = (n: number) => new Promise((wake) => setTimeout(wake, n * TICK_MS));

/**
 * The venue_b sandbox on real sandbox chains (anvil), driven by the production adapter
 * (VenueBDriver): deposits credited from what the chain shows, the 5 USDC minimum, signatures
 * verified as the venue does, withdrawals paid on chain minus the 1 USDC fee, durable state
 * across a restart, and faults.
 */
const USDC = 1_000_000n;

let dataDir: string;
let evm: EvmSandbox;
let venues: SandboxVenues;
let driver: VenueBDriver;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sandbox-venue-b-'));
  evm = await startEvmSandbox({ dataDir });
  venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS });
  driver = newDriver();
}, 120_000);

afterAll(async () => {
  await venues?.stop();
  await evm?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const arbitrum = () => sandboxChainClient(evm, 'ARB');
/** The production adapter, watching ARB for its payouts as the account service does. */
const newDriver = () => new VenueBDriver({ baseUrl: venues.urls.venue_b!, payouts: transferLogsOf(arbitrum().client) });

/** A fresh user with gas and `usdc` base units on ARB, as the venue driver sees it. */
async function newUser(usdc: bigint) {
  const user = await fundedTestWallet(evm, 'ARB', 'USDC', usdc);
  return { ...user, fields: await driver.initAccount(user.wallet) };
}

const usdcOnChain = (owner: Address) => tokenBalance(evm, 'ARB', ARBITRUM_USDC, owner);

/** Deposits through the driver's plan and waits for the credit; returns the ms from receipt to credit. */
const deposit = (user: Awaited<ReturnType<typeof newUser>>, amount: bigint) => depositThroughPlan(driver, user, amount);

async function postExchange(body: unknown) {
  const response = await fetch(`${venues.urls.venue_b}/exchange`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await response.json()) as { status: string; response: unknown };
}

async function info(body: unknown) {
  const response = await fetch(`${venues.urls.venue_b}/info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return response.json() as Promise<any>;
}

describe('venue_b sandbox: deposits', () => {
  it('lists itself with the bridge as deposit address and its rules as decimal strings', () => {
    const listing = venues.listing.venues.find((entry) => entry.dex === 'venue_b');
    expect(listing).toMatchObject({ dex: 'venue_b', url: venues.urls.venue_b, chain: 'ARB', token: 'USDC', deposit_address: VENUE_B_BRIDGE });
    expect(listing!.rules).toMatchObject({
      first_deposit_minimum: '5',
      deposit: { minimum_amount: '5' },
      withdrawal: { fee: { amount: '1', token: 'USDC', fee_type: 'fixed' } },
    });
  });

  it('the driver refuses 4.99 USDC before preparing anything; 5 USDC is prepared as one transfer to the bridge', async () => {
    const user = await newUser(0n);
    await expect(driver.prepareDeposit(user.wallet, user.fields, 4_990_000n)).rejects.toMatchObject({ code: 'BELOW_MINIMUM_DEPOSIT' });
    await expect(driver.prepareDeposit(user.wallet, user.fields, 4_990_000n)).rejects.toBeInstanceOf(VenueRuleError);
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 5n * USDC);
    expect(plan.chain).toBe('ARB');
    expect(plan.calls).toEqual([
      {
        to: ARBITRUM_USDC,
        data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [VENUE_B_BRIDGE, 5n * USDC] }),
        label: expect.any(String),
      },
    ]);
  });

  it('4.99 USDC sent to the bridge is not credited (lost, as published); 10 USDC is credited exactly, to the sender', async () => {
    const user = await newUser(20n * USDC);
    const other = await newUser(0n);
    // Sent by hand: the driver would refuse it.
    await user.send(ARBITRUM_USDC, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [VENUE_B_BRIDGE, 4_990_000n] }));
    const latency = await deposit(user, 10n * USDC);
    const balances = await driver.balances(user.wallet, user.fields);
    expect(balances).toEqual({ balance: 10n * USDC, account_value: 10n * USDC, available_for_withdrawal: 10n * USDC });
    expect((await driver.balances(other.wallet, other.fields)).balance).toBe(0n);
    const ledger = await info({ type: 'userNonFundingLedgerUpdates', user: user.account.address, startTime: 0 });
    expect(ledger.map((entry: any) => entry.delta)).toEqual([{ type: 'deposit', usdc: '10.0' }]);
    console.info(`venue_b deposit-to-credit latency: ${latency.toFixed(0)} ms (watcher poll 100 ms)`);
  });

  it('a claim without a transfer credits nothing: only the chain counts (no endpoint takes a deposit)', async () => {
    const user = await newUser(0n);
    const response = await fetch(`${venues.urls.venue_b}/exchange`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action: { type: 'deposit', amount: '100' }, nonce: Date.now() }),
    });
    expect(response.status).toBe(422);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(0n);
  });
});

describe('venue_b sandbox: signatures and trading setup', () => {
  it('a forged signature is refused and changes nothing; a signature over other values recovers someone else', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const action = {
      type: 'withdraw3',
      hyperliquidChain: 'Mainnet',
      signatureChainId: '0xa4b1',
      destination: user.account.address.toLowerCase(),
      amount: '5',
      time: Date.now(),
    } as const;
    // Signed by a key that is not the user's.
    const forger = privateKeyToAccount(generatePrivateKey());
    const forged = toWireSignature(await forger.signTypedData(userSignedTypedData(action) as never));
    expect(await postExchange({ action, nonce: action.time, signature: forged })).toEqual({
      status: 'err',
      response: `User or API Wallet ${forger.address.toLowerCase()} does not exist.`,
    });
    // The user's signature over 1 USDC reused for 5 USDC.
    const signedSmall = toWireSignature(await user.account.signTypedData(userSignedTypedData({ ...action, amount: '1.5' }) as never));
    const tampered = await postExchange({ action, nonce: action.time, signature: signedSmall });
    expect(tampered.status).toBe('err');
    // Nonce that differs from the action's time.
    const genuine = toWireSignature(await user.account.signTypedData(userSignedTypedData(action) as never));
    expect((await postExchange({ action, nonce: action.time + 1, signature: genuine })).status).toBe('err');
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    // The genuine one goes through once; its replay is refused.
    expect(await postExchange({ action, nonce: action.time, signature: genuine })).toEqual({ status: 'ok', response: { type: 'default' } });
    expect((await postExchange({ action, nonce: action.time, signature: genuine })).response).toMatch(/duplicate nonce/);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC);
  });

  it('nonces outside (now - 2 days, now + 1 day) are refused', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const DAY = 24 * 60 * 60 * 1000;
    for (const time of [Date.now() - 2 * DAY - 60_000, Date.now() + DAY + 60_000]) {
      const action = {
        type: 'withdraw3',
        hyperliquidChain: 'Mainnet',
        signatureChainId: '0xa4b1',
        destination: user.account.address.toLowerCase(),
        amount: '2',
        time,
      } as const;
      const answer = await postExchange({
        action,
        nonce: time,
        signature: toWireSignature(await user.account.signTypedData(userSignedTypedData(action) as never)),
      });
      expect(answer.response).toMatch(/Invalid nonce/);
    }
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });

  it('an account that never deposited cannot approve an agent', async () => {
    const user = await newUser(0n);
    await expect(driver.initTrading(user.wallet, user.fields, { agent_name: 'bot' }, false)).rejects.toThrow(/does not exist/);
  });

  it('initTrading approves a fresh agent; the same name again replaces it (force_reinit); agents cannot withdraw', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const first = await driver.initTrading(user.wallet, user.fields, { agent_name: 'bot' }, false);
    expect(first.stored).toEqual({
      trade_initialized: true,
      agent_name: 'bot',
      agent_address: privateKeyToAccount(first.oneTime.agent_private_key as Hex).address,
      builder_address: null,
      max_builder_fee_rate: null,
    });
    expect(Object.keys(first.oneTime)).toEqual(['agent_private_key']);
    expect(await info({ type: 'extraAgents', user: user.account.address })).toEqual([
      { name: 'bot', address: String(first.stored.agent_address).toLowerCase(), validUntil: null },
    ]);

    await expect(driver.initTrading(user.wallet, user.fields, { agent_name: 'bot' }, false)).rejects.toMatchObject({ code: 'AGENT_EXISTS' });
    const second = await driver.initTrading(user.wallet, user.fields, { agent_name: 'bot' }, true);
    expect(second.stored.agent_address).not.toBe(first.stored.agent_address);
    expect(await info({ type: 'extraAgents', user: user.account.address })).toEqual([
      { name: 'bot', address: String(second.stored.agent_address).toLowerCase(), validUntil: null },
    ]);

    // The agent signs a withdraw3 for the user's money: refused.
    const agent = privateKeyToAccount(second.oneTime.agent_private_key as Hex);
    const action = {
      type: 'withdraw3',
      hyperliquidChain: 'Mainnet',
      signatureChainId: '0xa4b1',
      destination: agent.address.toLowerCase(),
      amount: '5',
      time: Date.now(),
    } as const;
    const answer = await postExchange({
      action,
      nonce: action.time,
      signature: toWireSignature(await agent.signTypedData(userSignedTypedData(action) as never)),
    });
    expect(answer.status).toBe('err');
    expect(answer.response).toMatch(/main wallet/);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });

  it('at most 3 named agents; one unnamed agent, replaced by the next unnamed one', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    for (const name of ['a', 'b', 'c']) await driver.initTrading(user.wallet, user.fields, { agent_name: name }, false);
    await expect(driver.initTrading(user.wallet, user.fields, { agent_name: 'd' }, false)).rejects.toThrow(/at most 3/);
    const unnamed = await driver.initTrading(user.wallet, user.fields, {}, false);
    expect(unnamed.stored.agent_name).toBeNull();
    await driver.initTrading(user.wallet, user.fields, {}, false);
    expect((await info({ type: 'extraAgents', user: user.account.address })).map((agent: any) => agent.name).sort()).toEqual(['a', 'b', 'c']);
    const state = await readDurableDocument(join(dataDir, 'venues', 'venue_b.json'));
    expect(Object.keys(state.venue.users[user.account.address.toLowerCase()].agents).sort()).toEqual(['', 'a', 'b', 'c']);
  });

  it('builder fee: the builder needs 100 USDC at the venue, the cap is 0.1%, maxBuilderFee reads it back in tenths of a bp', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const builder = await newUser(100n * USDC);
    await expect(
      driver.initTrading(user.wallet, user.fields, { agent_name: 'b1', builder_address: builder.account.address, max_builder_fee_rate: '0.05%' }, false),
    ).rejects.toThrow(/insufficient balance/);
    await deposit(builder, 100n * USDC);
    await expect(
      driver.initTrading(user.wallet, user.fields, { agent_name: 'b2', builder_address: builder.account.address, max_builder_fee_rate: '0.2%' }, false),
    ).rejects.toMatchObject({ code: 'INVALID_METADATA' });
    const setup = await driver.initTrading(
      user.wallet,
      user.fields,
      { agent_name: 'b3', builder_address: builder.account.address, max_builder_fee_rate: '0.05%' },
      false,
    );
    expect(setup.stored).toMatchObject({ builder_address: builder.account.address, max_builder_fee_rate: '0.05%' });
    expect(await info({ type: 'maxBuilderFee', user: user.account.address, builder: builder.account.address })).toBe(50);
    // The venue itself refuses more than 0.1%, whatever the client checks.
    const action = {
      type: 'approveBuilderFee',
      hyperliquidChain: 'Mainnet',
      signatureChainId: '0xa4b1',
      maxFeeRate: '0.11%',
      builder: builder.account.address.toLowerCase() as Address,
      nonce: Date.now(),
    } as const;
    const answer = await postExchange({
      action,
      nonce: action.nonce,
      signature: toWireSignature(await user.account.signTypedData(userSignedTypedData(action) as never)),
    });
    expect(answer.response).toMatch(/maximum of 0.1%/);
  });
});

describe('venue_b sandbox speaks to the official SDK (@nktkas/hyperliquid) as the venue would', () => {
  it("the SDK's approveAgent (unnamed and named), approveBuilderFee and withdraw3 are accepted; its InfoClient reads the state", async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const builder = await newUser(100n * USDC);
    await deposit(builder, 100n * USDC);
    const transport = new HttpTransport({ apiUrl: venues.urls.venue_b! });
    const exchange = new ExchangeClient({ wallet: user.account, transport, signatureChainId: '0xa4b1' });
    const agent = privateKeyToAccount(generatePrivateKey());
    await exchange.approveAgent({ agentAddress: privateKeyToAccount(generatePrivateKey()).address });
    await exchange.approveAgent({ agentAddress: agent.address, agentName: 'sdk' });
    await exchange.approveBuilderFee({ builder: builder.account.address, maxFeeRate: '0.01%' });
    const chainBefore = await usdcOnChain(user.account.address);
    await exchange.withdraw3({ destination: user.account.address, amount: '6' });

    const infoClient = new InfoClient({ transport });
    expect(await infoClient.extraAgents({ user: user.account.address })).toEqual([{ name: 'sdk', address: agent.address.toLowerCase(), validUntil: null }]);
    expect(await infoClient.maxBuilderFee({ user: user.account.address, builder: builder.account.address })).toBe(10);
    const state = await infoClient.clearinghouseState({ user: user.account.address });
    expect(state.withdrawable).toBe('14.0');
    await eventually(
      () => usdcOnChain(user.account.address),
      (balance) => balance !== chainBefore,
    );
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 5n * USDC);
  });
});

describe('venue_b sandbox: withdrawals', () => {
  it('withdraw 10 pays exactly 9 on chain from the bridge; the fee is applied once; a retry with the same key pays nothing more', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    const key = uuidv7();
    const started = performance.now();
    const { reference } = await driver.withdraw(user.wallet, user.fields, 10n * USDC, key);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    const status = await eventually(
      () => driver.withdrawalStatus(user.wallet, user.fields, reference),
      (s) => s.state !== 'pending',
    );
    expect(status.state).toBe('completed');
    console.info(`venue_b withdraw call to payout confirmed on chain: ${(performance.now() - started).toFixed(0)} ms`);
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 9n * USDC);

    // The receipt shows one transfer of exactly 9 USDC from Bridge2 to the user: what the driver found on chain.
    const receipt = await arbitrum().client.getTransactionReceipt({ hash: (status as { txHash: Hex }).txHash });
    expect(receipt.logs).toHaveLength(1);
    expect(BigInt(receipt.logs[0]!.data)).toBe(9n * USDC);
    expect(receipt.logs[0]!.topics[1]).toBe(pad(VENUE_B_BRIDGE.toLowerCase() as Hex));
    expect(receipt.logs[0]!.topics[2]).toBe(pad(user.account.address.toLowerCase() as Hex));
    expect(status).toMatchObject({ logIndex: receipt.logs[0]!.logIndex });

    expect(await driver.withdraw(user.wallet, user.fields, 10n * USDC, key)).toEqual({ reference });
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 9n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    const ledger = await info({ type: 'userNonFundingLedgerUpdates', user: user.account.address, startTime: 0 });
    expect(ledger.filter((entry: any) => entry.delta.type === 'withdraw').map((entry: any) => entry.delta)).toEqual([
      { type: 'withdraw', usdc: '10.0', nonce: Number(reference), fee: '1.0' },
    ]);
    // Hyperliquid's row shape only: nothing a live ledger lacks.
    for (const entry of ledger) expect(Object.keys(entry).sort()).toEqual(['delta', 'hash', 'time']);
  });

  it('two withdrawals of the same amount each complete with their own payout log, never one log for both', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const fromBlock = await arbitrum().client.getBlockNumber();
    const claims = new Map<string, string>();
    // The claim a transfer step holds in the table, here in a map: one holder per log.
    const watchFor = (holder: string) => ({
      fromBlock,
      claim: async (log: { txHash: Hex; logIndex: number }) => {
        const key = `${log.txHash}:${log.logIndex}`;
        if (!claims.has(key)) claims.set(key, holder);
        return claims.get(key) === holder;
      },
    });
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'stall', count: 2, address: user.account.address });
    const first = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    const second = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    expect(await driver.withdrawalStatus(user.wallet, user.fields, first.reference, watchFor('first'))).toEqual({ state: 'pending' });
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'clear', count: 0, address: user.account.address });
    const done = async (reference: string, holder: string) =>
      (await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, reference, watchFor(holder)),
        (s) => s.state !== 'pending',
      )) as { state: string; txHash: Hex; logIndex: number };
    // The second asks first: it may take either payout, and the first then takes the other.
    const [b, a] = [await done(second.reference, 'second'), await done(first.reference, 'first')];
    expect([a.state, b.state]).toEqual(['completed', 'completed']);
    expect(`${a.txHash}:${a.logIndex}`).not.toBe(`${b.txHash}:${b.logIndex}`);
    expect(claims.size).toBe(2);
  });

  it('amounts up to the 1 USDC fee are refused by the driver and by the venue; more than the balance is refused', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    await expect(driver.withdraw(user.wallet, user.fields, 1n * USDC, uuidv7())).rejects.toMatchObject({ code: 'BELOW_MINIMUM_WITHDRAWAL' });
    const action = {
      type: 'withdraw3',
      hyperliquidChain: 'Mainnet',
      signatureChainId: '0xa4b1',
      destination: user.account.address.toLowerCase(),
      amount: '1',
      time: Date.now(),
    } as const;
    const answer = await postExchange({
      action,
      nonce: action.time,
      signature: toWireSignature(await user.account.signTypedData(userSignedTypedData(action) as never)),
    });
    expect(answer.response).toMatch(/greater than the 1.0 USDC fee/);
    await expect(driver.withdraw(user.wallet, user.fields, 11n * USDC, uuidv7())).rejects.toThrow(/Insufficient balance/);
    await expect(driver.withdraw(user.wallet, user.fields, 5n * USDC, 'not-a-uuid-v7')).rejects.toMatchObject({ code: 'INVALID_IDEMPOTENCY_KEY' });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });
});

describe('venue_b sandbox: faults', () => {
  it('deposit fail: seen on chain, not credited; stall: held until clear, then credited once', async () => {
    const user = await newUser(30n * USDC);
    await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'fail', count: 1 });
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    // The fault is used up by that deposit: the next one is credited normally, the failed one never.
    await deposit(user, 5n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC);

    expect(await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'stall', count: 1 })).toEqual({ mode: 'stall', remaining: 1 });
    const receipt = await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    // Wait until the watcher has read past the deposit's block, then check it is held.
    await eventually(
      async () => (await readDurableDocument(join(dataDir, 'venues', 'venue_b.json'))).cursor,
      (cursor) => BigInt(cursor) >= receipt.blockNumber,
    );
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC);
    expect(await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', count: 0 })).toBeNull();
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);
  });

  it('withdrawal fail: refused, nothing debited, the same key works once the fault is used up; stall: accepted and pending until clear, then paid', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 1 });
    const failedKey = uuidv7();
    await expect(driver.withdraw(user.wallet, user.fields, 5n * USDC, failedKey)).rejects.toBeInstanceOf(VenueBRefusedError);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(20n * USDC);
    // The fault is used up; the same key then withdraws (once).
    const retried = await driver.withdraw(user.wallet, user.fields, 5n * USDC, failedKey);
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, retried.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 4n * USDC);

    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'stall', count: 1 });
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await driver.withdrawalStatus(user.wallet, user.fields, reference)).toEqual({ state: 'pending' });
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 4n * USDC);
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'clear', count: 0 });
    const status = await eventually(
      () => driver.withdrawalStatus(user.wallet, user.fields, reference),
      (s) => s.state !== 'pending',
    );
    expect(status.state).toBe('completed');
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 8n * USDC);
  });

  it('deposit refund: the vault sends the deposit back to the depositor on chain; nothing is credited', async () => {
    const user = await newUser(10n * USDC);
    await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'refund', count: 1 });
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    expect(await usdcOnChain(user.account.address)).toBe(0n);
    expect(
      await eventually(
        () => usdcOnChain(user.account.address),
        (balance) => balance > 0n,
      ),
    ).toBe(10n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(0n);
  });

  it('withdrawal refund: accepted, then back on the venue balance, reported failed', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'refund', count: 1 });
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    expect(await driver.withdrawalStatus(user.wallet, user.fields, reference)).toMatchObject({ state: 'failed' });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });

  it("a withdrawal fault scoped to one user leaves another user's withdrawal alone", async () => {
    const [faulted, other] = [await newUser(10n * USDC), await newUser(10n * USDC)];
    await deposit(faulted, 10n * USDC);
    await deposit(other, 10n * USDC);
    expect(await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 1, address: faulted.account.address })).toEqual({
      mode: 'fail',
      remaining: 1,
    });
    // The other user withdraws first: the fault standing for `faulted` does not take it.
    const paid = await driver.withdraw(other.wallet, other.fields, 5n * USDC, uuidv7());
    expect(
      await eventually(
        () => driver.withdrawalStatus(other.wallet, other.fields, paid.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    await expect(driver.withdraw(faulted.wallet, faulted.fields, 5n * USDC, uuidv7())).rejects.toBeInstanceOf(VenueBRefusedError);
    expect((await driver.balances(faulted.wallet, faulted.fields)).balance).toBe(10n * USDC);
    expect((await driver.balances(other.wallet, other.fields)).balance).toBe(5n * USDC);
  });

  it("two users' stalls at once: each clear releases its own user's payout only; an unscoped fault still hits anyone", async () => {
    const [first, second] = [await newUser(10n * USDC), await newUser(10n * USDC)];
    await deposit(first, 10n * USDC);
    await deposit(second, 10n * USDC);
    const [firstBefore, secondBefore] = [await usdcOnChain(first.account.address), await usdcOnChain(second.account.address)];
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'stall', count: 1, address: first.account.address });
    // Lower-case: an EVM address names the same wallet whatever its case.
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'stall', count: 1, address: second.account.address.toLowerCase() as Address });
    const firstOut = await driver.withdraw(first.wallet, first.fields, 5n * USDC, uuidv7());
    const secondOut = await driver.withdraw(second.wallet, second.fields, 5n * USDC, uuidv7());
    expect(await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'clear', count: 0, address: second.account.address })).toBeNull();
    expect(
      await eventually(
        () => driver.withdrawalStatus(second.wallet, second.fields, secondOut.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await usdcOnChain(second.account.address)).toBe(secondBefore + 4n * USDC);
    // The first user's payout is still held, by its own address's fault.
    const payouts = Object.values(
      (await readDurableDocument(join(dataDir, 'venues', 'venue_b.json'))).payouts as Record<
        string,
        { to: string; held: boolean; heldBy?: string; state: string }
      >,
    );
    expect(payouts.filter((p) => p.to === first.account.address && p.state === 'queued')).toEqual([
      expect.objectContaining({ held: true, heldBy: first.account.address.toLowerCase() }),
    ]);
    expect(await driver.withdrawalStatus(first.wallet, first.fields, firstOut.reference)).toEqual({ state: 'pending' });
    expect(await usdcOnChain(first.account.address)).toBe(firstBefore);
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'clear', count: 0, address: first.account.address });
    expect(
      await eventually(
        () => driver.withdrawalStatus(first.wallet, first.fields, firstOut.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });

    // Without an address: whoever withdraws next, the second user here.
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'refund', count: 1 });
    const refused = await driver.withdraw(second.wallet, second.fields, 2n * USDC, uuidv7());
    expect(await driver.withdrawalStatus(second.wallet, second.fields, refused.reference)).toMatchObject({ state: 'failed' });
  });

  it('a venue that is not running is named in the error', async () => {
    // A framework running no venue: every target is "not running" (all five run under npm start).
    const none = await startSandboxVenues({ dataDir, evm, modules: [] });
    await expect(none.setFault({ target: 'venue_b', operation: 'deposit', mode: 'fail', count: 1 })).rejects.toMatchObject({ code: 'VENUE_NOT_RUNNING' });
    await none.stop();
  });
});

describe('venue_b sandbox: durable state', () => {
  it('a held payout stays held across a restart; a payout recorded as sent is resent, not paid twice', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'stall', count: 1 });
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    await venues.stop();
    venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS });
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await driver.withdrawalStatus(user.wallet, user.fields, reference)).toEqual({ state: 'pending' });
    await venues.setFault({ target: 'venue_b', operation: 'withdrawal', mode: 'clear', count: 0 });
    const status = await eventually(
      () => driver.withdrawalStatus(user.wallet, user.fields, reference),
      (s) => s.state !== 'pending',
    );
    expect(status.state).toBe('completed');
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 4n * USDC);

    // As if the venue died between recording the signed payout and confirming it: the same transaction is resent.
    await venues.stop();
    const path = join(dataDir, 'venues', 'venue_b.json');
    const state = await readDurableDocument(path);
    const payout = Object.values(state.payouts as Record<string, { txHash: string; state: string }>).find(
      (p) => p.txHash === (status as { txHash: string }).txHash,
    )!;
    payout.state = 'sent';
    await replaceDurableDocument(path, state);
    venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS });
    const resumed = await eventually(
      async () => (await readDurableDocument(path)).payouts,
      (payouts: Record<string, { state: string }>) => Object.values(payouts).every((p) => p.state === 'completed'),
    );
    expect(Object.values(resumed).every((p) => p.state === 'completed')).toBe(true);
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 4n * USDC);
  });

  it('balances, agents and the URL survive a restart on the same DATA_DIR; a deposit made while it was down is credited after', async () => {
    const user = await newUser(30n * USDC);
    await deposit(user, 10n * USDC);
    const setup = await driver.initTrading(user.wallet, user.fields, { agent_name: 'keep' }, false);
    const url = venues.urls.venue_b;
    await venues.stop();
    // While the venue is down, the user deposits again.
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 7n * USDC);
    await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS });
    expect(venues.urls.venue_b).toBe(url);
    driver = newDriver();
    const balances = await eventually(
      () => driver.balances(user.wallet, user.fields),
      (b) => b.balance === 17n * USDC,
    );
    expect(balances.balance).toBe(17n * USDC);
    expect(await info({ type: 'extraAgents', user: user.account.address })).toEqual([
      { name: 'keep', address: String(setup.stored.agent_address).toLowerCase(), validUntil: null },
    ]);
  });
});
