import { parseUnits } from 'viem';
import { describe, expect, it } from 'vitest';
import { bridgeFee, findBridgeRoute } from '../../shared/transfers/bridge-routes.ts';
import { platformFee } from '../../shared/transfers/estimate.ts';
import { VENUE_RULES } from '../../shared/venues/rules.ts';
import { chainBalance, faucet, newAccount, sandboxChains } from './support/chains.ts';
import { appOne, call, uniqueUser } from './support/client.ts';

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
    await new Promise((resolve) => setTimeout(resolve, 150));
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

async function fault(json: Record<string, unknown>) {
  const response = await call('account', 'POST', '/sandbox/faults', { json });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
}

/** Sum of a checkpoint field over the task's steps (base units). */
const checkpoints = (task: any) => task.metadata.checkpoints as { action: string; amount_in?: string; amount_out?: string; platform_fee?: string }[];
const platformFeeOf = (task: any) => checkpoints(task).reduce((sum, step) => sum + BigInt(step.platform_fee ?? '0'), 0n);
const finalAmount = (task: any) => BigInt(checkpoints(task).at(-1)!.amount_out!);

describe.runIf(isSandbox)('transfers end to end', () => {
  it.each(Object.keys(VENUES) as Venue[])('self to %s on its own chain: one deposit step, credited to the base unit', async (dex) => {
    const { headers, evm } = await userAtVenue(dex);
    const venue = VENUES[dex];
    const walletBefore = await chainBalance(venue.chain, evm, venue.token);
    const venueBefore = await venueBalance(headers, dex);

    const task = await transfer(headers, { source: 'self', destination: dex, amount: '10', chain: venue.chain, token: venue.token });
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
    const { headers, evm } = await fundedAtVenueB();
    const walletBefore = await chainBalance('ARB', evm, 'USDC');
    const venueBefore = await venueBalance(headers, 'venue_b');

    const task = await transfer(headers, { source: 'venue_b', destination: 'self', amount: '6', chain: 'ARB' });
    expect(task.progress).toMatchObject({ total_steps: 1, steps: [{ action: 'withdrawal', status: 'completed' }] });
    expect(venueBefore - (await venueBalance(headers, 'venue_b'))).toBe(USDC('6'));
    const payout = USDC('6') - VENUE_RULES.venue_b.withdrawal.fee.amount;
    expect(platformFeeOf(task)).toBe(platformFee(SANDBOX_PLATFORM_FEE, payout));
    expect((await chainBalance('ARB', evm, 'USDC')) - walletBefore).toBe(payout - platformFeeOf(task));
    expect(finalAmount(task)).toBe(payout - platformFeeOf(task));
  });

  it('venue_b to venue_d across chains: withdrawal, bridge ARB → INK, deposit; every fee once, to the base unit', async () => {
    const { headers, evm } = await fundedAtVenueB();
    await faucet('INK', evm, 'USDC', '20');
    await faucet('INK', evm, 'ETH', '0.05');
    expect((await call('account', 'POST', '/account/init-perp-dex', { headers, json: { dex: 'venue_d' } })).status).toBe(200);
    const arbBefore = await chainBalance('ARB', evm, 'USDC');
    const inkBefore = await chainBalance('INK', evm, 'USDC');
    const venueBBefore = await venueBalance(headers, 'venue_b');
    const venueDBefore = await venueBalance(headers, 'venue_d');

    const task = await transfer(headers, { source: 'venue_b', destination: 'venue_d', amount: '10' });
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
    const task = await transfer(headers, { source: 'venue_b', destination: 'self', amount: '8', destination_chain: 'SOL', destination_token: 'USDC' });
    expect(task.progress.steps.map((step: { action: string }) => step.action)).toEqual(['withdrawal', 'bridge']);
    const payout = USDC('8') - VENUE_RULES.venue_b.withdrawal.fee.amount;
    const afterFee = payout - platformFee(SANDBOX_PLATFORM_FEE, payout);
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'SOL', token: 'USDC' })!;
    expect((await chainBalance('SOL', sol, 'USDC')) - solBefore).toBe(afterFee - bridgeFee(route, afterFee));
    expect(await chainBalance('ARB', evm, 'USDC')).toBe(arbBefore);
  });

  it('self on ARB to venue_c on ETH: bridge then deposit', async () => {
    const { headers, evm } = await userAtVenue('venue_c');
    await faucet('ARB', evm, 'USDC', '20');
    await faucet('ARB', evm, 'ETH', '0.05');
    const venueBefore = await venueBalance(headers, 'venue_c');
    const task = await transfer(headers, { source: 'self', destination: 'venue_c', amount: '12', chain: 'ARB', token: 'USDC' });
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

    const task = await transfer(headers, { source: 'self', destination: 'self', amount: '12', chain: from, token: 'USDC', destination_chain: to, destination_token: 'USDC' });
    expect(task.progress.steps.map((step: { action: string }) => step.action)).toEqual(['bridge']);
    const fee = platformFee(SANDBOX_PLATFORM_FEE, USDC('12'));
    const route = findBridgeRoute({ chain: from as 'ARB', token: 'USDC' }, { chain: to as 'SOL', token: 'USDC' })!;
    const arrived = USDC('12') - fee - bridgeFee(route, USDC('12') - fee);
    expect(await chainBalance(from, walletOf(from), 'USDC')).toBe(USDC('20') - USDC('12'));
    expect((await chainBalance(to, walletOf(to), 'USDC')) - toBefore).toBe(arrived);
    expect(finalAmount(task)).toBe(arrived);
  });

  it('a venue withdrawal that fails fails the task at step 1; resume completes it with one payout', async () => {
    const { headers, evm } = await fundedAtVenueB();
    const walletBefore = await chainBalance('ARB', evm, 'USDC');
    const venueBefore = await venueBalance(headers, 'venue_b');
    await fault({ target: 'venue_b', operation: 'withdrawal', mode: 'fail', count: 1 });
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
