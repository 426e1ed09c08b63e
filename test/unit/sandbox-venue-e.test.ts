import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AssetType, ClobClient } from '@polymarket/clob-client';
import { v7 as uuidv7 } from 'uuid';
import { type Address, createPublicClient, encodeFunctionData, erc20Abi, type Hex, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { readDurableDocument, replaceDurableDocument } from '../../infra/local/venues/durable-state.ts';
import { type SandboxVenues, startSandboxVenues } from '../../infra/local/venues/framework.ts';
import { venueEModule } from '../../infra/local/venues/venue-e.ts';
import { type VenueFields, VenueRuleError } from '../../shared/venues/driver.ts';
import { POLYGON_USDC_E, PUSD, withdrawalIdOf, withdrawTypedData } from '../../shared/venues/venue-e/bridge.ts';
import { VenueEDriver, VenueERefusedError } from '../../shared/venues/venue-e/driver.ts';
import { createL1Headers, createL2Headers, PROXY_WALLET_FACTORY, proxyWalletAddress } from '../../shared/venues/venue-e/signing.ts';
import { depositThroughPlan, eventually, fundedTestWallet, sandboxChainClient, tokenBalance } from './support/venue-test-wallets.ts';

/** The venues' tick here (their pollMs): a wait for "nothing happens" lasts a few ticks. */
const TICK_MS = 50;
const ticks = (n: number) => new Promise((wake) => setTimeout(wake, n * TICK_MS));

/**
 * The venue_e sandbox (Polymarket) on the real POL sandbox chain (anvil), driven by the production
 * adapter (VenueEDriver): USDC.e sent to the proxy wallet wrapped into pUSD on chain, the $2
 * minimum, ClobAuth / HMAC credentials verified as the CLOB does (and the official clob-client
 * accepted), withdrawals paid on chain as USDC.e without a fee, faults, durable state.
 */
const USDC = 1_000_000n;

let dataDir: string;
let evm: EvmSandbox;
let venues: SandboxVenues;
let driver: VenueEDriver;

function newDriver() {
  const url = venues.urls.venue_e!;
  const pol = createPublicClient({ transport: http(evm.chains.POL.rpc_url) });
  return new VenueEDriver({
    baseUrl: url,
    bridgeUrl: url,
    polygonBalanceOf: (token, owner) => pol.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] }),
  });
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sandbox-venue-e-'));
  evm = await startEvmSandbox({ dataDir });
  venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueEModule()] });
  driver = newDriver();
}, 120_000);

