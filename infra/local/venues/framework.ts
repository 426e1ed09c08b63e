import { createServer, type IncomingMessage } from 'node:http';
import { join, resolve } from 'node:path';
import {
  type AbiEvent,
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  keccak256,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { EvmChainConfig } from '../../../shared/chains/chain-config.ts';
import type { VenueId } from '../../../shared/venues/default-status.ts';
import type { VenueRules } from '../../../shared/venues/driver.ts';
import { venueRulesJson } from '../../../shared/venues/rules.ts';
import { anvilFetch } from '../anvil-fetch.ts';
import { ChainHeads } from '../chain-heads.ts';
import { sandboxPayoutPoolArtifact } from '../contracts/sandbox-payout-pool.artifact.ts';
import type { EvmSandbox } from '../evm-sandbox.ts';
import { ANY_ADDRESS, type FaultTable, faultTableOf, scopeOf, type TakenFault, takeFault } from '../fault-scopes.ts';
import { listenPreferring } from '../listen-preferring.ts';
import { DurableState } from './durable-state.ts';

/**
 * The sandbox-venue framework (issue 10). Each sandbox venue is a separate component, as anvil is:
 * its own HTTP server on its own port speaking a subset of its venue's API, its own state file
 * DATA_DIR/venues/<id>.json (DurableState: atomic, fsync'd, answered from only once on disk), a
 * chain watcher and a vault. A venue is a `VenueModule`; the framework runs it:
 *
 * - `module.watch` names the logs that are deposits (e.g. the token's Transfer to the bridge). The
 *   watcher polls the venue's sandbox chain with eth_getLogs from a persisted block cursor and hands
 *   each log to `module.decodeDeposit` exactly once (keyed txHash:logIndex, recorded in the same
 *   write as the credit). Only what the chain shows is credited, never a caller's word.
 * - A deposit passes the venue's deposit fault first: `fail` (seen, not credited), `stall` (held
 *   until `clear`, then credited), `refund` (the vault sends it back to the depositor on chain);
 *   otherwise `module.credit` applies the venue's rules (minimum, fee) to the venue state. A fault
 *   scoped to an address (infra/local/fault-scopes.ts) is taken only by that depositor's deposits.
 * - `host.pay` queues a payout from the vault (an EOA whose key lives in the state file, funded
 *   from the sandbox faucet at start): it is signed, recorded (raw tx + hash) before broadcast,
 *   broadcast, and confirmed, and resumed after a restart, so it is paid exactly once. A payout
 *   `held` by a withdrawal `stall` fault waits for `clear`. A venue whose live payouts come from
 *   a contract (`module.payoutContract`: Hyperliquid's Bridge2, Nado's WithdrawPool) gets a
 *   SandboxPayoutPool installed at that address, operated by the vault and kept funded from the
 *   faucet: its payouts are that contract's token transfers, the same Transfer logs as live.
 * - Faults: `host.takeFault(draft, 'withdrawal', parties)` inside a transaction consumes one
 *   operation of the fault scoped to one of `parties` (the withdrawer, the recipient), else of the
 *   unscoped one; the module decides what fail / stall / refund mean for its requests, and a payout
 *   a stall holds names the fault's scope (`heldBy`), whose `clear` releases it.
 * - `module.handle` answers the venue's HTTP API; it changes state only through `host.transact`.
 *
 * `startSandboxVenues` starts the given modules (all implemented ones by default) and returns the
 * listing for `GET /sandbox/venues`, the base URLs (`VENUE_URLS`) and the faults controller.
 */
export type FaultOperation = 'deposit' | 'withdrawal';
export type FaultMode = 'fail' | 'stall' | 'refund';

export interface FaultSetting {
  readonly mode: FaultMode;
  readonly remaining: number;
}

/** A fault an operation took: its mode and its scope (an address key, or ANY_ADDRESS). */
export type VenueFault = TakenFault<FaultMode>;

export interface Payout {
  readonly id: string;
  readonly to: Address;
  readonly token: Address;
  readonly amount: string;
  state: 'queued' | 'sent' | 'completed' | 'failed';
  held: boolean;
  /** The scope of the stall fault holding it (ANY_ADDRESS when absent: a payout held before faults had scopes). */
  heldBy?: string;
  rawTx?: Hex;
  txHash?: Hex;
  reason?: string;
}

export interface SeenLog {
  readonly state: 'credited' | 'failed' | 'stalled' | 'refunded';
  readonly depositor: Address;
  readonly amount: string;
  readonly txHash: Hex;
  readonly block: string;
  /** The venue's own id for the deposit, when its log carries one (venue_a's commitment id). */
  readonly reference?: string;
  /** A stalled deposit: the scope of the fault that stalled it (ANY_ADDRESS when absent). */
  readonly stalledBy?: string;
}

/** The file DATA_DIR/venues/<id>.json: the framework's part and the venue's own (`venue`). */
export interface VenueState<S> {
  readonly version: 1;
  port: number | null;
  readonly vault: { readonly privateKey: Hex };
  /** The last block whose logs have been read. */
  cursor: string;
  /** Every deposit log handled, keyed `txHash:logIndex`. */
  seen: Record<string, SeenLog>;
  /** Per operation, the active faults by scope (an address key, or ANY_ADDRESS for the unscoped one). */
  faults: Partial<Record<FaultOperation, FaultTable<FaultMode>>>;
  payouts: Record<string, Payout>;
  venue: S;
}

export interface DepositLog {
  /** `txHash:logIndex`. */
  readonly key: string;
  readonly txHash: Hex;
  readonly logIndex: number;
  readonly block: bigint;
  readonly depositor: Address;
  readonly amount: bigint;
  /** See `SeenLog.reference`. */
  readonly reference?: string;
}

export interface VenueRequest {
  readonly method: string;
  readonly path: string;
  /** Decoded query parameters (the last value of a repeated one). */
  readonly query: Readonly<Record<string, string>>;
  /** Header names lower-cased (several venues authenticate with headers: Extended, Paradex, Polymarket). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface VenueResponse {
  readonly status: number;
  readonly body: unknown;
}

/** What the framework gives a venue module. */
export interface VenueHost<S> {
  readonly id: VenueId;
  readonly rules: VenueRules;
  readonly chain: EvmChainConfig;
  readonly client: PublicClient;
  readonly vaultAddress: Address;
  /** The sandbox's tick (SandboxVenuesOptions.pollMs): a module's own background work paces itself by it. */
  readonly pollMs: number;
  read(): VenueState<S>;
  /** One change of the venue's state, on disk before it resolves. */
  transact<R>(change: (draft: VenueState<S>) => R): Promise<R>;
  /**
   * Consumes one operation of an active fault, inside a transaction: the fault scoped to the first
   * of `parties` (the addresses the operation is for: withdrawer, recipient) that has one, else the
   * unscoped fault; undefined when none applies.
   */
  takeFault(draft: VenueState<S>, operation: FaultOperation, parties: readonly Address[]): VenueFault | undefined;
  /**
   * Queues an on-chain payout of `amount` of `token` from the vault to `to`, inside a transaction;
   * `heldBy` (a stall fault's scope) holds it until that scope's `clear`.
   */
  pay(draft: VenueState<S>, payout: { id: string; to: Address; token: Address; amount: bigint; heldBy?: string }): void;
  /**
   * A raw JSON-RPC call to the venue's sandbox chain, for what only a sandbox can do at start
   * (`anvil_setCode` to install a venue contract at its real address, `anvil_impersonateAccount`
   * for a venue-controlled contract wallet).
   */
  rpc(method: string, params: readonly unknown[]): Promise<unknown>;
  /** Sends a transaction from the vault (e.g. a contract's `initialize`) and waits for its receipt; throws when it reverts. */
  sendFromVault(tx: { to: Address; data: Hex; value?: bigint }): Promise<Hex>;
}

export interface VenueModule<S> {
  readonly id: VenueId;
  readonly rules: VenueRules;
  /** Where the venue's deposits go (listed as `deposit_address`). */
  readonly depositAddress: Address;
  /**
   * The live venue's payout contract on its chain, where payouts come from (absent: the vault
   * pays directly). A SandboxPayoutPool is installed there at start; a faucet mint that funds it
   * is no one's deposit (a module watching Transfers to it must skip the zero-address sender).
   */
  readonly payoutContract?: Address;
  /** The deposit logs: `event` emitted by `address`, filtered by indexed `args` (none: every such log). */
  readonly watch: { readonly address: Address; readonly event: AbiEvent; readonly args?: Record<string, unknown> };
  initialState(): S;
  /**
   * Runs once per start, after the vault is funded and before the watcher and the HTTP server:
   * install contracts (idempotently: a restart finds them installed), approvals, and the like.
   */
  install?(host: VenueHost<S>): Promise<void>;
  /**
   * The depositor and amount of one watched log (undefined: not a deposit). `state` is the
   * venue's state at that moment (e.g. the proxy wallets a Transfer must go to).
   */
  decodeDeposit(log: { args: Record<string, unknown> }, state: S): { depositor: Address; amount: bigint; reference?: string } | undefined;
  /** Applies the venue's rules to a deposit seen on chain; returns whether it was credited. */
  credit(draft: VenueState<S>, deposit: DepositLog, host: VenueHost<S>): boolean;
  handle(request: VenueRequest, host: VenueHost<S>): Promise<VenueResponse>;
  /**
   * Optional background work that runs beside the watcher and the payer (e.g. venue_e moving
   * funds inside the proxy wallets it operates); started after `install`, `signal` aborts at
   * stop, which waits for it to return.
   */
  background?(host: VenueHost<S>, signal: AbortSignal): Promise<void>;
}

export interface SandboxVenueListing {
  readonly venues: {
    readonly dex: VenueId;
    readonly url: string;
    readonly chain: string;
    readonly token: string;
    readonly deposit_address: Address;
    readonly rules: ReturnType<typeof venueRulesJson>;
  }[];
}

export interface SandboxVenues {
  readonly listing: SandboxVenueListing;
  /** Base URL per running venue: the account service's VENUE_URLS. */
  readonly urls: Partial<Record<VenueId, string>>;
  /**
   * Sets (or with `clear`, ends) a venue's fault for `address` (an EVM address: only its deposits
   * or withdrawals take it), or without one for anyone; `clear` releases what that fault stalled.
   * Throws VenueNotRunningError for a venue not running.
   */
  setFault(input: { target: VenueId; operation: FaultOperation; mode: FaultMode | 'clear'; count: number; address?: Address }): Promise<FaultSetting | null>;
  stop(): Promise<void>;
}

export class VenueNotRunningError extends Error {
  readonly code = 'VENUE_NOT_RUNNING';
}

export interface SandboxVenuesOptions {
  readonly dataDir: string;
  readonly host?: string;
  readonly evm: Pick<EvmSandbox, 'chains' | 'faucet'>;
  /** The modules to run; every implemented venue by default. */
  readonly modules?: readonly VenueModule<any>[];
  /**
   * The sandbox's tick (SANDBOX_TICK_MS under the runtime; 200 by default): milliseconds between the
   * watchers' polls; a payer looks again at least every five ticks, receipts are polled at most 50 ms apart.
   */
  readonly pollMs?: number;
  /** The chains' heads, shared with the sandbox's other watchers (the bridge); the venues' own by default. */
  readonly heads?: ChainHeads;
}

const BODY_LIMIT = 1024 * 1024;
const LOG_RANGE = 2_000n;
const VAULT_NATIVE_MINIMUM = 10n ** 18n;
const VAULT_NATIVE_FUNDING = 100n * 10n ** 18n;
const VAULT_TOKEN_MINIMUM = 100_000n * 10n ** 6n;
const VAULT_TOKEN_FUNDING = 1_000_000n * 10n ** 6n;

export async function startSandboxVenues(options: SandboxVenuesOptions): Promise<SandboxVenues> {
  const modules: readonly VenueModule<any>[] = options.modules ?? (await import('./modules.ts')).implementedVenueModules();
  // Heads of our own (no runtime shared its): subscribed, and closed when the venues stop.
  const ownHeads = options.heads ? undefined : new ChainHeads((options.pollMs ?? 200) / 2, { subscribe: true });
  const heads = options.heads ?? ownHeads!;
  const started: RunningVenue[] = [];
  try {
    for (const module of modules) started.push(await startVenue(module, options, heads));
  } catch (error) {
    await Promise.all(started.map((venue) => venue.stop()));
    await ownHeads?.close();
    throw error;
  }
  const byId = new Map(started.map((venue) => [venue.id, venue]));
  return {
    listing: { venues: started.map((venue) => venue.listing) },
    urls: Object.fromEntries(started.map((venue) => [venue.id, venue.listing.url])),
    setFault: async (input) => {
      const venue = byId.get(input.target);
      if (!venue) {
        throw new VenueNotRunningError(`${input.target} has no sandbox venue yet; running: ${started.map((v) => v.id).join(', ') || 'none'}`);
      }
      return venue.setFault(input.operation, input.mode, input.count, input.address);
    },
    stop: async () => {
      await Promise.all(started.map((venue) => venue.stop()));
      await ownHeads?.close();
    },
  };
}

interface RunningVenue {
  readonly id: VenueId;
  readonly listing: SandboxVenueListing['venues'][number];
  setFault(operation: FaultOperation, mode: FaultMode | 'clear', count: number, address: Address | undefined): Promise<FaultSetting | null>;
  stop(): Promise<void>;
}

async function startVenue<S>(module: VenueModule<S>, options: SandboxVenuesOptions, heads: ChainHeads): Promise<RunningVenue> {
  const chain = options.evm.chains[module.rules.chain];
  const tokenAddress = chain.tokens[module.rules.token as 'USDC']?.address as Address | undefined;
  if (!tokenAddress) throw new Error(`${module.id}: ${module.rules.chain} has no ${module.rules.token}`);
  const viemChain = defineChain({
    id: chain.chain_id,
    name: `sandbox ${module.rules.chain}`,
    nativeCurrency: { name: chain.native, symbol: chain.native, decimals: 18 },
    rpcUrls: { default: { http: [chain.rpc_url] } },
  });
  const transport = http(chain.rpc_url, { retryCount: 0, fetchFn: anvilFetch });
  const pollMs = options.pollMs ?? 200;
  const receiptPollMs = Math.min(50, pollMs);
  const client = createPublicClient({ chain: viemChain, transport, pollingInterval: receiptPollMs }) as PublicClient;

  const store = await DurableState.open<VenueState<S>>(join(resolve(options.dataDir), 'venues', `${module.id}.json`), () => ({
    version: 1,
    port: null,
    vault: { privateKey: generatePrivateKey() },
    cursor: '',
    seen: {},
    faults: {},
    payouts: {},
    venue: module.initialState(),
  }));
  const vault = privateKeyToAccount(store.read().vault.privateKey);
  const wallet = createWalletClient({ chain: viemChain, transport, account: vault });
  // A state file of a sandbox from before fault scopes holds one fault per operation: it applies to anyone.
  if (Object.values(store.read().faults).some((stored) => typeof (stored as { mode?: unknown }).mode === 'string')) {
    await store.transact((draft) => {
      for (const operation of Object.keys(draft.faults) as FaultOperation[]) draft.faults[operation] = faultTableOf(draft.faults[operation]);
    });
  }

  // The vault pays gas and withdrawals: topped up from the sandbox faucet at every start.
  if ((await client.getBalance({ address: vault.address })) < VAULT_NATIVE_MINIMUM) {
    await options.evm.faucet(module.rules.chain, vault.address, chain.native, VAULT_NATIVE_FUNDING);
  }
  const vaultTokens = await client.readContract({ address: tokenAddress, abi: erc20Abi, functionName: 'balanceOf', args: [vault.address] });
  if (vaultTokens < VAULT_TOKEN_MINIMUM) await options.evm.faucet(module.rules.chain, vault.address, module.rules.token, VAULT_TOKEN_FUNDING);

  if (module.payoutContract) await installPayoutPool(module.payoutContract, client, wallet, vault.address, tokenAddress, options, module.rules, receiptPollMs);

  // A venue's life on the chain starts at its first start: earlier transfers are not its deposits.
  if (store.read().cursor === '') {
    const head = await client.getBlockNumber();
    await store.transact((draft) => {
      draft.cursor = head.toString();
    });
  }

  let stopped = false;
  let wakePayer: () => void = () => undefined;
  const host: VenueHost<S> = {
    id: module.id,
    rules: module.rules,
    chain,
    client,
    vaultAddress: vault.address,
    pollMs,
    read: () => store.read(),
    // The payer looks again after every committed change (a payout it queued is on disk by then).
    transact: async (change) => {
      const result = await store.transact(change);
      wakePayer();
      return result;
    },
    takeFault: (draft, operation, parties) => {
      const table = draft.faults[operation];
      if (!table) return undefined;
      const taken = takeFault(table, parties);
      if (Object.keys(table).length === 0) delete draft.faults[operation];
      return taken;
    },
    pay: (draft, payout) => {
      if (draft.payouts[payout.id]) throw new Error(`${module.id}: payout ${payout.id} exists`);
      draft.payouts[payout.id] = {
        id: payout.id,
        to: getAddress(payout.to),
        token: payout.token,
        amount: payout.amount.toString(),
        state: 'queued',
        held: payout.heldBy !== undefined,
        ...(payout.heldBy === undefined ? {} : { heldBy: payout.heldBy }),
      };
    },
    rpc: (method, params) => client.request({ method: method as never, params: params as never }),
    sendFromVault: async (tx) => {
      const hash = await wallet.sendTransaction({ to: tx.to, data: tx.data, value: tx.value ?? 0n, chain: viemChain, account: vault });
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: receiptPollMs });
      if (receipt.status !== 'success') throw new Error(`${module.id}: vault transaction ${hash} reverted`);
      return hash;
    },
  };
  await module.install?.(host);

  // --- the chain watcher --------------------------------------------------------------------
  const watcher = (async () => {
    while (!stopped) {
      try {
        await pollDeposits(module, host, client, tokenAddress, () => heads.head(chain.rpc_url, client));
      } catch (error) {
        if (!stopped) process.stderr.write(`sandbox ${module.id}: chain watcher: ${(error as Error).message.split('\n')[0]}\n`);
      }
      await sleep(pollMs);
    }
  })();

  // --- the payer: vault payouts, exactly once ------------------------------------------------
  let payerSignal = Promise.withResolvers<void>();
  wakePayer = () => payerSignal.resolve();
  const payer = (async () => {
    while (!stopped) {
      try {
        await payPending(store, client, wallet, vault.address, receiptPollMs, module.payoutContract);
      } catch (error) {
        if (!stopped) process.stderr.write(`sandbox ${module.id}: payer: ${(error as Error).message.split('\n')[0]}\n`);
      }
      // Woken by every committed change; otherwise (a payout that failed to send) again in five ticks.
      await Promise.race([payerSignal.promise, sleep(5 * pollMs)]);
      payerSignal = Promise.withResolvers<void>();
    }
  })();

  const abort = new AbortController();
  const background = (module.background?.(host, abort.signal) ?? Promise.resolve()).catch((error: unknown) => {
    process.stderr.write(`sandbox ${module.id}: background: ${(error as Error).message.split('\n')[0]}\n`);
  });

  // --- the venue's own HTTP server ------------------------------------------------------------
  const server = createServer((req, res) => {
    readBody(req)
      .then((body) => module.handle(venueRequest(req, body), host))
      .catch((error: unknown) => {
        if (error instanceof BodyTooLargeError) return { status: 413, body: 'Request body too large' };
        process.stderr.write(`sandbox ${module.id}: ${(error as Error).message.split('\n')[0]}\n`);
        return { status: 500, body: 'Internal error' };
      })
      .then((answer) => {
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      });
  });
  const bindHost = options.host ?? '127.0.0.1';
  const port = await listenPreferring(server, store.read().port, bindHost);
  if (store.read().port !== port) {
    await store.transact((draft) => {
      draft.port = port;
    });
  }
  const urlHost = bindHost === '0.0.0.0' || bindHost === '::' ? '127.0.0.1' : bindHost.includes(':') ? `[${bindHost}]` : bindHost;
  const url = `http://${urlHost}:${port}`;

  return {
    id: module.id,
    listing: {
      dex: module.id,
      url,
      chain: module.rules.chain,
      token: module.rules.token,
      deposit_address: module.depositAddress,
      rules: venueRulesJson(module.rules),
    },
    setFault: async (operation, mode, count, address) => {
      const scope = scopeOf(address);
      const setting = await store.transact((draft) => {
        draft.faults[operation] ??= {};
        const table = draft.faults[operation];
        if (mode !== 'clear') {
          table[scope] = { mode, remaining: count };
          return table[scope];
        }
        delete table[scope];
        if (Object.keys(table).length === 0) delete draft.faults[operation];
        // `clear` releases what this scope's stall held: deposits are credited, payouts go out.
        if (operation === 'deposit') {
          for (const [key, seen] of Object.entries(draft.seen)) {
            if (seen.state !== 'stalled' || (seen.stalledBy ?? ANY_ADDRESS) !== scope) continue;
            const [txHash, logIndex] = key.split(':') as [Hex, string];
            const deposit = {
              key,
              txHash,
              logIndex: Number(logIndex),
              block: BigInt(seen.block),
              depositor: seen.depositor,
              amount: BigInt(seen.amount),
              reference: seen.reference,
            };
            const credited = module.credit(draft, deposit, host);
            const { stalledBy: _released, ...rest } = seen;
            draft.seen[key] = { ...rest, state: credited ? 'credited' : 'failed' };
          }
        } else {
          for (const payout of Object.values(draft.payouts)) {
            if (!payout.held || (payout.heldBy ?? ANY_ADDRESS) !== scope) continue;
            payout.held = false;
            delete payout.heldBy;
          }
        }
        return null;
      });
      wakePayer();
      return setting;
    },
    stop: async () => {
      stopped = true;
      abort.abort();
      wakePayer();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      await Promise.all([watcher, payer, background]);
    },
  };
}

