import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createSolanaRpc,
  createTransactionMessage,
  getCompiledTransactionMessageDecoder,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Transaction,
} from '@solana/kit';
import { Keypair } from '@solana/web3.js';
import { getTransferSolInstruction } from '@solana-program/system';
import { findAssociatedTokenPda, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import bs58 from 'bs58';
import { v7 as uuidv7 } from 'uuid';
import { type Address, createWalletClient, decodeFunctionData, erc20Abi, getAddress, type Hex, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SandboxBridge, startSandboxBridge } from '../../infra/local/bridge/server.ts';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { type SolanaSandbox, startSolanaSandbox } from '../../infra/local/solana-sandbox/index.ts';
import { type SandboxVenues, startSandboxVenues } from '../../infra/local/venues/framework.ts';
import { venueBModule } from '../../infra/local/venues/venue-b.ts';
import { venueDModule } from '../../infra/local/venues/venue-d.ts';
import type { AccountRecord } from '../../shared/accounts/account-record.ts';
import { Chains } from '../../shared/chains/chains.ts';
import type { GasPayer, SolanaSigner } from '../../shared/chains/sender/ports.ts';
import { createSenders, type Senders } from '../../shared/chains/sender/senders.ts';
import { SolanaSender } from '../../shared/chains/sender/solana-sender.ts';
import { singleSponsor } from '../../shared/chains/sender/sponsor-pool.ts';
import { SolanaChain } from '../../shared/chains/solana-chain.ts';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { bridgeClientFromEnv } from '../../shared/deps/transfer-bridge-step.ts';
import { venueDriverFactories } from '../../shared/deps/venues.ts';
import type { BridgeClient } from '../../shared/transfers/bridge.ts';
import { bridgeFee, findBridgeRoute } from '../../shared/transfers/bridge-routes.ts';
import { platformFee } from '../../shared/transfers/estimate.ts';
import { HttpBridgeClient } from '../../shared/transfers/http-bridge-client.ts';
import { LIFI_CONTRACTS } from '../../shared/transfers/lifi.ts';
import type { PlatformFeeSettings } from '../../shared/transfers/platform-fee.ts';
import { BRIDGE_KIND, type BridgeStepDeps } from '../../shared/transfers/steps/bridge.ts';
import { runStep as runKinds, settle } from '../../shared/transfers/steps/core.ts';
import { DEPOSIT_KIND } from '../../shared/transfers/steps/deposit.ts';
import { payoutClaim } from '../../shared/transfers/steps/payout-claim.ts';
import { loadTask } from '../../shared/transfers/steps/store.ts';
import type { VenueStepDeps } from '../../shared/transfers/steps/venue.ts';
import type { StepWallets } from '../../shared/transfers/steps/wallets.ts';
import { WITHDRAWAL_KIND } from '../../shared/transfers/steps/withdrawal.ts';
import {
  type BridgeStep,
  type DepositStep,
  STEP_FAILED_ERROR,
  STEP_RETRYABLE_ERROR,
  type StepAction,
  type StepInvocation,
  type StepOf,
  type StepRecord,
  type TaskRecord,
  type TaskRef,
  toTaskResource,
  type WithdrawalStep,
} from '../../shared/transfers/task.ts';
import { isStepOf } from '../../shared/transfers/task-record.ts';
import { resumeTask } from '../../shared/transfers/task-store.ts';
import { defaultPerpDexStatus } from '../../shared/venues/default-status.ts';
import { VenueRegistry } from '../../shared/venues/registry.ts';
import type { VenueBDriver } from '../../shared/venues/venue-b/driver.ts';
import { DEFAULT_SPONSORSHIP_LIMITS, SponsorshipBudget } from '../../shared/withdrawals/sponsorship-budget.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';
import { localEvmSigner } from './support/evm-signer.ts';
import { depositThroughPlan, keyWallet, sandboxChainClient, tokenBalance } from './support/venue-test-wallets.ts';

/**
 * The transfer step use case (shared/transfers/steps/core.ts runStep, with every kind) on real sandbox pieces: anvil
 * chains, the LiteSVM Solana RPC, the venue_b sandbox, the sandbox bridge, dynalite, and the
 * production exactly-once senders. The signer ports are local keys (as in exactly-once-sender.test.ts;
 * the enclave adapter, enclaveStepWallets, goes through the same walletSigner as /withdraw).
 * The task item is written as POST /transfer would; each step is driven submit, then poll until settled.
 */
const USDC = 1_000_000n;
const ETHER = 10n ** 18n;
const APP_ID = 'app-transfer-steps';

/** Every kind in one process (the Lambdas each run their own: functions/transfers/*-step.ts). */
type StepDeps = VenueStepDeps & BridgeStepDeps;
const KINDS = { withdrawal: WITHDRAWAL_KIND, deposit: DEPOSIT_KIND, bridge: BRIDGE_KIND };
const runStep = (stepDeps: StepDeps, inv: StepInvocation) => runKinds(stepDeps, KINDS, inv);

/** Step `index` of the task, of the kind the test set up (any other kind fails the test). */
function stepOf<A extends StepAction>(task: TaskRecord, index: number, action: A): StepOf<A> {
  const step = task.steps[index];
  if (!step || !isStepOf(step, action)) throw new Error(`step ${index} is not a ${action}`);
  return step;
}

let dataDir: string;
let evm: EvmSandbox;
let sol: SolanaSandbox;
let venues: SandboxVenues;
let bridge: SandboxBridge;
let table: Table;
let stopTable: () => Promise<void>;
let chains: Chains;
let senders: Senders;
let deps: StepDeps;
let solana: SolanaChain;

const feeRecipient = privateKeyToAccount(generatePrivateKey()).address;
const solFeeRecipient = Keypair.generate().publicKey.toBase58();
const FEE: PlatformFeeSettings = { bps: 10n, fixed: 0n, recipients: { EVM: feeRecipient, SOL: solFeeRecipient } };

interface TestUser {
  readonly appUserId: string;
  readonly evmKey: Hex;
  readonly evmAddress: Address;
  readonly sol: Keypair;
  readonly account: AccountRecord;
}
const users = new Map<string, TestUser>();

const localSolanaSigner = (keypair: Keypair): SolanaSigner => ({
  signMessage: async (bytes) => bs58.encode(ed25519.sign(bytes, keypair.secretKey.slice(0, 32))),
});

/** The user's wallets with local keys (the port the enclave implements in production). */
const localWallets: StepWallets = {
  async open(_task, account) {
    const user = users.get(account.app_user_id)!;
    return {
      evmAddress: user.evmAddress,
      solAddress: user.sol.publicKey.toBase58(),
      evm: localEvmSigner(user.evmKey),
      sol: localSolanaSigner(user.sol),
      venue: keyWallet(user.evmKey),
    };
  },
};

/** The sandbox's Solana RPC, except that the first `lose` broadcasts never reach it (a send the cluster never took). */
class LossySolanaChain extends SolanaChain {
  readonly lost: string[] = [];
  #lose: number;

  constructor(config: ConstructorParameters<typeof SolanaChain>[0], lose: number) {
    super(config);
    this.#lose = lose;
  }

  override async broadcast(wire: Uint8Array): Promise<string> {
    if (this.#lose > 0) {
      this.#lose--;
      const signature = bs58.encode(wire.subarray(1, 65));
      this.lost.push(signature);
      return signature;
    }
    return super.broadcast(wire);
  }
}

/** The chains with a given Solana client. */
class SolanaOverride extends Chains {
  readonly #sol: SolanaChain;

  constructor(config: ConstructorParameters<typeof Chains>[0], sol: SolanaChain) {
    super(config);
    this.#sol = sol;
  }

  override sol(): Promise<SolanaChain> {
    return Promise.resolve(this.#sol);
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'transfer-steps-'));
  [evm, sol, { table, stop: stopTable }] = await Promise.all([
    startEvmSandbox({ dataDir }),
    startSolanaSandbox({ dataDir }),
    startDynaliteTable('transfer-steps'),
  ]);
  [venues, bridge] = await Promise.all([
    startSandboxVenues({ dataDir, evm, modules: [venueBModule(), venueDModule()], pollMs: 50 }),
    startSandboxBridge({ dataDir, evm, sol, pollMs: 50, receiptTimeoutMs: 2_000 }),
  ]);
  chains = new Chains({ ...evm.chains, SOL: sol.chain, sandbox: true } as never);
  solana = new SolanaChain(sol.chain);
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
    platformFee: FEE,
    venues: new VenueRegistry({ venue_b: venues.urls.venue_b, venue_d: venues.urls.venue_d }, venueDriverFactories(chains, 'sandbox')),
    bridge: new HttpBridgeClient({ baseUrl: bridge.url, contracts: bridge.contracts }),
    now: () => new Date(),
    pollSeconds: 1,
    sponsorship: new SponsorshipBudget({ table, limits: DEFAULT_SPONSORSHIP_LIMITS, now: () => new Date() }),
  };
}, 180_000);