afterAll(async () => {
  await venues?.stop();
  await evm?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const polygon = () => sandboxChainClient(evm, 'POL');

/** A fresh user with gas and `usdcE` base units on POL, as the venue driver sees it. */
async function newUser(usdcE: bigint) {
  const { key, account, wallet, send, walletClient: sender } = await fundedTestWallet(evm, 'POL', 'USDC.E', usdcE);
  const fields: Record<string, VenueFields[string]> = { ...(await driver.initAccount(wallet)) };
  return { key, account, wallet, send, sender, fields, proxy: proxyWalletAddress(account.address) };
}
type User = Awaited<ReturnType<typeof newUser>>;

const onChain = (token: Address, owner: Address) => tokenBalance(evm, 'POL', token, owner);

/** Deposits through the driver's plan and waits until the pUSD is in the proxy; returns ms from receipt to credit. */
const deposit = (user: User, amount: bigint) => depositThroughPlan(driver, user, amount);

async function stateFile() {
  return await readDurableDocument(join(dataDir, 'venues', 'venue_e.json'));
}

/** Waits until the watcher has read past `block`. */
async function watched(block: bigint) {
  await eventually(
    async () => BigInt((await stateFile()).cursor),
    (cursor) => cursor >= block,
  );
}

async function clob(path: string, init: RequestInit = {}) {
  const response = await fetch(`${venues.urls.venue_e}${path}`, init);
  return { status: response.status, body: (await response.json()) as any };
}

describe('venue_e sandbox: account and deposits', () => {
  it('lists itself on POL with USDC.e and its rules; the account is the published proxy wallet and the owner EOA', async () => {
    const listing = venues.listing.venues.find((venue) => venue.dex === 'venue_e');
    expect(listing).toMatchObject({ url: venues.urls.venue_e, chain: 'POL', token: 'USDC.E', deposit_address: PROXY_WALLET_FACTORY });
    expect(listing!.rules).toMatchObject({
      first_deposit_minimum: '2',
      deposit: { minimum_amount: '2' },
      withdrawal: { fee: { amount: '0', fee_type: 'none' } },
    });
    const user = await newUser(0n);
    expect(user.fields).toEqual({ proxy_wallet_address: user.proxy, service_wallet_address: user.account.address });
    // pUSD is a token at its real address on the sandbox chain.
    expect(await polygon().client.readContract({ address: PUSD, abi: erc20Abi, functionName: 'symbol' })).toBe('pUSD');
  });

  it('the on-chain balances can come from an injected reader instead of an RPC URL; the driver needs one of them', async () => {
    const user = await newUser(5n * USDC);
    await deposit(user, 3n * USDC);
    const reads: string[] = [];
    const injected = new VenueEDriver({
      baseUrl: venues.urls.venue_e!,
      bridgeUrl: venues.urls.venue_e!,
      polygonBalanceOf: (token, owner) => {
        reads.push(`${token}:${owner}`);
        return onChain(token, owner);
      },
    });
    expect(await injected.balances(user.wallet, user.fields)).toEqual(await driver.balances(user.wallet, user.fields));
    expect(reads.sort()).toEqual([`${POLYGON_USDC_E}:${user.proxy}`, `${PUSD}:${user.proxy}`].sort());
    expect(() => new VenueEDriver({ baseUrl: venues.urls.venue_e! } as never)).toThrow(/needs polygonBalanceOf/);
  });

  it('the driver refuses 1.99 USDC.e before preparing anything; 2 USDC.e is one transfer to the proxy wallet', async () => {
    const user = await newUser(0n);
    await expect(driver.prepareDeposit(user.wallet, user.fields, 1_990_000n)).rejects.toMatchObject({ code: 'BELOW_MINIMUM_DEPOSIT' });
    await expect(driver.prepareDeposit(user.wallet, user.fields, 1_990_000n)).rejects.toBeInstanceOf(VenueRuleError);
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 2n * USDC);
    expect(plan).toMatchObject({ chain: 'POL', expectedCredit: 2n * USDC });
    expect(plan.calls).toEqual([
      { to: POLYGON_USDC_E, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [user.proxy, 2n * USDC] }), label: expect.any(String) },
    ]);
  });

  it('1.5 USDC.e sent anyway stays USDC.e in the proxy, not collateral; 10 USDC.e is wrapped into exactly 10 pUSD on chain', async () => {
    const user = await newUser(20n * USDC);
    const other = await newUser(0n);
    const received = await user.send(POLYGON_USDC_E, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [user.proxy, 1_500_000n] }));
    await watched(received.blockNumber);
    const latency = await deposit(user, 10n * USDC);
    expect(await driver.balances(user.wallet, user.fields)).toEqual({
      balance: 10n * USDC,
      account_value: 10n * USDC,
      available_for_withdrawal: 10n * USDC,
      extra: { proxy_wallet_usdc_e: 1_500_000n, proxy_wallet_pusd: 10n * USDC },
    });
    expect(await onChain(PUSD, user.proxy)).toBe(10n * USDC);
    expect(await onChain(POLYGON_USDC_E, user.proxy)).toBe(1_500_000n);
    expect((await driver.balances(other.wallet, other.fields)).balance).toBe(0n);
    const seen = Object.values((await stateFile()).seen as Record<string, { state: string; amount: string }>).filter((entry) => entry.amount === '1500000');
    expect(seen.map((entry) => entry.state)).toEqual(['failed']);
    console.info(`venue_e deposit-to-pUSD latency: ${latency.toFixed(0)} ms (watcher poll 100 ms; USDC.e out of the proxy, then pUSD in)`);
  });

  it("USDC.e sent to an address that is no proxy the venue knows is nobody's deposit", async () => {
    const user = await newUser(5n * USDC);
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    const receipt = await user.send(POLYGON_USDC_E, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [stranger, 3n * USDC] }));
    await watched(receipt.blockNumber);
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await onChain(POLYGON_USDC_E, stranger)).toBe(3n * USDC);
    expect(await onChain(PUSD, stranger)).toBe(0n);
  });
});

