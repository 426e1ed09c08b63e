import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveFromEthSigner } from '@paradex/sdk/dist/account.js';
import { buildConfig } from '@paradex/sdk/dist/config.js';
import { v7 as uuidv7 } from 'uuid';
import { type Address, encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { generatePrivateKey } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sandboxStarkgateBridgeArtifact } from '../../infra/local/contracts/sandbox-starkgate-bridge.artifact.ts';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { readDurableDocument } from '../../infra/local/venues/durable-state.ts';
import { type SandboxVenues, startSandboxVenues } from '../../infra/local/venues/framework.ts';
import { VENUE_C_BRIDGE, venueCModule } from '../../infra/local/venues/venue-c.ts';
import { type VenueFields, VenueRuleError } from '../../shared/venues/driver.ts';
import { feltToHex, parseFelt, starknetTypedDataHash, starkPublicKey, starkSign } from '../../shared/venues/stark.ts';
import { STARKGATE_DEPOSIT_FEE_WEI, VenueCDriver, VenueCRefusedError } from '../../shared/venues/venue-c/driver.ts';
import {
  authHeaders,
  deriveParadexKeyPair,
  onboardingHeaders,
  paradexAccountAddress,
  STARKGATE_BRIDGE_ABI,
  starkKeyTypedData,
} from '../../shared/venues/venue-c/signing.ts';
import { formatWithdrawalSignature, withdrawalTypedData } from '../../shared/venues/venue-c/withdrawal.ts';
import { depositThroughPlan, eventually, fundedTestWallet, sandboxChainClient, tokenBalance, keyWallet as walletOf } from './support/venue-test-wallets.ts';

/** The venues' tick here (their pollMs): a wait for "nothing happens" lasts a few ticks. */
const TICK_MS = 50;
const ticks = (n: number) => new Promise((wake) => setTimeout(wake, n * TICK_MS));

/**
 * The venue_c sandbox (Paradex) on the real ETH sandbox chain (anvil), driven by the production
 * adapter (VenueCDriver): onboarding with the STARK Key derivation (checked against @paradex/sdk),
 * Stark signatures verified as Paradex does, deposits through the StarkGate-like bridge credited
 * from the chain's Deposit events, subkeys, withdrawals paid on chain from the vault, faults, and
 * durable state across a restart.
 */
const USDC = 1_000_000n;
const ETHEREUM_USDC: Address = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';

let dataDir: string;
let evm: EvmSandbox;
let venues: SandboxVenues;
let driver: VenueCDriver;
let baseUrl: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sandbox-venue-c-'));
  evm = await startEvmSandbox({ dataDir });
  venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueCModule()] });
  baseUrl = venues.urls.venue_c!;
  driver = new VenueCDriver({ baseUrl });
}, 120_000);

