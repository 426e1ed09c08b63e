import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Keypair } from '@solana/web3.js';
import bs58 from 'bs58';
import { v7 as uuidv7 } from 'uuid';
import { type Address, encodeFunctionData, erc20Abi, getAddress, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { type SandboxVenues, startSandboxVenues } from '../../infra/local/venues/framework.ts';
import { venueBModule } from '../../infra/local/venues/venue-b.ts';
import { venueDModule } from '../../infra/local/venues/venue-d.ts';
import type { AccountRecord } from '../../shared/accounts/account-record.ts';
import { EvmChains } from '../../shared/chains/evm-chains.ts';
import type { GasPayer } from '../../shared/chains/sender/ports.ts';
import { createSenders, type Senders } from '../../shared/chains/sender/senders.ts';
import { singleSponsor } from '../../shared/chains/sender/sponsor-pool.ts';
import { getItem, type Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { venueDriverFactories } from '../../shared/deps/venues.ts';
import { runStep as runKinds } from '../../shared/transfers/steps/core.ts';
import { DEPOSIT_KIND } from '../../shared/transfers/steps/deposit.ts';
import { loadTask } from '../../shared/transfers/steps/store.ts';
import type { VenueStepDeps } from '../../shared/transfers/steps/venue.ts';
import { releaseVenueLock, takeVenueLock, venueBalanceLease } from '../../shared/transfers/steps/venue-lock.ts';
import type { StepWallets } from '../../shared/transfers/steps/wallets.ts';
import { WITHDRAWAL_KIND } from '../../shared/transfers/steps/withdrawal.ts';
import {
  type DepositStep,
  STEP_FAILED_ERROR,
  STEP_RETRYABLE_ERROR,
  type StepAction,
  type StepInvocation,
  type StepOf,
  type TaskRecord,
  type TaskRef,
  type WithdrawalStep,
} from '../../shared/transfers/task.ts';
import { isStepOf } from '../../shared/transfers/task-record.ts';
import { resumeTask } from '../../shared/transfers/task-store.ts';
import { defaultPerpDexStatus } from '../../shared/venues/default-status.ts';
import { VenueRegistry } from '../../shared/venues/registry.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';
import { localEvmSigner } from './support/evm-signer.ts';
import { depositThroughPlan, keyWallet, tokenBalance } from './support/venue-test-wallets.ts';

/**
 * Two transfers of one user on one venue at once (shared/transfers/steps/venue-lock.ts), on the
 * real sandbox pieces (anvil, the venue_b and venue_d sandboxes, dynalite, the exactly-once
 * senders). Without the per-(user, venue) balance lock a deposit interleaved with a withdrawal
 * never sees its credit, and two venue_d deposits overwrite each other's approve (one reverts).
 * Also: a resumed deposit whose failed try sent only its approve deposits afresh.
 */
const USDC = 1_000_000n;
const ETHER = 10n ** 18n;
const APP_ID = 'app-venue-lock';
const ARB_USDC = { chain: 'ARB', token: 'USDC' } as const;
const INK_USDC = { chain: 'INK', token: 'USDC' } as const;

let dataDir: string;
let evm: EvmSandbox;
let venues: SandboxVenues;
let table: Table;
let stopTable: () => Promise<void>;
let chains: EvmChains;
let senders: Senders;
let deps: VenueStepDeps;
const feeRecipient = privateKeyToAccount(generatePrivateKey()).address;

interface TestUser {
  readonly appUserId: string;
  readonly evmKey: Hex;
  readonly evmAddress: Address;
  account: AccountRecord;
}
const users = new Map<string, TestUser>();

const solKeys = Keypair.generate();
const localWallets: StepWallets = {
  async open(_task, account) {
    const user = users.get(account.app_user_id)!;
    return {
      evmAddress: user.evmAddress,
      solAddress: solKeys.publicKey.toBase58(),
      evm: localEvmSigner(user.evmKey),
      sol: { signMessage: async (bytes) => bs58.encode(ed25519.sign(bytes, solKeys.secretKey.slice(0, 32))) },
      venue: keyWallet(user.evmKey),
    };
  },
};

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'transfer-venue-lock-'));
  [evm, { table, stop: stopTable }] = await Promise.all([startEvmSandbox({ dataDir }), startDynaliteTable('transfer-venue-lock')]);
  venues = await startSandboxVenues({ dataDir, evm, modules: [venueBModule(), venueDModule()], pollMs: 50 });
  chains = new EvmChains({ ...evm.chains, sandbox: true } as never);
  const sponsorAccount = privateKeyToAccount(evm.sponsor.privateKey);
  const sponsor: GasPayer = {
    address: async () => sponsorAccount.address,
    signTransaction: (transaction) => sponsorAccount.signTransaction({ ...transaction } as never),
  };
  senders = createSenders({ table, sponsors: singleSponsor(sponsor), inclusionTimeoutMs: 10_000 });
  deps = {
    table,
    chains,
    senders,
    wallets: localWallets,
    platformFee: { bps: 10n, fixed: 0n, recipients: { EVM: feeRecipient, SOL: solKeys.publicKey.toBase58() } },
    venues: registry(),
    now: () => new Date(),
    pollSeconds: 1,
  };
}, 180_000);