describe('venue_e sandbox: CLOB credentials', () => {
  it('initTrading returns the API credentials once and stores only the key id and nonce; the CLOB accepts them (L2) and reports the balance', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const setup = await driver.initTrading(user.wallet, user.fields, {}, false);
    expect(Object.keys(setup.oneTime).sort()).toEqual(['clob_passphrase', 'clob_secret']);
    expect(setup.stored).toEqual({ trade_initialized: true, clob_api_key: expect.stringMatching(/^[0-9a-f-]{36}$/), clob_api_nonce: '0' });
    expect(JSON.stringify(setup.stored)).not.toContain(setup.oneTime.clob_secret);
    expect(JSON.stringify(setup.stored)).not.toContain(setup.oneTime.clob_passphrase);
    Object.assign(user.fields, setup.stored);
    // The balance now comes from /balance-allowance with L2 headers.
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
    const credentials = { apiKey: setup.stored.clob_api_key as string, secret: setup.oneTime.clob_secret!, passphrase: setup.oneTime.clob_passphrase! };
    const headers = createL2Headers(user.account.address, credentials, {
      timestamp: Math.floor(Date.now() / 1000),
      method: 'GET',
      requestPath: '/auth/api-keys',
    });
    expect(await clob('/auth/api-keys', { headers })).toEqual({ status: 200, body: { apiKeys: [credentials.apiKey] } });
    // Again without replace: the CLOB refuses a second key for nonce 0 and the driver derives the same one.
    const again = await driver.initTrading(user.wallet, user.fields, {}, false);
    expect(again.oneTime).toEqual(setup.oneTime);
  });

  it('forged L1 and L2 headers are refused: another key signing for the address, a tampered HMAC, a wrong passphrase, a stale timestamp', async () => {
    const user = await newUser(0n);
    const forger = privateKeyToAccount(generatePrivateKey());
    const now = Math.floor(Date.now() / 1000);
    const forged = await createL1Headers(
      {
        address: user.account.address,
        signTypedData: (typedData) => forger.signTypedData(typedData as never),
        signMessage: (message) => forger.signMessage({ message }),
      },
      { timestamp: now },
    );
    expect(await clob('/auth/api-key', { method: 'POST', headers: forged })).toMatchObject({
      status: 401,
      body: { error: expect.stringMatching(/not by POLY_ADDRESS/) },
    });
    const stale = await createL1Headers(user.wallet, { timestamp: now - 3600 });
    expect((await clob('/auth/api-key', { method: 'POST', headers: stale })).status).toBe(401);
    expect(await clob('/auth/derive-api-key', { headers: await createL1Headers(user.wallet, { timestamp: now }) })).toEqual({
      status: 400,
      body: { error: 'Could not derive api key!' },
    });

    const created = await clob('/auth/api-key', { method: 'POST', headers: await createL1Headers(user.wallet, { timestamp: now }) });
    expect(created.status).toBe(200);
    const credentials = created.body as { apiKey: string; secret: string; passphrase: string };
    const good = createL2Headers(user.account.address, credentials, { timestamp: now, method: 'GET', requestPath: '/balance-allowance' });
    expect(await clob('/balance-allowance?asset_type=COLLATERAL', { headers: good })).toMatchObject({ status: 200, body: { balance: '0' } });
    for (const headers of [
      {
        ...good,
        POLY_SIGNATURE: createL2Headers(user.account.address, credentials, { timestamp: now, method: 'GET', requestPath: '/auth/api-keys' }).POLY_SIGNATURE,
      },
      { ...good, POLY_PASSPHRASE: 'f'.repeat(64) },
      { ...good, POLY_ADDRESS: forger.address },
      createL2Headers(user.account.address, credentials, { timestamp: now - 3600, method: 'GET', requestPath: '/balance-allowance' }),
    ]) {
      expect(await clob('/balance-allowance?asset_type=COLLATERAL', { headers })).toEqual({ status: 401, body: { error: 'Unauthorized/Invalid api key' } });
    }
  });

  it('force-replace deletes the old key at the venue (its headers stop working) and creates one for the next nonce', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const first = await driver.initTrading(user.wallet, user.fields, {}, false);
    Object.assign(user.fields, first.stored);
    const second = await driver.initTrading(user.wallet, user.fields, {}, true);
    expect(second.stored).toEqual({ trade_initialized: true, clob_api_key: expect.any(String), clob_api_nonce: '1' });
    expect(second.stored.clob_api_key).not.toBe(first.stored.clob_api_key);
    expect(second.oneTime.clob_secret).not.toBe(first.oneTime.clob_secret);
    const now = Math.floor(Date.now() / 1000);
    const old = { apiKey: first.stored.clob_api_key as string, secret: first.oneTime.clob_secret!, passphrase: first.oneTime.clob_passphrase! };
    const fresh = { apiKey: second.stored.clob_api_key as string, secret: second.oneTime.clob_secret!, passphrase: second.oneTime.clob_passphrase! };
    const read = (credentials: typeof old) =>
      clob('/auth/api-keys', { headers: createL2Headers(user.account.address, credentials, { timestamp: now, method: 'GET', requestPath: '/auth/api-keys' }) });
    expect((await read(old)).status).toBe(401);
    expect(await read(fresh)).toEqual({ status: 200, body: { apiKeys: [fresh.apiKey] } });
    Object.assign(user.fields, second.stored);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });

  it('force-replace without a stored nonce still revokes a key the venue holds for nonce 0', async () => {
    const user = await newUser(0n);
    const now = Math.floor(Date.now() / 1000);
    const made = await clob('/auth/api-key', { method: 'POST', headers: await createL1Headers(user.wallet, { timestamp: now }) });
    const replaced = await driver.initTrading(user.wallet, user.fields, {}, true);
    expect(replaced.stored).toMatchObject({ clob_api_nonce: '1' });
    const headers = createL2Headers(user.account.address, made.body, { timestamp: now, method: 'GET', requestPath: '/auth/api-keys' });
    expect((await clob('/auth/api-keys', { headers })).status).toBe(401);
    // A first setup with replace and nothing at the venue keeps nonce 0.
    const fresh = await newUser(0n);
    expect((await driver.initTrading(fresh.wallet, fresh.fields, {}, true)).stored).toMatchObject({ clob_api_nonce: '0' });
  });

  it('the official @polymarket/clob-client creates, derives, reads the balance, lists and deletes keys against the sandbox', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const host = venues.urls.venue_e!;
    const l1 = new ClobClient(host, 137, user.sender as never);
    const created = await l1.createApiKey(7);
    expect(created).toMatchObject({ key: expect.any(String), secret: expect.any(String), passphrase: expect.any(String) });
    expect(await l1.deriveApiKey(7)).toEqual(created);
    const l2 = new ClobClient(host, 137, user.sender as never, created, 1, user.proxy);
    expect(await l2.getBalanceAllowance({ asset_type: AssetType.COLLATERAL })).toMatchObject({ balance: String(10n * USDC) });
    expect(await l2.getApiKeys()).toEqual({ apiKeys: [created.key] });
    expect(await l2.deleteApiKey()).toBe('OK');
    expect(await l2.getApiKeys()).toMatchObject({ status: 401 });
  });
});

