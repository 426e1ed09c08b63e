import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { readDurableDocument } from '../../infra/local/venues/durable-state.ts';
import { type SandboxVenues, startSandboxVenues } from '../../infra/local/venues/framework.ts';
import { VENUE_A_SANDBOX_BRIDGE, venueAModule } from '../../infra/local/venues/venue-a.ts';
import { VenueRuleError } from '../../shared/venues/driver.ts';
import { feltToHex, parseFelt, starkPublicKey } from '../../shared/venues/stark.ts';
import { ARBITRUM_USDC, VENUE_A_SANDBOX_PROFILE, VenueARefusedError } from '../../shared/venues/venue-a/api.ts';
import { saltFromKey, VenueADriver } from '../../shared/venues/venue-a/driver.ts';
import {
  accountCreationTypedData,
  buildOnboardingPayload,
  deriveExtendedKeyPair,
  RHINO_BRIDGE_ABI,
  signApiRequest,
} from '../../shared/venues/venue-a/signing.ts';
import { EXTENDED_COLLATERAL_ID, signWithdrawal } from '../../shared/venues/venue-a/withdrawal.ts';
import { depositThroughPlan, eventually, fundedTestWallet, sandboxChainClient, tokenBalance } from './support/venue-test-wallets.ts';

/** The venues' tick here (their pollMs): a wait for "nothing happens" lasts a few ticks. */
const TICK_MS = 50;
const ticks = (n: number) => new Promise((wake) => setTimeout(wake, n * TICK_MS));

/**
 * The venue_a sandbox (Extended) on the real ARB sandbox chain, driven by the production adapter
 * (VenueADriver): onboarding verified as the venue does, API keys, bridge quotes and deposits
 * credited from the bridge's logs only (minus the quote fee), Stark-signed withdrawals paid on
 * chain, faults, and durable state across a restart.
 */
const USDC = 1_000_000n;
const FEE = 10_000n; // the sandbox's 0.01 USDC quote fee (rules.ts)

let dataDir: string;
let evm: EvmSandbox;
let venues: SandboxVenues;
let driver: VenueADriver;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sandbox-venue-a-'));
  evm = await startEvmSandbox({ dataDir });
  venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueAModule()] });
  driver = new VenueADriver({ baseUrl: venues.urls.venue_a!, ...VENUE_A_SANDBOX_PROFILE });
}, 120_000);