afterAll(async () => {
  await Promise.all([venues?.stop(), bridge?.stop()]);
  await Promise.all([evm?.stop(), sol?.stop(), stopTable?.()]);
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const venueB = () => deps.venues!.driver('venue_b') as VenueBDriver;
const venueD = () => deps.venues!.driver('venue_d');
const usdcOn = (code: 'ARB' | 'POL' | 'INK', owner: Address) => tokenBalance(evm, code, evm.chains[code].tokens.USDC!.address as Address, owner);

/** A fresh user: an account item (venue_b initialised), gas and `usdc` on ARB. */
async function newUser(usdc: bigint): Promise<TestUser> {
  const evmKey = generatePrivateKey();
  const evmAddress = privateKeyToAccount(evmKey).address;
  const solKeys = Keypair.generate();
  const appUserId = `user-${uuidv7()}`;
  await evm.faucet('ARB', evmAddress, 'ETH', ETHER);
  if (usdc > 0n) await evm.faucet('ARB', evmAddress, 'USDC', usdc);
  const fields = await venueB().initAccount(keyWallet(evmKey));
  const perp = defaultPerpDexStatus();
  perp.venue_b = { ...perp.venue_b, ...fields, initialized: true };
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
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.account(APP_ID, appUserId), ...account } }));
  const user = { appUserId, evmKey, evmAddress, sol: solKeys, account };
  users.set(appUserId, user);
  return user;
}

type PlannedStep =
  | Pick<WithdrawalStep, 'action' | 'venue' | 'holding' | 'gas_policy'>
  | Pick<BridgeStep, 'action' | 'from' | 'to' | 'gas_policy'>
  | Pick<DepositStep, 'action' | 'venue' | 'holding' | 'gas_policy'>;

/** The task item as POST /transfer writes it. */
async function newTask(
  user: TestUser,
  source: string,
  destination: string,
  amount: string,
  steps: PlannedStep[],
  extra: Partial<TaskRecord> = {},
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
    chain: 'ARB',
    token: 'USDC',
    gas_sponsored: false,
    status: 'pending',
    created_at: now,
    updated_at: now,
    attempt: 0,
    execution_name: `${task_id}-a0`,
    route: {},
    steps: steps.map((step, index) => ({ ...step, index, status: 'pending', try: 0 })),
    current_step: 0,
    ...extra,
  };
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.task(APP_ID, user.appUserId, task_id), ...item } }));
  return { app_id: APP_ID, app_user_id: user.appUserId, task_id };
}

const ARB_USDC = { chain: 'ARB', token: 'USDC' } as const;
const invocation = (task: TaskRef, index: number, phase: StepInvocation['phase'], attempt = 0): StepInvocation => ({ task, attempt, index, phase });

/** Submit, then poll every 100 ms until settled (the ASL's Wait shortened). */
async function drive(task: TaskRef, index: number, options: { attempt?: number; stepDeps?: StepDeps } = {}) {
  const stepDeps = options.stepDeps ?? deps;
  const deadline = Date.now() + 30_000;
  let result: Awaited<ReturnType<typeof runStep>>;
  for (;;) {
    try {
      result = await runStep(stepDeps, invocation(task, index, 'submit', options.attempt));
      break;
    } catch (error) {
      // The ASL's Retry on TransferStepRetryable (a sender lease held by a concurrent duplicate).
      if ((error as Error).name !== STEP_RETRYABLE_ERROR || Date.now() > deadline) throw error;
      await new Promise((wake) => setTimeout(wake, 200));
    }
  }
  while (!result.settled) {
    if (Date.now() > deadline) throw new Error('the step did not settle within 30 s');
    expect(result.wait_seconds).toBeGreaterThanOrEqual(1);
    await new Promise((wake) => setTimeout(wake, 100));
    result = await runStep(stepDeps, invocation(task, index, 'poll', options.attempt));
  }
  return (await loadTask(table, task))!;
}