function venueRequest(req: IncomingMessage, body: string): VenueRequest {
  const target = req.url ?? '/';
  const mark = target.indexOf('?');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  return {
    method: req.method ?? 'GET',
    path: mark === -1 ? target : target.slice(0, mark),
    query: mark === -1 ? {} : Object.fromEntries(new URLSearchParams(target.slice(mark + 1))),
    headers,
    body,
  };
}

/** Reads the logs from the cursor to the head; each new one is handled and the cursor moved in one write. */
async function pollDeposits<S>(
  module: VenueModule<S>,
  host: VenueHost<S>,
  client: PublicClient,
  token: Address,
  chainHead: () => Promise<bigint>,
): Promise<void> {
  const head = await chainHead();
  let from = BigInt(host.read().cursor) + 1n;
  if (head < from - 1n) {
    // The chain is behind the cursor (its state was reset): follow it; seen keys still prevent double credit.
    await host.transact((draft) => {
      draft.cursor = head.toString();
    });
    return;
  }
  while (from <= head) {
    const to = from + LOG_RANGE - 1n < head ? from + LOG_RANGE - 1n : head;
    const logs = await client.getLogs({
      address: module.watch.address,
      event: module.watch.event,
      args: module.watch.args,
      fromBlock: from,
      toBlock: to,
      strict: true,
    } as never);
    await host.transact((draft) => {
      for (const log of logs as unknown as {
        transactionHash: Hex;
        logIndex: number;
        blockNumber: bigint;
        args: Record<string, unknown>;
        removed?: boolean;
      }[]) {
        if (log.removed) continue;
        const key = `${log.transactionHash}:${log.logIndex}`;
        if (draft.seen[key]) continue;
        const decoded = module.decodeDeposit(log, draft.venue);
        if (!decoded) continue;
        const deposit: DepositLog = { key, txHash: log.transactionHash, logIndex: log.logIndex, block: log.blockNumber, ...decoded };
        const record = {
          depositor: deposit.depositor,
          amount: deposit.amount.toString(),
          txHash: deposit.txHash,
          block: deposit.block.toString(),
          ...(deposit.reference === undefined ? {} : { reference: deposit.reference }),
        };
        const fault = host.takeFault(draft, 'deposit', [deposit.depositor]);
        if (fault?.mode === 'fail') draft.seen[key] = { ...record, state: 'failed' };
        else if (fault?.mode === 'stall') draft.seen[key] = { ...record, state: 'stalled', stalledBy: fault.scope };
        else if (fault?.mode === 'refund') {
          host.pay(draft, { id: `refund:${key}`, to: deposit.depositor, token, amount: deposit.amount });
          draft.seen[key] = { ...record, state: 'refunded' };
        } else {
          draft.seen[key] = { ...record, state: module.credit(draft, deposit, host) ? 'credited' : 'failed' };
        }
      }
      draft.cursor = to.toString();
    });
    from = to + 1n;
  }
}