afterAll(async () => {
  await venues?.stop();
  await evm?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const arbitrum = () => sandboxChainClient(evm, 'ARB');

/** A fresh wallet with gas and `usdc` base units on ARB; `onboard` creates its venue account through the driver. */
async function newWallet(usdc: bigint) {
  const { account, wallet, send } = await fundedTestWallet(evm, 'ARB', 'USDC', usdc);
  return { account, wallet, send };
}

async function newUser(usdc: bigint) {
  const user = await newWallet(usdc);
  return { ...user, fields: await driver.initAccount(user.wallet) };
}

type User = Awaited<ReturnType<typeof newUser>>;

const usdcOnChain = (owner: Address) => tokenBalance(evm, 'ARB', ARBITRUM_USDC, owner);

/** Deposits through the driver's plan and waits for the credit; returns the ms from the last receipt to the credit. */
const deposit = (user: User, amount: bigint) => depositThroughPlan(driver, user, amount);

async function api(method: string, path: string, options: { headers?: Record<string, string>; body?: unknown; query?: Record<string, string> } = {}) {
  const query = options.query ? `?${new URLSearchParams(options.query)}` : '';
  const response = await fetch(`${venues.urls.venue_a}${path}${query}`, {
    method,
    headers: { 'content-type': 'application/json', ...options.headers },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, json: (await response.json()) as any };
}

describe('venue_a sandbox: onboarding', () => {
  it('lists itself with the bridge as deposit address and its rules', () => {
    const listing = venues.listing.venues.find((entry) => entry.dex === 'venue_a');
    expect(listing).toMatchObject({ dex: 'venue_a', url: venues.urls.venue_a, chain: 'ARB', token: 'USDC', deposit_address: VENUE_A_SANDBOX_BRIDGE });
    expect(listing!.rules).toMatchObject({ first_deposit_minimum: '1', deposit: { minimum_amount: '1', fee: { amount: '0.01', fee_type: 'quote' } } });
  });

  it('a fresh wallet is onboarded: the stored fields are the account id, vault, the Stark key its AccountCreation signature derives, and an API key', async () => {
    const user = await newWallet(0n);
    const fields = await driver.initAccount(user.wallet);
    const expectedKey = deriveExtendedKeyPair(
      await user.account.signTypedData(accountCreationTypedData(VENUE_A_SANDBOX_PROFILE.signing.signingDomain, user.account.address, 0)),
    );
    expect(Object.keys(fields).sort()).toEqual(['account_id', 'api_key', 'stark_public_key', 'vault']);
    expect(fields.stark_public_key).toBe(feltToHex(expectedKey.publicKey));
    expect(typeof fields.account_id).toBe('number');
    expect(typeof fields.vault).toBe('number');
    // The venue answers the same account to the L1-signed list and the balance to the API key.
    const path = '/api/v1/user/accounts';
    const listed = await api('GET', path, { headers: await signApiRequest(user.wallet, path, new Date()) });
    expect(listed.json).toMatchObject({ status: 'OK', data: [{ id: fields.account_id, l2Vault: fields.vault, accountIndex: 0, apiKeys: [fields.api_key] }] });
    expect(parseFelt(listed.json.data[0].l2Key)).toBe(expectedKey.publicKey);
    expect(await driver.balances(user.wallet, fields)).toEqual({ balance: 0n, account_value: 0n, available_for_withdrawal: 0n });

    // Again: onboarding answers 409, the driver finds the same account and issues another key.
    const again = await driver.initAccount(user.wallet);
    expect({ ...again, api_key: null }).toEqual({ ...fields, api_key: null });
    expect(again.api_key).not.toBe(fields.api_key);
  });

  it('forged onboarding is refused: another wallet’s registration signature, a wrong L2 proof, the live venue’s domain', async () => {
    const user = await newWallet(0n);
    const forger = await newWallet(0n);
    const keyPair = deriveExtendedKeyPair(
      await user.account.signTypedData(accountCreationTypedData(VENUE_A_SANDBOX_PROFILE.signing.signingDomain, user.account.address, 0)),
    );
    const genuine = await buildOnboardingPayload(user.wallet, VENUE_A_SANDBOX_PROFILE.signing, keyPair, { now: new Date() });
    const forged = await buildOnboardingPayload({ ...forger.wallet, address: user.account.address }, VENUE_A_SANDBOX_PROFILE.signing, keyPair, {
      now: new Date(),
    });
    const refusedL1 = await api('POST', '/auth/onboard', { body: forged });
    expect(refusedL1.status).toBe(401);
    expect(refusedL1.json).toMatchObject({ status: 'ERR', error: { message: expect.stringMatching(/did not sign/) } });
    const otherKey = { ...genuine, l2Key: feltToHex(starkPublicKey(12345n)) };
    expect((await api('POST', '/auth/onboard', { body: otherKey })).json.error.message).toMatch(/L2 key proof/);
    const live = await buildOnboardingPayload(
      user.wallet,
      { signingDomain: 'extended.exchange', onboardingHost: 'https://api.starknet.extended.exchange' },
      keyPair,
      { now: new Date() },
    );
    expect((await api('POST', '/auth/onboard', { body: live })).status).toBe(401);
    // Nothing was created by those; the genuine payload then succeeds once.
    const accepted = await api('POST', '/auth/onboard', { body: genuine });
    expect(accepted.json).toMatchObject({ status: 'OK', data: { l1Address: user.account.address.toLowerCase(), defaultAccount: { accountIndex: 0 } } });
    expect((await api('POST', '/auth/onboard', { body: genuine })).status).toBe(409);
  });

  it('account endpoints need the wallet’s L1 signature over this path, and the balance needs a valid API key', async () => {
    const user = await newUser(0n);
    const path = '/api/v1/user/account/api-key';
    const wrongPath = await signApiRequest(user.wallet, '/api/v1/user/accounts', new Date());
    const refused = await api('POST', path, { headers: { ...wrongPath, 'X-X10-ACTIVE-ACCOUNT': String(user.fields.account_id) }, body: { description: 'x' } });
    expect(refused.status).toBe(404); // the signature over another path recovers another (unknown) wallet
    const stale = await signApiRequest(user.wallet, path, new Date(Date.now() - 3_600_000));
    expect(
      (await api('POST', path, { headers: { ...stale, 'X-X10-ACTIVE-ACCOUNT': String(user.fields.account_id) }, body: { description: 'x' } })).status,
    ).toBe(401);
    expect((await api('GET', '/api/v1/user/balance', { headers: { 'X-Api-Key': 'not-a-key' } })).json).toMatchObject({
      status: 'ERR',
      error: { message: expect.stringMatching(/X-Api-Key/) },
    });
  });
});

describe('venue_a sandbox: deposits', () => {
  it('the driver refuses 0.99 USDC before preparing anything; a plan is approve + depositWithId with the committed quote id', async () => {
    const user = await newUser(0n);
    await expect(driver.prepareDeposit(user.wallet, user.fields, 990_000n)).rejects.toMatchObject({ code: 'BELOW_MINIMUM_DEPOSIT' });
    await expect(driver.prepareDeposit(user.wallet, user.fields, 990_000n)).rejects.toBeInstanceOf(VenueRuleError);
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 5n * USDC);
    expect(plan).toMatchObject({ chain: 'ARB', expectedCredit: 5n * USDC - FEE, reference: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(plan.calls.map((call) => [call.to, call.data])).toEqual([
      [ARBITRUM_USDC, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [VENUE_A_SANDBOX_BRIDGE, 5n * USDC] })],
      [
        VENUE_A_SANDBOX_BRIDGE,
        encodeFunctionData({ abi: RHINO_BRIDGE_ABI, functionName: 'depositWithId', args: [ARBITRUM_USDC, 5n * USDC, BigInt(`0x${plan.reference}`)] }),
      ],
    ]);
  });

  it('10 USDC through the bridge is credited to the quote’s account minus the 0.01 fee, to the base unit; the operation shows the deposit transaction', async () => {
    const user = await newUser(20n * USDC);
    const latency = await deposit(user, 10n * USDC);
    expect(await driver.balances(user.wallet, user.fields)).toEqual({ balance: 9_990_000n, account_value: 9_990_000n, available_for_withdrawal: 9_990_000n });
    expect(await usdcOnChain(user.account.address)).toBe(10n * USDC);
    const operations = await api('GET', '/api/v1/user/assetOperations', { headers: { 'X-Api-Key': String(user.fields.api_key) } });
    expect(operations.json.data).toEqual([
      expect.objectContaining({ type: 'DEPOSIT', status: 'COMPLETED', amount: '10', fee: '0.01', transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) }),
    ]);
    console.info(`venue_a deposit-to-credit latency: ${latency.toFixed(0)} ms (watcher poll 100 ms)`);
  });

  it('only the chain counts: a deposit without a committed quote, of another amount, or reusing a quote is sent back, not credited', async () => {
    const user = await newUser(40n * USDC);
    const depositCall = (amount: bigint, id: bigint) =>
      encodeFunctionData({ abi: RHINO_BRIDGE_ABI, functionName: 'depositWithId', args: [ARBITRUM_USDC, amount, id] });
    await user.send(ARBITRUM_USDC, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [VENUE_A_SANDBOX_BRIDGE, 40n * USDC] }));
    // An id the venue never issued.
    await user.send(VENUE_A_SANDBOX_BRIDGE, depositCall(5n * USDC, 12345n));
    // A real quote for 5 USDC, deposited as 6.
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 5n * USDC);
    await user.send(VENUE_A_SANDBOX_BRIDGE, depositCall(6n * USDC, BigInt(`0x${plan.reference}`)));
    await eventually(
      () => usdcOnChain(user.account.address),
      (balance) => balance === 40n * USDC,
    );
    expect(await usdcOnChain(user.account.address)).toBe(40n * USDC);
    // The same quote used correctly is credited once; a second deposit on it goes back.
    await user.send(VENUE_A_SANDBOX_BRIDGE, depositCall(5n * USDC, BigInt(`0x${plan.reference}`)));
    await eventually(
      () => driver.balances(user.wallet, user.fields),
      (b) => b.balance > 0n,
    );
    await user.send(VENUE_A_SANDBOX_BRIDGE, depositCall(5n * USDC, BigInt(`0x${plan.reference}`)));
    expect(
      await eventually(
        () => usdcOnChain(user.account.address),
        (balance) => balance === 35n * USDC,
      ),
    ).toBe(35n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC - FEE);
  });
});