describe('deposit step (self → venue_b, ARB USDC)', () => {
  it('takes the platform fee once, deposits the rest, completes with amount_out = the credit, to the base unit', async () => {
    const user = await newUser(50n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '20', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    const feeBefore = await usdcOn('ARB', feeRecipient);
    const task = await drive(ref, 0);
    const fee = platformFee({ bps: 10n, fixed: 0n }, 20n * USDC);
    expect(fee).toBe(20_000n);
    expect(task.status).toBe('completed');
    expect(task.current_step).toBe(1);
    const step = task.steps[0]!;
    expect(step).toMatchObject({
      status: 'completed',
      amount_in: '20000000',
      platform_fee: '20000',
      expected_credit: '19980000',
      amount_out: '19980000',
      baseline: '0',
    });
    expect(Object.keys(step.sends!).sort()).toEqual(['deposit_0', 'platform_fee']);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(30n * USDC);
    expect((await usdcOn('ARB', feeRecipient)) - feeBefore).toBe(fee);
    expect((await venueB().balances(keyWallet(user.evmKey), { account_address: user.evmAddress })).balance).toBe(19_980_000n);
    // Submitting again changes nothing.
    expect(await runStep(deps, invocation(ref, 0, 'submit'))).toEqual({ settled: true, wait_seconds: 0 });
    expect(await usdcOn('ARB', user.evmAddress)).toBe(30n * USDC);
  });

  it('a crash after the record and before the broadcast, then two concurrent re-runs: one fee, one deposit', async () => {
    const user = await newUser(30n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    // A sender that "crashes" right after the journal record (the process dies before broadcasting).
    const crashing: Senders = {
      ...senders,
      evm: {
        send: (request: Parameters<Senders['evm']['send']>[0]) =>
          senders.evm.send({
            ...request,
            journal: request.journal && {
              ...(request.journal.previous ? { previous: request.journal.previous } : {}),
              record: async (broadcast) => {
                await request.journal!.record(broadcast);
                throw new Error('crash after the record');
              },
            },
          }),
      } as Senders['evm'],
    };
    const crashDeps = { ...deps, senders: crashing };
    await expect(runStep(crashDeps, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_RETRYABLE_ERROR });
    const crashed = (await loadTask(table, ref))!;
    expect(crashed.status).toBe('in_progress');
    // The deposit is sent first (the fee only once it landed): the crash hit its record.
    const depositSend = crashed.steps[0]!.sends!.deposit_0!;
    expect(depositSend.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(crashed.steps[0]!.sends!.platform_fee).toBeUndefined();
    expect(await usdcOn('ARB', user.evmAddress)).toBe(30n * USDC); // nothing broadcast yet
    // The retries (the ASL's Retry) re-broadcast the recorded deposit, then take the fee, concurrently.
    const [a, b] = await Promise.all([drive(ref, 0), drive(ref, 0)]);
    expect(a.status).toBe('completed');
    expect(b.steps[0]!.sends!.deposit_0!.tx_hash).toBe(depositSend.tx_hash);
    expect(b.steps[0]!.sends!.platform_fee!.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
    expect((await venueB().balances(keyWallet(user.evmKey), { account_address: user.evmAddress })).balance).toBe(9_990_000n);
  });

  it('an amount the venue refuses (5 USDC less the fee is below its minimum) fails before the fee is taken', async () => {
    const user = await newUser(10n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '5', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    await expect(runStep(deps, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = (await loadTask(table, ref))!;
    expect(task.failure).toMatchObject({ step: 0, code: 'BELOW_MINIMUM_DEPOSIT' });
    expect(task.steps[0]!.sends).toEqual({});
    expect(await usdcOn('ARB', user.evmAddress)).toBe(10n * USDC);
  });

  it('a venue the user has not initialised fails DEX_NOT_INITIALIZED before anything is sent', async () => {
    const user = await newUser(10n * USDC);
    const ref = await newTask(user, 'self', 'venue_a', '10', [
      { action: 'deposit', venue: 'venue_a', holding: { chain: 'INK', token: 'USDC' }, gas_policy: 'user' },
    ]);
    await expect(runStep(deps, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = (await loadTask(table, ref))!;
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'DEX_NOT_INITIALIZED' } });
    expect(task.steps[0]).toMatchObject({ status: 'failed', error: { code: 'DEX_NOT_INITIALIZED' } });
    expect(task.steps[0]!.sends).toEqual({});
  });
});

describe('withdrawal step (venue_b → self)', () => {
  /** `amount` of the user's ARB USDC deposited to venue_b through the driver's plan, as the deposit step sends it. */
  const depositToVenueB = async (user: TestUser, amount: bigint) => {
    const send = async (to: Address, data: Hex) => {
      const signer = localEvmSigner(user.evmKey);
      const evmChain = await chains.evm('ARB');
      return senders.evm.send({ chain: evmChain, from: user.evmAddress, call: { to, data, value: 0n }, spends: { token: 'USDC', amount: 0n }, signer });
    };
    await depositThroughPlan(venueB(), { wallet: keyWallet(user.evmKey), fields: { account_address: user.evmAddress }, send }, amount);
  };

  it('the venue pays out minus its 1 USDC fee; the platform fee is taken from the payout; amount_out to the base unit', async () => {
    const user = await newUser(20n * USDC);
    const wallet = keyWallet(user.evmKey);
    const fields = { account_address: user.evmAddress };
    await depositToVenueB(user, 20n * USDC);
    const ref = await newTask(user, 'venue_b', 'self', '10', [{ action: 'withdrawal', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'venue' }]);
    const feeBefore = await usdcOn('ARB', feeRecipient);
    const task = await drive(ref, 0);
    const fee = platformFee({ bps: 10n, fixed: 0n }, 9n * USDC);
    expect(task.status).toBe('completed');
    expect(task.steps[0]).toMatchObject({ status: 'completed', amount_in: '10000000', platform_fee: fee.toString(), amount_out: (9n * USDC - fee).toString() });
    expect(stepOf(task, 0, 'withdrawal').idempotency_key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(task.steps[0]!.result_tx_hashes!.payout).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(9n * USDC - fee);
    expect((await usdcOn('ARB', feeRecipient)) - feeBefore).toBe(fee);
    expect((await venueB().balances(wallet, fields)).balance).toBe(10n * USDC);

    // Seen on chain as live (the USDC Transfer from Bridge2 after the recorded head), claimed once.
    const first = stepOf(task, 0, 'withdrawal');
    expect(first.payout_from_block).toMatch(/^[0-9]+$/);
    expect(first.payout_log).toMatch(new RegExp(`^${task.steps[0]!.result_tx_hashes!.payout}:[0-9]+$`));

    // The same amount again: its own payout log, never the first one.
    const again = await drive(
      await newTask(user, 'venue_b', 'self', '10', [{ action: 'withdrawal', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'venue' }]),
      0,
    );
    expect(again.status).toBe('completed');
    const second = stepOf(again, 0, 'withdrawal');
    expect(second.payout_log).toMatch(/^0x[0-9a-f]{64}:[0-9]+$/);
    expect(second.payout_log).not.toBe(first.payout_log);
    const claims = await table.doc.send(
      new QueryCommand({
        TableName: table.name,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :payout)',
        ExpressionAttributeValues: { ':pk': keys.tasksOf(ref.app_id, ref.app_user_id), ':payout': 'PAYOUT#ARB#' },
      }),
    );
    expect(claims.Items!.map((item) => `${item.tx_hash}:${item.log_index}`).sort()).toEqual([first.payout_log, second.payout_log].sort());
    // Another withdrawal cannot take a claimed log; its own holder takes it again.
    const [txHash, logIndex] = first.payout_log!.split(':') as [Hex, string];
    expect(await payoutClaim(table, ref, 'ARB', 0, 'someone-else')({ txHash, logIndex: Number(logIndex) })).toBe(false);
    expect(await payoutClaim(table, ref, 'ARB', 0, first.idempotency_key!)({ txHash, logIndex: Number(logIndex) })).toBe(true);
  });

  it('a request the venue refuses after spending its nonce (balance too low) fails VENUE_REFUSED; the resume withdraws once, under a new key', async () => {
    const user = await newUser(20n * USDC);
    const wallet = keyWallet(user.evmKey);
    const fields = { account_address: user.evmAddress };
    await depositToVenueB(user, 6n * USDC);
    const ref = await newTask(user, 'venue_b', 'self', '10', [{ action: 'withdrawal', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'venue' }]);
    await expect(drive(ref, 0)).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const failed = (await loadTask(table, ref))!;
    expect(failed).toMatchObject({ status: 'failed', failure: { step: 0, code: 'VENUE_REFUSED' } });
    expect(failed.failure!.message).toMatch(/Insufficient balance for withdrawal/);
    const refused = stepOf(failed, 0, 'withdrawal');
    expect(refused).toMatchObject({ request_refused: true, idempotency_key: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(refused.reference).toBeUndefined();

    // Funded, then resumed as POST /task/{id}/resume does: the refused key is not adopted (venue_b would refuse its nonce as a duplicate).
    await depositToVenueB(user, 14n * USDC);
    const seen = (await loadTask(table, ref))!;
    expect(await resumeTask(table, seen, 0, new Date())).toBe(true);
    const task = await drive(ref, 0, { attempt: seen.attempt + 1 });
    expect(task.status).toBe('completed');
    const step = stepOf(task, 0, 'withdrawal');
    expect(step.idempotency_key).not.toBe(refused.idempotency_key);
    expect(step.request_refused).toBeUndefined();
    expect(step.previous_tries).toEqual([expect.objectContaining({ idempotency_key: refused.idempotency_key, request_refused: true })]);
    const fee = platformFee({ bps: 10n, fixed: 0n }, 9n * USDC);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(9n * USDC - fee);
    expect((await venueB().balances(wallet, fields)).balance).toBe(10n * USDC);
  });
});

/** A self → self task of 10 USDC, ARB → POL, as one bridge step with the user's own gas. */
function newArbToPolBridge(user: TestUser) {
  return newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: ARB_USDC, to: { chain: 'POL', token: 'USDC' }, gas_policy: 'user' }], {
    destination_chain: 'POL',
    destination_token: 'USDC',
  });
}

describe('bridge step', () => {
  it('ARB → POL: fee, one deposit, the fill is amount_out', async () => {
    const user = await newUser(20n * USDC);
    const ref = await newArbToPolBridge(user);
    const task = await drive(ref, 0);
    const step = stepOf(task, 0, 'bridge');
    expect(task.status).toBe('completed');
    expect(step.platform_fee).toBe('10000');
    expect(step.reference).toMatch(/./);
    // LI.FI's ERC-20 flow: approve the diamond for exactly the amount, then its call pulls it (nothing left approved).
    expect(Object.keys(step.sends!).sort()).toEqual(['bridge', 'bridge_approve', 'platform_fee']);
    const arb = sandboxChainClient(evm, 'ARB').client;
    const usdc = evm.chains.ARB.tokens.USDC!.address as Address;
    const diamond = LIFI_CONTRACTS.ARB[0] as Address;
    const approve = await arb.getTransaction({ hash: step.sends!.bridge_approve!.tx_hash as Hex });
    expect(getAddress(approve.to!)).toBe(getAddress(usdc));
    expect(decodeFunctionData({ abi: erc20Abi, data: approve.input })).toEqual({ functionName: 'approve', args: [getAddress(diamond), 9_990_000n] });
    expect(getAddress((await arb.getTransaction({ hash: step.sends!.bridge!.tx_hash as Hex })).to!)).toBe(getAddress(diamond));
    expect(await arb.readContract({ address: usdc, abi: erc20Abi, functionName: 'allowance', args: [user.evmAddress, diamond] })).toBe(0n);
    const received = await usdcOn('POL', user.evmAddress);
    expect(received).toBe(BigInt(step.amount_out!));
    // across: 0.05 USDC + 4 bps of what was bridged (10 − 0.01).
    expect(received).toBe(9_990_000n - 50_000n - 3_996n);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(10n * USDC);
  });

  it('ARB → POL after an approve that already landed (an earlier try of a resumed step): no second approve', async () => {
    const user = await newUser(20n * USDC);
    const arb = sandboxChainClient(evm, 'ARB').client;
    const usdc = evm.chains.ARB.tokens.USDC!.address as Address;
    const diamond = LIFI_CONTRACTS.ARB[0] as Address;
    // The wallet's own approve of the diamond for the bridged amount, as an earlier try would have left it.
    const wallet = createWalletClient({ account: privateKeyToAccount(user.evmKey), transport: http(evm.chains.ARB.rpc_url) });
    const earlier = await wallet.writeContract({ address: usdc, abi: erc20Abi, functionName: 'approve', args: [diamond, 9_990_000n], chain: null });
    expect((await arb.waitForTransactionReceipt({ hash: earlier })).status).toBe('success');
    const nonceBefore = await arb.getTransactionCount({ address: user.evmAddress });
    const ref = await newArbToPolBridge(user);
    const task = await drive(ref, 0);
    const step = stepOf(task, 0, 'bridge');
    expect(task.status).toBe('completed');
    expect(Object.keys(step.sends!).sort()).toEqual(['bridge', 'platform_fee']);
    expect(await arb.getTransactionCount({ address: user.evmAddress })).toBe(nonceBefore + 2);
    expect(await arb.readContract({ address: usdc, abi: erc20Abi, functionName: 'allowance', args: [user.evmAddress, diamond] })).toBe(0n);
    expect(await usdcOn('POL', user.evmAddress)).toBe(BigInt(step.amount_out!));
  });

  it("ARB → SOL: the fill lands in the user's Solana wallet", async () => {
    const user = await newUser(20n * USDC);
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: ARB_USDC, to: { chain: 'SOL', token: 'USDC' }, gas_policy: 'user' }], {
      destination_chain: 'SOL',
      destination_token: 'USDC',
    });
    const task = await drive(ref, 0);
    expect(task.status).toBe('completed');
    const received = await solana.balance(user.sol.publicKey.toBase58(), 'USDC');
    expect(received).toBe(BigInt(task.steps[0]!.amount_out!));
    expect(received).toBeGreaterThan(9n * USDC);
  });

  it('SOL → ARB: the quote’s own Solana transaction, checked and signed as given, is the one deposit; the fee after it; funds conserved', async () => {
    const user = await newUser(0n);
    const owner = user.sol.publicKey.toBase58();
    const vault = bridge.listing.vaults.sol;
    await sol.faucet(owner, 'SOL', 1_000_000_000n);
    await sol.faucet(owner, 'USDC', 20n * USDC);
    const [vaultBefore, feeBefore] = await Promise.all([solana.balance(vault, 'USDC'), solana.balance(solFeeRecipient, 'USDC')]);
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: { chain: 'SOL', token: 'USDC' }, to: ARB_USDC, gas_policy: 'user' }], {
      chain: 'SOL',
      destination_chain: 'ARB',
      destination_token: 'USDC',
    });
    const task = await drive(ref, 0);
    expect(task.status).toBe('completed');
    const step = task.steps[0]!;
    if (!isStepOf(step, 'bridge')) throw new Error('expected the bridge step');
    const deposit = step.sends!.bridge!;
    expect(deposit.chain).toBe('SOL');
    expect(deposit.candidates).toBeUndefined(); // signed once
    // The journaled transaction is the sandbox's quote, as given: fee payer the wallet, the quote id as memo.
    const { messageBytes } = SolanaChain.messageOf(Uint8Array.from(Buffer.from(deposit.raw, 'base64')));
    const message = getCompiledTransactionMessageDecoder().decode(messageBytes);
    expect(message.staticAccounts[0]).toBe(owner);
    expect(Buffer.from(messageBytes).includes(Buffer.from(step.reference!))).toBe(true);
    expect(deposit.effect).toEqual({ token: 'USDC', amount: '9990000', from: owner });
    expect(await solana.received(deposit.tx_hash, vault, 'USDC')).toBe(9_990_000n);
    // Conserved to the base unit: 10 USDC left the wallet, 0.01 to the fee recipient, 9.99 into the bridge, the fill out of it.
    expect(await solana.balance(owner, 'USDC')).toBe(10n * USDC);
    expect((await solana.balance(solFeeRecipient, 'USDC')) - feeBefore).toBe(10_000n);
    expect((await solana.balance(vault, 'USDC')) - vaultBefore).toBe(9_990_000n);
    const route = findBridgeRoute({ chain: 'SOL', token: 'USDC' }, ARB_USDC)!;
    expect(BigInt(step.amount_out!)).toBe(9_990_000n - bridgeFee(route, 9_990_000n));
    expect(await usdcOn('ARB', user.evmAddress)).toBe(BigInt(step.amount_out!));
  });

  it('SOL → ARB whose first transaction never lands: proven expired and absent, a new quote is checked and signed; one deposit, funds conserved', async () => {
    const user = await newUser(0n);
    const owner = user.sol.publicKey.toBase58();
    const vault = bridge.listing.vaults.sol;
    await sol.faucet(owner, 'SOL', 1_000_000_000n);
    await sol.faucet(owner, 'USDC', 20n * USDC);
    const vaultBefore = await solana.balance(vault, 'USDC');
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: { chain: 'SOL', token: 'USDC' }, to: ARB_USDC, gas_policy: 'user' }], {
      chain: 'SOL',
      destination_chain: 'ARB',
      destination_token: 'USDC',
    });
    // The first broadcast never reaches the cluster; the step gives up waiting after 600 ms (transient: retried).
    const lossy = new LossySolanaChain(sol.chain, 1);
    const stranded: StepDeps = {
      ...deps,
      chains: new SolanaOverride({ ...evm.chains, SOL: sol.chain, sandbox: true } as never, lossy),
      senders: { ...senders, solana: new SolanaSender({ inclusionTimeoutMs: 600 }) },
    };
    await expect(runStep(stranded, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_RETRYABLE_ERROR });
    const first = (await loadTask(table, ref))!.steps[0]! as StepOf<'bridge'>;
    const firstQuote = first.reference!;
    const firstSend = first.sends!.bridge!;
    expect(lossy.lost).toEqual([firstSend.tx_hash]);
    expect(first.sends!.platform_fee).toBeUndefined(); // no fee before the deposit landed

    // Its blockhash expires: the resume proves it absent and signs a new quote's transaction.
    await sol.advanceBlocks(160);
    const task = await drive(ref, 0);
    expect(task.status).toBe('completed');
    const step = task.steps[0]! as StepOf<'bridge'>;
    const deposit = step.sends!.bridge!;
    expect(step.reference).not.toBe(firstQuote);
    expect(deposit.tx_hash).not.toBe(firstSend.tx_hash);
    expect(deposit.candidates?.map((c) => c.tx_hash)).toEqual([firstSend.tx_hash, deposit.tx_hash]);
    expect(await solana.knowsSignature(firstSend.tx_hash)).toBe(false);
    const { messageBytes } = SolanaChain.messageOf(Uint8Array.from(Buffer.from(deposit.raw, 'base64')));
    expect(Buffer.from(messageBytes).includes(Buffer.from(step.reference!))).toBe(true);
    // Exactly one deposit: 10 USDC out of the wallet in all (9.99 bridged + 0.01 fee), 9.99 into the bridge.
    expect(await solana.balance(owner, 'USDC')).toBe(10n * USDC);
    expect((await solana.balance(vault, 'USDC')) - vaultBefore).toBe(9_990_000n);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(BigInt(step.amount_out!));
    expect(BigInt(step.amount_out!)).toBe(9_990_000n - bridgeFee(findBridgeRoute({ chain: 'SOL', token: 'USDC' }, ARB_USDC)!, 9_990_000n));
  });

  it.each(['refund', 'fail'] as const)(
    'a %s fault: the step fails, the bridged amount is back in the wallet and no platform fee was taken: the wallet is where it started',
    async (mode) => {
      const user = await newUser(20n * USDC);
      const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: ARB_USDC, to: { chain: 'INK', token: 'USDC' }, gas_policy: 'user' }], {
        destination_chain: 'INK',
        destination_token: 'USDC',
      });
      const feeBefore = await usdcOn('ARB', feeRecipient);
      await bridge.setFault({ mode, count: 1, address: user.evmAddress });
      await expect(drive(ref, 0)).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
      const task = (await loadTask(table, ref))!;
      expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: mode === 'refund' ? 'BRIDGE_REFUNDED' : 'BRIDGE_FAILED' } });
      expect(task.failure!.message).toMatch(/9990000 base units were refunded to your wallet on ARB; the platform fee \(10000 base units\) was not charged$/);
      expect(task.steps[0]!.result_tx_hashes!.refund).toMatch(/^0x/);
      expect(Object.keys(task.steps[0]!.sends!).sort()).toEqual(['bridge', 'bridge_approve']);
      expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
      expect(await usdcOn('ARB', feeRecipient)).toBe(feeBefore);
      expect(await usdcOn('INK', user.evmAddress)).toBe(0n);
      // What GET /task shows (and every event carries): the fee was not charged.
      expect(toTaskResource(task).metadata.checkpoints[0]).toMatchObject({ platform_fee: '10000', platform_fee_status: 'not_charged' });
    },
  );

  it("a fill below the quote's guaranteed minimum completes the step (the money arrived) and takes no platform fee: waived, recorded once", async () => {
    const user = await newUser(20n * USDC);
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: ARB_USDC, to: { chain: 'INK', token: 'USDC' }, gas_policy: 'user' }], {
      destination_chain: 'INK',
      destination_token: 'USDC',
    });
    const feeBefore = await usdcOn('ARB', feeRecipient);
    // The bridge's quote guarantees one base unit more than its fill pays (the sandbox fills exactly toAmount).
    const real = deps.bridge!;
    const promising: BridgeClient = {
      quote: async (request) => {
        const quote = await real.quote(request);
        return { ...quote, to_amount_min: quote.to_amount + 1n };
      },
      status: (reference) => real.status(reference),
    };
    const task = await drive(ref, 0, { stepDeps: { ...deps, bridge: promising } });
    expect(task.status).toBe('completed');
    const step = task.steps[0]!;
    expect(step.platform_fee_waived).toMatchObject({ code: 'BRIDGE_FILL_BELOW_MINIMUM' });
    expect(step.platform_fee_waived!.message).toMatch(/below the \d+ its quote guaranteed: no platform fee is charged$/);
    expect(step.sends!.platform_fee).toBeUndefined();
    expect(await usdcOn('ARB', feeRecipient)).toBe(feeBefore);
    // The fee stays in the wallet: 10 USDC planned, 9.99 bridged.
    expect(await usdcOn('ARB', user.evmAddress)).toBe(10n * USDC + 10_000n);
    expect(await usdcOn('INK', user.evmAddress)).toBe(BigInt(step.amount_out!));
    expect(toTaskResource(task).metadata.checkpoints[0]).toMatchObject({ platform_fee_status: 'waived', platform_fee_waived: step.platform_fee_waived });
  });
});

