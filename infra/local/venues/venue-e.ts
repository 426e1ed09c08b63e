import * as v from 'valibot';
import {
  type Address,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  isAddress,
  keccak256,
  parseAbiItem,
  recoverTypedDataAddress,
  toHex,
  zeroAddress,
} from 'viem';
import { VENUE_RULES } from '../../../shared/venues/rules.ts';
import { POLYGON_USDC_E, PUSD, withdrawTypedData } from '../../../shared/venues/venue-e/bridge.ts';
import {
  type ClobApiCredentials,
  generateClobApiCredentials,
  POLYGON_CHAIN_ID,
  PROXY_WALLET_FACTORY,
  proxyWalletAddress,
  verifyL1Headers,
  verifyL2Headers,
} from '../../../shared/venues/venue-e/signing.ts';
import { sandboxTokenArtifact } from '../contracts/sandbox-token.artifact.ts';
import type { DepositLog, VenueHost, VenueModule, VenueRequest, VenueResponse, VenueState } from './framework.ts';

/**
 * The sandbox venue_e, modelled on Polymarket (research §5). One server speaks a subset of two
 * of Polymarket's APIs:
 *
 * - CLOB: `POST /auth/api-key` and `GET /auth/derive-api-key` (L1 headers: the owner's EIP-712
 *   ClobAuth signature for a nonce) → `{ apiKey, secret, passphrase }`; `GET /auth/api-keys` and
 *   `DELETE /auth/api-key` (L2: HMAC headers of an API key); `GET /balance-allowance
 *   ?asset_type=COLLATERAL` (L2) → `{ balance, allowance }` in pUSD base units. Errors are
 *   `{ "error": "…" }` with 400 / 401, as the CLOB answers.
 * - Bridge: `POST /withdraw` and `GET /status/{address}`. The withdraw request carries, besides
 *   the Bridge API's `{ address, toChainId, toTokenAddress, recipientAddr }`, the sandbox
 *   extension `{ amount, withdrawalId, signature }` (shared/venues/venue-e/bridge.ts says why).
 *
 * The user's venue account is the Polymarket Proxy wallet, the CREATE2 address of the owner's EOA
 * ([O] M5, M6). The proxy is a contract wallet the venue's relayer operates; the sandbox stands in
 * for the relayer by impersonating the proxy address on the POL anvil (`anvil_impersonateAccount`).
 *
 * Deposits: a USDC.e Transfer on POL to a proxy wallet (to the sender's own proxy, or to the proxy
 * of an owner the venue has seen authenticate) is a deposit. At least 2 USDC.e (minCheckoutUsd
 * $2 on Polygon, [O] M15) is wrapped 1:1 into pUSD on chain: the proxy's USDC.e moves to the
 * vault (standing in for the CollateralOnramp's reserve) and the vault pays the same amount of
 * pUSD into the proxy. Less stays USDC.e in the proxy, not collateral (the docs: "may fail to
 * process"). The collateral balance is the proxy's pUSD on chain, minus withdrawals accepted but
 * not yet taken out of it.
 *
 * Withdrawals: the vault pays USDC.e to `recipientAddr` on POL (no Polymarket fee, [O] M17) and the
 * proxy's pUSD moves to the vault (the CollateralOfframp's unwrap). Each proxy transaction records
 * the proxy's nonce before it is sent, so a restart can tell whether it was mined: moved once.
 */
const RULES = VENUE_RULES.venue_e;
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
/** How far POLY_TIMESTAMP may be from the venue's clock (sandbox choice: unknown live). */
const MAX_SKEW_SECONDS = 300;
const PUSD_RESERVE_MINIMUM = 100_000n * 10n ** 6n;
const PUSD_RESERVE_FUNDING = 1_000_000n * 10n ** 6n;
/** Gas for the impersonated proxy transactions (the relayer pays it live). */
const PROXY_GAS_MINIMUM = 10n ** 16n;
const PROXY_GAS_FUNDING = 10n ** 18n;

interface ApiKeyRecord {
  readonly owner: Address;
  readonly nonce: string;
  readonly apiKey: string;
  readonly secret: string;
  readonly passphrase: string;
  readonly createdTimeMs: number;
  deleted: boolean;
}

