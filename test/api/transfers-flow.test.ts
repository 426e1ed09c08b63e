import { Connection, type TokenBalance } from '@solana/web3.js';
import { type Address, getAddress, type Hex, parseUnits } from 'viem';
import { beforeAll, describe, expect, it } from 'vitest';
import { bridgeFee, findBridgeRoute } from '../../shared/transfers/bridge-routes.ts';
import { platformFee } from '../../shared/transfers/estimate.ts';
import { VENUE_RULES } from '../../shared/venues/rules.ts';
import { chainBalance, chainInfo, evmClient, faucet, newAccount, sandboxChains } from './support/chains.ts';
import { appOne, call, uniqueUser } from './support/client.ts';
import { setUserFault } from './support/faults.ts';
import { POLL_TICKS, ticks } from './support/sandbox-clock.ts';

/**
 * Transfers end to end on the sandbox: POST /transfer, the task followed through GET /task until
 * it settles, and every balance checked to the base unit against the chains and the venues —
 * the user's wallets, the venue's credit, the platform fee's recipient, the bridge's fee (what
 * left minus what arrived). Each route shape of issue 11: self to each venue, venue to self (same
 * chain and across chains), venue to venue across chains, self to self across chains (EVM and
 * SOL). Needs the sandbox (chains, faucet, venues, bridge): skipped against a deployed stack.
 */
const isSandbox = (await sandboxChains()) !== undefined;

type Headers = Record<string, string>;
const USDC = (amount: string) => parseUnits(amount, 6);

const VENUES = {
  venue_a: { chain: 'ARB', token: 'USDC', gas: 'ETH' },
  venue_b: { chain: 'ARB', token: 'USDC', gas: 'ETH' },
  venue_c: { chain: 'ETH', token: 'USDC', gas: 'ETH' },
  venue_d: { chain: 'INK', token: 'USDC', gas: 'ETH' },
  venue_e: { chain: 'POL', token: 'USDC.E', gas: 'POL' },
} as const;
type Venue = keyof typeof VENUES;

export async function waitForTask(headers: Headers, taskId: string, timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await call('account', 'GET', `/task/${taskId}`, { headers });
    expect(task.status, JSON.stringify(task.body)).toBe(200);
    if (['completed', 'failed', 'cancelled'].includes(task.body.status) || Date.now() > deadline) return task.body;
    await ticks(POLL_TICKS);
  }
}

async function venueBalance(headers: Headers, dex: Venue): Promise<bigint> {
  const perp = await call('account', 'GET', `/account/perp?dex=${dex}`, { headers });
  expect(perp.body.error, JSON.stringify(perp.body)).toBeNull();
  return USDC(perp.body.assets.balance);
}

/** A user with the venue initialised and `deposit` of the venue's token and gas in the wallet. */
async function userAtVenue(dex: Venue, funds = '20') {
  const user = await newAccount(appOne, uniqueUser(`transfer-${dex}`));
  const venue = VENUES[dex];
  await faucet(venue.chain, user.evm, venue.token, funds);
  await faucet(venue.chain, user.evm, venue.gas, '0.05');
  const init = await call('account', 'POST', '/account/init-perp-dex', { headers: user.headers, json: { dex } });
  expect(init.status, JSON.stringify(init.body)).toBe(200);
  return user;
}

async function start(headers: Headers, body: Record<string, unknown>): Promise<string> {
  const created = await call('account', 'POST', '/transfer', { headers, json: body });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  expect(created.headers.get('x-task-id')).toBe(created.body.task_id);
  return created.body.task_id;
}

async function transfer(headers: Headers, body: Record<string, unknown>) {
  const task = await waitForTask(headers, await start(headers, body));
  expect(task.status, JSON.stringify(task)).toBe('completed');
  return task;
}

/** The sandbox's platform fee (PLATFORM_FEE, 10 bps: a sandbox choice) on what first sits in the user's wallet. */
const SANDBOX_PLATFORM_FEE = { fixed: 0n, bps: 10n };

/** Sum of a checkpoint field over the task's steps (base units). */
const checkpoints = (task: any) =>
  task.metadata.checkpoints as {
    action: string;
    amount_in?: string;
    amount_out?: string;
    platform_fee?: string;
    sends: Record<string, { chain: string; tx_hash: string }>;
  }[];
const platformFeeOf = (task: any) => checkpoints(task).reduce((sum, step) => sum + BigInt(step.platform_fee ?? '0'), 0n);
const finalAmount = (task: any) => BigInt(checkpoints(task).at(-1)!.amount_out!);

