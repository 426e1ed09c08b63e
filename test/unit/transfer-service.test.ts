import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putAccountIfAbsent } from '../../shared/accounts/account-record.ts';
import type { AuthenticatedUser } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { DomainError } from '../../shared/errors.ts';
import { setLogLevel } from '../../shared/logger.ts';
import type { BridgeQuoter, EstimateDeps, GasEstimator } from '../../shared/transfers/estimate.ts';
import type { ExecutionStatus, StepFunctions, TransferExecutor } from '../../shared/transfers/executor.ts';
import type { TransferInput } from '../../shared/transfers/schemas.ts';
import {
  createTransfer,
  estimateTransfer,
  getUserTask,
  listUserTasks,
  parseTaskId,
  resumeUserTask,
  type TransferServiceDeps,
  type WalletBalances,
} from '../../shared/transfers/service.ts';
import type { ExecutionInput, TaskRecord } from '../../shared/transfers/task.ts';
import { defaultPerpDexStatus } from '../../shared/venues/default-status.ts';
import { ConfiguredPrices } from './support/configured-prices.ts';
import { DYNAMO_ENGINES, startEngineTable } from './support/dynamodb-engines.ts';

/**
 * The transfer service (shared/transfers/service.ts) on a real table, both engines, with a
 * recording TransferExecutor standing in for Step Functions and fixed estimate ports (gas 60,000
 * at 0.1 gwei, configured prices, a bridge charging 0.25 USDC): create, Idempotency-Key replay,
 * list order and limit (a Query), get own / other / malformed, re-kick once, reconcile a closed
 * execution, resume rules, 50 concurrent resumes.
 */
class RecordingExecutor implements TransferExecutor {
  readonly starts: { name: string; input: ExecutionInput }[] = [];
  readonly describes: string[] = [];
  failStarts = 0;
  /** Every start call, also the failed ones. */
  attempts = 0;
  status: ExecutionStatus | undefined = 'RUNNING';
  functions(): StepFunctions {
    return { withdrawal: 'fn-withdrawal', bridge: 'fn-bridge', deposit: 'fn-deposit', settle: 'fn-settle' };
  }
  async start(name: string, input: ExecutionInput): Promise<void> {
    this.attempts++;
    await new Promise((done) => setImmediate(done));
    if (this.failStarts > 0) {
      this.failStarts--;
      throw new Error('connect ECONNREFUSED 127.0.0.1:1');
    }
    this.starts.push({ name, input });
  }
  async describe(name: string): Promise<ExecutionStatus | undefined> {
    this.describes.push(name);
    return this.status;
  }
}

const gas: GasEstimator = { estimateGas: async () => 60_000n, gasPrice: async () => 100_000_000n };
const bridge: BridgeQuoter = {
  provider: 'test_bridge',
  quote: async () => ({ fee: 250_000n, minAmount: 1_000_000n, maxAmount: 1_000_000_000_000n, expiresAt: '2026-11-22T13:00:00.000Z' }),
};
const estimateDeps = (): EstimateDeps => ({ gas, prices: new ConfiguredPrices(), bridge, platformFee: { fixed: 0n, bps: 10n } });
beforeAll(() => setLogLevel('silent'));
afterAll(() => setLogLevel('info'));

const JWT = 'eyJhbGciOiJFUzI1NiJ9.secret-user-jwt.signature';