describe('a gas-sponsored deposit step and a withdrawal of the same wallet at once (issue 19)', () => {
  it("the step's authorisation is never made stale by the withdrawal: the deposit, the fee and the withdrawal each move exactly their amounts", async () => {
    const user = await newUser(30n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'sponsored' }], {
      gas_sponsored: true,
    });
    const feeBefore = await usdcOn('ARB', feeRecipient);
    const arb = await chains.evm('ARB');
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const own = localEvmSigner(user.evmKey);
    let withdrawal: Promise<unknown> | undefined;
    // The step signs its first authorisation; right then the user's /withdraw (a plain send) starts.
    const racing: StepWallets = {
      async open(task, account) {
        const wallet = await localWallets.open(task, account);
        return {
          ...wallet,
          evm: {
            ...wallet.evm,
            signAuthorization: async (request) => {
              const signed = await own.signAuthorization(request);
              withdrawal ??= senders.evm.send({
                chain: arb,
                from: user.evmAddress,
                call: arb.transferCall('USDC', recipient, 7n * USDC),
                spends: { token: 'USDC', amount: 7n * USDC, to: recipient },
                signer: own,
              });
              await Promise.race([withdrawal.catch(() => undefined), new Promise((done) => setTimeout(done, 1_500))]);
              return signed;
            },
          },
        };
      },
    };
    const task = await drive(ref, 0, { stepDeps: { ...deps, wallets: racing } });
    await withdrawal;
    expect(withdrawal).toBeDefined();
    expect(task.status).toBe('completed');
    expect(await usdcOn('ARB', recipient)).toBe(7n * USDC);
    expect((await usdcOn('ARB', feeRecipient)) - feeBefore).toBe(10_000n);
    expect((await venueB().balances(keyWallet(user.evmKey), { account_address: user.evmAddress })).balance).toBe(9_990_000n);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(13n * USDC);
    // The user paid no gas for the step's sends: only the withdrawal's.
    expect(await arb.client.getTransactionCount({ address: user.evmAddress })).toBe(2); // the authorisation and the withdrawal
  });
});