/** The estimate of a transfer body, asked just before the transfer itself (the wallet funded, the venue set up). */
async function estimateOf(headers: Headers, body: Record<string, unknown>): Promise<any> {
  const response = await call('account', 'POST', '/transfer/estimate-transfer-cost', { headers, json: body });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

/**
 * What each step really cost the user's wallet in gas units, read from the chains through the
 * task's recorded transactions (`metadata.checkpoints[i].sends`): EVM, the sum of the receipts'
 * gasUsed (each checked to be sent by the wallet); Solana, the signatures of its transactions (the
 * fee is per signature), each checked to be paid by the wallet.
 */
async function gasUsedPerStep(task: any, wallet: { evm: Address; sol: string }): Promise<bigint[]> {
  const used: bigint[] = [];
  for (const step of checkpoints(task)) {
    let total = 0n;
    for (const send of Object.values(step.sends)) {
      if (send.chain === 'SOL') {
        const connection = new Connection((await chainInfo('SOL')).rpc_url, 'confirmed');
        const tx = await connection.getTransaction(send.tx_hash, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
        expect(tx, send.tx_hash).not.toBeNull();
        expect(tx!.transaction.message.staticAccountKeys[0]!.toBase58()).toBe(wallet.sol);
        total += BigInt(tx!.transaction.signatures.length);
      } else {
        const receipt = await (await evmClient(send.chain)).getTransactionReceipt({ hash: send.tx_hash as Hex });
        expect(getAddress(receipt.from)).toBe(getAddress(wallet.evm));
        total += receipt.gasUsed;
      }
    }
    used.push(total);
  }
  return used;
}

/** Per step: estimated gas units against the units the step's transactions used (logged, for the record). */
const GAS_BAND_PERCENT = 125n;
async function expectGasAsEstimated(label: string, estimate: any, task: any, wallet: { evm: Address; sol: string }) {
  const used = await gasUsedPerStep(task, wallet);
  const rows = estimate.steps.map((step: any, index: number) => ({
    step: `${index}:${step.action}`,
    estimated: step.estimated_gas === null ? 0n : BigInt(step.estimated_gas),
    used: used[index]!,
  }));
  console.info(`gas ${label}: ${rows.map((r: any) => `${r.step} estimated ${r.estimated} used ${r.used}`).join('; ')}`);
  for (const row of rows) {
    // Never lower than what the user paid, and at most 25 % above.
    expect(row.estimated, `${label} step ${row.step}: estimated ${row.estimated} < used ${row.used}`).toBeGreaterThanOrEqual(row.used);
    expect(row.estimated * 100n, `${label} step ${row.step}: estimated ${row.estimated} > 125 % of used ${row.used}`).toBeLessThanOrEqual(
      row.used * GAS_BAND_PERCENT,
    );
  }
}

describe.runIf(isSandbox)('transfers end to end', () => {
  /**
   * A live venue's deposit contract always holds deposits; a fresh sandbox's holds none before its
   * first one, which pays about 17k gas more per storage slot written from zero (the contract's
   * token balance; venue_c's StarkGate also its deposit nonce): venue_a's, venue_c's and venue_d's
   * deposit calls cost 58.6k, 81.7k and 60.5k gas there instead of 41.5k, 47.5k and 43.4k. The
   * estimate cannot name those contracts (the venue's API does, and the estimate calls none:
   * gas-estimator.ts VENUE_DEPOSIT), so it prices them as a live venue's; the gas comparisons below
   * run after one deposit into each, as on a live venue.
   */
  beforeAll(async () => {
    for (const dex of ['venue_a', 'venue_c', 'venue_d'] as const) {
      const { headers } = await userAtVenue(dex);
      await transfer(headers, { source: 'self', destination: dex, amount: '6', chain: VENUES[dex].chain, token: VENUES[dex].token });
    }
  }, 60_000);

  it.each(Object.keys(VENUES) as Venue[])('self to %s on its own chain: one deposit step, credited to the base unit', async (dex) => {
    const { headers, evm, sol } = await userAtVenue(dex);
    const venue = VENUES[dex];
    const walletBefore = await chainBalance(venue.chain, evm, venue.token);
    const venueBefore = await venueBalance(headers, dex);

    const body = { source: 'self', destination: dex, amount: '10', chain: venue.chain, token: venue.token };
    const estimate = await estimateOf(headers, body);
    const task = await transfer(headers, body);
    await expectGasAsEstimated(`self to ${dex}`, estimate, task, { evm, sol });
    expect(task.progress).toMatchObject({ total_steps: 1, steps: [{ action: 'deposit', status: 'completed' }] });
    expect(await chainBalance(venue.chain, evm, venue.token)).toBe(walletBefore - USDC('10'));
    expect((await venueBalance(headers, dex)) - venueBefore).toBe(finalAmount(task));
    // Money first sits in the user's wallet: the platform fee is taken there, once.
    expect(platformFeeOf(task)).toBe(platformFee(SANDBOX_PLATFORM_FEE, USDC('10')));
    const depositFee = VENUE_RULES[dex].deposit.fee.amount;
    expect(finalAmount(task)).toBe(USDC('10') - platformFeeOf(task) - depositFee);
  });

  /** venue_b funded with `amount` through a transfer from the user's ARB wallet. */
  async function fundedAtVenueB(amount = '15') {
    const user = await userAtVenue('venue_b', '30');
    await transfer(user.headers, { source: 'self', destination: 'venue_b', amount });
    return user;
  }

  it('venue_b to self on its own chain: one withdrawal step; the payout lands in the wallet minus the venue fee and the platform fee', async () => {
    const { headers, evm, sol } = await fundedAtVenueB();
    const walletBefore = await chainBalance('ARB', evm, 'USDC');
    const venueBefore = await venueBalance(headers, 'venue_b');

    const body = { source: 'venue_b', destination: 'self', amount: '6', chain: 'ARB' };
    const estimate = await estimateOf(headers, body);
    const task = await transfer(headers, body);
    // The venue sends the payout; the user's wallet sends the platform fee out of it.
    await expectGasAsEstimated('venue_b to self', estimate, task, { evm, sol });
    expect(task.progress).toMatchObject({ total_steps: 1, steps: [{ action: 'withdrawal', status: 'completed' }] });
    expect(venueBefore - (await venueBalance(headers, 'venue_b'))).toBe(USDC('6'));
    const payout = USDC('6') - VENUE_RULES.venue_b.withdrawal.fee.amount;
    expect(platformFeeOf(task)).toBe(platformFee(SANDBOX_PLATFORM_FEE, payout));
    expect((await chainBalance('ARB', evm, 'USDC')) - walletBefore).toBe(payout - platformFeeOf(task));
    expect(finalAmount(task)).toBe(payout - platformFeeOf(task));
  });

  it('venue_b to venue_d across chains: withdrawal, bridge ARB → INK, deposit; every fee once, to the base unit', async () => {
    const { headers, evm, sol } = await fundedAtVenueB();
    await faucet('INK', evm, 'USDC', '20');
    await faucet('INK', evm, 'ETH', '0.05');
    expect((await call('account', 'POST', '/account/init-perp-dex', { headers, json: { dex: 'venue_d' } })).status).toBe(200);
    const arbBefore = await chainBalance('ARB', evm, 'USDC');
    const inkBefore = await chainBalance('INK', evm, 'USDC');
    const venueBBefore = await venueBalance(headers, 'venue_b');
    const venueDBefore = await venueBalance(headers, 'venue_d');

    const body = { source: 'venue_b', destination: 'venue_d', amount: '10' };
    const estimate = await estimateOf(headers, body);
    const task = await transfer(headers, body);
    await expectGasAsEstimated('venue_b to venue_d', estimate, task, { evm, sol });
    expect(task.progress.steps.map((step: { action: string }) => step.action)).toEqual(['withdrawal', 'bridge', 'deposit']);
    const [withdrawal, bridge, deposit] = checkpoints(task);
    const payout = USDC('10') - VENUE_RULES.venue_b.withdrawal.fee.amount;
    expect(BigInt(withdrawal!.amount_out!)).toBe(payout - platformFee(SANDBOX_PLATFORM_FEE, payout));
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'INK', token: 'USDC' })!;
    expect(BigInt(bridge!.amount_out!)).toBe(BigInt(bridge!.amount_in!) - bridgeFee(route, BigInt(bridge!.amount_in!)));
    expect(BigInt(deposit!.amount_out!)).toBe(BigInt(deposit!.amount_in!) - VENUE_RULES.venue_d.deposit.fee.amount);

    expect(venueBBefore - (await venueBalance(headers, 'venue_b'))).toBe(USDC('10'));
    expect((await venueBalance(headers, 'venue_d')) - venueDBefore).toBe(BigInt(deposit!.amount_out!));
    // The wallets only passed the money through.
    expect(await chainBalance('ARB', evm, 'USDC')).toBe(arbBefore);
    expect(await chainBalance('INK', evm, 'USDC')).toBe(inkBefore);
  });

  it('venue_b to self on Solana: withdrawal on ARB, then bridge ARB → SOL; the ARB wallet only passes it through', async () => {
    const { headers, evm, sol } = await fundedAtVenueB();
    const arbBefore = await chainBalance('ARB', evm, 'USDC');
    const solBefore = await chainBalance('SOL', sol, 'USDC');
    const body = { source: 'venue_b', destination: 'self', amount: '8', destination_chain: 'SOL', destination_token: 'USDC' };
    const estimate = await estimateOf(headers, body);
    const task = await transfer(headers, body);
    await expectGasAsEstimated('venue_b to self on SOL', estimate, task, { evm, sol });
    expect(task.progress.steps.map((step: { action: string }) => step.action)).toEqual(['withdrawal', 'bridge']);
    const payout = USDC('8') - VENUE_RULES.venue_b.withdrawal.fee.amount;
    const afterFee = payout - platformFee(SANDBOX_PLATFORM_FEE, payout);
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'SOL', token: 'USDC' })!;
    expect((await chainBalance('SOL', sol, 'USDC')) - solBefore).toBe(afterFee - bridgeFee(route, afterFee));
    expect(await chainBalance('ARB', evm, 'USDC')).toBe(arbBefore);
  });

  it('self on ARB to venue_c on ETH: bridge then deposit', async () => {
    const { headers, evm, sol } = await userAtVenue('venue_c');
    await faucet('ARB', evm, 'USDC', '20');
    await faucet('ARB', evm, 'ETH', '0.05');
    const venueBefore = await venueBalance(headers, 'venue_c');
    const body = { source: 'self', destination: 'venue_c', amount: '12', chain: 'ARB', token: 'USDC' };
    const estimate = await estimateOf(headers, body);
    const task = await transfer(headers, body);
    await expectGasAsEstimated('self ARB to venue_c', estimate, task, { evm, sol });
    expect(task.progress.steps.map((step: { action: string }) => step.action)).toEqual(['bridge', 'deposit']);
    const afterFee = USDC('12') - platformFee(SANDBOX_PLATFORM_FEE, USDC('12'));
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'ETH', token: 'USDC' })!;
    const bridged = afterFee - bridgeFee(route, afterFee);
    expect((await venueBalance(headers, 'venue_c')) - venueBefore).toBe(bridged - VENUE_RULES.venue_c.deposit.fee.amount);
    expect(await chainBalance('ARB', evm, 'USDC')).toBe(USDC('20') - USDC('12'));
  });

  it.each([
    { from: 'ARB', to: 'SOL' },
    { from: 'SOL', to: 'ARB' },
    { from: 'ARB', to: 'POL' },
  ])('self to self $from → $to: one bridge step; what arrives is the amount minus the platform and bridge fees', async ({ from, to }) => {
    const { headers, evm, sol } = await newAccount(appOne, uniqueUser(`self-${from}-${to}`));
    const walletOf = (chain: string) => (chain === 'SOL' ? sol : evm);
    await faucet(from, walletOf(from), 'USDC', '20');
    await faucet(from, walletOf(from), from === 'SOL' ? 'SOL' : from === 'POL' ? 'POL' : 'ETH', from === 'SOL' ? '1' : '0.05');
    const toBefore = await chainBalance(to, walletOf(to), 'USDC');

    const body = { source: 'self', destination: 'self', amount: '12', chain: from, token: 'USDC', destination_chain: to, destination_token: 'USDC' };
    const estimate = await estimateOf(headers, body);
    const task = await transfer(headers, body);
    await expectGasAsEstimated(`self ${from} to self ${to}`, estimate, task, { evm, sol });
    expect(task.progress.steps.map((step: { action: string }) => step.action)).toEqual(['bridge']);
    const fee = platformFee(SANDBOX_PLATFORM_FEE, USDC('12'));
    const route = findBridgeRoute({ chain: from as 'ARB', token: 'USDC' }, { chain: to as 'SOL', token: 'USDC' })!;
    const arrived = USDC('12') - fee - bridgeFee(route, USDC('12') - fee);
    expect(await chainBalance(from, walletOf(from), 'USDC')).toBe(USDC('20') - USDC('12'));
    expect((await chainBalance(to, walletOf(to), 'USDC')) - toBefore).toBe(arrived);
    expect(finalAmount(task)).toBe(arrived);
    if (from === 'SOL') {
      // LI.FI's Solana form through the enclave: one deposit transaction (the quote's own, signed as
      // given), never replaced, taking exactly the bridged amount out of the wallet; the fee its own send.
      const [step] = checkpoints(task);
      expect(Object.keys(step!.sends).sort()).toEqual(['bridge', 'platform_fee']);
      expect((step!.sends.bridge as { candidates?: unknown }).candidates).toBeUndefined();
      const connection = new Connection((await chainInfo('SOL')).rpc_url, 'confirmed');
      const deposit = await connection.getTransaction(step!.sends.bridge!.tx_hash, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
      const held = (balances: readonly TokenBalance[] | null | undefined) =>
        (balances ?? []).filter((b) => b.owner === sol).reduce((sum, b) => sum + BigInt(b.uiTokenAmount.amount), 0n);
      expect(held(deposit!.meta!.preTokenBalances) - held(deposit!.meta!.postTokenBalances)).toBe(USDC('12') - fee);
    }
  });

  it.each([
    { from: 'ARB', to: 'INK' },
    { from: 'ARB', to: 'SOL' },
  ])(
    'gas-sponsored self $from → self $to: the sponsor sends the bridge deposit (EIP-7702), the bridge fills it, the fee is taken once',
    async ({ from, to }) => {
      const { headers, evm, sol } = await newAccount(appOne, uniqueUser(`sponsored-bridge-${to}`));
      const walletOf = (chain: string) => (chain === 'SOL' ? sol : evm);
      // USDC only, no ETH: every EVM send of the step (approve, deposit, platform fee) is sponsored.
      await faucet(from, evm, 'USDC', '20');
      const toBefore = await chainBalance(to, walletOf(to), 'USDC');
      const body = {
        source: 'self',
        destination: 'self',
        amount: '15',
        chain: from,
        token: 'USDC',
        destination_chain: to,
        destination_token: 'USDC',
        gas_sponsored: true,
      };
      const task = await transfer(headers, body);
      const [step] = checkpoints(task);
      expect(Object.keys(step!.sends).sort()).toEqual(['bridge', 'bridge_approve', 'platform_fee']);
      expect(task.metadata.checkpoints[0]).toMatchObject({ platform_fee_status: 'charged' });
      // The deposit was the sponsor's transaction to the wallet, not the wallet's own.
      const receipt = await (await evmClient(from)).getTransactionReceipt({ hash: step!.sends.bridge!.tx_hash as Hex });
      expect(getAddress(receipt.from)).not.toBe(getAddress(evm));
      expect(getAddress(receipt.to!)).toBe(getAddress(evm));
      const fee = platformFee(SANDBOX_PLATFORM_FEE, USDC('15'));
      const route = findBridgeRoute({ chain: from as 'ARB', token: 'USDC' }, { chain: to as 'INK', token: 'USDC' })!;
      expect((await chainBalance(to, walletOf(to), 'USDC')) - toBefore).toBe(USDC('15') - fee - bridgeFee(route, USDC('15') - fee));
      expect(await chainBalance(from, evm, 'USDC')).toBe(USDC('5'));
    },
  );

  it('a refunded bridge leaves the wallet exactly where it started (no platform fee); the resume bridges again and takes the fee once', async () => {
    const { headers, evm } = await newAccount(appOne, uniqueUser('refunded-bridge'));
    await faucet('ARB', evm, 'USDC', '20');
    await faucet('ARB', evm, 'ETH', '0.05');
    const body = { source: 'self', destination: 'self', amount: '15', chain: 'ARB', token: 'USDC', destination_chain: 'INK', destination_token: 'USDC' };
    await setUserFault({ target: 'bridge', operation: 'bridge', mode: 'refund', count: 1, address: evm });
    const taskId = await start(headers, body);
    const failed = await waitForTask(headers, taskId);
    expect(failed.status, JSON.stringify(failed)).toBe('failed');
    expect(failed.metadata.failure).toMatchObject({ step: 0, code: 'BRIDGE_REFUNDED' });
    expect(failed.metadata.failure.message).toMatch(
      /14985000 base units were refunded to your wallet on ARB; the platform fee \(15000 base units\) was not charged$/,
    );
    expect(failed.metadata.checkpoints[0]).toMatchObject({ platform_fee: '15000', platform_fee_status: 'not_charged' });
    expect(await chainBalance('ARB', evm, 'USDC')).toBe(USDC('20'));

    const resumed = await call('account', 'POST', `/task/${taskId}/resume`, { headers });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(202);
    const done = await waitForTask(headers, taskId);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.metadata.checkpoints[0]).toMatchObject({ platform_fee_status: 'charged' });
    expect(await chainBalance('ARB', evm, 'USDC')).toBe(USDC('5'));
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'INK', token: 'USDC' })!;
    const afterFee = USDC('15') - platformFee(SANDBOX_PLATFORM_FEE, USDC('15'));
    expect(await chainBalance('INK', evm, 'USDC')).toBe(afterFee - bridgeFee(route, afterFee));
  });

  it('a venue withdrawal that fails fails the task at step 1; resume completes it with one payout', async () => {
    const { headers, evm } = await fundedAtVenueB();
    const walletBefore = await chainBalance('ARB', evm, 'USDC');
    const venueBefore = await venueBalance(headers, 'venue_b');
    await setUserFault({ target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 1, address: evm });
    const taskId = await start(headers, { source: 'venue_b', destination: 'self', amount: '6', chain: 'ARB' });
    const failed = await waitForTask(headers, taskId);
    expect(failed.status, JSON.stringify(failed)).toBe('failed');
    expect(failed.metadata.failure).toMatchObject({ step: 0 });
    expect(await venueBalance(headers, 'venue_b')).toBe(venueBefore);

    const resumed = await call('account', 'POST', `/task/${taskId}/resume`, { headers });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(202);
    expect(resumed.body.message).toMatch(/step 1 of 1/);
    const done = await waitForTask(headers, taskId);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const payout = USDC('6') - VENUE_RULES.venue_b.withdrawal.fee.amount;
    expect(venueBefore - (await venueBalance(headers, 'venue_b'))).toBe(USDC('6'));
    expect((await chainBalance('ARB', evm, 'USDC')) - walletBefore).toBe(payout - platformFee(SANDBOX_PLATFORM_FEE, payout));
    const again = await call('account', 'POST', `/task/${taskId}/resume`, { headers });
    expect(again.status).toBe(409);
  });
});