afterAll(async () => {
  await venues?.stop();
  await evm?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const ethereum = () => sandboxChainClient(evm, 'ETH');

/** A fresh user with gas and `usdc` base units on ETH, onboarded through the driver. */
async function newUser(usdc: bigint) {
  const { key, wallet, send } = await fundedTestWallet(evm, 'ETH', 'USDC', usdc);
  return { key, wallet, send, fields: await driver.initAccount(wallet) };
}
type User = Awaited<ReturnType<typeof newUser>>;

const usdcOnChain = (owner: Address) => tokenBalance(evm, 'ETH', ETHEREUM_USDC, owner);

/** Deposits through the driver's plan (approve + bridge deposit) and waits for the credit. */
const deposit = (user: User, amount: bigint) => depositThroughPlan(driver, user, amount);

async function api(method: string, path: string, init: { headers?: Record<string, string>; jwt?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = { ...init.headers, ...(init.jwt ? { authorization: `Bearer ${init.jwt}` } : {}), 'content-type': 'application/json' };
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** A JWT for `account` signed by `privateKey` (the main key or a subkey), as a client would get it. */
async function jwtFor(account: bigint, privateKey: bigint) {
  const timestamp = Math.floor(Date.now() / 1000);
  return api('POST', '/v1/auth', {
    headers: authHeaders({ account, privateKey, starknetChainId: 'PRIVATE_SN_PARACLEAR_MAINNET', timestamp, expiration: timestamp + 60 }),
  });
}

async function mainKeyOf(user: User) {
  const keyPair = deriveParadexKeyPair(await user.wallet.signTypedData(starkKeyTypedData(1)));
  return { ...keyPair, account: parseFelt(String(user.fields.l2_address)) };
}

describe('venue_c sandbox: system config and onboarding', () => {
  it('lists itself on ETH with the bridge; /v1/system/config publishes the bridge, which is installed with the vault as operator', async () => {
    expect(venues.listing.venues[0]).toMatchObject({
      dex: 'venue_c',
      chain: 'ETH',
      token: 'USDC',
      deposit_address: VENUE_C_BRIDGE,
      rules: { first_deposit_minimum: '1' },
    });
    const config = await api('GET', '/v1/system/config');
    expect(config.body).toMatchObject({ l1_chain_id: '1', starknet_chain_id: 'PRIVATE_SN_PARACLEAR_MAINNET', paraclear_decimals: 8 });
    expect(config.body.bridged_tokens).toEqual([
      expect.objectContaining({ symbol: 'USDC', decimals: 6, l1_token_address: ETHEREUM_USDC, l1_bridge_address: VENUE_C_BRIDGE }),
    ]);
    const client = ethereum().client;
    expect(await client.readContract({ address: VENUE_C_BRIDGE, abi: sandboxStarkgateBridgeArtifact.abi, functionName: 'initialized' })).toBe(true);
    expect(await client.readContract({ address: VENUE_C_BRIDGE, abi: sandboxStarkgateBridgeArtifact.abi, functionName: 'operator' })).toBe(
      config.body.l1_operator_address,
    );
  });

  it('a fresh wallet onboards: l2_address and l2_public_key are what @paradex/sdk derives from the same wallet and the venue config; onboarding again is idempotent', async () => {
    const user = await newUser(0n);
    expect(Object.keys(user.fields).sort()).toEqual(['l2_address', 'l2_public_key']);
    const rawConfig = (await api('GET', '/v1/system/config')).body;
    const sdk = await deriveFromEthSigner({
      config: buildConfig({ ...rawConfig, starknet_gateway_url: '', starknet_fullnode_rpc_url: '', block_explorer_url: '' }),
      signer: {
        signTypedData: (typedData: { domain: { chainId: string } }) =>
          user.wallet.signTypedData({ ...typedData, domain: { ...typedData.domain, chainId: Number(typedData.domain.chainId) } } as never),
      } as never,
    });
    expect(parseFelt(String(user.fields.l2_address))).toBe(BigInt(sdk.address));
    expect(parseFelt(String(user.fields.l2_public_key))).toBe(starkPublicKey(BigInt(sdk.privateKey)));
    expect(await driver.initAccount(user.wallet)).toEqual(user.fields);
    expect(await driver.balances(user.wallet, user.fields)).toEqual({ balance: 0n, account_value: 0n, available_for_withdrawal: 0n });
  });

  it("forged onboarding is refused and onboards nothing: another key signing, or an account that is not the public key's address", async () => {
    const wallet = walletOf(generatePrivateKey());
    const keyPair = deriveParadexKeyPair(await wallet.signTypedData(starkKeyTypedData(1)));
    const config = (await api('GET', '/v1/system/config')).body;
    const account = paradexAccountAddress(keyPair.publicKey, config);
    const forger = deriveParadexKeyPair(await walletOf(generatePrivateKey()).signTypedData(starkKeyTypedData(1)));
    const forged = onboardingHeaders({
      ethereumAccount: wallet.address,
      account,
      keyPair: { publicKey: keyPair.publicKey, privateKey: forger.privateKey },
      starknetChainId: config.starknet_chain_id,
    });
    expect(await api('POST', '/v1/onboarding', { headers: forged, body: { public_key: feltToHex(keyPair.publicKey) } })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_STARKNET_SIGNATURE' },
    });
    const otherAccount = onboardingHeaders({ ethereumAccount: wallet.address, account: account + 1n, keyPair, starknetChainId: config.starknet_chain_id });
    expect(await api('POST', '/v1/onboarding', { headers: otherAccount, body: { public_key: feltToHex(keyPair.publicKey) } })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_STARKNET_ADDRESS' },
    });
    expect(await jwtFor(account, keyPair.privateKey)).toMatchObject({
      status: 400,
      body: { error: 'NOT_ONBOARDED', message: 'User has never called /onboarding endpoint' },
    });
  });

  it("auth: a key that is not the account's gets no JWT; endpoints without a valid JWT answer 401 { error, message }", async () => {
    const user = await newUser(0n);
    const stranger = deriveParadexKeyPair(await walletOf(generatePrivateKey()).signTypedData(starkKeyTypedData(1)));
    expect(await jwtFor(parseFelt(String(user.fields.l2_address)), stranger.privateKey)).toMatchObject({
      status: 401,
      body: { error: 'STARKNET_SIGNATURE_VERIFICATION_FAILED' },
    });
    expect(await api('GET', '/v1/balance')).toMatchObject({ status: 401, body: { error: 'UNAUTHORIZED_ERROR' } });
    const { body } = await jwtFor(parseFelt(String(user.fields.l2_address)), (await mainKeyOf(user)).privateKey);
    const [header, payload, signature] = (body.jwt_token as string).split('.');
    const tampered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: '0x1' })).toString('base64url');
    expect(await api('GET', '/v1/balance', { jwt: `${header}.${tampered}.${signature}` })).toMatchObject({ status: 401 });
    expect(await api('GET', '/v1/balance', { jwt: body.jwt_token })).toMatchObject({ status: 200, body: { results: [{ token: 'USDC', size: '0' }] } });
  });
});