describe('venue_a sandbox: trading setup', () => {
  it('returns the Stark private key of the account’s registered key; replace rotates the API key and the venue revokes the old one', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const first = await driver.initTrading(user.wallet, user.fields, {}, false);
    expect(Object.keys(first.oneTime)).toEqual(['stark_private_key']);
    expect(first.stored).toEqual({ trade_initialized: true, stark_public_key: user.fields.stark_public_key });
    const privateKey = parseFelt(first.oneTime.stark_private_key!);
    expect(feltToHex(starkPublicKey(privateKey))).toBe(user.fields.stark_public_key);

    // The venue recognises the key: a withdrawal settlement signed with it (not through the driver) is accepted.
    const accounts = await api('GET', '/api/v1/user/accounts', { headers: await signApiRequest(user.wallet, '/api/v1/user/accounts', new Date()) });
    const account = accounts.json.data[0];
    const apiKey = { 'X-Api-Key': String(user.fields.api_key) };
    const quote = await api('GET', '/api/v1/user/bridge/quote', { headers: apiKey, query: { chainIn: 'STRK', chainOut: 'ARB', amount: '2' } });
    await api('POST', '/api/v1/user/bridge/quote', { headers: apiKey, query: { id: quote.json.data.id } });
    const args = {
      recipient: parseFelt(account.bridgeStarknetAddress),
      positionId: BigInt(account.l2Vault),
      collateralId: EXTENDED_COLLATERAL_ID,
      amount: 2n * USDC,
      expirationSeconds: BigInt(Math.floor(Date.now() / 1000) + 86_400),
      salt: 77n,
    };
    const body = (signerKey: bigint) => {
      const signature = signWithdrawal(args, VENUE_A_SANDBOX_PROFILE.starknetDomain, { privateKey: signerKey, publicKey: starkPublicKey(signerKey) });
      return {
        accountId: account.id,
        amount: '2',
        settlement: {
          recipient: feltToHex(args.recipient),
          positionId: account.l2Vault,
          collateralId: '0x1',
          amount: 2_000_000,
          expiration: { seconds: Number(args.expirationSeconds) },
          salt: 77,
          signature: { r: feltToHex(signature.r), s: feltToHex(signature.s) },
        },
        chainId: 'ARB',
        quoteId: quote.json.data.id,
        asset: 'USD',
      };
    };
    // Forged: signed by another Stark key.
    expect(await api('POST', '/api/v1/user/withdrawal', { headers: apiKey, body: body(424242n) })).toMatchObject({
      status: 401,
      json: { status: 'ERR', error: { message: 'Invalid settlement signature' } },
    });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC - FEE);
    expect(await api('POST', '/api/v1/user/withdrawal', { headers: apiKey, body: body(privateKey) })).toMatchObject({
      status: 200,
      json: { status: 'OK', data: expect.any(Number) },
    });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(8n * USDC - FEE);

    const second = await driver.initTrading(user.wallet, user.fields, {}, true);
    expect(second.oneTime.stark_private_key).toBe(first.oneTime.stark_private_key); // deterministic per wallet + account index
    expect(second.stored.api_key).toEqual(expect.any(String));
    expect(second.stored.api_key).not.toBe(user.fields.api_key);
    await expect(driver.balances(user.wallet, user.fields)).rejects.toMatchObject({ code: 'VENUE_REFUSED', httpStatus: 401 });
    const renewed = { ...user.fields, api_key: second.stored.api_key! };
    expect((await driver.balances(user.wallet, renewed)).balance).toBe(8n * USDC - FEE);
    const listed = await api('GET', '/api/v1/user/accounts', { headers: await signApiRequest(user.wallet, '/api/v1/user/accounts', new Date()) });
    expect(listed.json.data[0].apiKeys).toEqual([second.stored.api_key]);
  });

  it('a wallet without a venue account cannot set up trading', async () => {
    const user = await newWallet(0n);
    await expect(driver.initTrading(user.wallet, { account_id: 1, vault: 1, stark_public_key: '0x1', api_key: 'x' }, {}, false)).rejects.toMatchObject({
      code: 'VENUE_ACCOUNT_MISSING',
    });
  });
});