describe('gas-sponsored deposit steps of several users at once on a pool of sponsors (issue 25)', () => {
  it('4 users, 3 sponsors: the steps send from several sponsors, each sponsor’s nonces gap-free, every balance to the unit', async () => {
    const arb = await chains.evm('ARB');
    const rpc = sandboxChainClient(evm, 'ARB').client;
    const sponsorKeys = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()].map((key) => privateKeyToAccount(key));
    await Promise.all(sponsorKeys.map((key) => evm.faucet('ARB', key.address, 'ETH', ETHER)));
    // Each sponsor signature takes 50 ms, about an enclave round trip, so the steps overlap as they do in AWS.
    const payer = (key: (typeof sponsorKeys)[number]): GasPayer => ({
      address: async () => key.address,
      signTransaction: async (transaction) => {
        await new Promise((done) => setTimeout(done, 50));
        return key.signTransaction({ ...transaction } as never);
      },
    });
    const pool = { size: 3, member: (slot: number) => payer(sponsorKeys[slot] ?? sponsorKeys[0]!), treasury: payer(sponsorKeys[0]!) };
    const pooled = createSenders({ table, sponsors: pool, inclusionTimeoutMs: 10_000 });
    const stepDeps = { ...deps, senders: pooled };
    const sponsorEthBefore = await Promise.all(sponsorKeys.map((key) => arb.balance(key.address, 'ETH')));
    const feeBefore = await usdcOn('ARB', feeRecipient);
    const users = await Promise.all(Array.from({ length: 4 }, () => newUser(30n * USDC)));
    const refs = await Promise.all(
      users.map((user) =>
        newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'sponsored' }], { gas_sponsored: true }),
      ),
    );

    const tasks = await Promise.all(refs.map((ref) => drive(ref, 0, { stepDeps })));

    const bySponsor = new Map<string, number[]>();
    for (const task of tasks) {
      expect(task.status).toBe('completed');
      const sends = Object.values(task.steps[0]?.sends ?? {});
      expect(sends.length).toBeGreaterThan(0);
      for (const send of sends) {
        const transaction = await rpc.getTransaction({ hash: send.tx_hash as Hex });
        // The step record names the sponsor that signed it (a resume sends from that one).
        expect(send.sponsor?.address).toBe(getAddress(transaction.from));
        expect(sponsorKeys[send.sponsor?.slot ?? -1]?.address).toBe(getAddress(transaction.from));
        bySponsor.set(getAddress(transaction.from), [...(bySponsor.get(getAddress(transaction.from)) ?? []), transaction.nonce]);
      }
    }
    expect(bySponsor.size).toBeGreaterThanOrEqual(2);
    for (const [slot, key] of sponsorKeys.entries()) {
      const nonces = (bySponsor.get(key.address) ?? []).sort((a, b) => a - b);
      expect(nonces).toEqual(nonces.map((_, i) => i));
      expect(await rpc.getTransactionCount({ address: key.address })).toBe(nonces.length);
      let gas = 0n;
      for (const task of tasks)
        for (const send of Object.values(task.steps[0]?.sends ?? {}))
          if (send.sponsor?.slot === slot) {
            const receipt = await rpc.getTransactionReceipt({ hash: send.tx_hash as Hex });
            gas += receipt.gasUsed * receipt.effectiveGasPrice;
          }
      expect(await arb.balance(key.address, 'ETH')).toBe((sponsorEthBefore[slot] as bigint) - gas);
    }
    // Each user: 10 USDC out (9.99 credited at the venue, 0.01 platform fee), no gas paid.
    for (const user of users) {
      expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
      expect((await venueB().balances(keyWallet(user.evmKey), { account_address: user.evmAddress })).balance).toBe(9_990_000n);
      expect(await arb.balance(user.evmAddress, 'ETH')).toBe(ETHER);
    }
    expect((await usdcOn('ARB', feeRecipient)) - feeBefore).toBe(4n * 10_000n);
  });
});

describe('the sponsorship budget in a sponsored step (issue 21 §6)', () => {
  it('a user over their daily budget: the step fails SPONSORSHIP_BUDGET_EXCEEDED before anything is signed or sent', async () => {
    const user = await newUser(30n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'sponsored' }], {
      gas_sponsored: true,
    });
    const spent = new SponsorshipBudget({ table, limits: { ...DEFAULT_SPONSORSHIP_LIMITS, perUserPerDay: 1 }, now: () => new Date() });
    await spent.consume(ref.app_id, ref.app_user_id); // today's one sponsored send, used elsewhere
    const arb = await chains.evm('ARB');
    const nonceBefore = await arb.client.getTransactionCount({ address: user.evmAddress });
    await expect(drive(ref, 0, { stepDeps: { ...deps, sponsorship: spent } })).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = (await loadTask(table, ref))!;
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'SPONSORSHIP_BUDGET_EXCEEDED' } });
    expect(task.failure!.message).toMatch(/1 sponsored transactions a day.*resume the task then/);
    expect(task.steps[0]!.sends ?? {}).toEqual({});
    expect(await usdcOn('ARB', user.evmAddress)).toBe(30n * USDC);
    expect(await arb.client.getTransactionCount({ address: user.evmAddress })).toBe(nonceBefore);
  });
});