describe('venue_c sandbox: deposits through the L1 bridge', () => {
  it('the driver refuses below 1 USDC and above 500,000 USDC per transaction before preparing anything; the plan is approve + deposit with the message fee', async () => {
    const user = await newUser(0n);
    await expect(driver.prepareDeposit(user.wallet, user.fields, 999_999n)).rejects.toMatchObject({ code: 'BELOW_MINIMUM_DEPOSIT' });
    await expect(driver.prepareDeposit(user.wallet, user.fields, 500_000n * USDC + 1n)).rejects.toMatchObject({ code: 'ABOVE_MAXIMUM_DEPOSIT' });
    await expect(driver.prepareDeposit(user.wallet, {}, 5n * USDC)).rejects.toBeInstanceOf(VenueRuleError);
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 500_000n * USDC);
    expect(plan).toEqual({
      chain: 'ETH',
      expectedCredit: 500_000n * USDC,
      calls: [
        {
          to: ETHEREUM_USDC,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [VENUE_C_BRIDGE, 500_000n * USDC] }),
          label: expect.any(String),
        },
        {
          to: VENUE_C_BRIDGE,
          data: encodeFunctionData({
            abi: STARKGATE_BRIDGE_ABI,
            functionName: 'deposit',
            args: [ETHEREUM_USDC, 500_000n * USDC, parseFelt(String(user.fields.l2_address))],
          }),
          value: STARKGATE_DEPOSIT_FEE_WEI,
          label: expect.any(String),
        },
      ],
    });
    expect(STARKGATE_DEPOSIT_FEE_WEI).toBe(
      await ethereum().client.readContract({ address: VENUE_C_BRIDGE, abi: STARKGATE_BRIDGE_ABI, functionName: 'estimateDepositFeeWei' }),
    );
  });

  it('10 USDC is credited exactly to the L2 recipient, not to the L1 sender; the transfer is listed with its L1 hash', async () => {
    const user = await newUser(20n * USDC);
    const other = await newUser(0n);
    const bridgeEthBefore = await ethereum().client.getBalance({ address: VENUE_C_BRIDGE });
    const latency = await deposit(user, 10n * USDC);
    console.info(`venue_c deposit-to-credit latency: ${latency.toFixed(0)} ms (watcher poll 100 ms)`);
    expect(await driver.balances(user.wallet, user.fields)).toEqual({ balance: 10n * USDC, account_value: 10n * USDC, available_for_withdrawal: 10n * USDC });
    expect(await usdcOnChain(user.wallet.address)).toBe(10n * USDC);
    expect(await ethereum().client.getBalance({ address: VENUE_C_BRIDGE })).toBe(bridgeEthBefore + STARKGATE_DEPOSIT_FEE_WEI);

    // The same wallet pays a deposit for another L2 account: credited to that account.
    const plan = await driver.prepareDeposit(other.wallet, other.fields, 2n * USDC);
    for (const call of plan.calls) await user.send(call.to, call.data, call.value);
    expect(
      (
        await eventually(
          () => driver.balances(other.wallet, other.fields),
          (b) => b.balance > 0n,
        )
      ).balance,
    ).toBe(2n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);

    const main = await mainKeyOf(user);
    const { body } = await jwtFor(main.account, main.privateKey);
    const listed = await api('GET', '/v1/transfers', { jwt: body.jwt_token });
    expect(listed.body.results).toEqual([
      expect.objectContaining({
        kind: 'DEPOSIT',
        direction: 'IN',
        status: 'COMPLETED',
        amount: '10',
        token: 'USDC',
        bridge: 'STARKGATE',
        external_account: user.wallet.address,
      }),
    ]);
    expect(listed.body.results[0].external_txn_hash).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('below the minimum or above 500,000 USDC sent by hand: not credited, returned to the sender by the vault (sandbox choice)', async () => {
    const held = 500_001n * USDC;
    const user = await newUser(held);
    await user.send(ETHEREUM_USDC, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [VENUE_C_BRIDGE, held] }));
    const recipient = parseFelt(String(user.fields.l2_address));
    for (const amount of [500_000n, 500_000n * USDC + 1n]) {
      await user.send(
        VENUE_C_BRIDGE,
        encodeFunctionData({ abi: STARKGATE_BRIDGE_ABI, functionName: 'deposit', args: [ETHEREUM_USDC, amount, recipient] }),
        STARKGATE_DEPOSIT_FEE_WEI,
      );
      expect(await usdcOnChain(user.wallet.address)).toBe(held - amount);
      expect(
        await eventually(
          () => usdcOnChain(user.wallet.address),
          (b) => b === held,
        ),
      ).toBe(held);
    }
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(0n);
    const main = await mainKeyOf(user);
    const listed = await api('GET', '/v1/transfers', { jwt: (await jwtFor(main.account, main.privateKey)).body.jwt_token });
    expect(listed.body.results.map((t: { status: string; failure_reason: string }) => [t.status, t.failure_reason.split(';')[0]])).toEqual([
      ['FAILED', 'Deposit above the maximum deposit of 500000 USDC per transaction'],
      ['FAILED', 'Deposit below the minimum deposit of 1 USDC'],
    ]);
  });
});

