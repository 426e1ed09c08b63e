import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineClient } from '@nadohq/engine-client';
import { subaccountToHex } from '@nadohq/shared';
import { type Address, encodeFunctionData, erc20Abi, type Hex, pad, zeroAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { readDurableDocument } from '../../infra/local/venues/durable-state.ts';
import { type SandboxVenues, startSandboxVenues } from '../../infra/local/venues/framework.ts';
import { venueDModule } from '../../infra/local/venues/venue-d.ts';
import { VenueRuleError } from '../../shared/venues/driver.ts';
import { transferLogsOf } from '../../shared/venues/payouts.ts';
import { VenueDDriver, VenueDRefusedError } from '../../shared/venues/venue-d/driver.ts';
import {
  linkedSignerBytes32,
  linkSignerExecuteBody,
  linkSignerTypedData,
  NADO_ENDPOINT_ABI,
  NADO_INK_MAINNET,
  subaccountNameToBytes12,
  withdrawCollateralExecuteBody,
  withdrawCollateralTypedData,
} from '../../shared/venues/venue-d/signing.ts';
import { depositThroughPlan, eventually, fundedTestWallet, sandboxChainClient, tokenBalance } from './support/venue-test-wallets.ts';

/** The venues' tick here (their pollMs): a wait for "nothing happens" lasts a few ticks. */
const TICK_MS = 50;
const ticks = (n: number) => new Promise((wake) => setTimeout(wake, n * TICK_MS));

/**
 * The venue_d sandbox (Nado) on the real INK sandbox chain (anvil), driven by the production
 * adapter (VenueDDriver) and by the official engine client (@nadohq/engine-client): deposits
 * through the Endpoint credited from its logs, the 5 minimum that opens a subaccount,
 * LinkSigner / WithdrawCollateral verified as the engine does, withdrawals paid on chain with the
 * fee charged once, faults, and durable state across a restart.
 */
const USDC = 1_000_000n;
const ENDPOINT = NADO_INK_MAINNET.endpoint;
const CONFIG = { chainId: NADO_INK_MAINNET.chainId, endpoint: ENDPOINT };

let dataDir: string;
let evm: EvmSandbox;
let venues: SandboxVenues;
let driver: VenueDDriver;
let inkUsdc: Address;

const start = () => startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueDModule()] });
const newDriver = () =>
  new VenueDDriver({ baseUrl: venues.urls.venue_d!, collateral: inkUsdc, payouts: transferLogsOf(sandboxChainClient(evm, 'INK').client) });

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sandbox-venue-d-'));
  evm = await startEvmSandbox({ dataDir });
  inkUsdc = evm.chains.INK.tokens.USDC!.address as Address;
  venues = await start();
  driver = newDriver();
}, 120_000);

afterAll(async () => {
  await venues?.stop();
  await evm?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const ink = () => sandboxChainClient(evm, 'INK');

/** A fresh user with gas and `usdc` base units on INK, as the venue driver sees it. */
async function newUser(usdc: bigint) {
  const { key, account, wallet, walletClient, send } = await fundedTestWallet(evm, 'INK', 'USDC', usdc);
  return { key, account, wallet, walletClient, send, fields: await driver.initAccount(wallet) };
}
type User = Awaited<ReturnType<typeof newUser>>;

const usdcOnChain = (owner: Address) => tokenBalance(evm, 'INK', inkUsdc, owner);

/** Sends the deposit by hand (approve + depositCollateral), bypassing the driver's minimum. */
async function depositByHand(user: User, amount: bigint, name = 'default') {
  await user.send(inkUsdc, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [ENDPOINT, amount] }));
  return user.send(
    ENDPOINT,
    encodeFunctionData({ abi: NADO_ENDPOINT_ABI, functionName: 'depositCollateral', args: [subaccountNameToBytes12(name), 0, amount] }),
  );
}

/** Deposits through the driver's plan and waits for the credit; returns the ms from the last receipt to the credit. */
const deposit = (user: User, amount: bigint) => depositThroughPlan(driver, user, amount);