/** One transfer out of a proxy wallet, made by the venue as the proxy's operator. */
interface ProxyMove {
  readonly id: string;
  /** wrap: a deposit's USDC.e to the reserve, then pUSD in; unwrap: a withdrawal's pUSD out; reclaim: a refunded deposit's USDC.e back to the vault that refunded it. */
  readonly kind: 'wrap' | 'unwrap' | 'reclaim';
  /** Resolved from the deposit's log on chain for wraps and reclaims. */
  proxy: Address | null;
  /** The deposit log `txHash:logIndex` (wrap, reclaim). */
  readonly log: string | null;
  readonly token: Address;
  readonly amount: string;
  state: 'queued' | 'sending' | 'moved' | 'failed';
  /** The proxy's nonce the transaction was sent with: mined once the proxy's nonce is past it. */
  nonce: number | null;
  txHash: Hex | null;
  reason: string | null;
}

interface WithdrawalRecord {
  readonly id: Hex;
  /** The one-shot bridge address (`/status/{address}`). */
  readonly address: Address;
  readonly owner: Address;
  readonly proxy: Address;
  readonly recipient: Address;
  readonly toChainId: string;
  readonly toTokenAddress: Address;
  readonly amount: string;
  readonly createdTimeMs: number;
  /** The payout id (vault → recipient), null when refused. */
  readonly payout: string | null;
  readonly refused: string | null;
}

export interface VenueEState {
  /** By API key (UUID). */
  apiKeys: Record<string, ApiKeyRecord>;
  /** Lower-case proxy address → owner EOA: the proxies the venue knows. */
  owners: Record<string, Address>;
  moves: Record<string, ProxyMove>;
  /** By lower-case one-shot address. */
  withdrawals: Record<string, WithdrawalRecord>;
}

type Host = VenueHost<VenueEState>;
type Draft = VenueState<VenueEState>;

const Addr = v.pipe(
  v.string(),
  v.check((s) => isAddress(s, { strict: false }), 'not an address'),
);
const WithdrawRequest = v.object({
  address: Addr,
  toChainId: v.union([v.pipe(v.string(), v.regex(/^\d{1,20}$/)), v.pipe(v.number(), v.safeInteger())]),
  toTokenAddress: Addr,
  recipientAddr: Addr,
  amount: v.pipe(v.string(), v.regex(/^[1-9]\d{0,30}$/)),
  withdrawalId: v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{64}$/)),
  signature: v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{130}$/)),
});

const error = (status: number, message: string): VenueResponse => ({ status, body: { error: message } });

export function venueEModule(): VenueModule<VenueEState> {
  // Withdrawal acceptance (balance read + record) and proxy moves run one at a time, so an
  // accepted withdrawal is never counted against a balance that no longer holds it.
  let tail: Promise<unknown> = Promise.resolve();
  const serially = <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task);
    tail = run.catch(() => undefined);
    return run;
  };

  return {
    id: 'venue_e',
    rules: RULES,
    // Deposits go to each user's own proxy wallet, a CREATE2 address of this factory: listed as
    // the one address every deposit address derives from (send nothing to it).
    depositAddress: PROXY_WALLET_FACTORY,
    watch: { address: POLYGON_USDC_E, event: TRANSFER },
    initialState: () => ({ apiKeys: {}, owners: {}, moves: {}, withdrawals: {} }),
    install,
    decodeDeposit: (log, state) => {
      const { from, to, value } = log.args as { from?: Address; to?: Address; value?: bigint };
      if (!from || !to || typeof value !== 'bigint' || value === 0n) return undefined;
      const target = getAddress(to);
      const ownProxy = from !== zeroAddress && proxyWalletAddress(getAddress(from)) === target;
      if (!ownProxy && !state.owners[target.toLowerCase()]) return undefined;
      // A mint straight into a proxy (no sender to refund) is the proxy's own deposit.
      return { depositor: from === zeroAddress ? target : getAddress(from), amount: value };
    },
    credit: (draft, deposit) => credit(draft, deposit),
    handle: (request, host) => handle(request, host, serially),
    background: async (host, signal) => {
      while (!signal.aborted) {
        try {
          await serially(() => moveFunds(host, signal));
        } catch (failure) {
          if (!signal.aborted) process.stderr.write(`sandbox venue_e: proxy moves: ${(failure as Error).message.split('\n')[0]}\n`);
        }
        await new Promise((wake) => setTimeout(wake, host.pollMs / 2));
      }
    },
  };
}