describe('venue_c sandbox: trading subkeys', () => {
  it('initTrading registers a fresh subkey under the name; the venue recognises it; replace revokes the old key', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const first = await driver.initTrading(user.wallet, user.fields, { name: 'bot' }, false);
    expect(Object.keys(first.oneTime)).toEqual(['subkey_private_key']);
    const firstKey = parseFelt(first.oneTime.subkey_private_key!);
    expect(first.stored).toEqual({ trade_initialized: true, subkey_name: 'bot', subkey_public_key: feltToHex(starkPublicKey(firstKey)) });
    expect(JSON.stringify(first.stored)).not.toContain(first.oneTime.subkey_private_key!.slice(2));

    // The subkey gets a JWT and reads the balance; it cannot manage subkeys.
    const account = parseFelt(String(user.fields.l2_address));
    const subJwt = (await jwtFor(account, firstKey)).body.jwt_token as string;
    expect(await api('GET', '/v1/balance', { jwt: subJwt })).toMatchObject({ status: 200, body: { results: [{ size: '10' }] } });
    expect(await api('GET', '/v1/account/keys/subkeys', { jwt: subJwt })).toMatchObject({ status: 401 });

    const main = await mainKeyOf(user);
    const mainJwt = (await jwtFor(account, main.privateKey)).body.jwt_token as string;
    expect((await api('GET', '/v1/account/keys/subkeys', { jwt: mainJwt })).body.results).toEqual([
      expect.objectContaining({ name: 'bot', public_key: first.stored.subkey_public_key, state: 'active', revoked_at: 0 }),
    ]);

    await expect(driver.initTrading(user.wallet, user.fields, { name: 'bot' }, false)).rejects.toMatchObject({ code: 'SUBKEY_EXISTS' });
    const second = await driver.initTrading(user.wallet, { ...user.fields, ...first.stored }, { name: 'bot' }, true);
    expect(second.stored.subkey_public_key).not.toBe(first.stored.subkey_public_key);
    expect(await jwtFor(account, firstKey)).toMatchObject({ status: 401 });
    expect(await api('GET', '/v1/balance', { jwt: subJwt })).toMatchObject({ status: 401 });
    expect((await jwtFor(account, parseFelt(second.oneTime.subkey_private_key!))).status).toBe(200);
    const all = (await api('GET', '/v1/account/keys/subkeys?with_revoked=true', { jwt: mainJwt })).body.results;
    expect(all.map((subkey: { state: string }) => subkey.state)).toEqual(['revoked', 'active']);
    // The venue only ever saw public keys: neither private key is in its state files (snapshot and journal).
    const path = join(dataDir, 'venues', 'venue_c.json');
    const onDisk = (await readFile(path, 'utf8')) + (await readFile(`${path}.log`, 'utf8'));
    for (const secret of [first.oneTime.subkey_private_key!, second.oneTime.subkey_private_key!]) expect(onDisk).not.toContain(secret.slice(2));
  });

  it('a registration not signed by the main key is refused', async () => {
    const user = await newUser(0n);
    const main = await mainKeyOf(user);
    const mainJwt = (await jwtFor(main.account, main.privateKey)).body.jwt_token as string;
    const subkeyPublic = starkPublicKey(12345n);
    const now = Math.floor(Date.now() / 1000);
    const bad = starkSign(99n, main.privateKey);
    const answer = await api('POST', '/v1/account/keys/subkeys', {
      jwt: mainJwt,
      body: {
        name: 'x',
        public_key: feltToHex(subkeyPublic),
        state: 'active',
        signature: [feltToHex(bad.r), feltToHex(bad.s)],
        signature_timestamp: now,
        signature_expiry: now + 60,
      },
    });
    expect(answer).toMatchObject({ status: 400, body: { error: 'STARKNET_SIGNATURE_VERIFICATION_FAILED' } });
  });
});