async function gateway(path: '/v1/execute' | '/v1/query', body: unknown) {
  const response = await fetch(`${venues.urls.venue_d}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { status: string; data?: any; error?: string; error_code?: number };
}

const txNonce = async (owner: Address) => BigInt((await gateway('/v1/query', { type: 'nonces', address: owner })).data.tx_nonce);
const linkedSigner = async (sender: unknown) => (await gateway('/v1/query', { type: 'linked_signer', subaccount: sender })).data.linked_signer as string;

/** A withdraw_collateral signed by `signer` for `user`'s subaccount, with the owner's current nonce unless given. */
async function signedWithdraw(user: User, signer: ReturnType<typeof privateKeyToAccount>, amount: bigint, nonce?: bigint) {
  const tx = { sender: user.fields.account_address as Hex, productId: 0, amount, nonce: nonce ?? (await txNonce(user.account.address)) };
  return withdrawCollateralExecuteBody(tx, await signer.signTypedData(withdrawCollateralTypedData(CONFIG, tx)));
}

describe('venue_d sandbox: onboarding and deposits', () => {
  it('lists itself with the Endpoint as deposit address and its rules; the Endpoint is installed at the real address', async () => {
    const [listing] = venues.listing.venues;
    expect(listing).toMatchObject({ dex: 'venue_d', url: venues.urls.venue_d, chain: 'INK', token: 'USDC', deposit_address: ENDPOINT });
    expect(listing!.rules).toMatchObject({
      first_deposit_minimum: '5',
      deposit: { minimum_amount: '1' },
      withdrawal: { minimum_amount: '1.000001', fee: { amount: '1', fee_type: 'fixed' } },
    });
    expect(await ink().client.getCode({ address: ENDPOINT })).not.toBe('0x');
  });

  it('a fresh wallet: account_address is the SDK\'s bytes32 sender (owner ‖ "default"); nothing exists until funded', async () => {
    const user = await newUser(0n);
    expect(user.fields).toEqual({ account_address: subaccountToHex({ subaccountOwner: user.account.address, subaccountName: 'default' }) });
    expect(await driver.balances(user.wallet, user.fields)).toEqual({ balance: 0n, account_value: 0n, available_for_withdrawal: 0n });
    expect((await gateway('/v1/query', { type: 'subaccount_info', subaccount: user.fields.account_address })).data.exists).toBe(false);
    await expect(driver.initTrading(user.wallet, user.fields, { name: 'bot' }, false)).rejects.toMatchObject({ code: 'VENUE_ACCOUNT_NOT_FUNDED' });
    // Another wallet's account is refused before anything is asked.
    const other = await newUser(0n);
    await expect(driver.balances(other.wallet, user.fields)).rejects.toMatchObject({ code: 'INVALID_ACCOUNT' });
  });

  it('the driver refuses a first deposit of 4.99 before preparing anything; 5 is prepared as approve + depositCollateral', async () => {
    const user = await newUser(0n);
    await expect(driver.prepareDeposit(user.wallet, user.fields, 4_990_000n)).rejects.toMatchObject({ code: 'BELOW_MINIMUM_DEPOSIT' });
    await expect(driver.prepareDeposit(user.wallet, user.fields, 4_990_000n)).rejects.toBeInstanceOf(VenueRuleError);
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 5n * USDC);
    expect(plan).toEqual({
      chain: 'INK',
      calls: [
        { to: inkUsdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [ENDPOINT, 5n * USDC] }), label: expect.any(String) },
        {
          to: ENDPOINT,
          data: encodeFunctionData({ abi: NADO_ENDPOINT_ABI, functionName: 'depositCollateral', args: [subaccountNameToBytes12('default'), 0, 5n * USDC] }),
          label: expect.any(String),
        },
      ],
      expectedCredit: 5n * USDC,
    });
  });

  it('a first deposit of 4.99 sent anyway opens nothing and comes back on chain; 5 opens the subaccount to the base unit; later 1 is accepted, 0.99 refused', async () => {
    const user = await newUser(20n * USDC);
    await depositByHand(user, 4_990_000n);
    expect(await usdcOnChain(user.account.address)).toBe(20n * USDC - 4_990_000n);
    expect(
      await eventually(
        () => usdcOnChain(user.account.address),
        (b) => b === 20n * USDC,
      ),
    ).toBe(20n * USDC);
    expect((await gateway('/v1/query', { type: 'subaccount_info', subaccount: user.fields.account_address })).data.exists).toBe(false);

    const latency = await deposit(user, 5n * USDC);
    expect(await driver.balances(user.wallet, user.fields)).toEqual({ balance: 5n * USDC, account_value: 5n * USDC, available_for_withdrawal: 5n * USDC });
    const info = (await gateway('/v1/query', { type: 'subaccount_info', subaccount: user.fields.account_address })).data;
    expect(info).toMatchObject({ exists: true, spot_balances: [{ product_id: 0, balance: { amount: (5n * 10n ** 18n).toString() } }] });
    console.info(`venue_d deposit-to-credit latency: ${latency.toFixed(0)} ms (watcher poll 100 ms)`);

    await expect(driver.prepareDeposit(user.wallet, user.fields, 990_000n)).rejects.toMatchObject({ code: 'BELOW_MINIMUM_DEPOSIT' });
    await deposit(user, 1n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(6n * USDC);
    expect(await usdcOnChain(user.account.address)).toBe(14n * USDC);
  });

  it('a deposit to another subaccount name credits that subaccount, not the primary one', async () => {
    const user = await newUser(10n * USDC);
    await depositByHand(user, 6n * USDC, 'second');
    const second = subaccountToHex({ subaccountOwner: user.account.address, subaccountName: 'second' });
    const info = await eventually(
      async () => (await gateway('/v1/query', { type: 'subaccount_info', subaccount: second })).data,
      (data) => data.exists,
    );
    expect(info.spot_balances[0].balance.amount).toBe((6n * 10n ** 18n).toString());
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(0n);
  });

  it('answers queries by GET ?type= as by POST; unknown queries and executes are failures in the engine shape', async () => {
    const user = await newUser(0n);
    const response = await fetch(`${venues.urls.venue_d}/v1/query?type=nonces&address=${user.account.address}`);
    expect(await response.json()).toMatchObject({
      status: 'success',
      data: { tx_nonce: '0', order_nonce: expect.stringMatching(/^[0-9]+$/) },
      request_type: 'query_nonces',
    });
    expect(await gateway('/v1/query', { type: 'all_products' })).toMatchObject({ status: 'failure', error_code: expect.any(Number) });
    expect(await gateway('/v1/query', { type: 'subaccount_info', subaccount: '0x1234' })).toMatchObject({
      status: 'failure',
      error: expect.stringMatching(/32 bytes/),
    });
    expect(await gateway('/v1/execute', { place_order: {} })).toMatchObject({ status: 'failure', error_code: 4001, request_type: 'execute_place_order' });
    expect(await gateway('/v1/execute', { link_signer: {}, withdraw_collateral: {} })).toMatchObject({ status: 'failure' });
  });
});

describe('venue_d sandbox: signatures and trading setup', () => {
  it('forged, tampered and wrong-nonce executes are refused and change nothing; the genuine one goes through once', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const forger = privateKeyToAccount(generatePrivateKey());
    const forged = await gateway('/v1/execute', await signedWithdraw(user, forger, 2n * USDC));
    expect(forged).toMatchObject({ status: 'failure', error_code: 2028, request_type: 'execute_withdraw_collateral' });
    // The owner's signature over 1 reused for 5.
    const genuine = await signedWithdraw(user, user.account, 2n * USDC);
    const tampered = structuredClone(genuine);
    tampered.withdraw_collateral.tx.amount = (5n * USDC).toString();
    expect((await gateway('/v1/execute', tampered)).status).toBe('failure');
    // A link_signer signed by a stranger for the user's subaccount.
    const linkTx = { sender: user.fields.account_address as Hex, signer: linkedSignerBytes32(forger.address), nonce: await txNonce(user.account.address) };
    expect(await gateway('/v1/execute', linkSignerExecuteBody(linkTx, await forger.signTypedData(linkSignerTypedData(CONFIG, linkTx))))).toMatchObject({
      status: 'failure',
      error_code: 2028,
    });
    expect(await gateway('/v1/execute', { withdraw_collateral: { ...genuine.withdraw_collateral, signature: '0x1234' } })).toMatchObject({
      status: 'failure',
      error_code: 2027,
    });
    // The right signer, a nonce ahead.
    const ahead = await signedWithdraw(user, user.account, 2n * USDC, (await txNonce(user.account.address)) + 1n);
    expect(await gateway('/v1/execute', ahead)).toMatchObject({ status: 'failure', error_code: 2022 });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    expect(await linkedSigner(user.fields.account_address)).toBe(zeroAddress);

    expect(await gateway('/v1/execute', genuine)).toMatchObject({ status: 'success', request_type: 'execute_withdraw_collateral' });
    expect(await gateway('/v1/execute', genuine)).toMatchObject({ status: 'failure', error_code: 2022 });
    // 2 paid out, 1 fee on top.
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(7n * USDC);
  });

  it('initTrading links a fresh key the venue recognises; the key may withdraw but not re-link; force-replace revokes the old key', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const first = await driver.initTrading(user.wallet, user.fields, { name: 'bot' }, false);
    const firstKey = privateKeyToAccount(first.oneTime.linked_signer_private_key as Hex);
    expect(first.stored).toEqual({ trade_initialized: true, name: 'bot', linked_signer_address: firstKey.address });
    expect(Object.keys(first.oneTime)).toEqual(['linked_signer_private_key']);
    expect(await linkedSigner(user.fields.account_address)).toBe(firstKey.address.toLowerCase());

    // The linked signer withdraws for the subaccount ([O] N8) …
    const chainBefore = await usdcOnChain(user.account.address);
    expect(await gateway('/v1/execute', await signedWithdraw(user, firstKey, 2n * USDC))).toMatchObject({ status: 'success' });
    expect(
      await eventually(
        () => usdcOnChain(user.account.address),
        (b) => b !== chainBefore,
      ),
    ).toBe(chainBefore + 2n * USDC);
    // … but cannot link another signer.
    const linkTx = {
      sender: user.fields.account_address as Hex,
      signer: linkedSignerBytes32(privateKeyToAccount(generatePrivateKey()).address),
      nonce: await txNonce(user.account.address),
    };
    expect(await gateway('/v1/execute', linkSignerExecuteBody(linkTx, await firstKey.signTypedData(linkSignerTypedData(CONFIG, linkTx))))).toMatchObject({
      status: 'failure',
    });

    await expect(driver.initTrading(user.wallet, user.fields, { name: 'bot' }, false)).rejects.toMatchObject({ code: 'LINKED_SIGNER_EXISTS' });
    await expect(driver.initTrading(user.wallet, user.fields, { name: 7 }, true)).rejects.toMatchObject({ code: 'INVALID_METADATA' });
    const second = await driver.initTrading(user.wallet, user.fields, {}, true);
    expect(second.stored).toMatchObject({ name: null });
    expect(second.stored.linked_signer_address).not.toBe(first.stored.linked_signer_address);
    expect(await linkedSigner(user.fields.account_address)).toBe(String(second.stored.linked_signer_address).toLowerCase());
    // The old key is revoked: its withdrawal is refused.
    expect(await gateway('/v1/execute', await signedWithdraw(user, firstKey, 2n * USDC))).toMatchObject({ status: 'failure', error_code: 2028 });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(17n * USDC);
  });

  it('linking needs an account value of at least 5; the zero address revokes', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 6n * USDC);
    await driver.initTrading(user.wallet, user.fields, {}, false);
    await driver.withdraw(user.wallet, user.fields, 3n * USDC, crypto.randomUUID());
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(3n * USDC);
    await expect(driver.initTrading(user.wallet, user.fields, {}, true)).rejects.toMatchObject({ code: 'VENUE_REFUSED', errorCode: 2025 });
    await deposit(user, 2n * USDC);
    const revoke = { sender: user.fields.account_address as Hex, signer: linkedSignerBytes32(zeroAddress), nonce: await txNonce(user.account.address) };
    expect(await gateway('/v1/execute', linkSignerExecuteBody(revoke, await user.account.signTypedData(linkSignerTypedData(CONFIG, revoke))))).toMatchObject({
      status: 'success',
    });
    expect(await linkedSigner(user.fields.account_address)).toBe(zeroAddress);
  });
});

interface SdkEngine {
  getNonces(params: { address: string }): Promise<{ txNonce: string; orderNonce: string }>;
  getSubaccountSummary(params: {
    subaccountOwner: string;
    subaccountName: string;
  }): Promise<{ exists: boolean; balances: { amount: { toFixed(): string } }[] }>;
  getLinkedSigner(params: { subaccountOwner: string; subaccountName: string }): Promise<{ signer: string }>;
  getSubaccountFeeRates(params: { subaccountOwner: string; subaccountName: string }): Promise<{ withdrawal: Record<number, { toFixed(): string }> }>;
  linkSigner(params: Record<string, unknown>): Promise<unknown>;
  withdrawCollateral(params: Record<string, unknown>): Promise<unknown>;
}

describe('venue_d sandbox speaks to the official engine client (@nadohq/engine-client) as the gateway would', () => {
  it("the SDK's nonces, linked signer, subaccount summary, linkSigner and withdrawCollateral work against it", async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const opts = { url: `${venues.urls.venue_d}/v1`, walletClient: user.walletClient as never };
    // EngineClient's mixed-in type (ts-mixer) does not resolve under this project's module resolution: the methods used, typed here.
    const engine = new (EngineClient as unknown as new (options: typeof opts) => SdkEngine)(opts);
    const queries = engine;
    expect(await engine.getNonces({ address: user.account.address })).toMatchObject({ txNonce: '0' });
    const summary = await queries.getSubaccountSummary({ subaccountOwner: user.account.address, subaccountName: 'default' });
    expect(summary.exists).toBe(true);
    expect(summary.balances[0]!.amount.toFixed()).toBe((20n * 10n ** 18n).toString());

    const linked = privateKeyToAccount(generatePrivateKey());
    await engine.linkSigner({
      subaccountOwner: user.account.address,
      subaccountName: 'default',
      signer: linkedSignerBytes32(linked.address),
      chainId: CONFIG.chainId,
      verifyingAddr: ENDPOINT,
    });
    expect((await queries.getLinkedSigner({ subaccountOwner: user.account.address, subaccountName: 'default' })).signer).toBe(linked.address.toLowerCase());

    const chainBefore = await usdcOnChain(user.account.address);
    await engine.withdrawCollateral({
      subaccountOwner: user.account.address,
      subaccountName: 'default',
      productId: 0,
      amount: 4n * USDC,
      chainId: CONFIG.chainId,
      verifyingAddr: ENDPOINT,
    });
    expect(
      await eventually(
        () => usdcOnChain(user.account.address),
        (b) => b !== chainBefore,
      ),
    ).toBe(chainBefore + 4n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);
    const fees = await queries.getSubaccountFeeRates({ subaccountOwner: user.account.address, subaccountName: 'default' });
    expect(fees.withdrawal[0]!.toFixed()).toBe((1n * 10n ** 18n).toString());
  });
});

describe('venue_d sandbox: withdrawals', () => {
  it('withdraw 10 takes exactly 10 from the venue and pays exactly 9 on chain from the WithdrawPool; a retry with the same key pays nothing more', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    const key = crypto.randomUUID();
    const started = performance.now();
    const { reference } = await driver.withdraw(user.wallet, user.fields, 10n * USDC, key);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    const status = await eventually(
      () => driver.withdrawalStatus(user.wallet, user.fields, reference),
      (s) => s.state !== 'pending',
    );
    expect(status.state).toBe('completed');
    console.info(`venue_d withdraw call to payout confirmed on chain: ${(performance.now() - started).toFixed(0)} ms`);
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 9n * USDC);
    expect(reference).toMatch(/^[0-9]+:9000000$/);
    const receipt = await ink().client.getTransactionReceipt({ hash: (status as { txHash: Hex }).txHash });
    expect(receipt.logs).toHaveLength(1);
    expect(BigInt(receipt.logs[0]!.data)).toBe(9n * USDC);
    // The USDC Transfer from Nado's WithdrawPool address to the owner, as live (no venue query says so).
    expect(receipt.logs[0]!.topics[1]).toBe(pad(NADO_INK_MAINNET.withdrawPool.toLowerCase() as Hex));
    expect(receipt.logs[0]!.topics[2]).toBe(pad(user.account.address.toLowerCase() as Hex));
    expect(status).toMatchObject({ logIndex: receipt.logs[0]!.logIndex });

    expect(await driver.withdraw(user.wallet, user.fields, 10n * USDC, key)).toEqual({ reference });
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 9n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });

  it('amounts up to the fee are refused by the driver and by the venue; more than the balance is refused', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    await expect(driver.withdraw(user.wallet, user.fields, 1n * USDC, crypto.randomUUID())).rejects.toMatchObject({ code: 'BELOW_MINIMUM_WITHDRAWAL' });
    expect(await gateway('/v1/execute', await signedWithdraw(user, user.account, 0n))).toMatchObject({ status: 'failure', error_code: 2002 });
    const tooMuch = await signedWithdraw(user, user.account, 9_500_000n);
    expect(await gateway('/v1/execute', tooMuch)).toMatchObject({ status: 'failure', error_code: 2036 });
    expect(await gateway('/v1/execute', { withdraw_collateral: { ...tooMuch.withdraw_collateral, spot_leverage: false } })).toMatchObject({
      status: 'failure',
      error_code: 2017,
    });
    // 10 requested = 9 signed + 1 fee: fits; 10.5 does not.
    await expect(driver.withdraw(user.wallet, user.fields, 10_500_000n, crypto.randomUUID())).rejects.toBeInstanceOf(VenueDRefusedError);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    await driver.withdraw(user.wallet, user.fields, 10n * USDC, crypto.randomUUID());
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(0n);
  });
});

describe('venue_d sandbox: faults', () => {
  it('deposit fail: seen on chain, not credited; stall: held until clear, then credited once', async () => {
    const user = await newUser(30n * USDC);
    await deposit(user, 5n * USDC);
    await venues.setFault({ target: 'venue_d', operation: 'deposit', mode: 'fail', count: 1 });
    await depositByHand(user, 10n * USDC);
    await deposit(user, 5n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);

    await venues.setFault({ target: 'venue_d', operation: 'deposit', mode: 'stall', count: 1 });
    const receipt = await depositByHand(user, 7n * USDC);
    await eventually(
      async () => (await readDurableDocument(join(dataDir, 'venues', 'venue_d.json'))).cursor,
      (cursor) => BigInt(cursor) >= receipt.blockNumber,
    );
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    await venues.setFault({ target: 'venue_d', operation: 'deposit', mode: 'clear', count: 0 });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(17n * USDC);
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(17n * USDC);
  });

  it('withdrawal fail: refused, nothing debited, the same key then works once; stall: pending until clear, then paid', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    await venues.setFault({ target: 'venue_d', operation: 'withdrawal', mode: 'fail', count: 1 });
    const key = crypto.randomUUID();
    await expect(driver.withdraw(user.wallet, user.fields, 5n * USDC, key)).rejects.toBeInstanceOf(VenueDRefusedError);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(20n * USDC);
    const retried = await driver.withdraw(user.wallet, user.fields, 5n * USDC, key);
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, retried.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 4n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);

    await venues.setFault({ target: 'venue_d', operation: 'withdrawal', mode: 'stall', count: 1 });
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, crypto.randomUUID());
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await driver.withdrawalStatus(user.wallet, user.fields, reference)).toEqual({ state: 'pending' });
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 4n * USDC);
    await venues.setFault({ target: 'venue_d', operation: 'withdrawal', mode: 'clear', count: 0 });
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 8n * USDC);
  });

  it('withdrawal refund: accepted, then back on the venue balance, never paid: pending, as the live gateway shows it; deposit refund: sent back on chain', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 10n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    await venues.setFault({ target: 'venue_d', operation: 'withdrawal', mode: 'refund', count: 1 });
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, crypto.randomUUID());
    await ticks(5); // nothing is paid within a few of the venues' ticks
    expect(await driver.withdrawalStatus(user.wallet, user.fields, reference)).toEqual({ state: 'pending' });
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);

    await venues.setFault({ target: 'venue_d', operation: 'deposit', mode: 'refund', count: 1 });
    await depositByHand(user, 6n * USDC);
    expect(
      await eventually(
        () => usdcOnChain(user.account.address),
        (b) => b === 10n * USDC,
      ),
    ).toBe(10n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });
});

describe('venue_d sandbox: durable state', () => {
  it('balances, the linked signer, nonces and the URL survive a restart; a deposit made while it was down is credited after (the Endpoint install is idempotent)', async () => {
    const user = await newUser(30n * USDC);
    await deposit(user, 10n * USDC);
    const setup = await driver.initTrading(user.wallet, user.fields, { name: 'keep' }, false);
    const nonce = await txNonce(user.account.address);
    const url = venues.urls.venue_d;
    await venues.stop();
    await depositByHand(user, 7n * USDC);
    venues = await start();
    expect(venues.urls.venue_d).toBe(url);
    driver = newDriver();
    expect(
      (
        await eventually(
          () => driver.balances(user.wallet, user.fields),
          (b) => b.balance === 17n * USDC,
        )
      ).balance,
    ).toBe(17n * USDC);
    expect(await linkedSigner(user.fields.account_address)).toBe(String(setup.stored.linked_signer_address).toLowerCase());
    expect(await txNonce(user.account.address)).toBe(nonce);
  });
});