/** pUSD at its real address (a SandboxToken, as the chains' USDC), and the vault's pUSD reserve. */
async function install(host: Host): Promise<void> {
  const code = await host.client.getCode({ address: PUSD });
  if (code === undefined || code === '0x') {
    await host.rpc('anvil_setCode', [PUSD, sandboxTokenArtifact.deployedBytecode]);
  }
  const initialized = await host.client.readContract({ address: PUSD, abi: sandboxTokenArtifact.abi, functionName: 'initialized' });
  if (!initialized) {
    await host.sendFromVault({
      to: PUSD,
      data: encodeFunctionData({ abi: sandboxTokenArtifact.abi, functionName: 'initialize', args: ['Polymarket USD', 'pUSD', 6] }),
    });
  }
  const reserve = await host.client.readContract({ address: PUSD, abi: erc20Abi, functionName: 'balanceOf', args: [host.vaultAddress] });
  if (reserve < PUSD_RESERVE_MINIMUM) {
    await host.sendFromVault({
      to: PUSD,
      data: encodeFunctionData({ abi: sandboxTokenArtifact.abi, functionName: 'mint', args: [host.vaultAddress, PUSD_RESERVE_FUNDING] }),
    });
  }
}

/** At least the Polygon minCheckoutUsd is wrapped into pUSD; less stays USDC.e in the proxy, uncredited. */
function credit(draft: Draft, deposit: DepositLog): boolean {
  if (deposit.amount < RULES.deposit.minimum) return false;
  const id = `wrap:${deposit.key}`;
  draft.venue.moves[id] = {
    id,
    kind: 'wrap',
    proxy: null,
    log: deposit.key,
    token: POLYGON_USDC_E,
    amount: deposit.amount.toString(),
    state: 'queued',
    nonce: null,
    txHash: null,
    reason: null,
  };
  return true;
}

// --- proxy moves (the relayer's part) ----------------------------------------------------------

async function moveFunds(host: Host, signal: AbortSignal): Promise<void> {
  // A refunded deposit (fault `refund`): the vault paid it back; its USDC.e leaves the proxy.
  const refunded = Object.entries(host.read().seen).filter(([key, seen]) => seen.state === 'refunded' && !host.read().venue.moves[`reclaim:${key}`]);
  if (refunded.length > 0) {
    await host.transact((draft) => {
      for (const [key, seen] of refunded) {
        const id = `reclaim:${key}`;
        draft.venue.moves[id] ??= {
          id,
          kind: 'reclaim',
          proxy: null,
          log: key,
          token: POLYGON_USDC_E,
          amount: seen.amount,
          state: 'queued',
          nonce: null,
          txHash: null,
          reason: null,
        };
      }
    });
  }
  for (const move of Object.values(host.read().venue.moves)) {
    if (signal.aborted) return;
    if (move.state === 'queued' || move.state === 'sending') await advance(host, move.id);
  }
}

async function advance(host: Host, id: string): Promise<void> {
  let move = host.read().venue.moves[id]!;
  if (!move.proxy) {
    const proxy = await proxyOfLog(host, move.log!);
    await host.transact((draft) => {
      draft.venue.moves[id]!.proxy = proxy;
    });
    move = host.read().venue.moves[id]!;
  }
  const proxy = move.proxy!;
  if (move.state === 'sending') {
    // Sent before a restart: mined iff the proxy's nonce moved past the one it was sent with.
    const mined = (await host.client.getTransactionCount({ address: proxy, blockTag: 'latest' })) > move.nonce!;
    if (mined) {
      const receipt = move.txHash ? await host.client.getTransactionReceipt({ hash: move.txHash }).catch(() => undefined) : undefined;
      await finish(host, id, receipt === undefined || receipt.status === 'success', move.txHash);
      return;
    }
  }
  if ((await host.client.getBalance({ address: proxy })) < PROXY_GAS_MINIMUM) await host.rpc('anvil_setBalance', [proxy, toHex(PROXY_GAS_FUNDING)]);
  await host.rpc('anvil_impersonateAccount', [proxy]);
  const nonce = await host.client.getTransactionCount({ address: proxy, blockTag: 'pending' });
  await host.transact((draft) => {
    Object.assign(draft.venue.moves[id]!, { state: 'sending', nonce });
  });
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [host.vaultAddress, BigInt(move.amount)] });
  let txHash: Hex;
  try {
    txHash = (await host.rpc('eth_sendTransaction', [{ from: proxy, to: move.token, data, nonce: toHex(nonce) }])) as Hex;
  } catch (failure) {
    // Refused before mining (e.g. the proxy no longer holds it): the nonce is unused.
    await host.transact((draft) => {
      Object.assign(draft.venue.moves[id]!, { state: 'failed', reason: `proxy transfer refused: ${(failure as Error).message.split('\n')[0]}` });
    });
    return;
  }
  await host.transact((draft) => {
    draft.venue.moves[id]!.txHash = txHash;
  });
  const receipt = await host.client.waitForTransactionReceipt({ hash: txHash, pollingInterval: Math.min(50, host.pollMs), timeout: 30_000 });
  await finish(host, id, receipt.status === 'success', txHash);
}