async function failure(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe.each(DYNAMO_ENGINES)('transfer service on %s', { timeout: 120_000 }, (engine) => {
  let table: Table;
  let stop: () => Promise<void>;
  let counter = 0;
  beforeAll(async () => {
    ({ table, stop } = await startEngineTable(engine, 'transfer-service'));
  }, 90_000);
  afterAll(() => stop?.());

  /** A user with an account; venue_b and venue_d initialized. */
  async function newUser() {
    const sub = `user-${engine}-${++counter}`;
    const status = defaultPerpDexStatus();
    status.venue_b = { ...status.venue_b, initialized: true };
    status.venue_d = { ...status.venue_d, initialized: true };
    await putAccountIfAbsent(table, {
      app_id: 'app-t',
      app_user_id: sub,
      user_id: `uid-${sub}`,
      public_address: { ETH: '0x1111111111111111111111111111111111111111', SOL: '11111111111111111111111111111112' },
      perp_dex_status: status,
      wallets: { evm: { wallet_id: 'w-e' }, sol: { wallet_id: 'w-s' } },
      sealed: {} as never,
      created_at: '2026-11-22T00:00:00.000Z',
    });
    const user = { app: { app_id: 'app-t' }, identity: { iss: 'https://idp.example.com', sub }, secretKey: 'sk', token: JWT } as unknown as AuthenticatedUser;
    const executor = new RecordingExecutor();
    // What the wallet holds (chain:token → base units); 1,000 USDC and 1 ETH on every chain unless a test says otherwise.
    const held = new Map<string, bigint>();
    const balances: WalletBalances = {
      balance: async (chain, _owner, token) =>
        held.get(`${chain}:${token}`) ?? (token === 'SOL' ? 10n ** 9n : token.startsWith('USDC') ? 1_000_000_000n : 10n ** 18n),
    };
    const deps: TransferServiceDeps = { table, executor, now: () => new Date(), estimateDeps, balances };
    return { user, executor, deps, sub, held };
  }

  const body = (over: Partial<TransferInput> = {}): TransferInput => ({ source: 'self', destination: 'venue_b', amount: '25', gas_sponsored: false, ...over });
  const rawItem = async (sub: string, taskId: string) =>
    (await table.doc.send(new GetCommand({ TableName: table.name, Key: keys.task('app-t', sub, taskId) }))).Item as TaskRecord & Record<string, unknown>;

  it('estimates with the ports: steps, fees and the route', async () => {
    const { deps, user } = await newUser();
    const estimate = await estimateTransfer(deps, user, body({ source: 'venue_b', destination: 'venue_d' }));
    expect(estimate.route.route_id).toBe('venue_b>ARB.USDC>INK.USDC>venue_d');
    expect(estimate.steps.map((s) => [s.action, s.dex])).toEqual([
      ['withdrawal', 'venue_b'],
      ['bridge', 'test_bridge'],
      ['deposit', 'venue_d'],
    ]);
    expect(estimate.steps[1]!.breakdown.bridge_fee_usdc).toBe('0.25');
    expect(estimate.steps[1]!.estimated_gas).toBe(60_000);
  });

  it('a transfer larger than the wallet is 422 INSUFFICIENT_FUNDS with the numbers, creates no task and starts nothing (issue 19 §1)', async () => {
    const { deps, user, executor, held } = await newUser();
    held.set('ARB:USDC', 161_000_000n);
    const refused = await failure(createTransfer(deps, user, body({ amount: '100000' }), 'transfer-key-funds-1'));
    expect(refused).toMatchObject({ status: 422, code: 'INSUFFICIENT_FUNDS' });
    expect(refused.message).toBe('Insufficient USDC on ARB: needs 100000, available 161');
    expect(executor.attempts).toBe(0);
    expect((await listUserTasks(deps, user, 50)).tasks).toEqual([]);
    // The key was not spent on the refusal: the same key with a funded amount goes through.
    const accepted = await createTransfer(deps, user, body({ amount: '100' }), 'transfer-key-funds-1');
    expect(accepted.status).toBe(202);
  });

  it("the first step's gas, where the user pays it, must be in the wallet too: 422 naming the native coin; sponsored gas needs none", async () => {
    const { deps, user, executor, held } = await newUser();
    held.set('ARB:ETH', 0n);
    const refused = await failure(createTransfer(deps, user, body()));
    expect(refused).toMatchObject({ status: 422, code: 'INSUFFICIENT_FUNDS' });
    // 60,000 gas with 20 % headroom at 0.1 gwei: 0.0000072 ETH.
    expect(refused.message).toBe("Insufficient ETH on ARB for the first step's gas: needs 0.0000072, available 0");
    expect(executor.attempts).toBe(0);
    expect((await createTransfer(deps, user, body({ gas_sponsored: true }))).status).toBe(202);
  });

  it("a venue source is the venue's to refuse (its payout comes first, the fee out of it): no wallet balance is asked for", async () => {
    const { deps, user, held } = await newUser();
    held.set('ARB:USDC', 0n);
    held.set('ARB:ETH', 0n);
    expect((await createTransfer(deps, user, body({ source: 'venue_b', destination: 'self' }))).status).toBe(202);
  });

  it('creates a pending task, stores the plan and no secret, starts attempt 0 and records the start', async () => {
    const { deps, user, executor, sub } = await newUser();
    const created = await createTransfer(deps, user, body({ source: 'venue_b', destination: 'venue_d' }));
    expect(created.status).toBe(202);
    expect(created.body).toEqual({
      success: true,
      task_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      message: expect.stringContaining('3 steps'),
    });
    const taskId = created.body.task_id;
    const item = await rawItem(sub, taskId);
    expect(item).toMatchObject({
      status: 'pending',
      attempt: 0,
      execution_name: `${taskId}-a0`,
      current_step: 0,
      iss: 'https://idp.example.com',
      user_id: `uid-${sub}`,
    });
    expect(item.steps.map((s) => [s.index, s.action, s.status, s.try])).toEqual([
      [0, 'withdrawal', 'pending', 0],
      [1, 'bridge', 'pending', 0],
      [2, 'deposit', 'pending', 0],
    ]);
    expect(item.route).toMatchObject({
      route_id: 'venue_b>ARB.USDC>INK.USDC>venue_d',
      estimate: { total_cost_usdc: expect.any(String), amount_received: expect.any(String) },
    });
    expect(item.execution_started_at).toEqual(expect.any(String));
    expect(JSON.stringify(item)).not.toContain(JWT);
    expect(JSON.stringify(item)).not.toContain('secret-user-jwt');
    expect(executor.starts).toEqual([
      {
        name: `${taskId}-a0`,
        input: {
          task: { app_id: 'app-t', app_user_id: sub, task_id: taskId },
          attempt: 0,
          steps: [
            { index: 0, action: 'withdrawal', function: 'fn-withdrawal', first_wait_seconds: 2 },
            { index: 1, action: 'bridge', function: 'fn-bridge', first_wait_seconds: 2 },
            { index: 2, action: 'deposit', function: 'fn-deposit', first_wait_seconds: 1 },
          ],
          settle_function: 'fn-settle',
        },
      },
    ]);
  });

  it('refuses uninitialized venues (409), amounts below the effective minimum (422) and bad bodies (400), storing nothing', async () => {
    const { deps, user, executor } = await newUser();
    expect((await failure(createTransfer(deps, user, body({ destination: 'venue_a' })))).code).toBe('DEX_NOT_INITIALIZED');
    expect((await failure(createTransfer(deps, user, body({ source: 'venue_a', destination: 'self' })))).message).toContain('body.source');
    // A source venue whose withdrawals this service cannot follow: refused before anything else.
    const unsupported = await failure(createTransfer(deps, user, body({ source: 'venue_c', destination: 'self' })));
    expect([unsupported.status, unsupported.code]).toEqual([422, 'VENUE_WITHDRAWAL_UNSUPPORTED']);
    expect((await failure(createTransfer(deps, user, body({ amount: '0.5' })))).code).toBe('AMOUNT_BELOW_EFFECTIVE_MINIMUM');
    const bad = await failure(createTransfer(deps, user, body({ destination_chain: 'SOL' })));
    expect([bad.status, bad.message]).toEqual([400, expect.stringContaining('body.destination_chain')]);
    expect((await listUserTasks(deps, user, 50)).tasks).toEqual([]);
    expect(executor.starts).toEqual([]);
  });

  it('without a bridge: routes with a bridge step answer 503, others work; a bridge without a quote makes no task', async () => {
    const { deps, user, executor } = await newUser();
    const noBridge = { ...deps, bridgeConfigured: false };
    const refused = await failure(estimateTransfer(noBridge, user, body({ source: 'venue_b', destination: 'venue_d' })));
    expect([refused.status, refused.code]).toEqual([503, 'BRIDGE_NOT_CONFIGURED']);
    expect((await failure(createTransfer(noBridge, user, body({ source: 'venue_b', destination: 'venue_d' })))).code).toBe('BRIDGE_NOT_CONFIGURED');
    expect((await estimateTransfer(noBridge, user, body())).route.route_id).toBe('self>ARB.USDC>venue_b');

    const silent: BridgeQuoter = { provider: 'test_bridge', quote: () => Promise.reject(new Error('socket hang up')) };
    const down = { ...deps, estimateDeps: () => ({ ...estimateDeps(), bridge: silent }) };
    const estimate = await estimateTransfer(down, user, body({ source: 'venue_b', destination: 'venue_d' }));
    expect(estimate.route.bridge_estimation_error).toBe('the bridge did not answer with a quote');
    const unavailable = await failure(createTransfer(down, user, body({ source: 'venue_b', destination: 'venue_d' })));
    expect([unavailable.status, unavailable.code]).toEqual([503, 'BRIDGE_UNAVAILABLE']);
    expect((await listUserTasks(deps, user, 50)).tasks).toEqual([]);
    expect(executor.starts).toEqual([]);
  });

  it('honours Idempotency-Key: the same key and body return the same task, started once; another body is 422', async () => {
    const { deps, user, executor } = await newUser();
    const first = await createTransfer(deps, user, body(), 'transfer-key-0001');
    const again = await createTransfer(deps, user, body(), 'transfer-key-0001');
    expect(again).toEqual({ ...first, replayed: true });
    expect(first.replayed).toBe(false);
    expect(executor.starts).toHaveLength(1);
    expect((await listUserTasks(deps, user, 50)).tasks).toHaveLength(1);
    expect((await failure(createTransfer(deps, user, body({ amount: '26' }), 'transfer-key-0001'))).code).toBe('IDEMPOTENCY_KEY_REUSED');
    // A refused request leaves the key free: the same key with a valid body then works.
    await failure(createTransfer(deps, user, body({ destination: 'venue_a' }), 'transfer-key-0002'));
    expect((await createTransfer(deps, user, body(), 'transfer-key-0002')).replayed).toBe(false);
  });

  it('Idempotency-Key after a crash between storing the task and answering: the retry finds that task, never a second one', async () => {
    const { deps, user, executor } = await newUser();
    // The process "dies" once the task is stored and started: nothing more reaches the key's item.
    const dying = {
      ...table,
      doc: {
        send: (command: { input?: { Key?: { pk?: string } } }) => {
          if (String(command.input?.Key?.pk).startsWith('IDEMP#') && command.constructor.name === 'UpdateCommand') {
            const expression = String((command.input as { UpdateExpression?: string }).UpdateExpression);
            if (!expression.includes('subject')) return Promise.reject(new Error('process killed'));
          }
          return table.doc.send(command as never);
        },
      },
    } as unknown as Table;
    await expect(createTransfer({ ...deps, table: dying, claimLeaseMs: 50 }, user, body(), 'transfer-key-crash')).rejects.toThrow('process killed');
    const [stored] = (await listUserTasks(deps, user, 50)).tasks;
    expect(stored).toBeDefined();
    await new Promise((done) => setTimeout(done, 80)); // the dead attempt's claim runs out
    const retry = await createTransfer({ ...deps, claimLeaseMs: 50 }, user, body(), 'transfer-key-crash');
    expect(retry.body.task_id).toBe(stored!.task_id);
    expect((await listUserTasks(deps, user, 50)).tasks).toHaveLength(1);
    expect(executor.starts.map((start) => start.name)).toEqual([`${stored!.task_id}-a0`]);
    // Answered now: a further retry is a plain replay.
    expect((await createTransfer(deps, user, body(), 'transfer-key-crash')).body.task_id).toBe(stored!.task_id);
  });

  it('lists the newest tasks first with a Query (never a Scan), limited', async () => {
    const { deps, user } = await newUser();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await createTransfer(deps, user, body({ amount: String(20 + i) }))).body.task_id);
    const sent: string[] = [];
    const spy = {
      ...table,
      doc: {
        send: (command: { constructor: { name: string } }) => {
          sent.push(command.constructor.name);
          return table.doc.send(command as never);
        },
      },
    } as unknown as Table;
    const listed = await listUserTasks({ table: spy }, user, 5);
    expect(listed.user_id).toBe(`uid-${user.identity.sub}`);
    expect(listed.tasks.map((t) => t.task_id)).toEqual(ids.slice(2).reverse());
    expect(listed.tasks.map((t) => t.amount)).toEqual(['26', '25', '24', '23', '22']);
    expect(sent).toEqual(['GetCommand', 'QueryCommand']);
  });

  it("gets the caller's own task; another user's is 404 and a malformed id 400", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const { body: created } = await createTransfer(alice.deps, alice.user, body());
    const task = await getUserTask(alice.deps, alice.user, created.task_id);
    expect(task).toMatchObject({
      task_id: created.task_id,
      status: 'pending',
      source: 'self',
      destination: 'venue_b',
      amount: '25',
      chain: 'ARB',
      token: 'USDC',
      progress: { current_step: 0, total_steps: 1 },
    });
    const other = await failure(getUserTask(bob.deps, bob.user, created.task_id));
    expect([other.status, other.code]).toEqual([404, 'TASK_NOT_FOUND']);
    expect(() => parseTaskId('not-a-uuid')).toThrow(/path.task_id/);
    expect(() => parseTaskId(undefined)).toThrow(/path.task_id/);
  });

  it('a lost start leaves the task pending; GET re-kicks it exactly once (concurrent GETs too)', async () => {
    const { deps, user, executor, sub } = await newUser();
    executor.failStarts = 2;
    const { body: created } = await createTransfer(deps, user, body());
    expect(executor.starts).toEqual([]);
    expect((await rawItem(sub, created.task_id)).execution_started_at).toBeUndefined();
    expect(executor.attempts).toBe(1);
    // Five concurrent GETs: one re-kick, whose start fails too; the task stays pending and later GETs do not try again.
    await Promise.all(Array.from({ length: 5 }, () => getUserTask(deps, user, created.task_id)));
    expect(executor.attempts).toBe(2);
    expect(await rawItem(sub, created.task_id)).toMatchObject({ status: 'pending', rekicked: true });
    await getUserTask(deps, user, created.task_id);
    expect(executor.attempts).toBe(2);
    expect(executor.starts).toEqual([]);

    const second = await newUser();
    second.executor.failStarts = 1;
    const { body: other } = await createTransfer(second.deps, second.user, body());
    const views = await Promise.all(Array.from({ length: 10 }, () => getUserTask(second.deps, second.user, other.task_id)));
    expect(views.every((view) => view.status === 'pending')).toBe(true);
    expect(second.executor.starts.map((s) => s.name)).toEqual([`${other.task_id}-a0`]);
    expect((await rawItem(second.sub, other.task_id)).execution_started_at).toEqual(expect.any(String));
  });

  it.each([
    ['ABORTED', 'cancelled'],
    ['TIMED_OUT', 'cancelled'],
    ['FAILED', 'failed'],
    ['SUCCEEDED', 'failed'],
    ['RUNNING', 'pending'],
  ] as const)('reconciles a task whose execution is %s to %s', async (execution, expected) => {
    const { deps, user, executor } = await newUser();
    const { body: created } = await createTransfer(deps, user, body());
    executor.status = execution;
    const task = await getUserTask(deps, user, created.task_id);
    expect(executor.describes).toEqual([`${created.task_id}-a0`]);
    expect(task.status).toBe(expected);
    if (expected === 'cancelled') expect(task.metadata.cancel_reason).toContain(execution === 'ABORTED' ? 'stopped' : 'timed out');
    if (expected === 'failed') expect(task.metadata.failure).toMatchObject({ step: 0, code: 'EXECUTION_FAILED' });
  });

  it('reconciles a SUCCEEDED execution whose steps all completed to completed', async () => {
    const { deps, user, executor, sub } = await newUser();
    const { body: created } = await createTransfer(deps, user, body());
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: keys.task('app-t', sub, created.task_id),
        UpdateExpression: 'SET steps[0].#s = :c',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':c': 'completed' },
      }),
    );
    executor.status = 'SUCCEEDED';
    const task = await getUserTask(deps, user, created.task_id);
    expect(task).toMatchObject({ status: 'completed', progress: { current_step: 1, total_steps: 1 } });
    expect(task.metadata.failure).toBeUndefined();
  });

  /** Marks step 0 completed and step 1 failed with per-try records, the task failed (as the step Lambdas would). */
  async function failAtBridge(sub: string, taskId: string) {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: keys.task('app-t', sub, taskId),
        UpdateExpression:
          'SET #s = :failed, current_step = :one, failure = :f, steps[0].#s = :completed, steps[0].amount_out = :out, steps[1].#s = :failed, steps[1].sends = :sends, steps[1].#r = :ref, steps[1].amount_in = :in, steps[1].#e = :err',
        ExpressionAttributeNames: { '#s': 'status', '#e': 'error', '#r': 'reference' },
        ExpressionAttributeValues: {
          ':failed': 'failed',
          ':completed': 'completed',
          ':one': 1,
          ':f': { step: 1, code: 'BRIDGE_REFUNDED', message: 'the bridge refunded the deposit' },
          ':out': '24000000',
          ':sends': { bridge: { chain: 'ARB', tx_hash: '0xabc', raw: '0xSIGNED-RAW-TRANSACTION' } },
          ':ref': 'quote-1',
          ':in': '24000000',
          ':err': { code: 'BRIDGE_REFUNDED', message: 'refunded' },
        },
      }),
    );
  }

  it('resumes only failed or cancelled tasks, from the first unfinished step, keeping the failed try', async () => {
    const { deps, user, executor, sub } = await newUser();
    const { body: created } = await createTransfer(deps, user, body({ source: 'venue_b', destination: 'venue_d' }));
    const pending = await failure(resumeUserTask(deps, user, created.task_id));
    expect([pending.status, pending.code, pending.message]).toEqual([409, 'TASK_NOT_RESUMABLE', expect.stringContaining('pending')]);
    expect((await failure(resumeUserTask(deps, user, '0190d5a8-0000-7000-8000-000000000000'))).code).toBe('TASK_NOT_FOUND');

    await failAtBridge(sub, created.task_id);
    const failedView = await getUserTask(deps, user, created.task_id);
    expect(JSON.stringify(failedView)).not.toContain('SIGNED-RAW');
    expect(failedView.progress.steps[1]).toEqual({ action: 'bridge', status: 'failed', tx_hashes: ['0xabc'] });

    const resumed = await resumeUserTask(deps, user, created.task_id);
    expect(resumed).toEqual({
      status: 202,
      body: { success: true, task_id: created.task_id, message: expect.stringContaining('Resuming from step 2 of 3 (bridge)') },
      replayed: false,
    });
    const item = await rawItem(sub, created.task_id);
    expect(item).toMatchObject({ status: 'pending', attempt: 1, execution_name: `${created.task_id}-a1`, current_step: 1 });
    expect(item.failure).toBeUndefined();
    expect(item.steps[0]).toMatchObject({ status: 'completed', try: 0, amount_out: '24000000' });
    expect(item.steps[1]).toEqual({
      index: 1,
      action: 'bridge',
      from: { chain: 'ARB', token: 'USDC' },
      to: { chain: 'INK', token: 'USDC' },
      gas_policy: 'user',
      status: 'pending',
      try: 1,
      previous_tries: [
        {
          try: 0,
          sends: { bridge: { chain: 'ARB', tx_hash: '0xabc', raw: '0xSIGNED-RAW-TRANSACTION' } },
          reference: 'quote-1',
          amount_in: '24000000',
          error: { code: 'BRIDGE_REFUNDED', message: 'refunded' },
        },
      ],
    });
    expect(executor.starts.at(-1)).toEqual({
      name: `${created.task_id}-a1`,
      input: expect.objectContaining({
        attempt: 1,
        steps: [expect.objectContaining({ index: 1, action: 'bridge' }), expect.objectContaining({ index: 2, action: 'deposit' })],
      }),
    });
    expect((await failure(resumeUserTask(deps, user, created.task_id))).message).toContain('pending');
    const view = await getUserTask(deps, user, created.task_id);
    expect(view.metadata.checkpoints[1]).toMatchObject({
      status: 'pending',
      try: 1,
      previous_tries: [{ try: 0, tx_hashes: ['0xabc'], error: { code: 'BRIDGE_REFUNDED' } }],
    });
    expect(JSON.stringify(view)).not.toContain('SIGNED-RAW');
  });

  it('50 concurrent resumes of one task make exactly one new attempt and one execution; the others are 409', async () => {
    const { deps, user, executor, sub } = await newUser();
    const { body: created } = await createTransfer(deps, user, body({ source: 'venue_b', destination: 'venue_d' }));
    await failAtBridge(sub, created.task_id);
    const before = executor.starts.length;
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => resumeUserTask(deps, user, created.task_id)));
    const accepted = results.filter((r) => r.status === 'fulfilled');
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as DomainError] : []));
    expect(accepted).toHaveLength(1);
    expect(refused).toHaveLength(49);
    expect(new Set(refused.map((e) => `${e.status} ${e.code}`))).toEqual(new Set(['409 TASK_NOT_RESUMABLE']));
    expect(executor.starts.length - before).toBe(1);
    const item = await rawItem(sub, created.task_id);
    expect(item).toMatchObject({ attempt: 1, status: 'pending' });
    expect(item.steps[1]!.previous_tries).toHaveLength(1);
  });

  it('a cancelled task resumes from its first unfinished step without touching a step that did not fail', async () => {
    const { deps, user, executor, sub } = await newUser();
    const { body: created } = await createTransfer(deps, user, body({ source: 'venue_b', destination: 'venue_d' }));
    executor.status = 'ABORTED';
    expect((await getUserTask(deps, user, created.task_id)).status).toBe('cancelled');
    const resumed = await resumeUserTask(deps, user, created.task_id);
    expect(resumed.body.message).toContain('Resuming from step 1 of 3 (withdrawal)');
    const item = await rawItem(sub, created.task_id);
    expect(item).toMatchObject({ status: 'pending', attempt: 1 });
    expect(item.cancel_reason).toBeUndefined();
    expect(item.steps[0]).toMatchObject({ status: 'pending', try: 0 });
    expect(item.steps[0]!.previous_tries).toBeUndefined();
  });
});
