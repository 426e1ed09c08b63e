import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { join, resolve } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  getAddressDecoder,
  getBase58Decoder,
  getBase58Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionEncoder,
  type Transaction,
} from '@solana/kit';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  decodeEventLog,
  defineChain,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  isAddress,
  keccak256,
  type PublicClient,
  parseAbiItem,
  parseEventLogs,
  toHex,
  zeroAddress,
  zeroHash,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { EvmChainCode } from '../../../shared/chains/chain-config.ts';
import { SolanaChain } from '../../../shared/chains/solana-chain.ts';
import {
  BRIDGE_ROUTES,
  type BridgeChain,
  type BridgeRoute,
  type BridgeToken,
  bridgeFee,
  bridgeRouteJson,
  findBridgeRoute,
} from '../../../shared/transfers/bridge-routes.ts';
import { bridgeChainOfLifi, LIFI_CHAIN_IDS, LIFI_CONTRACTS, LIFI_TOKEN_SYMBOLS } from '../../../shared/transfers/lifi.ts';
import { anvilFetch } from '../anvil-fetch.ts';
import { ChainHeads } from '../chain-heads.ts';
import { sandboxLifiDiamondArtifactAbi } from '../contracts/sandbox-lifi-diamond.artifact.ts';
import type { EvmSandbox } from '../evm-sandbox.ts';
import { ANY_ADDRESS, type FaultTable, faultTableOf, scopeOf, takeFault } from '../fault-scopes.ts';
import { listenPreferring } from '../listen-preferring.ts';
import type { SolanaSandbox } from '../solana-sandbox/index.ts';
import { DurableState } from '../venues/durable-state.ts';

/**
 * The sandbox bridge (issue 11 §2): a separate component like the sandbox venues, with its own
 * HTTP server, its state in DATA_DIR/bridge/bridge.json (DurableState) and vaults holding USDC
 * (and USDC.E) on every sandbox chain, SOL included. Modelled on Across / CCTP as research C.6
 * recommends. It speaks LI.FI's public API (`GET /v1/quote`, `GET /v1/status`, LI.FI's field
 * names and error bodies), so the production HttpBridgeClient is the same code; docs/bridge.md
 * lists where it cannot follow LI.FI and why.
 *
 * - Quote (`GET /v1/quote`): a LiFiStep; fee = fixed + bps of the route
 *   (shared/transfers/bridge-routes.ts), refused (404, `AMOUNT_TOO_LOW/HIGH`) outside min / max;
 *   the quote expires after the route's TTL. Its `transactionRequest` is the deposit: EVM, as
 *   LI.FI's ERC-20 flow, a call of the diamond at LI.FI's own address (the SandboxLifiDiamond
 *   stand-in), which pulls the amount into the vault with `transferFrom` once the wallet has
 *   approved `estimate.approvalAddress` (the same diamond); the call's first argument is LI.FI's
 *   BridgeData, whose `transactionId` carries the quote id and which the diamond emits in
 *   LiFiTransferStarted; SOL, a base64 transaction of an SPL transfer to the vault with the quote id as memo.
 * - Deposits are credited only from the chain: the EVM watcher reads Transfer logs to the vault on
 *   every EVM chain, and the quote from the diamond's event in the same receipt (so a gas-sponsored
 *   EIP-7702 deposit, sent by the sponsor to the wallet, is found as a plain one is); a Solana deposit (and any EVM one not yet seen) is read from the chain when
 *   its status is asked (`GET /v1/status?fromChain&txHash`). Each is recorded once, keyed
 *   `chain:tx`; a quote is used once.
 * - Fill after the route's latency: a payout from the destination vault of amount − fee, signed
 *   and recorded before broadcast, rebroadcast (not re-signed) after a restart: paid once.
 * - Refund on the source chain, to the sender: when the deposit does not match its quote (expired,
 *   unknown, used, wrong amount: FAILED/…), when a fault says `fail` (FAILED/REFUNDED), or when
 *   the fill expires (past the route's fill deadline, or a `refund` fault: DONE/REFUNDED).
 * - Faults (`setFault('bridge', …)`): the next n deposits fail, stall (held until `clear`, or
 *   until the fill deadline passes, then refunded) or are refunded; a fault scoped to an address
 *   (infra/local/fault-scopes.ts) is taken only by deposits it sends or its quote pays to.
 */
export type BridgeFaultMode = 'fail' | 'stall' | 'refund';

export interface BridgeFaultSetting {
  readonly mode: BridgeFaultMode;
  readonly remaining: number;
}

interface QuoteRecord {
  readonly id: string;
  readonly route_id: string;
  readonly amount: string;
  readonly fee: string;
  readonly sender: string;
  readonly recipient: string;
  readonly created_ms: number;
  readonly expires_ms: number;
  used_by?: string;
}

type TransferState = 'waiting' | 'held' | 'filling' | 'refunding' | 'completed' | 'refunded';
const FINAL_TRANSFER_STATES: ReadonlySet<TransferState> = new Set(['completed', 'refunded']);

interface TransferRecord {
  readonly key: string;
  readonly chain: BridgeChain;
  readonly tx: string;
  readonly sender: string;
  readonly amount: string;
  readonly token: BridgeToken;
  readonly quote_id: string | null;
  readonly seen_ms: number;
  state: TransferState;
  fill_at_ms: number;
  deadline_ms: number;
  /** A held transfer: the scope of the stall fault holding it (ANY_ADDRESS when absent). */
  held_by?: string;
  /** Why a refund: the final status it ends in. */
  refund_as?: { status: 'DONE' | 'FAILED'; substatus: 'REFUNDED' | 'EXPIRED' | 'NOT_PROCESSABLE_REFUND_NEEDED'; message: string };
  fill_payout?: string;
  refund_payout?: string;
}