describe('venue deposit faults (venue_b): refunded, or kept and not credited', () => {
  const walletNonce = async (address: Address) => (await chains.evm('ARB')).client.getTransactionCount({ address });
  const venueBalance = async (user: TestUser) => (await venueB().balances(keyWallet(user.evmKey), { account_address: user.evmAddress })).balance;
  /** POST /task/{id}/resume's own store write (shared/transfers/task-store.ts). */
  const resumeFailed = async (ref: TaskRef) => {
    const seen = (await loadTask(table, ref))!;
    expect(await resumeTask(table, seen, seen.failure!.step, new Date())).toBe(true);
    return seen.attempt + 1;
  };

  it('refund: DEPOSIT_REFUNDED with the refund recorded, the money back to the base unit; a resume deposits again exactly once', async () => {
    const user = await newUser(30n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'refund', count: 1 });
    try {
      await expect(drive(ref, 0)).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    } finally {
      await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', count: 0 });
    }
    const failed = (await loadTask(table, ref))!;
    expect(failed).toMatchObject({ status: 'failed', failure: { step: 0, code: 'DEPOSIT_REFUNDED' } });
    expect(failed.failure!.message).toMatch(/back in the wallet/);
    const refund = failed.steps[0]!.result_tx_hashes!.refund!;
    expect(refund).toMatch(/^0x[0-9a-f]{64}$/);
    expect(refund).not.toBe(failed.steps[0]!.sends!.deposit_0!.tx_hash);
    expect(failed.failure!.message).toMatch(/the platform fee \(10000 base units\) was not charged/);
    // Nothing left the wallet for good: the deposit came back and no platform fee was taken; the venue credited nothing.
    expect(await usdcOn('ARB', user.evmAddress)).toBe(30n * USDC);
    expect(await venueBalance(user)).toBe(0n);
    expect(await walletNonce(user.evmAddress)).toBe(1);
    const attempt = await resumeFailed(ref);
    const task = await drive(ref, 0, { attempt });
    expect(task.status).toBe('completed');
    const step = task.steps[0]!;
    expect(step.sends!.deposit_0!.tx_hash).not.toBe(step.previous_tries![0]!.sends!.deposit_0!.tx_hash);
    expect(step.previous_tries![0]!.sends!.platform_fee).toBeUndefined();
    expect(step.sends!.platform_fee!.tx_hash).toMatch(/^0x/);
    expect(step.amount_out).toBe('9990000');
    // refunded deposit + one new deposit + the fee once it was credited: three sends, one credit.
    expect(await walletNonce(user.evmAddress)).toBe(3);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
    expect(await venueBalance(user)).toBe(9_990_000n);
  });

  it('a wallet drained between acceptance and execution: INSUFFICIENT_FUNDS before anything is sent, no fee; funded again, a resume completes with one fee', async () => {
    const user = await newUser(5n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    const feeBefore = await usdcOn('ARB', feeRecipient);
    await expect(drive(ref, 0)).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const failed = (await loadTask(table, ref))!;
    expect(failed).toMatchObject({ status: 'failed', failure: { step: 0, code: 'INSUFFICIENT_FUNDS' } });
    expect(failed.failure!.message).toMatch(/needs 10(\.0+)?, available 5(\.0+)?$/);
    expect(failed.steps[0]!.sends).toEqual({});
    expect(await usdcOn('ARB', feeRecipient)).toBe(feeBefore);
    expect(await walletNonce(user.evmAddress)).toBe(0);
    await evm.faucet('ARB', user.evmAddress, 'USDC', 5n * USDC);
    const attempt = await resumeFailed(ref);
    const task = await drive(ref, 0, { attempt });
    expect(task).toMatchObject({ status: 'completed', attempt: 1 });
    expect((await usdcOn('ARB', feeRecipient)) - feeBefore).toBe(10_000n);
    expect(await venueBalance(user)).toBe(9_990_000n);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(0n);
  });

  it('a wallet drained between the credit and the fee: the delivered deposit completes, its fee waived once (INSUFFICIENT_FUNDS) and never sent', async () => {
    const user = await newUser(30n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    const feeBefore = await usdcOn('ARB', feeRecipient);
    const sink = privateKeyToAccount(generatePrivateKey()).address;
    let drained = false;
    const draining: Senders = {
      ...senders,
      evm: {
        send: async (request: Parameters<Senders['evm']['send']>[0]) => {
          if (request.spends.to === feeRecipient && !drained) {
            drained = true; // another send of the same wallet (a /withdraw) empties it first
            const arb = await chains.evm('ARB');
            const all = await arb.balance(user.evmAddress, 'USDC');
            await senders.evm.send({
              chain: arb,
              from: user.evmAddress,
              call: arb.transferCall('USDC', sink, all),
              spends: { token: 'USDC', amount: all, to: sink },
              signer: localEvmSigner(user.evmKey),
            });
          }
          return senders.evm.send(request);
        },
      } as Senders['evm'],
    };
    const task = await drive(ref, 0, { stepDeps: { ...deps, senders: draining } });
    expect(task).toMatchObject({ status: 'completed', attempt: 0 });
    const step = task.steps[0]!;
    expect(Object.keys(step.sends!)).toEqual(['deposit_0']);
    expect(step.platform_fee_waived).toMatchObject({ code: 'INSUFFICIENT_FUNDS' });
    expect(await usdcOn('ARB', feeRecipient)).toBe(feeBefore);
    expect(await venueBalance(user)).toBe(9_990_000n);
    // A later invocation of the completed step sends nothing.
    expect(await runStep(deps, invocation(ref, 0, 'poll'))).toMatchObject({ settled: true });
    expect(await usdcOn('ARB', feeRecipient)).toBe(feeBefore);
    // deposit and the drain: no fee send.
    expect(await walletNonce(user.evmAddress)).toBe(2);
    expect(toTaskResource(task).metadata.checkpoints[0]).toMatchObject({ platform_fee_status: 'waived' });
  });

  it('fail (the venue keeps it): task.stuck once per try before DEPOSIT_NOT_CREDITED at the step deadline; a resume adopts the same deposit, never a second', async () => {
    const user = await newUser(30n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    const short = { ...deps, deadlineSeconds: 2, stuckSeconds: 1 };
    await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'fail', count: 1 });
    try {
      await expect(drive(ref, 0, { stepDeps: short })).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    } finally {
      await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', count: 0 });
    }
    const failed = (await loadTask(table, ref))!;
    expect(failed.failure).toMatchObject({ step: 0, code: 'DEPOSIT_NOT_CREDITED' });
    expect(failed.failure!.message).toMatch(/landed but the venue has not credited it; the platform fee \(10000 base units\) was not charged/);
    expect(failed.steps[0]!.result_tx_hashes).toBeUndefined();
    // The deposit (9.99) is held by the venue; its platform fee stays in the wallet until the venue credits it.
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC + 10_000n);
    expect(await walletNonce(user.evmAddress)).toBe(1);
    const attempt = await resumeFailed(ref);
    await expect(drive(ref, 0, { attempt, stepDeps: short })).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const again = (await loadTask(table, ref))!;
    expect(again.failure).toMatchObject({ step: 0, code: 'DEPOSIT_NOT_CREDITED' });
    const step = again.steps[0]!;
    expect(step.sends!.deposit_0!.tx_hash).toBe(step.previous_tries![0]!.sends!.deposit_0!.tx_hash);
    expect(await walletNonce(user.evmAddress)).toBe(1);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC + 10_000n);
    expect(await venueBalance(user)).toBe(0n);
    // The events written with these changes (shared/events/outbox.ts): stuck once in each try, before its failure.
    const item = (
      await table.doc.send(new GetCommand({ TableName: table.name, Key: keys.task(ref.app_id, ref.app_user_id, ref.task_id), ConsistentRead: true }))
    ).Item!;
    expect((item.outbox as { type: string }[]).map((entry) => entry.type)).toEqual([
      'task.step_updated',
      'task.stuck',
      'task.step_updated',
      'task.failed',
      'task.resumed',
      'task.step_updated',
      'task.stuck',
      'task.step_updated',
      'task.failed',
    ]);
    expect(step.stuck_at).toBeDefined();
    expect(step.previous_tries![0]!.stuck_at).toBeDefined();
  });
});