/**
 * Sends every queued payout, one at a time (the vault's nonces are sequential): signed and
 * recorded before broadcast, so a restart rebroadcasts the same transaction instead of paying twice.
 */
async function payPending<S>(
  store: DurableState<VenueState<S>>,
  client: PublicClient,
  wallet: ReturnType<typeof createWalletClient>,
  vault: Address,
  receiptPollMs: number,
  payoutContract: Address | undefined,
): Promise<void> {
  for (;;) {
    const payouts = Object.values(store.read().payouts).filter((p) => !p.held && (p.state === 'queued' || p.state === 'sent'));
    const payout = payouts.find((p) => p.state === 'sent') ?? payouts[0];
    if (!payout) return;
    let { rawTx, txHash } = payout;
    if (payout.state === 'queued') {
      const request = await wallet.prepareTransactionRequest({
        account: wallet.account!,
        chain: wallet.chain,
        ...(payoutContract
          ? {
              to: payoutContract,
              data: encodeFunctionData({ abi: sandboxPayoutPoolArtifact.abi, functionName: 'pay', args: [payout.token, payout.to, BigInt(payout.amount)] }),
            }
          : { to: payout.token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payout.to, BigInt(payout.amount)] }) }),
        nonce: await client.getTransactionCount({ address: vault, blockTag: 'pending' }),
      });
      rawTx = await wallet.signTransaction(request as never);
      txHash = keccak256(rawTx);
      const signed = { rawTx, txHash };
      await store.transact((draft) => {
        Object.assign(draft.payouts[payout.id]!, signed, { state: 'sent' });
      });
    }
    try {
      await client.sendRawTransaction({ serializedTransaction: rawTx! });
    } catch {
      // Already known or already mined (a resumed payout): the receipt decides.
    }
    const receipt = await client.waitForTransactionReceipt({ hash: txHash!, pollingInterval: receiptPollMs, timeout: 30_000 });
    await store.transact((draft) => {
      const entry = draft.payouts[payout.id]!;
      entry.state = receipt.status === 'success' ? 'completed' : 'failed';
      if (receipt.status !== 'success') entry.reason = `payout transaction ${txHash} reverted`;
    });
  }
}