describe('venue_c sandbox: withdrawals', () => {
  it('withdraw 4 USDC pays exactly 4 on chain (no fee) from the vault; a retry with the same key pays nothing more', async () => {
    const user = await newUser(10n * USDC);
    await deposit(user, 10n * USDC);
    const chainBefore = await usdcOnChain(user.wallet.address);
    const key = uuidv7();
    const started = performance.now();
    const { reference } = await driver.withdraw(user.wallet, user.fields, 4n * USDC, key);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(6n * USDC);
    const status = await eventually(
      () => driver.withdrawalStatus(user.wallet, user.fields, reference),
      (s) => s.state !== 'pending',
    );
    expect(status.state).toBe('completed');
    console.info(`venue_c withdraw call to payout confirmed on chain: ${(performance.now() - started).toFixed(0)} ms`);
    expect(await usdcOnChain(user.wallet.address)).toBe(chainBefore + 4n * USDC);
    const receipt = await ethereum().client.getTransactionReceipt({ hash: (status as { txHash: Hex }).txHash });
    expect(receipt.logs).toHaveLength(1);
    expect(BigInt(receipt.logs[0]!.data)).toBe(4n * USDC);

    expect(await driver.withdraw(user.wallet, user.fields, 4n * USDC, key)).toEqual({ reference });
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await usdcOnChain(user.wallet.address)).toBe(chainBefore + 4n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(6n * USDC);
  });

  it('refused: below 1 USDC (driver), more than the balance, signed by a subkey, or a signature over another amount', async () => {
    const user = await newUser(5n * USDC);
    await deposit(user, 5n * USDC);
    await expect(driver.withdraw(user.wallet, user.fields, 999_999n, uuidv7())).rejects.toMatchObject({ code: 'BELOW_MINIMUM_WITHDRAWAL' });
    await expect(driver.withdraw(user.wallet, user.fields, 6n * USDC, uuidv7())).rejects.toThrow(/insufficient free collateral/);

    const setup = await driver.initTrading(user.wallet, user.fields, { name: 'w' }, false);
    const subkey = parseFelt(setup.oneTime.subkey_private_key!);
    const main = await mainKeyOf(user);
    const config = (await api('GET', '/v1/system/config')).body;
    const expiration = Math.floor(Date.now() / 1000) + 60;
    const message = { token: BigInt(config.bridged_tokens[0].l2_token_address), amount: 200_000_000n, recipient: user.wallet.address, nonce: 7n, expiration };
    const body = (signature: { r: bigint; s: bigint }) => ({
      token: 'USDC',
      amount: '2',
      recipient: user.wallet.address,
      nonce: '7',
      expiration,
      signature: formatWithdrawalSignature(signature),
    });
    const signed = (privateKey: bigint, amount: bigint) =>
      starkSign(starknetTypedDataHash(withdrawalTypedData(config.starknet_chain_id, { ...message, amount }), main.account), privateKey);

    const subJwt = (await jwtFor(main.account, subkey)).body.jwt_token as string;
    expect(await api('POST', '/v1/withdrawals', { jwt: subJwt, body: body(signed(main.privateKey, 200_000_000n)) })).toMatchObject({ status: 401 });
    const mainJwt = (await jwtFor(main.account, main.privateKey)).body.jwt_token as string;
    expect(await api('POST', '/v1/withdrawals', { jwt: mainJwt, body: body(signed(subkey, 200_000_000n)) })).toMatchObject({
      status: 400,
      body: { error: 'STARKNET_SIGNATURE_VERIFICATION_FAILED' },
    });
    expect(await api('POST', '/v1/withdrawals', { jwt: mainJwt, body: body(signed(main.privateKey, 100_000_000n)) })).toMatchObject({
      status: 400,
      body: { error: 'STARKNET_SIGNATURE_VERIFICATION_FAILED' },
    });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC);
    // The genuine one is accepted.
    expect(await api('POST', '/v1/withdrawals', { jwt: mainJwt, body: body(signed(main.privateKey, 200_000_000n)) })).toMatchObject({
      status: 201,
      body: { kind: 'WITHDRAWAL', amount: '2' },
    });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(3n * USDC);
  });

  it("the driver refuses a stored l2_address that is not the wallet's account", async () => {
    const user = await newUser(0n);
    const other = await newUser(0n);
    await expect(driver.balances(user.wallet, other.fields)).rejects.toMatchObject({ code: 'ACCOUNT_MISMATCH' });
  });
});