describe('per-kind Lambdas, no bridge configured, long polls', () => {
  it('a bridge step where no BRIDGE_URL is configured fails BRIDGE_NOT_CONFIGURED, recorded, nothing sent; the root reads BRIDGE_URL without throwing', async () => {
    expect(bridgeClientFromEnv({})).toBeUndefined();
    expect(bridgeClientFromEnv({ BRIDGE_URL: 'ftp://bridge.example' })).toBeUndefined();
    expect(bridgeClientFromEnv({ BRIDGE_URL: 'https://bridge.example' })).toBeInstanceOf(HttpBridgeClient);
    const user = await newUser(20n * USDC);
    const ref = await newArbToPolBridge(user);
    const { bridge: _configured, ...withoutBridge } = deps;
    await expect(runStep(withoutBridge, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = (await loadTask(table, ref))!;
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'BRIDGE_NOT_CONFIGURED' } });
    expect(task.steps[0]!.sends ?? {}).toEqual({});
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
  });

  it("a bridge quote that pays a contract off the allow-list (LI.FI's diamonds) fails the step before signing: BRIDGE_QUOTE_UNKNOWN_CONTRACT, nothing sent", async () => {
    const user = await newUser(20n * USDC);
    const ref = await newArbToPolBridge(user);
    // An allow-list without LI.FI's diamond (the sandbox's quotes pay the diamond at LI.FI's own address).
    const strict = { ...deps, bridge: new HttpBridgeClient({ baseUrl: bridge.url, contracts: { ARB: ['0x00000000000000000000000000000000000000C3'] } }) };
    await expect(runStep(strict, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = (await loadTask(table, ref))!;
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'BRIDGE_QUOTE_UNKNOWN_CONTRACT' } });
    expect(task.steps[0]!.sends ?? {}).toEqual({});
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
  });

  it("a bridge quote that would spend another token than the chain config's fails the step before signing: BRIDGE_QUOTE_WRONG_TOKEN, nothing sent", async () => {
    const user = await newUser(20n * USDC);
    const ref = await newArbToPolBridge(user);
    const real = deps.bridge!;
    const otherToken = evm.chains.ARB.tokens['USDC.E']!.address as `0x${string}`;
    const swapped: BridgeClient = {
      quote: async (request) => {
        const quote = await real.quote(request);
        return { ...quote, deposit: quote.deposit.map((call) => (call.kind === 'evm_transaction' ? { ...call, token: otherToken } : call)) };
      },
      status: (reference) => real.status(reference),
    };
    await expect(runStep({ ...deps, bridge: swapped }, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = (await loadTask(table, ref))!;
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'BRIDGE_QUOTE_WRONG_TOKEN' } });
    expect(task.steps[0]!.sends ?? {}).toEqual({});
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
  });

  /**
   * A Solana bridge quote whose transaction is swapped for `build`'s (unsigned, the wallet as fee
   * payer): it stands for what an allow-listed bridge program would move inside its own instruction,
   * which the message check cannot see, so the simulation before signing must.
   */
  async function solanaQuoteSwapped(build: (owner: string, vault: string, quoteId: string, amount: bigint) => Promise<Uint8Array>) {
    const user = await newUser(0n);
    const owner = user.sol.publicKey.toBase58();
    await sol.faucet(owner, 'SOL', 1_000_000_000n);
    await sol.faucet(owner, 'USDC', 20n * USDC);
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: { chain: 'SOL', token: 'USDC' }, to: ARB_USDC, gas_policy: 'user' }], {
      chain: 'SOL',
      destination_chain: 'ARB',
      destination_token: 'USDC',
    });
    const real = deps.bridge!;
    const swapped: BridgeClient = {
      quote: async (request) => {
        const quote = await real.quote(request);
        const messageBytes = await build(owner, bridge.listing.vaults.sol, quote.quote_id, quote.amount);
        const wire = getTransactionEncoder().encode({ messageBytes, signatures: { [owner]: null } } as unknown as Transaction);
        const transaction = Buffer.from(wire).toString('base64');
        return { ...quote, deposit: quote.deposit.map((call) => (call.kind === 'solana_transaction' ? { ...call, transaction } : call)) };
      },
      status: (reference) => real.status(reference),
    };
    await expect(runStep({ ...deps, bridge: swapped }, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = (await loadTask(table, ref))!;
    expect(task.steps[0]!.sends ?? {}).toEqual({});
    expect(await solana.balance(owner, 'USDC')).toBe(20n * USDC);
    return task;
  }

  it('a Solana bridge transaction that would take more than the quoted amount fails the step on its simulation: BRIDGE_QUOTE_WRONG_AMOUNT, nothing signed', async () => {
    const task = await solanaQuoteSwapped(
      async (owner, vault, quoteId, amount) => (await solana.transferMessage(owner, vault, 'USDC', amount + 1n, quoteId)).messageBytes,
    );
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'BRIDGE_QUOTE_WRONG_AMOUNT' } });
    expect(task.failure!.message).toContain('9990001');
  });

  it('a Solana bridge transaction that would take less than quoted is refused too (it would land and then fail its effect check): BRIDGE_QUOTE_WRONG_AMOUNT', async () => {
    const task = await solanaQuoteSwapped(
      async (owner, vault, quoteId, amount) => (await solana.transferMessage(owner, vault, 'USDC', amount - 1n, quoteId)).messageBytes,
    );
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'BRIDGE_QUOTE_WRONG_AMOUNT' } });
    expect(task.failure!.message).toContain('9989999');
  });

  it('a Solana bridge transaction that would also take the wallet’s SOL fails the step on its simulation: BRIDGE_QUOTE_FEE_TOO_HIGH, nothing signed', async () => {
    const task = await solanaQuoteSwapped(async (owner, vault, _quoteId, amount) => {
      // The quoted USDC into the vault, and 0.1 SOL to the vault as well.
      const mint = address(sol.chain.tokens.USDC.mint);
      const payer = createNoopSigner(address(owner));
      const ata = async (of: string) => (await findAssociatedTokenPda({ owner: address(of), mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
      const { value: lifetime } = await createSolanaRpc(sol.chain.rpc_url).getLatestBlockhash().send();
      const instructions = [
        getTransferCheckedInstruction({ source: await ata(owner), mint, destination: await ata(vault), authority: payer, amount, decimals: 6 }),
        getTransferSolInstruction({ source: payer, destination: address(vault), amount: 100_000_000n }),
      ];
      const message = pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayer(payer.address, m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
        (m) => appendTransactionMessageInstructions(instructions, m),
      );
      return new Uint8Array(compileTransaction(message).messageBytes);
    });
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'BRIDGE_QUOTE_FEE_TOO_HIGH' } });
  });

  it('a Lambda refuses a step of another kind without any effect', async () => {
    const user = await newUser(20n * USDC);
    const ref = await newArbToPolBridge(user);
    const before = (await loadTask(table, ref))!;
    await expect(runKinds(deps, { deposit: DEPOSIT_KIND }, invocation(ref, 0, 'submit'))).rejects.toMatchObject({
      name: STEP_FAILED_ERROR,
      message: expect.stringContaining('runs deposit steps'),
    });
    expect(await loadTask(table, ref)).toEqual(before);
  });

  it('a poll long-polls within pollWindowMs: the first poll after the submit answers settled once the venue credits', async () => {
    const user = await newUser(20n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [{ action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' }]);
    const longPolling = { ...deps, pollWindowMs: 5_000 };
    // The venue holds the credit (a stall) until the submit is done, whatever the machine's speed.
    await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'stall', count: 1 });
    try {
      expect(await runStep(longPolling, invocation(ref, 0, 'submit'))).toMatchObject({ settled: false });
    } finally {
      await venues.setFault({ target: 'venue_b', operation: 'deposit', mode: 'clear', count: 0 });
    }
    const started = performance.now();
    expect(await runStep(longPolling, invocation(ref, 0, 'poll'))).toEqual({ settled: true, wait_seconds: 0 });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect((await loadTask(table, ref))!.status).toBe('completed');
  });

  it('a poll that cannot settle looks again every 200 ms for pollWindowMs, then answers settled: false (one look with no window)', async () => {
    const user = await newUser(20n * USDC);
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: ARB_USDC, to: { chain: 'INK', token: 'USDC' }, gas_policy: 'user' }], {
      destination_chain: 'INK',
      destination_token: 'USDC',
    });
    let looks = 0;
    const counting = {
      quote: deps.bridge!.quote.bind(deps.bridge),
      status: (reference: Parameters<NonNullable<StepDeps['bridge']>['status']>[0]) => {
        looks++;
        return deps.bridge!.status(reference);
      },
    };
    const stepDeps = { ...deps, bridge: counting };
    await bridge.setFault({ mode: 'stall', count: 1 });
    try {
      expect(await runStep(stepDeps, invocation(ref, 0, 'submit'))).toMatchObject({ settled: false });
      looks = 0;
      expect(await runStep(stepDeps, invocation(ref, 0, 'poll'))).toMatchObject({ settled: false });
      expect(looks).toBe(1);
      looks = 0;
      const started = performance.now();
      expect(await runStep({ ...stepDeps, pollWindowMs: 1_000 }, invocation(ref, 0, 'poll'))).toMatchObject({
        settled: false,
        wait_seconds: expect.any(Number),
      });
      const elapsed = performance.now() - started;
      expect(looks).toBeGreaterThanOrEqual(4);
      expect(elapsed).toBeGreaterThanOrEqual(800);
      expect(elapsed).toBeLessThan(3_000);
    } finally {
      await bridge.setFault({ mode: 'clear', count: 0 });
    }
  });
});