/** Records the move's outcome; a wrap's pUSD goes into the proxy in the same write (paid once by the framework). */
async function finish(host: Host, id: string, success: boolean, txHash: Hex | null): Promise<void> {
  await host.transact((draft) => {
    const move = draft.venue.moves[id]!;
    move.state = success ? 'moved' : 'failed';
    move.txHash = txHash;
    if (!success) move.reason = `proxy transfer ${txHash} reverted`;
    if (success && move.kind === 'wrap' && !draft.payouts[id]) host.pay(draft, { id, to: move.proxy!, token: PUSD, amount: BigInt(move.amount) });
  });
}

/** The proxy a deposit log paid into, read back from the chain. */
async function proxyOfLog(host: Host, key: string): Promise<Address> {
  const [txHash, logIndex] = key.split(':') as [Hex, string];
  const receipt = await host.client.getTransactionReceipt({ hash: txHash });
  const log = receipt.logs.find((entry) => entry.logIndex === Number(logIndex));
  if (!log || log.topics.length < 3) throw new Error(`deposit log ${key} not found on chain`);
  return getAddress(`0x${log.topics[2]!.slice(26)}`);
}

// --- HTTP --------------------------------------------------------------------------------------

async function handle(request: VenueRequest, host: Host, serially: <T>(task: () => Promise<T>) => Promise<T>): Promise<VenueResponse> {
  const route = `${request.method} ${request.path}`;
  switch (route) {
    case 'POST /auth/api-key':
      return createApiKey(request, host);
    case 'GET /auth/derive-api-key':
      return deriveApiKey(request, host);
    case 'GET /auth/api-keys':
    case 'DELETE /auth/api-key':
    case 'GET /balance-allowance':
      return l2(request, host);
    case 'POST /withdraw':
      return serially(() => withdraw(request, host));
  }
  if (request.method === 'GET' && request.path.startsWith('/status/')) return status(request.path.slice('/status/'.length), host);
  return { status: 404, body: 'Not Found' };
}

/** The POLY_* headers as signing.ts names them (the framework lower-cases header names). */
function polyHeaders(request: VenueRequest): Record<string, string | undefined> {
  const names = ['POLY_ADDRESS', 'POLY_SIGNATURE', 'POLY_TIMESTAMP', 'POLY_NONCE', 'POLY_API_KEY', 'POLY_PASSPHRASE'];
  return Object.fromEntries(names.map((name) => [name, request.headers[name.toLowerCase()]]));
}

async function l1(request: VenueRequest) {
  return verifyL1Headers(polyHeaders(request), { now: new Date(), maxSkewSeconds: MAX_SKEW_SECONDS, chainId: POLYGON_CHAIN_ID });
}

function credentialsOf(record: ApiKeyRecord) {
  return { apiKey: record.apiKey, secret: record.secret, passphrase: record.passphrase };
}

function keyFor(state: VenueEState, owner: Address, nonce: bigint): ApiKeyRecord | undefined {
  return Object.values(state.apiKeys).find((record) => !record.deleted && record.owner === owner && record.nonce === nonce.toString());
}

/** One API key per owner and nonce; creating it again is refused (clients then derive it). */
async function createApiKey(request: VenueRequest, host: Host): Promise<VenueResponse> {
  const check = await l1(request);
  if (!check.ok) return error(401, `Unauthorized/Invalid L1 headers: ${check.reason}`);
  const fresh: ClobApiCredentials = generateClobApiCredentials();
  return host.transact((draft) => {
    registerOwner(draft, check.address);
    if (keyFor(draft.venue, check.address, check.nonce)) return error(400, 'Could not create api key');
    draft.venue.apiKeys[fresh.apiKey] = { owner: check.address, nonce: check.nonce.toString(), ...fresh, createdTimeMs: Date.now(), deleted: false };
    return { status: 200, body: fresh };
  });
}