interface PayoutRecord {
  readonly id: string;
  readonly chain: BridgeChain;
  readonly to: string;
  readonly token: BridgeToken;
  readonly amount: string;
  state: 'queued' | 'sent' | 'completed' | 'failed';
  /** EVM: the signed raw transaction; SOL: the base64 wire transaction. */
  raw?: string;
  hash?: string;
  last_valid_block_height?: string;
  reason?: string;
}

interface BridgeState {
  readonly version: 1;
  port: number | null;
  readonly evm_vault: { readonly private_key: Hex };
  /** The Solana vault's 32-byte ed25519 secret, hex. */
  readonly sol_vault: { readonly secret: string };
  cursors: Partial<Record<EvmChainCode, string>>;
  quotes: Record<string, QuoteRecord>;
  transfers: Record<string, TransferRecord>;
  payouts: Record<string, PayoutRecord>;
  /** The active faults by scope (an address key, or ANY_ADDRESS for the unscoped one). */
  faults?: FaultTable<BridgeFaultMode>;
  /** An earlier sandbox's single fault (before scopes): read once at start into `faults`. */
  fault?: BridgeFaultSetting;
}

export interface SandboxBridgeOptions {
  readonly dataDir: string;
  readonly host?: string;
  readonly evm: Pick<EvmSandbox, 'chains' | 'faucet'>;
  readonly sol: Pick<SolanaSandbox, 'chain' | 'faucet'>;
  /** Per-route overrides (tests: a fill latency, a short fill deadline or quote TTL). */
  readonly routes?: readonly BridgeRoute[];
  /** The sandbox's tick (SANDBOX_TICK_MS under the runtime; 200 by default): milliseconds between the watcher's and the filler's rounds. */
  readonly pollMs?: number;
  /** How long the payer waits for a payout's receipt before it tries again (30 s by default). */
  readonly receiptTimeoutMs?: number;
  /** The chains' heads, shared with the sandbox's other watchers (the venues); the bridge's own by default. */
  readonly heads?: ChainHeads;
}

export interface SandboxBridgeListing {
  readonly url: string;
  readonly vaults: { readonly evm: Address; readonly sol: string };
  readonly routes: ReturnType<typeof bridgeRouteJson>[];
}

export interface SandboxBridge {
  readonly url: string;
  /**
   * What its quotes send to or ask an allowance for, per source chain: LI.FI's own diamonds on EVM
   * (the production allow-list, LIFI_CONTRACTS); on Solana the programs its transactions invoke,
   * SPL Token and SPL Memo (LI.FI's and its bridges' Solana programs do not run in LiteSVM): the
   * allow-list HttpBridgeClient is given in the sandbox (BRIDGE_CONTRACTS).
   */
  readonly contracts: Readonly<Record<BridgeChain, readonly string[]>>;
  readonly listing: SandboxBridgeListing;
  /**
   * Sets (or with `clear`, ends) the bridge's fault for `address` (EVM or Solana: only deposits it
   * sends, or whose quote pays it, take it), or without one for anyone; `clear` releases the
   * deposits that fault held.
   */
  setFault(input: { mode: BridgeFaultMode | 'clear'; count: number; address?: string }): Promise<BridgeFaultSetting | null>;
  stop(): Promise<void>;
}

const EVM_CHAINS: readonly EvmChainCode[] = ['ETH', 'ARB', 'POL', 'INK'];
const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const MEMO_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';
const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
/** LI.FI's BridgeData.receiver for a non-EVM destination (LibAsset NON_EVM_ADDRESS): the Solana address travels in the facet data. */
const NON_EVM_ADDRESS: Address = '0x11f111f111f111F111f111f111F111f111f111F1';
/** How often the EVM watcher writes its cursors when no deposit came (see advanceCursor). */
const CURSOR_WRITE_MS = 5_000;
const LOG_RANGE = 2_000n;
const NATIVE_MINIMUM = 10n ** 18n;
const NATIVE_FUNDING = 100n * 10n ** 18n;
const TOKEN_MINIMUM = 100_000n * 10n ** 6n;
const TOKEN_FUNDING = 2_000_000n * 10n ** 6n;
const SOL_LAMPORTS_FUNDING = 100n * 10n ** 9n;
const BODY_LIMIT = 64 * 1024;

/** The LI.FI diamond on a sandbox EVM chain: the SandboxLifiDiamond stand-in installed at LI.FI's own address (infra/local/evm-sandbox.ts). */
function diamondOf(chain: EvmChainCode): Address {
  const diamond = LIFI_CONTRACTS[chain][0];
  if (!diamond) throw new Error(`internal: no LI.FI diamond address for ${chain}`);
  return getAddress(diamond);
}

/** LI.FI's error body (research B, @lifi/types src/errors.ts): a numeric `code`, and for a quote not given the tool's `errors[]`. */
class BridgeHttpError extends Error {
  readonly status: number;
  readonly code: number;
  readonly toolCode: string | undefined;
  constructor(status: number, code: number, message: string, toolCode?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.toolCode = toolCode;
  }
  body() {
    const errors = this.toolCode ? [{ errorType: 'NO_QUOTE', code: this.toolCode, action: {}, tool: 'sandbox', message: this.message }] : undefined;
    return { message: this.message, code: this.code, ...(errors ? { errors } : {}) };
  }
}