describe('venue_a sandbox: withdrawals', () => {
  it('withdraw 5 pays exactly 4.99 on chain to the wallet; the fee is applied once; a retry with the same key pays nothing more', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    const key = 'withdrawal-key-1';
    const started = performance.now();
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, key);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC - FEE);
    const status = await eventually(
      () => driver.withdrawalStatus(user.wallet, user.fields, reference),
      (s) => s.state !== 'pending',
    );
    expect(status.state).toBe('completed');
    console.info(`venue_a withdraw call to payout confirmed on chain: ${(performance.now() - started).toFixed(0)} ms`);
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 5n * USDC - FEE);
    const receipt = await arbitrum().client.getTransactionReceipt({ hash: (status as { txHash: Hex }).txHash });
    expect(receipt.logs).toHaveLength(1);
    expect(BigInt(receipt.logs[0]!.data)).toBe(5n * USDC - FEE);

    expect(await driver.withdraw(user.wallet, user.fields, 5n * USDC, key)).toEqual({ reference });
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 5n * USDC - FEE);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC - FEE);
    expect(saltFromKey(key)).toBe(saltFromKey(key));
  });

  it('below the minimum is refused by the driver and by the venue’s quote; more than the balance is refused', async () => {
    const user = await newUser(5n * USDC);
    await deposit(user, 5n * USDC);
    await expect(driver.withdraw(user.wallet, user.fields, 999_999n, 'k-small')).rejects.toMatchObject({ code: 'BELOW_MINIMUM_WITHDRAWAL' });
    const quote = await api('GET', '/api/v1/user/bridge/quote', {
      headers: { 'X-Api-Key': String(user.fields.api_key) },
      query: { chainIn: 'STRK', chainOut: 'ARB', amount: '0.5' },
    });
    expect(quote.json).toMatchObject({ status: 'ERR', error: { message: expect.stringMatching(/minimum is 1 USDC/) } });
    await expect(driver.withdraw(user.wallet, user.fields, 6n * USDC, 'k-big')).rejects.toThrow(/Insufficient balance/);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC - FEE);
  });
});

