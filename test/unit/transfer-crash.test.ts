import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { importJWK, type JWK, SignJWT } from 'jose';
import { type Address, createPublicClient, erc20Abi, type Hex, http, parseUnits } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { devAppPaths } from '../../infra/local/applications.ts';
import { readDurableDocument } from '../../infra/local/venues/durable-state.ts';
import { getItem } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import type { OutboxEntry } from '../../shared/events/types.ts';
import { type RuntimeProcess, startRuntimeProcess, stopProcess } from '../api/support/global-setup.ts';
import { checkDeliveries, EventLogReader, startWebhookReceiver, type WebhookReceiver, waitForDeliveries } from './support/webhook-receiver.ts';

/**
 * CRASH SAFETY (issue 11 §3), slow (~60-90 s): `kill -9` of the local runtime (`node
 * infra/local/start.ts`, as `npm start`) while transfers run, then a start on the same DATA_DIR.
 * Three rounds, each killing at a different moment (right after POST /transfer returned; once a
 * step shows `submitted`; after a fixed delay). Each round runs a one-step deposit (self to
 * venue_a), a three-step venue_b to venue_d (withdrawal, bridge ARB to INK, deposit), a
 * self-to-self bridge ARB to POL, and two more on the same venues at once: self to venue_b (ARB)
 * and self to venue_d (INK). After the restart every task must end completed (or failed, then
 * resumed to completed), and every balance must be exact to the base unit from the tasks'
 * checkpoints: the user's wallets read from the chains, the venues, the platform fee's recipient;
 * every recorded send is on chain exactly once, and the user's nonce on each chain equals the
 * number of recorded sends from it (a second broadcast would show as one more).
 *
 * Webhooks survive the kills too (issue 24, part 4): a receiver in this process (always 2xx) is the
 * app's endpoint from the first start on. At the end the log from 0 is the tasks' and the
 * account's outbox entries, and the set of ids received (each verified), but for deliveries a kill
 * caught in flight: those must still be on the delivery queue's journal, due when their
 * visibility timeout ends (the sandbox replays unpublished outboxes at start and keeps the queue
 * on disk, so a kill loses no event; it may delay one).
 */
type Json = any;
type Headers = Record<string, string>;
const TERMINAL = ['completed', 'failed', 'cancelled'];

/** The webhook deliveries the sandbox's delivery queue holds, as it replays its journal at start. */
interface QueuedDeliveries {
  /** The event ids of the queue's messages. */
  readonly events: ReadonlySet<string>;
  /** When the first of its FIFO groups can next hand a message out (ms since the epoch; Infinity when empty). */
  readonly movesAt: number;
}

/**
 * Reads DATA_DIR/sqs/webhook-deliveries.fifo.jsonl (infra/local/sqs/queue.ts: `s` sent, `r`
 * received, `v` visibility changed, `d` deleted; a compaction rewrites the live messages as `s`).
 * A group moves when its first message (in send order) turns visible.
 */
async function queuedDeliveries(dataDir: string): Promise<QueuedDeliveries> {
  const text = await readFile(join(dataDir, 'sqs', 'webhook-deliveries.fifo.jsonl'), 'utf8');
  const messages = new Map<string, { event: string; group: string; visibleAt: number }>();
  for (const line of text.split('\n')) {
    let record: Json;
    try {
      record = JSON.parse(line);
    } catch {
      continue; // an empty line, or the last one being written
    }
    if (record.t === 's') messages.set(record.m.id, { event: JSON.parse(record.m.body).event_id, group: record.m.group, visibleAt: record.m.visibleAt });
    else if ((record.t === 'r' || record.t === 'v') && messages.has(record.id)) messages.get(record.id)!.visibleAt = record.visibleAt;
    else if (record.t === 'd') messages.delete(record.id);
  }
  const heads = new Map<string, number>();
  for (const message of messages.values()) if (!heads.has(message.group)) heads.set(message.group, message.visibleAt);
  return { events: new Set([...messages.values()].map((message) => message.event)), movesAt: Math.min(...heads.values()) };
}