export async function startSandboxBridge(options: SandboxBridgeOptions): Promise<SandboxBridge> {
  const routes = options.routes ?? BRIDGE_ROUTES;
  const pollMs = options.pollMs ?? 200;
  const receiptPollMs = Math.min(50, pollMs);
  // Heads of our own (no runtime shared its): subscribed, and closed when the bridge stops.
  const ownHeads = options.heads ? undefined : new ChainHeads(pollMs / 2, { subscribe: true });
  const heads = options.heads ?? ownHeads!;
  const store = await DurableState.open<BridgeState>(join(resolve(options.dataDir), 'bridge', 'bridge.json'), () => ({
    version: 1,
    port: null,
    evm_vault: { private_key: generatePrivateKey() },
    sol_vault: { secret: Buffer.from(ed25519.utils.randomSecretKey()).toString('hex') },
    cursors: {},
    quotes: {},
    transfers: {},
    payouts: {},
  }));
  if (store.read().fault) {
    await store.transact((draft) => {
      draft.faults = { ...faultTableOf(draft.fault), ...draft.faults };
      delete draft.fault;
    });
  }
  const vault = privateKeyToAccount(store.read().evm_vault.private_key);
  const solSecret = Uint8Array.from(Buffer.from(store.read().sol_vault.secret, 'hex'));
  const solVault = getAddressDecoder().decode(ed25519.getPublicKey(solSecret)) as string;
  const solana = new SolanaChain(options.sol.chain);

  // --- the chains and the vaults --------------------------------------------------------------
  const evm = Object.fromEntries(
    EVM_CHAINS.map((code) => {
      const config = options.evm.chains[code];
      const chain = defineChain({
        id: config.chain_id,
        name: `sandbox ${code}`,
        nativeCurrency: { name: config.native, symbol: config.native, decimals: 18 },
        rpcUrls: { default: { http: [config.rpc_url] } },
      });
      const transport = http(config.rpc_url, { retryCount: 0, fetchFn: anvilFetch });
      return [
        code,
        {
          config,
          client: createPublicClient({ chain, transport, pollingInterval: receiptPollMs }) as PublicClient,
          wallet: createWalletClient({ chain, transport, account: vault }),
        },
      ];
    }),
  ) as unknown as Record<EvmChainCode, { config: EvmSandbox['chains'][EvmChainCode]; client: PublicClient; wallet: ReturnType<typeof createWalletClient> }>;

  const tokenAddress = (chain: EvmChainCode, token: BridgeToken): Address | undefined =>
    (evm[chain].config.tokens as Partial<Record<BridgeToken, { address: string }>>)[token]?.address as Address | undefined;

  for (const code of EVM_CHAINS) {
    const { client, config } = evm[code];
    if ((await client.getBalance({ address: vault.address })) < NATIVE_MINIMUM) await options.evm.faucet(code, vault.address, config.native, NATIVE_FUNDING);
    for (const token of ['USDC', 'USDC.E'] as const) {
      const address = tokenAddress(code, token);
      if (!address) continue;
      const held = await client.readContract({ address, abi: erc20Abi, functionName: 'balanceOf', args: [vault.address] });
      if (held < TOKEN_MINIMUM) await options.evm.faucet(code, vault.address, token, TOKEN_FUNDING);
    }
    // The bridge's life on a chain starts at its first start.
    if (store.read().cursors[code] === undefined) {
      const head = await client.getBlockNumber();
      await store.transact((draft) => {
        draft.cursors[code] = head.toString();
      });
    }
  }
  if ((await solana.balance(solVault, 'SOL')) < SOL_LAMPORTS_FUNDING / 10n) await options.sol.faucet(solVault, 'SOL', SOL_LAMPORTS_FUNDING);
  if ((await solana.balance(solVault, 'USDC')) < TOKEN_MINIMUM) await options.sol.faucet(solVault, 'USDC', TOKEN_FUNDING);

  let stopped = false;
  let wake: () => void = () => undefined;
  const transact = async <R>(change: (draft: BridgeState) => R): Promise<R> => {
    const result = await store.transact(change);
    wake();
    return result;
  };

  const routeById = new Map(routes.map((route) => [route.id, route]));

  // --- deposits: read from the chain, recorded once ------------------------------------------
  interface ChainDeposit {
    chain: BridgeChain;
    tx: string;
    sender: string;
    amount: bigint;
    token: BridgeToken;
    quoteId: string | null;
    timeMs: number;
  }

  /** Records a deposit seen on chain and decides its fate, in one write. */
  const record = (deposit: ChainDeposit) =>
    transact((draft) => {
      const key = `${deposit.chain}:${deposit.tx}`;
      if (draft.transfers[key]) return;
      const now = Date.now();
      const quote = deposit.quoteId ? draft.quotes[deposit.quoteId] : undefined;
      const route = quote ? routeById.get(quote.route_id) : undefined;
      const transfer: TransferRecord = {
        key,
        chain: deposit.chain,
        tx: deposit.tx,
        sender: deposit.sender,
        amount: deposit.amount.toString(),
        token: deposit.token,
        quote_id: quote ? quote.id : null,
        seen_ms: now,
        state: 'waiting',
        fill_at_ms: now + (route?.fill_latency_ms ?? 0),
        deadline_ms: now + (route?.fill_deadline_s ?? 0) * 1000,
      };
      draft.transfers[key] = transfer;
      const refuse = (substatus: NonNullable<TransferRecord['refund_as']>['substatus'], message: string) => {
        transfer.refund_as = { status: 'FAILED', substatus, message };
        startRefund(draft, transfer);
      };
      if (!quote || !route) return refuse('NOT_PROCESSABLE_REFUND_NEEDED', 'the deposit names no quote of this bridge');
      if (quote.used_by) return refuse('NOT_PROCESSABLE_REFUND_NEEDED', `quote ${quote.id} was already used by ${quote.used_by}`);
      quote.used_by = key;
      if (route.from.chain !== deposit.chain || route.from.token !== deposit.token)
        return refuse('NOT_PROCESSABLE_REFUND_NEEDED', `quote ${quote.id} is for ${route.from.chain} ${route.from.token}`);
      if (deposit.amount !== BigInt(quote.amount))
        return refuse('NOT_PROCESSABLE_REFUND_NEEDED', `deposit of ${deposit.amount} does not match the quoted ${quote.amount}`);
      if (deposit.timeMs > quote.expires_ms) return refuse('EXPIRED', `the deposit landed after quote ${quote.id} expired`);
      const fault = draft.faults ? takeFault(draft.faults, [deposit.sender, quote.recipient]) : undefined;
      if (draft.faults && Object.keys(draft.faults).length === 0) delete draft.faults;
      if (fault?.mode === 'fail') {
        transfer.refund_as = { status: 'FAILED', substatus: 'REFUNDED', message: 'sandbox fault: the bridge failed this deposit and refunds it' };
        startRefund(draft, transfer);
      } else if (fault?.mode === 'refund') {
        transfer.refund_as = { status: 'DONE', substatus: 'REFUNDED', message: 'sandbox fault: the fill expired; refunded on the source chain' };
        startRefund(draft, transfer);
      } else if (fault?.mode === 'stall') {
        transfer.state = 'held';
        transfer.held_by = fault.scope;
      }
    });

  const startRefund = (draft: BridgeState, transfer: TransferRecord) => {
    const id = `refund:${transfer.key}`;
    draft.payouts[id] = { id, chain: transfer.chain, to: transfer.sender, token: transfer.token, amount: transfer.amount, state: 'queued' };
    transfer.refund_payout = id;
    transfer.state = 'refunding';
  };

  /**
   * Reads one EVM transaction's receipt: the Transfer logs into the vault, and the quote id as the
   * `transactionId` of the LiFiTransferStarted event the diamond emitted. Only the receipt's logs
   * count, never the transaction's own sender, recipient or input: a gas-sponsored deposit is the
   * sponsor's transaction to the wallet, whose delegated code calls the diamond (EIP-7702), and it
   * is found the same way as one the wallet sent itself.
   */
  const readEvmDeposit = async (chain: EvmChainCode, hash: Hex): Promise<ChainDeposit[] | undefined> => {
    const { client } = evm[chain];
    const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
    if (receipt?.status !== 'success') return undefined;
    const tokens = new Map<string, BridgeToken>();
    for (const token of ['USDC', 'USDC.E'] as const) {
      const address = tokenAddress(chain, token);
      if (address) tokens.set(address.toLowerCase(), token);
    }
    const diamond = diamondOf(chain);
    const started = parseEventLogs({ abi: sandboxLifiDiamondArtifactAbi, eventName: 'LiFiTransferStarted', logs: receipt.logs }).find(
      (log) => getAddress(log.address) === diamond,
    );
    const quoteId = started ? quoteIdOf(started.args.bridgeData.transactionId) : null;
    const block = await client.getBlock({ blockNumber: receipt.blockNumber });
    const deposits: ChainDeposit[] = [];
    for (const log of receipt.logs) {
      const token = tokens.get(log.address.toLowerCase());
      if (!token) continue;
      let decoded: ReturnType<typeof decodeEventLog<readonly [typeof TRANSFER_EVENT]>>;
      try {
        decoded = decodeEventLog({ abi: [TRANSFER_EVENT], data: log.data, topics: log.topics });
      } catch {
        continue;
      }
      if (getAddress(decoded.args.to) !== vault.address) continue;
      // A mint (the sandbox faucet topping the vault up) is nobody's deposit.
      if (decoded.args.from === zeroAddress) continue;
      deposits.push({
        chain,
        tx: hash,
        sender: getAddress(decoded.args.from),
        amount: decoded.args.value,
        token,
        quoteId,
        timeMs: Number(block.timestamp) * 1000,
      });
    }
    return deposits.length ? deposits : undefined;
  };

  /** Reads one Solana transaction: the vault's USDC balance change, the sender's, and the memo. */
  const readSolDeposit = async (signature: string): Promise<ChainDeposit[] | undefined> => {
    const tx = (await solRpc(options.sol.chain.rpc_url, 'getTransaction', [
      signature,
      { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
    ])) as SolTransactionJson | null;
    if (!tx || tx.meta.err !== null) return undefined;
    const mint = options.sol.chain.tokens.USDC.mint;
    const delta = (owner: string) => {
      const sum = (list: SolTokenBalance[]) =>
        list.filter((b) => b.owner === owner && b.mint === mint).reduce((total, b) => total + BigInt(b.uiTokenAmount.amount), 0n);
      return sum(tx.meta.postTokenBalances) - sum(tx.meta.preTokenBalances);
    };
    const received = delta(solVault);
    if (received <= 0n) return undefined;
    const owners = new Set(tx.meta.preTokenBalances.filter((b) => b.mint === mint).map((b) => b.owner));
    const sender = [...owners].find((owner) => owner !== solVault && delta(owner) < 0n);
    if (!sender) return undefined;
    const keys = tx.transaction.message.accountKeys;
    const memo = tx.transaction.message.instructions.find((ix) => keys[ix.programIdIndex] === MEMO_PROGRAM);
    const quoteId = memo ? new TextDecoder().decode(Uint8Array.from(getBase58Encoder().encode(memo.data))) : null;
    return [{ chain: 'SOL', tx: signature, sender, amount: received, token: 'USDC', quoteId, timeMs: (tx.blockTime ?? 0) * 1000 }];
  };

  /** Looks a deposit up on its chain when the bridge has not recorded it yet; false when the chain does not show one. */
  const discover = async (chain: BridgeChain, tx: string): Promise<boolean> => {
    if (store.read().transfers[`${chain}:${tx}`]) return true;
    const deposits = chain === 'SOL' ? await readSolDeposit(tx) : await readEvmDeposit(chain, tx as Hex);
    if (!deposits) return false;
    // One record per transaction (a transaction with two transfers to the vault is credited as their sum).
    const total = deposits.reduce((sum, d) => sum + d.amount, 0n);
    await record({ ...deposits[0]!, amount: total });
    return true;
  };

  // --- the EVM watcher -----------------------------------------------------------------------
  // The last block scanned per chain, in memory; on disk only after a range that held a deposit or
  // once CURSOR_WRITE_MS has passed. A restart rescans from the last written cursor, and `discover`
  // records a transaction once, so a lagging cursor costs a rescan, never a deposit. Written at
  // every block it rewrote the whole state (fsync'd) per block and chain: 2,370 writes of up to
  // 580 KB in one conservation run, 4.3 s of CPU.
  const scanned: Partial<Record<EvmChainCode, bigint>> = {};
  let cursorWrittenAt = Date.now();
  const advanceCursor = async (code: EvmChainCode, to: bigint, found: boolean) => {
    scanned[code] = to;
    if (!found && Date.now() - cursorWrittenAt < CURSOR_WRITE_MS) return;
    cursorWrittenAt = Date.now();
    await transact((draft) => {
      for (const [chain, block] of Object.entries(scanned)) draft.cursors[chain as EvmChainCode] = block.toString();
    });
  };
  const watchEvm = async () => {
    for (const code of EVM_CHAINS) {
      const { client, config } = evm[code];
      const head = await heads.head(config.rpc_url, client);
      let from = (scanned[code] ?? BigInt(store.read().cursors[code] ?? head.toString())) + 1n;
      if (head < from - 1n) {
        // The chain restarted below the cursor (a fresh anvil on an old DATA_DIR): scan from its head.
        await advanceCursor(code, head, true);
        continue;
      }
      const addresses = (['USDC', 'USDC.E'] as const).map((t) => tokenAddress(code, t)).filter((a): a is Address => a !== undefined);
      while (from <= head) {
        const to = from + LOG_RANGE - 1n < head ? from + LOG_RANGE - 1n : head;
        const logs = await client.getLogs({ address: addresses, event: TRANSFER_EVENT, args: { to: vault.address }, fromBlock: from, toBlock: to });
        for (const hash of new Set(logs.map((log) => log.transactionHash))) await discover(code, hash);
        await advanceCursor(code, to, logs.length > 0);
        from = to + 1n;
      }
    }
  };

  // --- the filler: fills due, expired fills refunded, payouts settled --------------------------
  const advance = async () => {
    const now = Date.now();
    // Most rounds find nothing to do: only a round with work writes the state (each write is fsync'd).
    if (!hasWork(store.read(), now)) return;
    await transact((draft) => {
      // The open transfers, found on the plain document (read() is the draft's base here): walking
      // the draft's own values would make a draft of every transfer the bridge ever saw.
      const open = Object.values(store.read().transfers)
        .filter((transfer) => !FINAL_TRANSFER_STATES.has(transfer.state))
        .map((transfer) => draft.transfers[transfer.key]!);
      for (const transfer of open) {
        if (transfer.state !== 'waiting' && transfer.state !== 'held') continue;
        if (now > transfer.deadline_ms) {
          transfer.refund_as = { status: 'DONE', substatus: 'REFUNDED', message: 'no fill before the fill deadline; refunded on the source chain' };
          startRefund(draft, transfer);
          continue;
        }
        if (transfer.state === 'held' || now < transfer.fill_at_ms) continue;
        const quote = draft.quotes[transfer.quote_id!]!;
        const route = routeById.get(quote.route_id)!;
        const id = `fill:${transfer.key}`;
        draft.payouts[id] = {
          id,
          chain: route.to.chain,
          to: quote.recipient,
          token: route.to.token,
          amount: (BigInt(quote.amount) - BigInt(quote.fee)).toString(),
          state: 'queued',
        };
        transfer.fill_payout = id;
        transfer.state = 'filling';
      }
      for (const transfer of open) {
        if (transfer.state === 'filling' && draft.payouts[transfer.fill_payout!]!.state === 'completed') transfer.state = 'completed';
        if (transfer.state === 'refunding' && draft.payouts[transfer.refund_payout!]!.state === 'completed') transfer.state = 'refunded';
      }
    });
  };

  const payOne = async (payout: PayoutRecord) => {
    if (payout.chain === 'SOL') return paySol(payout);
    const chain = payout.chain as EvmChainCode;
    const { client, wallet } = evm[chain];
    let { raw, hash } = payout;
    if (payout.state === 'queued') {
      const request = await wallet.prepareTransactionRequest({
        account: vault,
        chain: wallet.chain,
        to: tokenAddress(chain, payout.token)!,
        data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payout.to as Address, BigInt(payout.amount)] }),
        nonce: await client.getTransactionCount({ address: vault.address, blockTag: 'pending' }),
      });
      raw = await wallet.signTransaction(request as never);
      hash = keccak256(raw as Hex);
      const signed = { raw, hash };
      await store.transact((draft) => {
        Object.assign(draft.payouts[payout.id]!, signed, { state: 'sent' });
      });
    }
    try {
      await client.sendRawTransaction({ serializedTransaction: raw as Hex });
    } catch {
      // Already known or mined (a resumed payout): the receipt decides.
    }
    const receipt = await client.waitForTransactionReceipt({ hash: hash as Hex, pollingInterval: receiptPollMs, timeout: options.receiptTimeoutMs ?? 30_000 });
    await settle(payout.id, receipt.status === 'success', `payout transaction ${hash} reverted`);
  };

  const paySol = async (payout: PayoutRecord) => {
    let { raw, hash } = payout;
    if (payout.state === 'queued') {
      const built = await solana.transferMessage(solVault, payout.to, 'USDC', BigInt(payout.amount), payout.id.slice(0, 64));
      // The vault is the message's only signer (its fee payer): an ed25519 signature of the message bytes.
      const signature = getBase58Decoder().decode(ed25519.sign(built.messageBytes, solSecret));
      raw = Buffer.from(SolanaChain.assemble(built.messageBytes, signature)).toString('base64');
      hash = signature;
      const signed = { raw, hash, last_valid_block_height: built.lastValidBlockHeight.toString() };
      await store.transact((draft) => {
        Object.assign(draft.payouts[payout.id]!, signed, { state: 'sent' });
      });
    }
    try {
      await solana.broadcast(Buffer.from(raw!, 'base64'));
    } catch {
      // Already processed (a resumed payout) or its blockhash expired: the status decides.
    }
    const confirmed = await solana.waitForConfirmation(hash!, options.receiptTimeoutMs ?? 15_000);
    if (confirmed) return settle(payout.id, confirmed.err === null, `payout transaction ${hash} failed`);
    // Not landed: once its blockhash is past, it never can; sign a new one.
    const height = BigInt((await solRpc(options.sol.chain.rpc_url, 'getBlockHeight', [{ commitment: 'confirmed' }])) as number);
    if (height > BigInt(store.read().payouts[payout.id]!.last_valid_block_height ?? '0')) {
      await store.transact((draft) => {
        draft.payouts[payout.id]!.state = 'queued';
      });
    }
  };

  const settle = (id: string, ok: boolean, reason: string) =>
    transact((draft) => {
      const entry = draft.payouts[id]!;
      entry.state = ok ? 'completed' : 'failed';
      if (!ok) entry.reason = reason;
    });

  const payPending = async () => {
    for (;;) {
      const pending = Object.values(store.read().payouts).filter((p) => p.state === 'queued' || p.state === 'sent');
      const payout = pending.find((p) => p.state === 'sent') ?? pending[0];
      if (!payout) return;
      await payOne(payout);
    }
  };

  const loop = (name: string, round: () => Promise<void>, wakeable: boolean) =>
    (async () => {
      while (!stopped) {
        try {
          await round();
        } catch (error) {
          if (!stopped) process.stderr.write(`sandbox bridge: ${name}: ${(error as Error).message.split('\n')[0]}\n`);
        }
        if (!wakeable) {
          await sleep(pollMs);
          continue;
        }
        const signal = Promise.withResolvers<void>();
        wake = () => signal.resolve();
        await Promise.race([signal.promise, sleep(pollMs)]);
      }
    })();
  const loops = [
    loop('watcher', watchEvm, false),
    loop(
      'filler',
      async () => {
        await advance();
        await payPending();
        await advance();
      },
      true,
    ),
  ];

  // --- the HTTP API (LI.FI's public shapes, docs/bridge.md) ------------------------------------
  const tokenOf = (chain: BridgeChain, token: BridgeToken) => ({
    address: chain === 'SOL' ? options.sol.chain.tokens.USDC.mint : tokenAddress(chain, token)!,
    chainId: LIFI_CHAIN_IDS[chain],
    symbol: LIFI_TOKEN_SYMBOLS[token],
    decimals: 6,
    name: token === 'USDC' ? 'USD Coin' : 'Bridged USD Coin',
    coinKey: 'USDC',
    priceUSD: '1',
  });
  const usd = (amount: bigint) => (Number(amount) / 1e6).toFixed(2);

  const quote = async (query: Record<string, string>) => {
    const from = endpoint(query, 'fromChain', 'fromToken');
    const to = endpoint(query, 'toChain', 'toToken');
    const route = findBridgeRoute(from, to, routes);
    if (!route) throw new BridgeHttpError(404, 1002, `no route from ${from.chain} ${from.token} to ${to.chain} ${to.token}`, 'NO_POSSIBLE_ROUTE');
    const amountText = query.fromAmount ?? '';
    if (!/^[1-9][0-9]{0,30}$/.test(amountText)) throw new BridgeHttpError(400, 1011, 'fromAmount: must be a positive integer of base units');
    const amount = BigInt(amountText);
    const fee = bridgeFee(route, amount);
    if (amount < route.min || amount <= fee)
      throw new BridgeHttpError(404, 1002, `fromAmount: the route's minimum is ${route.min} and its fee for ${amount} is ${fee}`, 'AMOUNT_TOO_LOW');
    if (amount > route.max) throw new BridgeHttpError(404, 1002, `fromAmount: the route's maximum is ${route.max}`, 'AMOUNT_TOO_HIGH');
    const sender = chainAddress(from.chain, query.fromAddress, 'fromAddress');
    // LI.FI: toAddress defaults to fromAddress (only possible on the same kind of chain).
    const recipient = chainAddress(to.chain, query.toAddress ?? query.fromAddress, 'toAddress');
    const slippage = query.slippage === undefined ? 0.005 : Number(query.slippage);
    if (!Number.isFinite(slippage) || slippage < 0 || slippage >= 1) throw new BridgeHttpError(400, 1011, 'slippage: must be a decimal in [0, 1)');
    const id = randomUUID();
    const now = Date.now();
    const record: QuoteRecord = {
      id,
      route_id: route.id,
      amount: amount.toString(),
      fee: fee.toString(),
      sender,
      recipient,
      created_ms: now,
      expires_ms: now + route.quote_ttl_s * 1000,
    };
    const toAmount = amount - fee;
    // The sandbox fills exactly toAmount; toAmountMin is LI.FI's guarantee after the slippage asked for.
    const toAmountMin = (toAmount * BigInt(Math.round((1 - slippage) * 1_000_000))) / 1_000_000n;
    // The deposit the watcher credits: a token transfer into the vault carrying the quote id (EVM:
    // LI.FI's BridgeData.transactionId, emitted by the diamond in LiFiTransferStarted; Solana: an
    // SPL Memo), LI.FI-shaped as a transactionRequest.
    const transactionRequest =
      from.chain === 'SOL'
        ? { data: await unsignedSolanaTransfer(sender, amount, id) }
        : {
            from: sender,
            to: diamondOf(from.chain),
            chainId: LIFI_CHAIN_IDS[from.chain],
            data: encodeFunctionData({
              abi: sandboxLifiDiamondArtifactAbi,
              functionName: 'startBridgeTokensViaSandbox',
              args: [
                {
                  transactionId: transactionIdOf(id),
                  bridge: route.model,
                  integrator: query.integrator ?? 'lifi-api',
                  referrer: zeroAddress,
                  sendingAssetId: tokenAddress(from.chain, from.token)!,
                  receiver: to.chain === 'SOL' ? NON_EVM_ADDRESS : (recipient as Address),
                  minAmount: amount,
                  destinationChainId: BigInt(LIFI_CHAIN_IDS[to.chain]),
                  hasSourceSwaps: false,
                  hasDestinationCall: false,
                },
                { vault: vault.address, nonEVMReceiver: to.chain === 'SOL' ? toHex(Uint8Array.from(getBase58Encoder().encode(recipient))) : zeroHash },
              ],
            }),
            value: '0x0',
            gasLimit: '0x30d40',
          };
    const fromToken = tokenOf(from.chain, from.token);
    const toToken = tokenOf(to.chain, to.token);
    const tool = route.model;
    const executionDuration = Math.ceil(route.fill_latency_ms / 1000);
    return {
      record,
      body: {
        id,
        type: 'lifi',
        tool,
        toolDetails: { key: tool, name: tool === 'cctp' ? 'Circle CCTP (sandbox)' : 'Across (sandbox)', logoURI: '' },
        ...(query.integrator ? { integrator: query.integrator } : {}),
        action: {
          fromChainId: LIFI_CHAIN_IDS[from.chain],
          fromAmount: amount.toString(),
          fromToken,
          fromAddress: sender,
          toChainId: LIFI_CHAIN_IDS[to.chain],
          toToken,
          toAddress: recipient,
          slippage,
        },
        estimate: {
          tool,
          fromAmount: amount.toString(),
          fromAmountUSD: usd(amount),
          toAmount: toAmount.toString(),
          toAmountMin: toAmountMin.toString(),
          toAmountUSD: usd(toAmount),
          approvalAddress: from.chain === 'SOL' ? solVault : diamondOf(from.chain),
          feeCosts: [
            {
              name: 'Bridge fixed fee',
              description: `${route.id}: the relayer's destination gas / forward fee`,
              percentage: (Number(route.fee_fixed) / Number(amount)).toFixed(6),
              token: fromToken,
              amount: route.fee_fixed.toString(),
              amountUSD: usd(route.fee_fixed),
              included: true,
            },
            {
              name: 'Bridge fee',
              description: `${route.id}: ${route.fee_bps} bps`,
              percentage: (Number(route.fee_bps) / 10_000).toFixed(6),
              token: fromToken,
              amount: (fee - route.fee_fixed).toString(),
              amountUSD: usd(fee - route.fee_fixed),
              included: true,
            },
          ],
          gasCosts: [],
          executionDuration,
        },
        includedSteps: [],
        transactionRequest,
      },
    };
  };

  /** LI.FI's Solana form: a base64 transaction (v0, unsigned, the sender as fee payer) of the SPL transfer into the vault with the quote id as memo. */
  async function unsignedSolanaTransfer(sender: string, amount: bigint, memo: string): Promise<string> {
    const built = await solana.transferMessage(sender, solVault, 'USDC', amount, memo);
    const compiled = getCompiledTransactionMessageDecoder().decode(built.messageBytes);
    const signatures = Object.fromEntries(compiled.staticAccounts.slice(0, compiled.header.numSignerAccounts).map((signer) => [signer, null]));
    const wire = getTransactionEncoder().encode({ messageBytes: built.messageBytes, signatures } as unknown as Transaction);
    return Buffer.from(wire).toString('base64');
  }

  const status = async (query: Record<string, string>) => {
    const chain = bridgeChainOfLifi(query.fromChain);
    if (!chain) throw new BridgeHttpError(400, 1011, `fromChain: must be one of ${Object.values(LIFI_CHAIN_IDS).join(', ')}`);
    const tx = query.txHash ?? '';
    const valid = chain === 'SOL' ? /^[1-9A-HJ-NP-Za-km-z]{64,88}$/.test(tx) : /^0x[0-9a-fA-F]{64}$/.test(tx);
    if (!valid) throw new BridgeHttpError(400, 1011, `txHash: must be ${chain === 'SOL' ? 'a base58 signature' : 'a 0x-prefixed 32-byte hash'}`);
    const key = `${chain}:${chain === 'SOL' ? tx : tx.toLowerCase()}`;
    if (!(await discover(chain, chain === 'SOL' ? tx : tx.toLowerCase())))
      return { status: 'NOT_FOUND', substatusMessage: 'no deposit into the bridge in this transaction (yet)' };
    const state = store.read();
    const transfer = state.transfers[key]!;
    const quoteRecord = transfer.quote_id ? state.quotes[transfer.quote_id] : undefined;
    const route = quoteRecord ? routes.find((r) => r.id === quoteRecord.route_id) : undefined;
    const destination = route?.to.chain ?? chain;
    const leg = (payoutId: string | undefined) => {
      const payout = payoutId ? state.payouts[payoutId] : undefined;
      return payout?.hash
        ? { txHash: payout.hash, chainId: LIFI_CHAIN_IDS[payout.chain], amount: payout.amount, token: tokenOf(payout.chain, payout.token) }
        : undefined;
    };
    // LI.FI reports a refund as the `receiving` leg on the source chain.
    const receiving = leg(transfer.refund_payout) ?? leg(transfer.fill_payout) ?? { chainId: LIFI_CHAIN_IDS[destination] };
    const base = {
      ...(transfer.quote_id ? { transactionId: transfer.quote_id } : {}),
      tool: route?.model ?? 'sandbox',
      fromAddress: transfer.sender,
      ...(quoteRecord ? { toAddress: quoteRecord.recipient } : {}),
      sending: { txHash: transfer.tx, chainId: LIFI_CHAIN_IDS[transfer.chain], amount: transfer.amount, token: tokenOf(transfer.chain, transfer.token) },
      receiving,
    };
    switch (transfer.state) {
      case 'waiting':
      case 'held':
      case 'filling':
        return { status: 'PENDING', substatus: 'WAIT_DESTINATION_TRANSACTION', ...base };
      case 'completed':
        return { status: 'DONE', substatus: 'COMPLETED', ...base };
      case 'refunding':
        return { status: 'PENDING', substatus: 'REFUND_IN_PROGRESS', substatusMessage: transfer.refund_as?.message, ...base };
      case 'refunded':
        return { status: transfer.refund_as!.status, substatus: transfer.refund_as!.substatus, substatusMessage: transfer.refund_as!.message, ...base };
    }
  };

  const handle = async (req: IncomingMessage): Promise<{ status: number; body: unknown }> => {
    const target = req.url ?? '/';
    const mark = target.indexOf('?');
    const path = mark === -1 ? target : target.slice(0, mark);
    const query = mark === -1 ? {} : Object.fromEntries(new URLSearchParams(target.slice(mark + 1)));
    if (req.method !== 'GET') throw new BridgeHttpError(405, 1011, `${req.method} is not allowed`);
    if (path === '/v1/routes') return { status: 200, body: listing() };
    if (path === '/v1/quote') {
      const { record, body } = await quote(query);
      await transact((draft) => {
        draft.quotes[record.id] = record;
      });
      return { status: 200, body };
    }
    if (path === '/v1/status') return { status: 200, body: await status(query) };
    throw new BridgeHttpError(404, 1003, `no route ${path}`);
  };

  const server = createServer((req, res) => {
    drain(req)
      .then(() => handle(req))
      .catch((error: unknown) => {
        if (error instanceof BridgeHttpError) return { status: error.status, body: error.body() };
        process.stderr.write(`sandbox bridge: ${(error as Error).message.split('\n')[0]}\n`);
        return { status: 500, body: { message: 'Internal error', code: 1006 } };
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
  const listing = (): SandboxBridgeListing => ({ url, vaults: { evm: vault.address, sol: solVault }, routes: routes.map(bridgeRouteJson) });

  // On Solana the programs its quotes' transactions invoke: SPL Token (the TransferChecked) and SPL Memo (the quote id).
  const contracts = Object.fromEntries([...EVM_CHAINS.map((code) => [code, LIFI_CONTRACTS[code]]), ['SOL', [TOKEN_PROGRAM, MEMO_PROGRAM]]]) as Record<
    BridgeChain,
    string[]
  >;

  return {
    url,
    contracts,
    listing: listing(),
    setFault: async (input) => {
      const scope = scopeOf(input.address);
      const setting = await transact((draft) => {
        draft.faults ??= {};
        const faults = draft.faults;
        if (input.mode !== 'clear') {
          faults[scope] = { mode: input.mode, remaining: input.count };
          return faults[scope];
        }
        delete faults[scope];
        if (Object.keys(faults).length === 0) delete draft.faults;
        // `clear` releases what this scope's stall held: filled from now (or refunded if past the deadline).
        const now = Date.now();
        for (const held of Object.values(store.read().transfers)) {
          if (held.state !== 'held' || (held.held_by ?? ANY_ADDRESS) !== scope) continue;
          const transfer = draft.transfers[held.key]!;
          transfer.state = 'waiting';
          delete transfer.held_by;
          transfer.fill_at_ms = Math.min(transfer.fill_at_ms, now);
        }
        return null;
      });
      return setting;
    },
    stop: async () => {
      stopped = true;
      wake();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      await Promise.all(loops);
      await ownHeads?.close();
    },
  };

  /** A `fromChain`/`fromToken` pair: a LI.FI chain id or key, a token symbol (USDC, USDC.e) or address. */
  function endpoint(query: Record<string, string>, chainField: string, tokenField: string) {
    const chain = bridgeChainOfLifi(query[chainField]);
    if (!chain) throw new BridgeHttpError(400, 1011, `${chainField}: must be one of ${Object.values(LIFI_CHAIN_IDS).join(', ')}`);
    const given = (query[tokenField] ?? '').trim();
    const token = (['USDC', 'USDC.E'] as const).find((t) => given.toUpperCase() === t || given.toLowerCase() === tokenOf(chain, t).address?.toLowerCase());
    if (!token) throw new BridgeHttpError(400, 1011, `${tokenField}: must be USDC or USDC.e (symbol or address)`);
    return { chain, token };
  }
}

/** Whether a filler round has anything to change: a fill due, a fill deadline passed, or a fill or refund paid out. */
function hasWork(state: BridgeState, now: number): boolean {
  return Object.values(state.transfers).some(
    (transfer) =>
      ((transfer.state === 'waiting' || transfer.state === 'held') &&
        (now > transfer.deadline_ms || (transfer.state === 'waiting' && now >= transfer.fill_at_ms))) ||
      (transfer.state === 'filling' && state.payouts[transfer.fill_payout!]?.state === 'completed') ||
      (transfer.state === 'refunding' && state.payouts[transfer.refund_payout!]?.state === 'completed'),
  );
}

function chainAddress(chain: BridgeChain, value: string | undefined, field: string): string {
  if (chain === 'SOL') {
    try {
      if (value && getBase58Encoder().encode(value).length === 32) return value;
    } catch {
      // falls through to the refusal
    }
    throw new BridgeHttpError(400, 1011, `${field}: must be a base58 Solana address`);
  }
  if (!value || !isAddress(value, { strict: false })) throw new BridgeHttpError(400, 1011, `${field}: must be a 0x-prefixed 20-byte address`);
  return getAddress(value);
}

/** A quote id (a UUID) as LI.FI's bytes32 `transactionId`: its 16 bytes, then zeros. */
function transactionIdOf(quoteId: string): Hex {
  return `0x${quoteId.replaceAll('-', '')}${'0'.repeat(32)}`;
}

/** The quote id a `transactionId` carries (transactionIdOf), or null when it names none. */
function quoteIdOf(transactionId: Hex): string | null {
  const match = /^0x([0-9a-f]{32})0{32}$/i.exec(transactionId);
  if (!match) return null;
  const h = match[1]!.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

interface SolTokenBalance {
  owner: string;
  mint: string;
  uiTokenAmount: { amount: string };
}

interface SolTransactionJson {
  blockTime: number | null;
  meta: { err: unknown; preTokenBalances: SolTokenBalance[]; postTokenBalances: SolTokenBalance[] };
  transaction: { message: { accountKeys: string[]; instructions: { programIdIndex: number; data: string }[] } };
}

async function solRpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

async function drain(req: IncomingMessage): Promise<void> {
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) throw new BridgeHttpError(413, 1011, 'Request body too large');
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((wake) => setTimeout(wake, ms));
}