describe('venue_e sandbox: withdrawals', () => {
  it('withdraw 5 pays exactly 5 USDC.e on chain (no fee) and takes 5 pUSD out of the proxy; a retry with the same key pays nothing more', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await onChain(POLYGON_USDC_E, user.account.address);
    const key = uuidv7();
    const started = performance.now();
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, key);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);
    const status = await eventually(
      () => driver.withdrawalStatus(user.wallet, user.fields, reference),
      (s) => s.state !== 'pending',
    );
    expect(status.state).toBe('completed');
    console.info(`venue_e withdraw call to payout confirmed on chain: ${(performance.now() - started).toFixed(0)} ms`);
    expect(await onChain(POLYGON_USDC_E, user.account.address)).toBe(chainBefore + 5n * USDC);
    const receipt = await polygon().client.getTransactionReceipt({ hash: (status as { txHash: Hex }).txHash });
    expect(receipt.logs).toHaveLength(1);
    expect(BigInt(receipt.logs[0]!.data)).toBe(5n * USDC);
    expect(
      await eventually(
        () => onChain(PUSD, user.proxy),
        (pusd) => pusd === 15n * USDC,
      ),
    ).toBe(15n * USDC);

    expect(await driver.withdraw(user.wallet, user.fields, 5n * USDC, key)).toEqual({ reference });
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await onChain(POLYGON_USDC_E, user.account.address)).toBe(chainBefore + 5n * USDC);
    expect(await onChain(PUSD, user.proxy)).toBe(15n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);
    // The same key for a different amount is a conflict, not a second withdrawal.
    await expect(driver.withdraw(user.wallet, user.fields, 6n * USDC, key)).rejects.toMatchObject({ code: 'VENUE_REFUSED', status: 409 });
  });

  it('two withdrawals racing for one balance: exactly one is accepted, the proxy is never overdrawn', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const chainBefore = await onChain(POLYGON_USDC_E, user.account.address);
    const results = await Promise.allSettled([
      driver.withdraw(user.wallet, user.fields, 6n * USDC, uuidv7()),
      driver.withdraw(user.wallet, user.fields, 6n * USDC, uuidv7()),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(String((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason.message)).toMatch(/not enough balance/);
    const accepted = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ reference: string }>).value;
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, accepted.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await onChain(POLYGON_USDC_E, user.account.address)).toBe(chainBefore + 6n * USDC);
    expect(await driver.balances(user.wallet, user.fields)).toMatchObject({ balance: 4n * USDC, extra: { proxy_wallet_pusd: 4n * USDC } });
  });

  it('a forged or tampered withdrawal signature is refused and moves nothing; below the minimum and above the balance are refused', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const forger = privateKeyToAccount(generatePrivateKey());
    const withdrawalId = withdrawalIdOf(uuidv7());
    const request = {
      proxyWallet: user.proxy,
      recipientAddr: forger.address,
      toChainId: 137n,
      toTokenAddress: POLYGON_USDC_E,
      amount: 5n * USDC,
      withdrawalId,
    };
    const body = (signature: Hex, amount = request.amount) =>
      JSON.stringify({
        address: user.proxy,
        toChainId: '137',
        toTokenAddress: POLYGON_USDC_E,
        recipientAddr: forger.address,
        amount: amount.toString(),
        withdrawalId,
        signature,
      });
    const post = (text: string) => clob('/withdraw', { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    expect(await post(body(await forger.signTypedData(withdrawTypedData(request))))).toEqual({
      status: 401,
      body: { error: 'the signature is not by the owner of this wallet' },
    });
    // The owner's signature over 1 USDC.e presented for 5.
    const small = await user.account.signTypedData(withdrawTypedData({ ...request, amount: 1n * USDC }));
    expect((await post(body(small))).status).toBe(401);
    expect(await onChain(POLYGON_USDC_E, forger.address)).toBe(0n);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);

    await expect(driver.withdraw(user.wallet, user.fields, 999_999n, uuidv7())).rejects.toMatchObject({ code: 'BELOW_MINIMUM_WITHDRAWAL' });
    await expect(driver.withdraw(user.wallet, user.fields, 11n * USDC, uuidv7())).rejects.toThrow(/not enough balance/);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });
});