describe("venue_c sandbox: the driver's kept JWT", () => {
  /** The user's wallet, counting its signatures: each fresh JWT asks for the STARK Key signature once. */
  function counted(user: User) {
    const wallet = { ...user.wallet, signatures: 0 };
    wallet.signTypedData = (typedData) => {
      wallet.signatures += 1;
      return user.wallet.signTypedData(typedData);
    };
    return wallet;
  }

  it('reads reuse the JWT until a minute before its exp, then authenticate again; another account is not served with it', async () => {
    const user = await newUser(0n);
    const other = await newUser(0n);
    let now = Date.now();
    const reader = new VenueCDriver({ baseUrl, now: () => now });
    const wallet = counted(user);
    expect(await reader.balances(wallet, user.fields)).toEqual({ balance: 0n, account_value: 0n, available_for_withdrawal: 0n });
    await reader.balances(wallet, user.fields);
    expect(await reader.withdrawalStatus(wallet, user.fields, 'no-such-transfer')).toMatchObject({ state: 'failed' });
    expect(wallet.signatures).toBe(1);
    // The sandbox's JWTs live 300 s from their issue (a little after `now` began, more under load):
    // 280 s on, the kept one is in its last minute however late it was issued (up to 40 s).
    now += 280_000;
    await reader.balances(wallet, user.fields);
    expect(wallet.signatures).toBe(2);
    // Fields naming another account are checked by a fresh derivation, not served with the kept JWT.
    await expect(reader.balances(wallet, other.fields)).rejects.toMatchObject({ code: 'ACCOUNT_MISMATCH' });
    expect(wallet.signatures).toBe(3);
  });

  it('a 401 on the kept JWT drops it: the read authenticates once more and answers', async () => {
    const user = await newUser(0n);
    const reader = new VenueCDriver({ baseUrl });
    const wallet = counted(user);
    await reader.balances(wallet, user.fields);
    const refused = vi
      .spyOn(globalThis, 'fetch')
      .mockResolvedValueOnce(new Response(JSON.stringify({ error: 'UNAUTHORIZED_ERROR', message: 'JWT expired' }), { status: 401 }));
    try {
      expect(await reader.balances(wallet, user.fields)).toEqual({ balance: 0n, account_value: 0n, available_for_withdrawal: 0n });
    } finally {
      refused.mockRestore();
    }
    expect(wallet.signatures).toBe(2);
    // Any other refusal is the answer, not a reason to authenticate again.
    const other = vi
      .spyOn(globalThis, 'fetch')
      .mockResolvedValueOnce(new Response(JSON.stringify({ error: 'RATE_LIMITED', message: 'slow down' }), { status: 429 }));
    try {
      await expect(reader.withdrawalStatus(wallet, user.fields, 'x')).rejects.toBeInstanceOf(VenueCRefusedError);
    } finally {
      other.mockRestore();
    }
    expect(wallet.signatures).toBe(2);
  });
});