afterAll(async () => {
  await venues?.stop();
  await Promise.all([evm?.stop(), stopTable?.()]);
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const registry = (overrides: ConstructorParameters<typeof VenueRegistry>[1] = {}) =>
  new VenueRegistry({ venue_b: venues.urls.venue_b, venue_d: venues.urls.venue_d }, { ...venueDriverFactories(chains as never, 'sandbox'), ...overrides });
const KINDS = { deposit: DEPOSIT_KIND, withdrawal: WITHDRAWAL_KIND };
const runStep = (stepDeps: VenueStepDeps, inv: StepInvocation) => runKinds(stepDeps, KINDS, inv);
/** The task's one step, of the kind the test set up (any other kind fails the test). */
function stepOf<A extends StepAction>(task: TaskRecord, action: A): StepOf<A> {
  const step = task.steps[0];
  if (!step || !isStepOf(step, action)) throw new Error(`step 0 is not a ${action}`);
  return step;
}
const invocation = (task: TaskRef, phase: StepInvocation['phase'], attempt = 0): StepInvocation => ({ task, attempt, index: 0, phase });
const usdcOn = (code: 'ARB' | 'INK', owner: Address) => tokenBalance(evm, code, evm.chains[code].tokens.USDC!.address as Address, owner);
const venueBalance = async (user: TestUser, venue: 'venue_b' | 'venue_d') =>
  (await deps.venues!.driver(venue).balances(keyWallet(user.evmKey), user.account.perp_dex_status[venue] as never)).balance;
const lockOf = async (user: TestUser, venue: string) =>
  (await getItem(table, venueBalanceLease(venue, APP_ID, user.appUserId))) as { owner?: string } | undefined;

async function saveAccount(user: TestUser): Promise<void> {
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.account(APP_ID, user.appUserId), ...user.account } }));
}