describe('venue_e sandbox: faults', () => {
  it('deposit fail: not wrapped (stays USDC.e in the proxy); stall: held until clear, then wrapped once', async () => {
    const user = await newUser(30n * USDC);
    await venues.setFault({ target: 'venue_e', operation: 'deposit', mode: 'fail', count: 1 });
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    await deposit(user, 5n * USDC);
    expect(await driver.balances(user.wallet, user.fields)).toMatchObject({
      balance: 5n * USDC,
      extra: { proxy_wallet_usdc_e: 10n * USDC, proxy_wallet_pusd: 5n * USDC },
    });

    await venues.setFault({ target: 'venue_e', operation: 'deposit', mode: 'stall', count: 1 });
    const receipt = await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    await watched(receipt.blockNumber);
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC);
    await venues.setFault({ target: 'venue_e', operation: 'deposit', mode: 'clear', count: 0 });
    const after = await eventually(
      () => driver.balances(user.wallet, user.fields),
      (b) => b.balance === 15n * USDC,
    );
    expect(after).toMatchObject({ balance: 15n * USDC, extra: { proxy_wallet_usdc_e: 10n * USDC, proxy_wallet_pusd: 15n * USDC } });
  });

  it('deposit refund: the depositor gets it back on chain and the proxy is left as before', async () => {
    const user = await newUser(10n * USDC);
    await venues.setFault({ target: 'venue_e', operation: 'deposit', mode: 'refund', count: 1 });
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    expect(
      await eventually(
        () => onChain(POLYGON_USDC_E, user.account.address),
        (balance) => balance > 0n,
      ),
    ).toBe(10n * USDC);
    expect(
      await eventually(
        () => onChain(POLYGON_USDC_E, user.proxy),
        (balance) => balance === 0n,
      ),
    ).toBe(0n);
    expect(await driver.balances(user.wallet, user.fields)).toMatchObject({ balance: 0n, extra: { proxy_wallet_usdc_e: 0n, proxy_wallet_pusd: 0n } });
  });

  it('withdrawal fail: refused, nothing moved, the same key works after; stall: pending until clear, then paid; refund: reported failed', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await onChain(POLYGON_USDC_E, user.account.address);
    await venues.setFault({ target: 'venue_e', operation: 'withdrawal', mode: 'fail', count: 1 });
    const key = uuidv7();
    await expect(driver.withdraw(user.wallet, user.fields, 5n * USDC, key)).rejects.toMatchObject({ code: 'VENUE_UNAVAILABLE' });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(20n * USDC);
    const retried = await driver.withdraw(user.wallet, user.fields, 5n * USDC, key);
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, retried.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await onChain(POLYGON_USDC_E, user.account.address)).toBe(chainBefore + 5n * USDC);

    await venues.setFault({ target: 'venue_e', operation: 'withdrawal', mode: 'stall', count: 1 });
    const stalled = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await driver.withdrawalStatus(user.wallet, user.fields, stalled.reference)).toEqual({ state: 'pending' });
    expect(await onChain(POLYGON_USDC_E, user.account.address)).toBe(chainBefore + 5n * USDC);
    await venues.setFault({ target: 'venue_e', operation: 'withdrawal', mode: 'clear', count: 0 });
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, stalled.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await onChain(POLYGON_USDC_E, user.account.address)).toBe(chainBefore + 10n * USDC);

    await venues.setFault({ target: 'venue_e', operation: 'withdrawal', mode: 'refund', count: 1 });
    const refunded = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    expect(await driver.withdrawalStatus(user.wallet, user.fields, refunded.reference)).toMatchObject({ state: 'failed' });
    expect(
      await eventually(
        () => driver.balances(user.wallet, user.fields),
        (b) => b.balance === 10n * USDC,
      ),
    ).toMatchObject({ balance: 10n * USDC, extra: { proxy_wallet_pusd: 10n * USDC } });
  });
});