describe('venue_c sandbox: faults', () => {
  it('deposit fail: not credited; stall: held until clear, then credited once', async () => {
    const user = await newUser(30n * USDC);
    await venues.setFault({ target: 'venue_c', operation: 'deposit', mode: 'fail', count: 1 });
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 10n * USDC);
    for (const call of plan.calls) await user.send(call.to, call.data, call.value);
    await deposit(user, 5n * USDC);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC);

    await venues.setFault({ target: 'venue_c', operation: 'deposit', mode: 'stall', count: 1 });
    let last = 0n;
    for (const call of plan.calls) last = (await user.send(call.to, call.data, call.value)).blockNumber;
    await eventually(
      async () => BigInt((await readDurableDocument(join(dataDir, 'venues', 'venue_c.json'))).cursor),
      (cursor) => cursor >= last,
    );
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(5n * USDC);
    await venues.setFault({ target: 'venue_c', operation: 'deposit', mode: 'clear', count: 0 });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(15n * USDC);
  });

  it('withdrawal fail: refused, nothing debited, the same key then works; stall: pending until clear, then paid; refund: failed, balance kept', async () => {
    const user = await newUser(20n * USDC);
    await deposit(user, 20n * USDC);
    const chainBefore = await usdcOnChain(user.wallet.address);
    await venues.setFault({ target: 'venue_c', operation: 'withdrawal', mode: 'fail', count: 1 });
    const key = uuidv7();
    await expect(driver.withdraw(user.wallet, user.fields, 5n * USDC, key)).rejects.toBeInstanceOf(VenueCRefusedError);
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(20n * USDC);
    const retried = await driver.withdraw(user.wallet, user.fields, 5n * USDC, key);
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, retried.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await usdcOnChain(user.wallet.address)).toBe(chainBefore + 5n * USDC);

    await venues.setFault({ target: 'venue_c', operation: 'withdrawal', mode: 'stall', count: 1 });
    const stalled = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    await ticks(5); // nothing more happens within a few of the venues' ticks
    expect(await driver.withdrawalStatus(user.wallet, user.fields, stalled.reference)).toEqual({ state: 'pending' });
    await venues.setFault({ target: 'venue_c', operation: 'withdrawal', mode: 'clear', count: 0 });
    expect(
      await eventually(
        () => driver.withdrawalStatus(user.wallet, user.fields, stalled.reference),
        (s) => s.state !== 'pending',
      ),
    ).toMatchObject({ state: 'completed' });
    expect(await usdcOnChain(user.wallet.address)).toBe(chainBefore + 10n * USDC);

    await venues.setFault({ target: 'venue_c', operation: 'withdrawal', mode: 'refund', count: 1 });
    const refunded = await driver.withdraw(user.wallet, user.fields, 5n * USDC, uuidv7());
    expect(await driver.withdrawalStatus(user.wallet, user.fields, refunded.reference)).toMatchObject({ state: 'failed' });
    expect((await driver.balances(user.wallet, user.fields)).balance).toBe(10n * USDC);
  });
});

describe('venue_c sandbox: durable state', () => {
  it('accounts, balances, subkeys and the URL survive a restart on the same DATA_DIR; a deposit made while it was down is credited after', async () => {
    const user = await newUser(30n * USDC);
    await deposit(user, 10n * USDC);
    const setup = await driver.initTrading(user.wallet, user.fields, { name: 'keep' }, false);
    const url = venues.urls.venue_c;
    await venues.stop();
    const plan = await driver.prepareDeposit(user.wallet, user.fields, 7n * USDC);
    for (const call of plan.calls) await user.send(call.to, call.data, call.value);
    venues = await startSandboxVenues({ dataDir, evm, pollMs: TICK_MS, modules: [venueCModule()] });
    expect(venues.urls.venue_c).toBe(url);
    driver = new VenueCDriver({ baseUrl: venues.urls.venue_c! });
    expect(
      (
        await eventually(
          () => driver.balances(user.wallet, user.fields),
          (b) => b.balance === 17n * USDC,
        )
      ).balance,
    ).toBe(17n * USDC);
    // The subkey still authenticates (the JWT secret and the subkey survived).
    expect((await jwtFor(parseFelt(String(user.fields.l2_address)), parseFelt(setup.oneTime.subkey_private_key!))).status).toBe(200);
    expect(await driver.initAccount(walletOf(user.key))).toEqual(user.fields satisfies VenueFields);
  });
});