/** A fresh user with gas on ARB and INK, `arb` USDC on ARB, `ink` USDC on INK, venue_b (and venue_d when asked) initialised. */
async function newUser(arb: bigint, ink: bigint, withVenueD = false): Promise<TestUser> {
  const evmKey = generatePrivateKey();
  const evmAddress = privateKeyToAccount(evmKey).address;
  const appUserId = `user-${uuidv7()}`;
  for (const chain of ['ARB', 'INK'] as const) await evm.faucet(chain, evmAddress, 'ETH', ETHER);
  if (arb > 0n) await evm.faucet('ARB', evmAddress, 'USDC', arb);
  if (ink > 0n) await evm.faucet('INK', evmAddress, 'USDC', ink);
  const perp = defaultPerpDexStatus();
  perp.venue_b = { ...perp.venue_b, ...(await deps.venues!.driver('venue_b').initAccount(keyWallet(evmKey), {})), initialized: true };
  if (withVenueD) perp.venue_d = { ...perp.venue_d, ...(await deps.venues!.driver('venue_d').initAccount(keyWallet(evmKey), {})), initialized: true };
  const account = {
    app_id: APP_ID,
    app_user_id: appUserId,
    user_id: uuidv7(),
    public_address: { ETH: getAddress(evmAddress), SOL: solKeys.publicKey.toBase58() },
    perp_dex_status: perp,
    wallets: { evm: { wallet_id: 'w-evm' }, sol: { wallet_id: 'w-sol' } },
    sealed: {},
    created_at: new Date().toISOString(),
  } as unknown as AccountRecord;
  const user = { appUserId, evmKey, evmAddress, account };
  await saveAccount(user);
  users.set(appUserId, user);
  return user;
}

/** A one-step task item as POST /transfer writes it. */
async function newTask(
  user: TestUser,
  source: string,
  destination: string,
  amount: string,
  step: Pick<WithdrawalStep, 'action' | 'venue' | 'holding' | 'gas_policy'> | Pick<DepositStep, 'action' | 'venue' | 'holding' | 'gas_policy'>,
  chain = 'ARB',
): Promise<TaskRef> {
  const task_id = uuidv7();
  const now = new Date().toISOString();
  const item: TaskRecord = {
    entity: 'task',
    task_id,
    user_id: user.account.user_id,
    app_id: APP_ID,
    app_user_id: user.appUserId,
    iss: 'https://issuer.example',
    source: source as never,
    destination: destination as never,
    amount,
    chain,
    token: 'USDC',
    gas_sponsored: false,
    status: 'pending',
    created_at: now,
    updated_at: now,
    attempt: 0,
    execution_name: `${task_id}-a0`,
    route: {},
    steps: [{ ...step, index: 0, status: 'pending', try: 0 }],
    current_step: 0,
  };
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.task(APP_ID, user.appUserId, task_id), ...item } }));
  return { app_id: APP_ID, app_user_id: user.appUserId, task_id };
}

/** Submit (retried on TransferStepRetryable, as the ASL does), then poll every 100 ms until settled. */
async function drive(task: TaskRef, options: { attempt?: number; stepDeps?: VenueStepDeps; submitted?: boolean } = {}) {
  const stepDeps = options.stepDeps ?? deps;
  const deadline = Date.now() + 45_000;
  let result = { settled: false, wait_seconds: 1 };
  while (!options.submitted) {
    try {
      result = await runStep(stepDeps, invocation(task, 'submit', options.attempt));
      break;
    } catch (error) {
      if ((error as Error).name !== STEP_RETRYABLE_ERROR || Date.now() > deadline) throw error;
      await new Promise((wake) => setTimeout(wake, 200));
    }
  }
  while (!result.settled) {
    if (Date.now() > deadline) throw new Error('the step did not settle within 45 s');
    await new Promise((wake) => setTimeout(wake, 100));
    result = await runStep(stepDeps, invocation(task, 'poll', options.attempt));
  }
  return (await loadTask(table, task))!;
}

/** The user's own deposit into venue_b, outside any transfer (to have something to withdraw). */
async function fundVenueB(user: TestUser, amount: bigint): Promise<void> {
  const signer = localEvmSigner(user.evmKey);
  const send = async (to: Address, data: Hex) =>
    senders.evm.send({ chain: await chains.evm('ARB'), from: user.evmAddress, call: { to, data, value: 0n }, spends: { token: 'USDC', amount: 0n }, signer });
  await depositThroughPlan(
    deps.venues!.driver('venue_b'),
    { wallet: keyWallet(user.evmKey), fields: user.account.perp_dex_status.venue_b as never, send },
    amount,
  );
}