describe('venue_e sandbox: durable state and errors', () => {
  it('keys, balances and the URL survive a restart on the same DATA_DIR; a deposit made while it was down is wrapped after', async () => {
    const user = await newUser(30n * USDC);
    await deposit(user, 10n * USDC);
    const setup = await driver.initTrading(user.wallet, user.fields, {}, false);
    Object.assign(user.fields, setup.stored);
    const url = venues.urls.venue_e;
    await venues.stop();
    await expect(driver.balances(user.wallet, user.fields)).rejects.toMatchObject({ code: 'VENUE_UNAVAILABLE' });
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 7n * USDC);
    await user.send(plan.calls[0]!.to, plan.calls[0]!.data);
    venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueEModule()] });
    expect(venues.urls.venue_e).toBe(url);
    driver = newDriver();
    // The driver reads the chain, then the CLOB: wait until both show the wrap.
    const balances = await eventually(
      () => driver.balances(user.wallet, user.fields),
      (b) => b.balance === 17n * USDC && b.extra?.proxy_wallet_pusd === 17n * USDC,
    );
    expect(balances).toMatchObject({ balance: 17n * USDC, extra: { proxy_wallet_usdc_e: 0n, proxy_wallet_pusd: 17n * USDC } });
    // The same credentials still work after the restart.
    const again = await driver.initTrading(user.wallet, user.fields, {}, false);
    expect(again.oneTime).toEqual(setup.oneTime);
  });

  it('a proxy move recorded as sending when the venue died is not made again after a restart (the proxy nonce shows it was mined)', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    await venues.stop();
    const path = join(dataDir, 'venues', 'venue_e.json');
    const state = await stateFile();
    const move = Object.values(state.venue.moves as Record<string, { proxy: string; state: string; kind: string }>).find(
      (m) => m.proxy === user.proxy && m.kind === 'wrap',
    )!;
    expect(move.state).toBe('moved');
    move.state = 'sending';
    await replaceDurableDocument(path, state);
    venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueEModule()] });
    driver = newDriver();
    const settled = await eventually(stateFile, (s) =>
      Object.values(s.venue.moves as Record<string, { proxy: string; state: string }>).every((m) => m.proxy !== user.proxy || m.state === 'moved'),
    );
    expect(
      Object.values(settled.venue.moves as Record<string, { proxy: string; state: string }>)
        .filter((m) => m.proxy === user.proxy)
        .map((m) => m.state),
    ).toEqual(['moved']);
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await driver.balances(user.wallet, user.fields)).toMatchObject({
      balance: 10n * USDC,
      extra: { proxy_wallet_usdc_e: 0n, proxy_wallet_pusd: 10n * USDC },
    });
  });

  it('a venue error is a VenueERefusedError with the CLOB error text', async () => {
    const user = await newUser(0n);
    await expect(driver.withdrawalStatus(user.wallet, user.fields, 'nope')).rejects.toMatchObject({ code: 'INVALID_REFERENCE' });
    const error = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VenueERefusedError);
    expect((error as Error).message).toMatch(/not enough balance/);
  });
});