/**
 * The payout contract at the live venue's address, once: code by anvil_setCode, then
 * initialize(vault); topped up from the faucet whenever it holds less than the vault's minimum.
 */
async function installPayoutPool(
  address: Address,
  client: PublicClient,
  wallet: ReturnType<typeof createWalletClient>,
  vault: Address,
  token: Address,
  options: SandboxVenuesOptions,
  rules: VenueRules,
  receiptPollMs: number,
): Promise<void> {
  const code = await client.getCode({ address });
  if (code === undefined || code === '0x') {
    await client.request({ method: 'anvil_setCode' as never, params: [address, sandboxPayoutPoolArtifact.deployedBytecode] as never });
  }
  const initialized = await client.readContract({ address, abi: sandboxPayoutPoolArtifact.abi, functionName: 'initialized' });
  if (!initialized) {
    const hash = await wallet.sendTransaction({
      account: wallet.account!,
      chain: wallet.chain,
      to: address,
      data: encodeFunctionData({ abi: sandboxPayoutPoolArtifact.abi, functionName: 'initialize', args: [vault] }),
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: receiptPollMs });
    if (receipt.status !== 'success') throw new Error(`payout contract ${address}: initialize reverted`);
  }
  const operator = await client.readContract({ address, abi: sandboxPayoutPoolArtifact.abi, functionName: 'operator' });
  if (getAddress(operator) !== getAddress(vault)) throw new Error(`payout contract ${address} is operated by ${operator}, not this venue's vault ${vault}`);
  const held = await client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
  if (held < VAULT_TOKEN_MINIMUM) await options.evm.faucet(rules.chain, address, rules.token, VAULT_TOKEN_FUNDING);
}

class BodyTooLargeError extends Error {}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) throw new BodyTooLargeError();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sleep(ms: number): Promise<void> {
  return new Promise((wake) => setTimeout(wake, ms));
}