describe.runIf(isSandbox)('the estimate for a venue that is not initialized (issue 19)', () => {
  it('destination not initialized: 200 with a DEX_NOT_INITIALIZED warning and message, where POST /transfer answers 409', async () => {
    const { headers } = await newAccount(appOne, uniqueUser('est-uninit-dest'));
    const body = { source: 'self', destination: 'venue_b', amount: '10' };
    const estimate = await estimateOf(headers, body);
    expect(estimate.route.warnings).toEqual([
      { code: 'DEX_NOT_INITIALIZED', side: 'destination', dex: 'venue_b', message: expect.stringContaining('body.destination: venue_b is not initialized') },
    ]);
    expect(estimate.message).toContain('409 DEX_NOT_INITIALIZED');
    expect(Number(estimate.route.amount_received)).toBeGreaterThan(0);
    const refused = await call('account', 'POST', '/transfer', { headers, json: body });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('DEX_NOT_INITIALIZED');
  });

  it('source not initialized (the destination is): the warning names the source only', async () => {
    const { headers, evm } = await userAtVenue('venue_b');
    const body = { source: 'venue_d', destination: 'venue_b', amount: '10' };
    const estimate = await estimateOf(headers, body);
    expect(estimate.route.warnings).toEqual([
      { code: 'DEX_NOT_INITIALIZED', side: 'source', dex: 'venue_d', message: expect.stringContaining('body.source: venue_d is not initialized') },
    ]);
    expect(estimate.message).toContain('body.source: venue_d');
    const refused = await call('account', 'POST', '/transfer', { headers, json: body });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'DEX_NOT_INITIALIZED', message: expect.stringContaining('body.source') });

    // Once both venues are set up (venue_d's requirements: funds on INK), nothing to warn about.
    await faucet('INK', evm, 'USDC', '20');
    await faucet('INK', evm, 'ETH', '0.05');
    expect((await call('account', 'POST', '/account/init-perp-dex', { headers, json: { dex: 'venue_d' } })).status).toBe(200);
    const ready = await estimateOf(headers, body);
    expect(ready.route.warnings).toEqual([]);
    expect(ready.message).toBeNull();
  });
});