describe('venue_a sandbox: faults', () => {
  it('deposit fail: seen, not credited; stall: held until clear, then credited once', async () => {
    const user = await newUser(30n * USDC);
    await venues.setFault({ target: 'venue_a', operation: 'deposit', mode: 'fail', count: 1 });
    const failed = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    for (const call of failed.calls) await user.send(call.to, call.data);
    await deposit(user, 5n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC - FEE);

    await venues.setFault({ target: 'venue_a', operation: 'deposit', mode: 'stall', count: 1 });
    const stalled = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    let receipt: Awaited<ReturnType<typeof user.send>> | undefined;
    for (const call of stalled.calls) receipt = await user.send(call.to, call.data);
    await eventually(
      async () => (await readDurableDocument(join(dataDir, 'venues', 'venue_a.json'))).cursor,
      (cursor) => BigInt(cursor) >= receipt!.blockNumber,
    );
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC - FEE);
    expect(await venues.setFault({ target: 'venue_a', operation: 'deposit', mode: 'clear', count: 0 })).toBeNull();
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC - 2n * FEE);
  });

  it('withdrawal fail: refused, nothing debited, the same key then withdraws once; stall: pending until clear, then paid', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.account.address);
    await venues.setFault({ target: 'venue_a', operation: 'withdrawal', mode: 'fail', count: 1 });
    await expect(driver.withdraw(user.wallet, user.fields, 5n * USDC, 'fail-key')).rejects.toBeInstanceOf(VenueARefusedError);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(20n * USDC - FEE);
    const retried = await driver.withdraw(user.wallet, user.fields, 5n * USDC, 'fail-key');
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, retried.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 5n * USDC - FEE);

    await venues.setFault({ target: 'venue_a', operation: 'withdrawal', mode: 'stall', count: 1 });
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, 'stall-key');
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await driver.withdrawalStatus(user.wallet, user.fields, reference)).toEqual({ state: 'pending' });
    await venues.setFault({ target: 'venue_a', operation: 'withdrawal', mode: 'clear', count: 0 });
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await usdcOnChain(user.account.address)).toBe(chainBefore + 10n * USDC - 2n * FEE);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC - FEE);
  });
});