describe.runIf(process.platform === 'linux')('transfers survive kill -9 of the runtime (slow)', () => {
  let dataDir = '';
  let runtime: RuntimeProcess | undefined;
  let receiver: WebhookReceiver | undefined;
  afterAll(async () => {
    if (runtime) await stopProcess(runtime.child);
    await receiver?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('re-drives every running task after a restart; each completes with no double send and no lost funds', { timeout: 180_000 }, async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'transfer-crash-'));
    // The shortest sender lease (shared/config.ts): a killed holder's lease delays the next send by 8 s, not 15 s.
    const env = { DATA_DIR: dataDir, APPS_FILE: '', SENDER_LEASE_MS: '8000' };
    runtime = await startRuntimeProcess(env, ['--quiet']);
    const base = () => runtime!.urls.account;
    const call = async (method: string, path: string, headers: Headers = {}, json?: unknown) => {
      const response = await fetch(`${base()}${path}`, {
        method,
        headers: { ...headers, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      return { status: response.status, body: (await response.json()) as Json };
    };

    // The dev app's identity provider mints the user's token (as `npm run token` does).
    const devApp = JSON.parse(await readFile(devAppPaths(dataDir).app, 'utf8'));
    const jwk = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: jwk.kid! })
      .setIssuer(devApp.oidc.issuer)
      .setAudience(devApp.oidc.audience)
      .setSubject('crash-user')
      .setIssuedAt()
      .setExpirationTime('600s')
      .sign(await importJWK(jwk, 'ES256'));
    const headers = { authorization: `Bearer ${token}`, 'x-service-secret-key': devApp.secret_key };

    // The app's webhook endpoint, before any event (the venue set-ups below are the first).
    receiver = await startWebhookReceiver();
    const endpoint = await call('POST', '/webhook-endpoints', { 'x-service-secret-key': devApp.secret_key }, { url: receiver.url });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(200);
    receiver.trust(endpoint.body.secret);
    const eventLog = new EventLogReader(base, devApp.secret_key);

    const account = await call('POST', '/account', headers);
    expect(account.status, JSON.stringify(account.body)).toBe(200);
    const user = account.body.public_address.ETH as Address;
    const faucet = async (chain: string, token: string, amount: string) => {
      const credited = await call('POST', '/sandbox/faucet', {}, { chain, address: user, token, amount });
      expect(credited.status, JSON.stringify(credited.body)).toBe(200);
    };
    await faucet('ARB', 'USDC', '300');
    await faucet('INK', 'USDC', '60'); // venue_d's first-deposit requirement, then 10 a round into venue_d
    for (const [chain, gas] of [
      ['ARB', 'ETH'],
      ['INK', 'ETH'],
      ['POL', 'POL'],
    ] as const)
      await faucet(chain, gas, '1');
    for (const dex of ['venue_a', 'venue_b', 'venue_d']) {
      const init = await call('POST', '/account/init-perp-dex', headers, { dex });
      expect(init.status, JSON.stringify(init.body)).toBe(200);
    }

    // Balances: the chains (RPC URLs change with each start: read afresh), the venues, the fee recipient.
    // PLATFORM_FEE's recipients are generated into DATA_DIR/platform-fee.json (with their keys).
    const feeRecipient = privateKeyToAccount((await readDurableDocument(join(dataDir, 'platform-fee.json'))).evm.private_key).address;
    const chains = async () => (await call('GET', '/sandbox/chains')).body.chains as Json[];
    const client = async (code: string) => createPublicClient({ transport: http((await chains()).find((c) => c.chain === code).rpc_url) });
    const tokenAddress = async (code: string, token: string) =>
      (await chains()).find((c) => c.chain === code).tokens.find((t: Json) => t.token === token).address as Address;
    const erc20 = async (code: string, owner: Address) =>
      (await client(code)).readContract({ address: await tokenAddress(code, 'USDC'), abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
    const venue = async (dex: string) => {
      const perp = await call('GET', `/account/perp?dex=${dex}`, headers);
      expect(perp.body.error ?? null, JSON.stringify(perp.body)).toBeNull();
      return parseUnits(perp.body.assets.balance, 6);
    };
    const snapshot = async () => ({
      ARB: await erc20('ARB', user),
      INK: await erc20('INK', user),
      POL: await erc20('POL', user),
      venue_a: await venue('venue_a'),
      venue_b: await venue('venue_b'),
      venue_d: await venue('venue_d'),
      feeARB: await erc20('ARB', feeRecipient),
      feeINK: await erc20('INK', feeRecipient),
    });
    const before = await snapshot();
    // Sends before the transfers (onboarding) are not the transfers': nonces count from here.
    const noncesBefore: Record<string, number> = {};
    for (const chain of ['ARB', 'INK', 'POL']) noncesBefore[chain] = await (await client(chain)).getTransactionCount({ address: user });

    const start = async (body: Json) => {
      const created = await call('POST', '/transfer', headers, body);
      expect(created.status, JSON.stringify(created.body)).toBe(202);
      return created.body.task_id as string;
    };
    const getTask = async (id: string) => {
      const task = await call('GET', `/task/${id}`, headers);
      expect(task.status, JSON.stringify(task.body)).toBe(200);
      return task.body;
    };
    const settle = async (ids: string[], timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      const tasks = new Map<string, Json>();
      for (;;) {
        for (const id of ids) if (!TERMINAL.includes(tasks.get(id)?.status)) tasks.set(id, await getTask(id));
        if (ids.every((id) => TERMINAL.includes(tasks.get(id).status)) || Date.now() > deadline) return tasks;
        await new Promise((done) => setTimeout(done, 150));
      }
    };

    // Funds venue_b for the venue-to-venue transfers (not killed).
    const funding = await start({ source: 'self', destination: 'venue_b', amount: '60', chain: 'ARB', token: 'USDC' });
    expect((await settle([funding])).get(funding).status).toBe('completed');
    const all = [funding];
    const resumed: string[] = [];
    const measured: { round: number; killedAt: string; running: number; readyMs: number; settledMs: number }[] = [];

    const kills: { label: string; when: (ids: string[]) => Promise<void> }[] = [
      { label: 'right after POST /transfer returned', when: async () => {} },
      {
        label: 'once a step shows submitted',
        when: async (ids) => {
          for (let i = 0; i < 200; i++) {
            const tasks = await Promise.all(ids.map(getTask));
            if (tasks.some((task) => task.progress.steps.some((step: Json) => step.status === 'submitted'))) return;
            await new Promise((done) => setTimeout(done, 20));
          }
        },
      },
      { label: 'after 700 ms', when: () => new Promise((done) => setTimeout(done, 700)) },
    ];
    for (const [round, kill] of kills.entries()) {
      // Two tasks of a round on each of venue_b and venue_d at once (the per-(user, venue) balance
      // lock, shared/transfers/steps/venue-lock.ts): a deposit into venue_b while venue_b to venue_d
      // withdraws from it, and a deposit into venue_d from INK alongside venue_b to venue_d's deposit.
      const ids = await Promise.all([
        start({ source: 'self', destination: 'venue_a', amount: '10', chain: 'ARB', token: 'USDC' }),
        start({ source: 'venue_b', destination: 'venue_d', amount: '10' }),
        start({ source: 'self', destination: 'self', amount: '10', chain: 'ARB', token: 'USDC', destination_chain: 'POL', destination_token: 'USDC' }),
        start({ source: 'self', destination: 'venue_b', amount: '10', chain: 'ARB', token: 'USDC' }),
        start({ source: 'self', destination: 'venue_d', amount: '10', chain: 'INK', token: 'USDC' }),
      ]);
      all.push(...ids);
      await kill.when(ids);
      const killed = runtime.child;
      const exited = new Promise((done) => killed.once('exit', done));
      killed.kill('SIGKILL');
      await exited;

      const restartAt = performance.now();
      runtime = await startRuntimeProcess(env, ['--quiet']);
      const readyMs = performance.now() - restartAt;
      const firstLook = await Promise.all(ids.map(getTask));
      const tasks = await settle(ids);
      for (const id of ids) {
        if (tasks.get(id).status === 'failed') {
          // A failed step is resumed once; it must then complete.
          const resume = await call('POST', `/task/${id}/resume`, headers);
          expect(resume.status, JSON.stringify(resume.body)).toBe(202);
          resumed.push(id);
          tasks.set(id, (await settle([id])).get(id));
        }
        if (tasks.get(id).status !== 'completed') {
          // What a failure needs to be understood: where each recorded send is, and the execution.
          const where = [];
          for (const step of tasks.get(id).metadata.checkpoints as Json[]) {
            for (const [label, send] of Object.entries(step.sends as Record<string, { chain: string; tx_hash: Hex }>)) {
              where.push(
                `${label} ${await (await client(send.chain)).getTransactionReceipt({ hash: send.tx_hash }).then(
                  (r) => `block ${r.blockNumber} ${r.status}`,
                  () => 'not on chain',
                )}`,
              );
            }
          }
          const execution = (await readDurableDocument(join(dataDir, 'stepfunctions', 'executions.json'))).executions[tasks.get(id).metadata.execution_name];
          tasks.get(id).diagnosis = {
            sends: where,
            execution: { status: execution?.status, runs: execution?.runs, error: execution?.error, cause: execution?.cause },
          };
        }
        expect(tasks.get(id).status, `round ${round} (${kill.label}): ${JSON.stringify(tasks.get(id))}`).toBe('completed');
      }
      measured.push({
        round,
        killedAt: kill.label,
        running: firstLook.filter((t) => !TERMINAL.includes(t.status)).length,
        readyMs: Math.round(readyMs),
        settledMs: Math.round(performance.now() - restartAt),
      });
    }

    // Every balance, to the base unit, from the checkpoints: withdrawal takes amount_in from the
    // venue and leaves amount_out in the wallet; bridge takes amount_in on its source chain and
    // leaves amount_out on its destination; deposit takes amount_in from the wallet and credits
    // amount_out; each step's platform fee (within amount_in) goes to the recipient on that chain.
    const expected = { ...before };
    const tasks = await Promise.all(all.map(getTask));
    const sends: { chain: string; hash: Hex }[] = [];
    /** Sends of a resumed step's earlier tries: on chain, they count in the user's nonce (landed or reverted). */
    const earlierSends: { chain: string; hash: Hex }[] = [];
    for (const task of tasks) {
      expect(task.status).toBe('completed');
      for (const step of task.metadata.checkpoints as Json[]) {
        const amountIn = BigInt(step.amount_in);
        const amountOut = BigInt(step.amount_out);
        // Step 0 takes the fee where the money first sits in the wallet: the source chain of a self
        // source (ARB, or INK into venue_d), ARB after a venue_b withdrawal.
        expected[task.source === 'self' && task.chain === 'INK' ? 'feeINK' : 'feeARB'] += BigInt(step.platform_fee ?? '0');
        if (step.action === 'withdrawal') {
          expected.venue_b -= amountIn;
          expected.ARB += amountOut;
        } else if (step.action === 'bridge') {
          expected.ARB -= amountIn;
          expected[task.destination === 'venue_d' ? 'INK' : 'POL'] += amountOut;
        } else {
          const dex = task.destination as 'venue_a' | 'venue_b' | 'venue_d';
          const chain = dex === 'venue_d' ? 'INK' : 'ARB';
          expected[chain] -= amountIn;
          expected[dex] += amountOut;
        }
        for (const send of Object.values(step.sends as Record<string, { chain: string; tx_hash: Hex }>)) sends.push({ chain: send.chain, hash: send.tx_hash });
        // A resumed step's earlier tries keep their sends too (public hashes only, without the chain).
        for (const earlier of (step.previous_tries ?? []) as { tx_hashes: Hex[] }[]) {
          for (const hash of earlier.tx_hashes) {
            for (const chain of ['ARB', 'INK', 'POL']) {
              const found = await (await client(chain)).getTransactionReceipt({ hash }).then(
                () => true,
                () => false,
              );
              if (found) earlierSends.push({ chain, hash });
            }
          }
        }
      }
    }
    expect(await snapshot()).toEqual(expected);

    // Each recorded send is on chain, succeeded, once (distinct hashes); the user's nonce on each
    // chain counts exactly the recorded sends from the user's wallet: no other broadcast happened.
    expect(new Set(sends.map((send) => send.hash)).size).toBe(sends.length);
    const fromUser: Record<string, number> = { ARB: 0, INK: 0, POL: 0 };
    for (const send of sends) {
      const receipt = await (await client(send.chain)).getTransactionReceipt({ hash: send.hash });
      expect(receipt.status).toBe('success');
      if (receipt.from.toLowerCase() === user.toLowerCase()) fromUser[send.chain] = (fromUser[send.chain] ?? 0) + 1;
    }
    const current = new Set(sends.map((send) => send.hash.toLowerCase()));
    for (const send of earlierSends) {
      if (current.has(send.hash.toLowerCase())) continue; // adopted by the later try: counted above
      current.add(send.hash.toLowerCase());
      sends.push(send); // recorded: not reported as unrecorded below
      const receipt = await (await client(send.chain)).getTransactionReceipt({ hash: send.hash });
      if (receipt.from.toLowerCase() === user.toLowerCase()) fromUser[send.chain] = (fromUser[send.chain] ?? 0) + 1;
    }
    for (const chain of ['ARB', 'INK', 'POL']) {
      const chainClient = await client(chain);
      const count = (await chainClient.getTransactionCount({ address: user })) - noncesBefore[chain]!;
      // On a mismatch, name the user's transactions on the chain that no step recorded (to, selector, nonce).
      const unrecorded = async () => {
        const recorded = new Set(sends.map((send) => send.hash.toLowerCase()));
        const found: string[] = [];
        for (let block = 0n; block <= (await chainClient.getBlockNumber()); block++) {
          for (const tx of (await chainClient.getBlock({ blockNumber: block, includeTransactions: true })).transactions) {
            if (tx.from.toLowerCase() === user.toLowerCase() && !recorded.has(tx.hash.toLowerCase()))
              found.push(`${tx.hash} nonce ${tx.nonce} to ${tx.to} ${tx.input.slice(0, 10)} block ${block}`);
          }
        }
        return found.join('; ');
      };
      if (count !== fromUser[chain]) expect.fail(`sends on ${chain}: ${count} on chain, ${fromUser[chain]} recorded; not recorded: ${await unrecorded()}`);
    }
    const executions = Object.values((await readDurableDocument(join(dataDir, 'stepfunctions', 'executions.json'))).executions) as { runs: number }[];
    const redriven = executions.filter((execution) => execution.runs > 1).length;
    expect(redriven).toBeGreaterThan(0); // the kills did cut running executions

    // Nothing the kills cut was lost: every task's outbox (written with each change) is in the log,
    // and every logged event reached the receiver. The table is read through the last runtime's
    // DynamoDB endpoint (its start-up banner names it); the tasks are settled, so the outboxes are final.
    const dynamodb = /DynamoDB at (http:\/\/[^)\s]+)\)/.exec(runtime.output())?.[1];
    expect(dynamodb, 'the DynamoDB endpoint in the start-up banner').toBeDefined();
    const table = {
      doc: DynamoDBDocumentClient.from(
        new DynamoDBClient({ endpoint: dynamodb, region: 'us-east-1', credentials: { accessKeyId: 'sandbox', secretAccessKey: 'sandbox' } }),
      ),
      name: 'perp-wallet',
    };
    const outboxes = await Promise.all(
      all.map(async (id) => ({ id, outbox: ((await getItem(table, keys.task(devApp.app_id, 'crash-user', id)))?.outbox ?? []) as OutboxEntry[] })),
    );
    const venueEvents = ((await getItem(table, keys.account(devApp.app_id, 'crash-user')))?.outbox ?? []) as OutboxEntry[];
    table.doc.destroy();
    const written = new Set([...outboxes.flatMap(({ outbox }) => outbox), ...venueEvents].map((entry) => entry.id));
    // A delivery in flight at a kill comes back only when its visibility timeout ends (90 s, as SQS
    // after a Lambda crash), and holds its resource's later events: rather than wait that out, the
    // wait ends once every event still missing is on the delivery queue's journal (on disk) and no
    // group there can move for QUIET_MS; those are owed, not lost.
    const QUIET_MS = 5_000;
    let queued: QueuedDeliveries = { events: new Set(), movesAt: 0 };
    const { waitedMs } = await waitForDeliveries(receiver, eventLog, 30_000, async (events, missing) => {
      const logged = new Set(events.map((event) => event.id));
      if (![...written].every((id) => logged.has(id))) return false;
      if (missing.length === 0) return true;
      queued = await queuedDeliveries(dataDir);
      return missing.every((event) => queued.events.has(event.id)) && queued.movesAt > Date.now() + QUIET_MS;
    });
    const log = await eventLog.read();
    const logged = new Set(log.map((event) => event.id));
    const unlogged = outboxes.flatMap(({ id, outbox }) => outbox.filter((entry) => !logged.has(entry.id)).map((entry) => `${id} ${entry.type} ${entry.id}`));
    const acknowledged = new Set(receiver.deliveries.filter((delivery) => delivery.status < 300).map((delivery) => delivery.event?.id));
    const pending = new Set(log.filter((event) => !acknowledged.has(event.id) && queued.events.has(event.id)).map((event) => event.id));
    const { problems, counts } = checkDeliveries(log, receiver.deliveries, pending);
    expect(unlogged, 'outbox entries missing from the log').toEqual([]);
    expect(logged, 'the log is the outboxes (tasks and venue set-ups)').toEqual(written);
    expect(problems.slice(0, 30), `${problems.length} problems`).toEqual([]);
    expect(counts.events).toBeGreaterThan(all.length * 3); // created, step updates, completed of each task: the check had events to check
    process.stdout.write(
      `transfer-crash: ${JSON.stringify({ tasks: all.length, redriven, sends: sends.length, fromUser, resumed: resumed.length, rounds: measured, webhooks: { ...counts, pendingOnQueue: pending.size, beforeSecret: receiver.beforeSecret, waitedMs } })}\n`,
    );
  });
});