describe('the per-(user, venue) balance lock', () => {
  it('a deposit into venue_b and a withdrawal from it at once: the withdrawal waits for the credit, both complete, balances exact', async () => {
    const user = await newUser(50n * USDC, 0n);
    await fundVenueB(user, 20n * USDC);
    const venueBefore = await venueBalance(user, 'venue_b');
    const deposit = await newTask(user, 'self', 'venue_b', '10', { action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' });
    const withdrawal = await newTask(user, 'venue_b', 'self', '5', { action: 'withdrawal', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'venue' });
    // The deposit reads its baseline and sends; the withdrawal, submitted before the credit is seen, must not request yet.
    // The venue holds the credit (a stall) until both submits are done, whatever the machine's speed.
    await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'stall', count: 1 });
    try {
      expect(await runStep(deps, invocation(deposit, 'submit'))).toMatchObject({ settled: false });
      const held = (await lockOf(user, 'venue_b'))!;
      expect(held.owner).toBe(`${deposit.task_id}:0:0`);
      expect(await runStep(deps, invocation(withdrawal, 'submit'))).toMatchObject({ settled: false });
      const waiting = stepOf((await loadTask(table, withdrawal))!, 'withdrawal');
      expect(waiting.status).toBe('submitted');
      expect(waiting.idempotency_key).toBeUndefined(); // nothing recorded while it waits
    } finally {
      await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', count: 0 });
    }
    const [deposited, withdrawn] = await Promise.all([drive(deposit, { submitted: true }), drive(withdrawal, { submitted: true })]);
    expect(deposited.status).toBe('completed');
    expect(withdrawn.status).toBe('completed');
    const credit = BigInt(deposited.steps[0]!.amount_out!);
    expect(credit).toBe(10n * USDC - 10_000n);
    expect(await venueBalance(user, 'venue_b')).toBe(venueBefore + credit - 5n * USDC);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(50n * USDC - 20n * USDC - 10n * USDC + BigInt(withdrawn.steps[0]!.amount_out!));
    expect((await lockOf(user, 'venue_b'))?.owner).toBeUndefined(); // released by both
  });

  it('the withdrawal first: it holds the lock until the venue accepted the request, then the deposit goes on', async () => {
    const user = await newUser(30n * USDC, 0n);
    await fundVenueB(user, 10n * USDC);
    const venueBefore = await venueBalance(user, 'venue_b');
    const withdrawal = await newTask(user, 'venue_b', 'self', '5', { action: 'withdrawal', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'venue' });
    const deposit = await newTask(user, 'self', 'venue_b', '10', { action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' });
    await runStep(deps, invocation(withdrawal, 'submit'));
    expect(stepOf((await loadTask(table, withdrawal))!, 'withdrawal').reference).toBeDefined();
    expect((await lockOf(user, 'venue_b'))?.owner).toBeUndefined(); // released once the venue debited
    const [withdrawn, deposited] = await Promise.all([drive(withdrawal, { submitted: true }), drive(deposit)]);
    expect([withdrawn.status, deposited.status]).toEqual(['completed', 'completed']);
    expect(await venueBalance(user, 'venue_b')).toBe(venueBefore - 5n * USDC + BigInt(deposited.steps[0]!.amount_out!));
  });

  it('two deposits into venue_d at once: both credited, no revert (the second approves only after the first deposit is credited)', async () => {
    const user = await newUser(0n, 45n * USDC, true);
    const venueBefore = await venueBalance(user, 'venue_d');
    const a = await newTask(user, 'self', 'venue_d', '10', { action: 'deposit', venue: 'venue_d', holding: INK_USDC, gas_policy: 'user' }, 'INK');
    const b = await newTask(user, 'self', 'venue_d', '10', { action: 'deposit', venue: 'venue_d', holding: INK_USDC, gas_policy: 'user' }, 'INK');
    const [first, second] = await Promise.all([drive(a), drive(b)]);
    expect([first.status, second.status]).toEqual(['completed', 'completed']);
    for (const task of [first, second]) expect(Object.keys(task.steps[0]!.sends!).sort()).toEqual(['deposit_0', 'deposit_1', 'platform_fee']);
    expect(await venueBalance(user, 'venue_d')).toBe(venueBefore + 2n * (10n * USDC - 10_000n));
    expect(await usdcOn('INK', user.evmAddress)).toBe(25n * USDC);
    expect((await lockOf(user, 'venue_d'))?.owner).toBeUndefined();
  });

  it('a step that fails releases the lock (a deposit below the venue minimum), so the next transfer is not blocked', async () => {
    const user = await newUser(20n * USDC, 0n);
    const refused = await newTask(user, 'self', 'venue_b', '5', { action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' });
    await expect(runStep(deps, invocation(refused, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    expect((await lockOf(user, 'venue_b'))?.owner).toBeUndefined();
    const next = await newTask(user, 'self', 'venue_b', '10', { action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' });
    expect((await drive(next)).status).toBe('completed');
  });
});

describe('the lock across invocations (takeVenueLock)', () => {
  const depositStep = { action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' } as const;
  const step: Pick<DepositStep, 'index' | 'try' | 'venue' | 'action'> = { index: 0, try: 0, venue: 'venue_b', action: 'deposit' };
  /** Two running tasks of one user (each step 0 a venue_b deposit, none driven: only the lock is exercised). */
  async function twoTasks() {
    const user = await newUser(0n, 0n);
    return { ref: await newTask(user, 'self', 'venue_b', '10', depositStep), other: await newTask(user, 'self', 'venue_b', '10', depositStep) };
  }

  it('a holder takes it back as itself; others wait; after an expiry and a take-over the first holder learns it lost it', async () => {
    const { ref, other } = await twoTasks();
    expect(await takeVenueLock(table, ref, step, false)).toBe('held');
    expect(await takeVenueLock(table, ref, step, true)).toBe('held'); // a later invocation of the same step (renews)
    expect(await takeVenueLock(table, other, step, false)).toBe('busy');
    expect(await takeVenueLock(table, ref, { ...step, try: 1 }, false)).toBe('busy'); // a new try is another holder
    // The holder vanished: its lease expires; another step takes it over.
    const key = venueBalanceLease('venue_b', APP_ID, ref.app_user_id);
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: key,
        UpdateExpression: 'SET expires_at = :past',
        ExpressionAttributeValues: { ':past': Date.now() - 1 },
      }),
    );
    expect(await takeVenueLock(table, other, step, false)).toBe('held');
    expect((await getItem(table, key))!.owner).toBe(`${other.task_id}:0:0`);
    expect(await takeVenueLock(table, ref, step, true)).toBe('busy');
    await releaseVenueLock(table, ref, step); // not the holder: no effect
    expect((await getItem(table, key))!.owner).toBe(`${other.task_id}:0:0`);
    await releaseVenueLock(table, other, step);
    expect(await takeVenueLock(table, ref, step, true)).toBe('taken-over'); // fencing: what it read under the old lease may be stale
  });

  /** Sets fields of the task item (a crash left it so). */
  async function setTask(ref: TaskRef, update: string, values: Record<string, unknown>, names: Record<string, string> = {}) {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: { pk: `TASKS#${ref.app_id}#${ref.app_user_id}`, sk: `TASK#${ref.task_id}` },
        UpdateExpression: update,
        ExpressionAttributeValues: values,
        ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
      }),
    );
  }

  it('a holder whose step ended without releasing it (killed between its completion write and the release) loses it to the next taker at once', async () => {
    const { ref, other } = await twoTasks();
    const key = venueBalanceLease('venue_b', APP_ID, ref.app_user_id);
    expect(await takeVenueLock(table, ref, step, false)).toBe('held');
    expect(await takeVenueLock(table, other, step, false)).toBe('busy'); // the holder's step still runs
    await setTask(ref, 'SET steps[0].#status = :completed', { ':completed': 'completed' }, { '#status': 'status' });
    expect(await takeVenueLock(table, other, step, false)).toBe('held');
    expect((await getItem(table, key))!.owner).toBe(`${other.task_id}:0:0`);
    // A failed task's holder, and a holder whose step a resume reset (another try), are as stale.
    await setTask(other, 'SET #status = :failed', { ':failed': 'failed' }, { '#status': 'status' });
    expect(await takeVenueLock(table, ref, { ...step, try: 1 }, false)).toBe('held');
    await setTask(ref, 'SET steps[0].#try = :two', { ':two': 2 }, { '#try': 'try' });
    expect(await takeVenueLock(table, other, { ...step, try: 5 }, false)).toBe('held');
    expect((await getItem(table, key))!.owner).toBe(`${other.task_id}:0:5`);
  });
});

describe('a resumed venue_d deposit whose failed try sent only its approve', () => {
  it('is not adopted with one call: the new try approves and deposits, the credit arrives once', async () => {
    const user = await newUser(0n, 30n * USDC, true);
    const venueBefore = await venueBalance(user, 'venue_d');
    // The deposit call of the first try reverts (a transfer of more than the wallet holds), after its approve landed.
    const broken = registry({
      venue_d: (options) => {
        const real = venueDriverFactories(chains as never, 'sandbox').venue_d!(options);
        return Object.assign(Object.create(Object.getPrototypeOf(real)), real, {
          prepareDeposit: async (...args: Parameters<typeof real.prepareDeposit>) => {
            const plan = await real.prepareDeposit(...args);
            const token = evm.chains.INK.tokens.USDC!.address as Address;
            const overdraw = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [feeRecipient, 10n ** 30n] });
            return { ...plan, calls: [plan.calls[0]!, { ...plan.calls[1]!, to: token, data: overdraw }] };
          },
        });
      },
    });
    const ref = await newTask(user, 'self', 'venue_d', '10', { action: 'deposit', venue: 'venue_d', holding: INK_USDC, gas_policy: 'user' }, 'INK');
    await expect(drive(ref, { stepDeps: { ...deps, venues: broken } })).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const failed = (await loadTask(table, ref))!;
    expect(failed.status).toBe('failed');
    // The fee comes only after the deposit landed: the failed try sent its approve and no fee.
    expect(Object.keys(failed.steps[0]!.sends!).sort()).toEqual(['deposit_0']);
    expect(stepOf(failed, 'deposit').deposit_calls).toBe(2);
    expect((await lockOf(user, 'venue_d'))?.owner).toBeUndefined();
    // POST /task/{id}/resume's store write: the try's records move to previous_tries (deposit_calls with them).
    expect(await resumeTask(table, failed, 0, new Date())).toBe(true);
    const task = await drive(ref, { attempt: 1 });
    expect(task.status).toBe('completed');
    const step = stepOf(task, 'deposit');
    expect(step.previous_tries![0]!.deposit_calls).toBe(2);
    expect(Object.keys(step.sends!).sort()).toEqual(['deposit_0', 'deposit_1', 'platform_fee']);
    expect(step.sends!.deposit_0!.tx_hash).not.toBe(step.previous_tries![0]!.sends!.deposit_0!.tx_hash);
    expect(step.previous_tries![0]!.sends!.platform_fee).toBeUndefined(); // the fee is charged once, by the try whose deposit landed
    expect(await venueBalance(user, 'venue_d')).toBe(venueBefore + 10n * USDC - 10_000n);
    expect(await usdcOn('INK', user.evmAddress)).toBe(20n * USDC);
  });
});