describe('venue_a sandbox: refunds, concurrency, an unreachable venue', () => {
  it('deposit refund: the vault sends the deposit back on chain, nothing credited; withdrawal refund: reported failed, balance kept', async () => {
    const user = await newUser(10n * USDC);
    await venues.setFault({ target: 'venue_a', operation: 'deposit', mode: 'refund', count: 1 });
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    for (const call of plan.calls) await user.send(call.to, call.data);
    expect(
      await eventually(
        () => usdcOnChain(user.account.address),
        (balance) => balance > 0n,
      ),
    ).toBe(10n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(0n);

    await deposit(user, 10n * USDC);
    await venues.setFault({ target: 'venue_a', operation: 'withdrawal', mode: 'refund', count: 1 });
    const { reference } = await driver.withdraw(user.wallet, user.fields, 5n * USDC, 'refund-key');
    expect(await driver.withdrawalStatus(user.wallet, user.fields, reference)).toEqual({ state: 'failed', reason: 'venue_a rejected the withdrawal' });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC - FEE);
    expect(await usdcOnChain(user.account.address)).toBe(0n);
  });

  it('concurrent initAccount calls for one wallet make one venue account', async () => {
    const user = await newWallet(0n);
    const results = await Promise.all([driver.initAccount(user.wallet), driver.initAccount(user.wallet), driver.initAccount(user.wallet)]);
    expect(new Set(results.map((fields) => fields.account_id)).size).toBe(1);
    const state = await readDurableDocument(join(dataDir, 'venues', 'venue_a.json'));
    expect(Object.values(state.venue.accounts as Record<string, { wallet: string }>).filter((a) => a.wallet === user.account.address)).toHaveLength(1);
  });

  it('an unreachable venue is VENUE_UNAVAILABLE, a refusal is VENUE_REFUSED', async () => {
    const user = await newUser(0n);
    const down = new VenueADriver({ baseUrl: 'http://127.0.0.1:9', ...VENUE_A_SANDBOX_PROFILE, timeoutMs: 2_000 });
    await expect(down.balances(user.wallet, user.fields)).rejects.toMatchObject({ code: 'VENUE_UNAVAILABLE' });
    await expect(down.initAccount(user.wallet)).rejects.toMatchObject({ code: 'VENUE_UNAVAILABLE' });
    await expect(driver.balances(user.wallet, { ...user.fields, api_key: 'revoked' })).rejects.toMatchObject({ code: 'VENUE_REFUSED' });
  });
});

describe('venue_a sandbox: durable state', () => {
  it('accounts, API keys, balances and the URL survive a restart; a deposit made while it was down is credited after', async () => {
    const user = await newUser(30n * USDC);
    await deposit(user, 10n * USDC);
    const url = venues.urls.venue_a;
    // Committed before the stop, sent while the venue is down.
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 7n * USDC);
    await venues.stop();
    for (const call of plan.calls) await user.send(call.to, call.data);
    venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueAModule()] });
    expect(venues.urls.venue_a).toBe(url);
    driver = new VenueADriver({ baseUrl: venues.urls.venue_a!, ...VENUE_A_SANDBOX_PROFILE });
    const balances = await eventually(
      () => driver.balances(user.wallet, user.fields),
      (b) => b.balance === 17n * USDC - 2n * FEE,
    );
    expect(balances.balance).toBe(17n * USDC - 2n * FEE);
    expect((await driver.initAccount(user.wallet)).account_id).toBe(user.fields.account_id);
  });
});