async function deriveApiKey(request: VenueRequest, host: Host): Promise<VenueResponse> {
  const check = await l1(request);
  if (!check.ok) return error(401, `Unauthorized/Invalid L1 headers: ${check.reason}`);
  const record = keyFor(host.read().venue, check.address, check.nonce);
  if (!record) return error(400, 'Could not derive api key!');
  return { status: 200, body: credentialsOf(record) };
}

/** L2: the API key named by POLY_API_KEY, owned by POLY_ADDRESS, and the HMAC over this request (path without query). */
async function l2(request: VenueRequest, host: Host): Promise<VenueResponse> {
  const headers = polyHeaders(request);
  const record = headers.POLY_API_KEY ? host.read().venue.apiKeys[headers.POLY_API_KEY] : undefined;
  const owner = headers.POLY_ADDRESS && isAddress(headers.POLY_ADDRESS, { strict: false }) ? getAddress(headers.POLY_ADDRESS) : undefined;
  const valid =
    record !== undefined &&
    !record.deleted &&
    record.owner === owner &&
    verifyL2Headers(headers, credentialsOf(record), {
      method: request.method,
      requestPath: request.path,
      body: request.body || undefined,
      now: new Date(),
      maxSkewSeconds: MAX_SKEW_SECONDS,
    });
  if (!valid) return error(401, 'Unauthorized/Invalid api key');
  switch (request.method) {
    case 'GET':
      if (request.path === '/auth/api-keys') {
        return {
          status: 200,
          body: {
            apiKeys: Object.values(host.read().venue.apiKeys)
              .filter((r) => r.owner === record.owner && !r.deleted)
              .map((r) => r.apiKey),
          },
        };
      }
      return balanceAllowance(request, host, record.owner);
    default:
      await host.transact((draft) => {
        draft.venue.apiKeys[record.apiKey]!.deleted = true;
      });
      return { status: 200, body: 'OK' };
  }
}

async function balanceAllowance(request: VenueRequest, host: Host, owner: Address): Promise<VenueResponse> {
  if (request.query.asset_type !== 'COLLATERAL') return error(400, 'only asset_type=COLLATERAL is supported by this sandbox');
  const proxy = proxyWalletAddress(owner);
  const balance = await collateral(host, proxy);
  // The proxy wallet's approvals to the exchanges are the relayer's business: shown as unlimited.
  return { status: 200, body: { balance: balance.toString(), allowance: (2n ** 256n - 1n).toString() } };
}

/** The proxy's pUSD on chain minus withdrawals accepted but not yet moved out of it. */
async function collateral(host: Host, proxy: Address): Promise<bigint> {
  const onChain = await host.client.readContract({ address: PUSD, abi: erc20Abi, functionName: 'balanceOf', args: [proxy] });
  const pending = Object.values(host.read().venue.moves)
    .filter((move) => move.kind === 'unwrap' && move.proxy === proxy && (move.state === 'queued' || move.state === 'sending'))
    .reduce((sum, move) => sum + BigInt(move.amount), 0n);
  return onChain - pending;
}

function registerOwner(draft: Draft, owner: Address): void {
  draft.venue.owners[proxyWalletAddress(owner).toLowerCase()] = owner;
}

// --- Bridge ------------------------------------------------------------------------------------