describe('guards and settle', () => {
  it('refuses a step whose previous step is not completed, and a stale attempt, without any effect', async () => {
    const user = await newUser(20n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '10', [
      { action: 'bridge', from: { chain: 'POL', token: 'USDC' }, to: ARB_USDC, gas_policy: 'user' },
      { action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' },
    ]);
    const before = (await loadTask(table, ref))!;
    await expect(runStep(deps, invocation(ref, 1, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    await expect(runStep(deps, invocation(ref, 0, 'submit', 1))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    expect(await loadTask(table, ref)).toEqual(before);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(20n * USDC);
  });

  it('settle records the failure once with a safe message, and never over a recorded one', async () => {
    const user = await newUser(0n);
    const ref = await newTask(user, 'venue_b', 'self', '10', [{ action: 'withdrawal', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'venue' }], {
      status: 'in_progress',
    });
    const error = { Error: 'States.Timeout', Cause: 'op_jwt=eyJsecret access_key=abc' };
    expect(await settle(deps, { task: ref, attempt: 1, error })).toEqual({ recorded: false }); // stale attempt
    expect(await settle(deps, { task: ref, attempt: 0, error })).toEqual({ recorded: true });
    const task = (await loadTask(table, ref))!;
    expect(task).toMatchObject({ status: 'failed', failure: { step: 0, code: 'States.Timeout' } });
    expect(JSON.stringify(task)).not.toContain('secret');
    expect(task.steps[0]).toMatchObject({ status: 'failed', error: { code: 'States.Timeout' } });
    expect(await settle(deps, { task: ref, attempt: 0, error: { Error: 'Other' } })).toEqual({ recorded: false });
    expect((await loadTask(table, ref))!.failure!.code).toBe('States.Timeout');
  });
});

/** The step as planned (its kind's route fields and gas policy), pending at the next try, with `previous` added to its earlier tries. */
function replanned(step: StepRecord, previous: { try: number }): StepRecord {
  const again = { index: step.index, status: 'pending', try: step.try + 1 } as const;
  switch (step.action) {
    case 'withdrawal':
      return {
        ...again,
        action: step.action,
        venue: step.venue,
        holding: step.holding,
        gas_policy: step.gas_policy,
        previous_tries: [...(step.previous_tries ?? []), previous],
      };
    case 'bridge':
      return {
        ...again,
        action: step.action,
        from: step.from,
        to: step.to,
        gas_policy: step.gas_policy,
        previous_tries: [...(step.previous_tries ?? []), previous],
      };
    case 'deposit':
      return {
        ...again,
        action: step.action,
        venue: step.venue,
        holding: step.holding,
        gas_policy: step.gas_policy,
        previous_tries: [...(step.previous_tries ?? []), previous],
      };
  }
}

/** What POST /task/{id}/resume does to the item (the API's part): the failed step's try is moved to previous_tries, a new attempt starts. */
async function resume(ref: TaskRef, mode: 'reset to pending' | 'left failed' = 'reset to pending'): Promise<number> {
  const task = (await loadTask(table, ref))!;
  const index = task.failure!.step;
  const step = task.steps[index]!;
  const moved = new Set(['sends', 'idempotency_key', 'reference', 'baseline', 'expected_credit', 'amount_in', 'error']);
  const previous = { try: step.try, ...Object.fromEntries(Object.entries(step).filter(([field]) => moved.has(field))) };
  const reset = replanned(step, JSON.parse(JSON.stringify(previous)));
  const { failure: _failure, ...rest } = task;
  const attempt = task.attempt + 1;
  // Either way works: the new attempt's first step write reopens a task left failed (and clears its failure).
  const item = {
    ...(mode === 'left failed' ? task : { ...rest, status: 'pending' }),
    attempt,
    execution_name: `${task.task_id}-a${attempt}`,
    steps: task.steps.map((s, i) => (i === index ? reset : s)),
  };
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.task(ref.app_id, ref.app_user_id, ref.task_id), ...item } }));
  return attempt;
}

describe('resumed tries', () => {
  it('after a refund (no fee taken), a resume bridges again and charges the platform fee once, when it fills', async () => {
    const user = await newUser(20n * USDC);
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: ARB_USDC, to: { chain: 'INK', token: 'USDC' }, gas_policy: 'user' }], {
      destination_chain: 'INK',
      destination_token: 'USDC',
    });
    const feeBefore = await usdcOn('ARB', feeRecipient);
    await bridge.setFault({ mode: 'refund', count: 1 });
    await expect(drive(ref, 0)).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const attempt = await resume(ref, 'left failed');
    // The stale execution of attempt 0 can no longer act.
    await expect(runStep(deps, invocation(ref, 0, 'submit', 0))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    const task = await drive(ref, 0, { attempt });
    expect(task).toMatchObject({ status: 'completed', attempt: 1 });
    expect(task.failure).toBeUndefined();
    const step = task.steps[0]!;
    expect(step.try).toBe(1);
    expect(step.previous_tries![0]!.sends!.platform_fee).toBeUndefined();
    expect(step.sends!.platform_fee!.tx_hash).toMatch(/^0x/);
    expect(step.sends!.bridge!.tx_hash).not.toBe(step.previous_tries![0]!.sends!.bridge!.tx_hash);
    expect((await usdcOn('ARB', feeRecipient)) - feeBefore).toBe(10_000n);
    expect(await usdcOn('ARB', user.evmAddress)).toBe(10n * USDC);
    expect(await usdcOn('INK', user.evmAddress)).toBe(BigInt(step.amount_out!));
  });

  it('a bridge deposit still in flight when the step timed out is adopted by the resume, never sent again', async () => {
    const user = await newUser(20n * USDC);
    const ref = await newTask(user, 'self', 'self', '10', [{ action: 'bridge', from: ARB_USDC, to: { chain: 'INK', token: 'USDC' }, gas_policy: 'user' }], {
      destination_chain: 'INK',
      destination_token: 'USDC',
    });
    await bridge.setFault({ mode: 'stall', count: 1 });
    try {
      expect(await runStep(deps, invocation(ref, 0, 'submit'))).toMatchObject({ settled: false });
      expect(await runStep(deps, invocation(ref, 0, 'poll'))).toMatchObject({ settled: false });
      await expect(runStep({ ...deps, deadlineSeconds: 0 }, invocation(ref, 0, 'poll'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
      expect((await loadTask(table, ref))!.failure).toMatchObject({ step: 0, code: 'STEP_TIMED_OUT' });
      const attempt = await resume(ref);
      expect(await runStep(deps, invocation(ref, 0, 'submit', attempt))).toMatchObject({ settled: false });
      const adopted = (await loadTask(table, ref))!.steps[0]!;
      expect(adopted.sends!.bridge!.tx_hash).toBe(adopted.previous_tries![0]!.sends!.bridge!.tx_hash);
      await bridge.setFault({ mode: 'clear', count: 0 });
      const task = await drive(ref, 0, { attempt });
      expect(task.status).toBe('completed');
    } finally {
      await bridge.setFault({ mode: 'clear', count: 0 });
    }
    expect(await usdcOn('ARB', user.evmAddress)).toBe(10n * USDC);
    expect(await usdcOn('INK', user.evmAddress)).toBeGreaterThan(9n * USDC);
  });
});

describe('two steps (POL → ARB bridge, then venue_b deposit)', () => {
  it('step 1 takes what step 0 delivered, and the platform fee only once', async () => {
    const user = await newUser(0n);
    await evm.faucet('POL', user.evmAddress, 'POL', ETHER);
    await evm.faucet('POL', user.evmAddress, 'USDC', 30n * USDC);
    const ref = await newTask(user, 'self', 'venue_b', '30', [
      { action: 'bridge', from: { chain: 'POL', token: 'USDC' }, to: ARB_USDC, gas_policy: 'user' },
      { action: 'deposit', venue: 'venue_b', holding: ARB_USDC, gas_policy: 'user' },
    ]);
    const first = await drive(ref, 0);
    expect(first).toMatchObject({ status: 'in_progress', current_step: 1 });
    const bridged = BigInt(first.steps[0]!.amount_out!);
    const task = await drive(ref, 1);
    expect(task).toMatchObject({ status: 'completed', current_step: 2 });
    expect(task.steps[1]).toMatchObject({ amount_in: bridged.toString(), platform_fee: '0', amount_out: bridged.toString() });
    expect(Object.keys(task.steps[1]!.sends!)).toEqual(['deposit_0']);
    expect((await venueB().balances(keyWallet(user.evmKey), { account_address: user.evmAddress })).balance).toBe(bridged);
    expect(await usdcOn('POL', user.evmAddress)).toBe(0n);
  });
});

describe('venue_d (INK): a two-call deposit, and a crash between the withdrawal request and its reference', () => {
  it('never withdraws twice: a fresh process finds the key without a reference and the venue balance debited', async () => {
    const user = await newUser(0n);
    await evm.faucet('INK', user.evmAddress, 'ETH', ETHER);
    await evm.faucet('INK', user.evmAddress, 'USDC', 20n * USDC);
    const fields = await venueD().initAccount(keyWallet(user.evmKey), {});
    const perp = { ...user.account.perp_dex_status, venue_d: { ...user.account.perp_dex_status.venue_d, ...fields, initialized: true } };
    await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.account(APP_ID, user.appUserId), ...user.account, perp_dex_status: perp } }));
    const INK_USDC = { chain: 'INK', token: 'USDC' } as const;
    const depositRef = await newTask(user, 'self', 'venue_d', '10', [{ action: 'deposit', venue: 'venue_d', holding: INK_USDC, gas_policy: 'user' }], {
      chain: 'INK',
    });
    const deposited = await drive(depositRef, 0);
    expect(deposited.status).toBe('completed');
    expect(Object.keys(deposited.steps[0]!.sends!).sort()).toEqual(['deposit_0', 'deposit_1', 'platform_fee']);
    expect((await venueD().balances(keyWallet(user.evmKey), fields)).balance).toBe(9_990_000n);

    // The process dies after the venue accepted the request and before the reference was recorded.
    const crashingRegistry = new VenueRegistry(
      { venue_d: venues.urls.venue_d },
      {
        venue_d: (options) => {
          const real = venueDriverFactories(chains, 'sandbox').venue_d!(options);
          return Object.assign(Object.create(Object.getPrototypeOf(real)), real, {
            withdraw: async (...args: Parameters<typeof real.withdraw>) => {
              await real.withdraw(...args);
              throw new Error('crash after the venue accepted');
            },
          });
        },
      },
    );
    const ref = await newTask(user, 'venue_d', 'self', '5', [{ action: 'withdrawal', venue: 'venue_d', holding: INK_USDC, gas_policy: 'venue' }], {
      chain: 'INK',
    });
    await expect(runStep({ ...deps, venues: crashingRegistry }, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_RETRYABLE_ERROR });
    const crashed = stepOf((await loadTask(table, ref))!, 0, 'withdrawal');
    expect(crashed.idempotency_key).toBeDefined();
    expect(crashed.reference).toBeUndefined();
    expect(crashed.baseline).toBe('9990000');
    // A fresh process (a new driver: no memory of the signed request) must not sign a second one.
    const fresh = { ...deps, venues: new VenueRegistry({ venue_d: venues.urls.venue_d }, venueDriverFactories(chains, 'sandbox')) };
    await expect(runStep(fresh, invocation(ref, 0, 'submit'))).rejects.toMatchObject({ name: STEP_FAILED_ERROR });
    expect((await loadTask(table, ref))!.failure).toMatchObject({ code: 'WITHDRAWAL_UNRECONCILED' });
    expect((await venueD().balances(keyWallet(user.evmKey), fields)).balance).toBe(4_990_000n);
  });
});