async function withdraw(request: VenueRequest, host: Host): Promise<VenueResponse> {
  let json: unknown;
  try {
    json = JSON.parse(request.body);
  } catch {
    return error(400, 'invalid JSON body');
  }
  const parsed = v.safeParse(WithdrawRequest, json);
  if (!parsed.success) return error(400, `invalid request: ${parsed.issues[0].message}`);
  const input = parsed.output;
  const proxy = getAddress(input.address);
  const recipient = getAddress(input.recipientAddr);
  const toToken = getAddress(input.toTokenAddress);
  const toChainId = String(input.toChainId);
  const amount = BigInt(input.amount);
  const withdrawalId = input.withdrawalId.toLowerCase() as Hex;
  let owner: Address;
  try {
    owner = await recoverTypedDataAddress({
      ...withdrawTypedData({ proxyWallet: proxy, recipientAddr: recipient, toChainId: BigInt(toChainId), toTokenAddress: toToken, amount, withdrawalId }),
      signature: input.signature as Hex,
    });
  } catch {
    return error(401, 'invalid signature');
  }
  if (proxyWalletAddress(owner) !== proxy) return error(401, 'the signature is not by the owner of this wallet');
  const address = oneShotAddress(proxy, withdrawalId);
  const existing = host.read().venue.withdrawals[address.toLowerCase()];
  if (existing) {
    const same =
      existing.recipient === recipient && existing.amount === amount.toString() && existing.toTokenAddress === toToken && existing.toChainId === toChainId;
    return same ? { status: 200, body: withdrawAnswer(address) } : error(409, 'this withdrawalId was used for a different withdrawal');
  }
  if (toChainId !== String(POLYGON_CHAIN_ID) || toToken !== POLYGON_USDC_E)
    return error(400, 'this sandbox pays withdrawals only as USDC.e on Polygon (toChainId 137)');
  if (amount < RULES.withdrawal.minimum) return error(400, `amount below the minimum of ${RULES.withdrawal.minimum} base units`);
  const available = await collateral(host, proxy);
  let move: string | undefined;
  const answer = await host.transact((draft): VenueResponse => {
    registerOwner(draft, owner);
    const fault = host.takeFault(draft, 'withdrawal', [owner, recipient]);
    if (fault?.mode === 'fail') return error(503, 'withdrawal failed (sandbox fault)');
    if (amount > available) return error(400, 'not enough balance');
    const record = {
      id: withdrawalId,
      address,
      owner,
      proxy,
      recipient,
      toChainId,
      toTokenAddress: toToken,
      amount: amount.toString(),
      createdTimeMs: Date.now(),
    };
    if (fault?.mode === 'refund') {
      draft.venue.withdrawals[address.toLowerCase()] = { ...record, payout: null, refused: 'withdrawal refunded to the wallet (sandbox fault)' };
      return { status: 200, body: withdrawAnswer(address) };
    }
    const id = `withdraw:${address.toLowerCase()}`;
    // No venue fee ([O] M17): the recipient gets the amount; the pUSD leaves the proxy once.
    host.pay(draft, { id, to: recipient, token: POLYGON_USDC_E, amount, heldBy: fault?.mode === 'stall' ? fault.scope : undefined });
    draft.venue.moves[id] = {
      id,
      kind: 'unwrap',
      proxy,
      log: null,
      token: PUSD,
      amount: amount.toString(),
      state: 'queued',
      nonce: null,
      txHash: null,
      reason: null,
    };
    draft.venue.withdrawals[address.toLowerCase()] = { ...record, payout: id, refused: null };
    move = id;
    return { status: 200, body: withdrawAnswer(address) };
  });
  // The pUSD leaves the proxy before the answer, so the wallet's on-chain balance already shows
  // it; the move is recorded first, so a failure here is finished by the background loop.
  if (move) {
    await advance(host, move).catch((failure: unknown) => {
      process.stderr.write(`sandbox venue_e: withdrawal move ${move}: ${(failure as Error).message.split('\n')[0]}\n`);
    });
  }
  return answer;
}

function withdrawAnswer(address: Address) {
  return {
    address: { evm: address },
    note: 'Sandbox: the withdrawal is authorised by the signature and paid from the proxy wallet; nothing needs to be sent to this address.',
  };
}

/** A stable one-shot bridge address per wallet and withdrawal id. */
function oneShotAddress(proxy: Address, withdrawalId: Hex): Address {
  return getAddress(`0x${keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'bytes32' }], [proxy, withdrawalId])).slice(26)}`);
}

function status(raw: string, host: Host): VenueResponse {
  if (!isAddress(raw, { strict: false })) return error(400, 'invalid address');
  const state = host.read();
  const record = state.venue.withdrawals[raw.toLowerCase()];
  if (!record) return { status: 200, body: { transactions: [] } };
  const payout = record.payout ? state.payouts[record.payout] : undefined;
  const stage =
    record.refused || payout?.state === 'failed'
      ? 'FAILED'
      : payout?.state === 'completed'
        ? 'COMPLETED'
        : payout?.state === 'sent'
          ? 'SUBMITTED'
          : 'PROCESSING';
  return {
    status: 200,
    body: {
      transactions: [
        {
          fromChainId: String(POLYGON_CHAIN_ID),
          fromTokenAddress: PUSD,
          fromAmountBaseUnit: record.amount,
          toChainId: record.toChainId,
          toTokenAddress: record.toTokenAddress,
          status: stage,
          ...(stage === 'COMPLETED' ? { txHash: payout!.txHash } : {}),
          createdTimeMs: record.createdTimeMs,
        },
      ],
    },
  };
}
