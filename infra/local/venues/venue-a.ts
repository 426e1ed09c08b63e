import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { type Address, encodeFunctionData, getAbiItem, getAddress, type Hex } from 'viem';
import { VENUE_RULES } from '../../../shared/venues/rules.ts';
import { feltToHex, parseFelt, pedersen } from '../../../shared/venues/stark.ts';
import { ARB_CHAIN, ARBITRUM_USDC, fromDecimal, STARKNET_CHAIN, toDecimal, VENUE_A_SANDBOX_PROFILE } from '../../../shared/venues/venue-a/api.ts';
import { RHINO_BRIDGE_ABI, recoverApiRequestSigner, verifyOnboardingPayload } from '../../../shared/venues/venue-a/signing.ts';
import { EXTENDED_COLLATERAL_ID, verifyWithdrawal } from '../../../shared/venues/venue-a/withdrawal.ts';
import { sandboxRhinoBridgeArtifact } from '../contracts/sandbox-rhino-bridge.artifact.ts';
import type { VenueHost, VenueModule, VenueRequest, VenueResponse, VenueState } from './framework.ts';

/**
 * The sandbox venue_a, modelled on Extended (Starknet era; research §2). It speaks a subset of
 * Extended's own API, with its `{ status: "OK", data }` / `{ status: "ERR", error: { code,
 * message } }` envelope:
 *
 * - `POST /auth/onboard`: AccountRegistration (EIP-712) + the Stark key's L2 proof, verified as
 *   the SDK builds them (verifyOnboardingPayload) → `{ l1Address, defaultAccount }`; a wallet
 *   that already has an account gets 409.
 * - `GET /api/v1/user/accounts`, `POST /api/v1/user/account/api-key`, `DELETE
 *   /api/v1/user/account/api-key/{key}`: EIP-191 `L1_SIGNATURE` / `L1_MESSAGE_TIME` over
 *   `"{path}@{time}"`, `X-X10-ACTIVE-ACCOUNT` naming the account for the key endpoints.
 * - `X-Api-Key`: `GET /api/v1/user/balance`, `GET /api/v1/user/bridge/config`, `GET|POST
 *   /api/v1/user/bridge/quote`, `POST /api/v1/user/withdrawal`, `GET /api/v1/user/assetOperations`.
 *
 * Deposits: `depositWithId(USDC, amount, quote id)` on SandboxRhinoBridge (installed on the ARB
 * sandbox chain at BRIDGE, a sandbox choice) is credited, from the chain's BridgedDepositWithId
 * log only, to the committed ARB→STRK quote's account, minus the quote fee. A deposit that matches
 * no committed, unexpired, unused quote of that amount is sent back to its sender (sandbox choice).
 * Withdrawals: a committed STRK→ARB quote plus the settlement signed by the account's Stark key
 * (WithdrawArgs, SNIP-12 rev 1) to the account's bridgeStarknetAddress; the vault pays amount −
 * quote fee to the account's wallet on ARB. Every sandbox choice is named in shared/venues/rules.ts.
 */
const RULES = VENUE_RULES.venue_a;
const PROFILE = VENUE_A_SANDBOX_PROFILE;
/** Where the sandbox installs its bridge on ARB (sandbox choice: rhino.fi's live address is not in research). */
export const VENUE_A_SANDBOX_BRIDGE: Address = getAddress('0x00000000000000000000000000000000000a0a01');
const DEPOSIT_EVENT = getAbiItem({ abi: RHINO_BRIDGE_ABI, name: 'BridgedDepositWithId' });
const MAX_SKEW_SECONDS = 300;
/** An uncommitted quote can be committed for this long; a committed one is good for QUOTE_COMMITTED_MS (sandbox choices). */
const QUOTE_OPEN_MS = 5 * 60 * 1000;
const QUOTE_COMMITTED_MS = 30 * 60 * 1000;
const ACCOUNT_ID_BASE = 100_000;
const VAULT_BASE = 500_000;

interface AccountRecord {
  readonly id: number;
  readonly wallet: Address;
  readonly l2Key: Hex;
  readonly l2Vault: number;
  readonly bridgeStarknetAddress: Hex;
  /** USDC base units. */
  balance: string;
  apiKeys: string[];
}

interface QuoteRecord {
  readonly id: string;
  readonly accountId: number;
  readonly chainIn: string;
  readonly chainOut: string;
  readonly amount: string;
  readonly fee: string;
  readonly createdAt: number;
  expiresAt: number | null;
  /** The deposit log key or withdrawal id that used it. */
  usedBy: string | null;
}

interface OperationRecord {
  readonly id: string;
  readonly type: 'DEPOSIT' | 'SLOW_WITHDRAWAL';
  readonly accountId: number;
  readonly amount: string;
  readonly fee: string;
  readonly time: number;
  readonly salt?: string;
  readonly txHash?: Hex;
  readonly payout?: string;
  readonly refused?: string;
}

export interface VenueAState {
  accounts: Record<string, AccountRecord>;
  /** Lower-case wallet → account id. */
  byWallet: Record<string, number>;
  /** API key → account id (revoked keys are removed). */
  apiKeys: Record<string, number>;
  quotes: Record<string, QuoteRecord>;
  operations: Record<string, OperationRecord>;
  nextId: number;
}

type Host = VenueHost<VenueAState>;
type Draft = VenueState<VenueAState>;

export function venueAModule(): VenueModule<VenueAState> {
  return {
    id: 'venue_a',
    rules: RULES,
    depositAddress: VENUE_A_SANDBOX_BRIDGE,
    watch: { address: VENUE_A_SANDBOX_BRIDGE, event: DEPOSIT_EVENT },
    initialState: () => ({ accounts: {}, byWallet: {}, apiKeys: {}, quotes: {}, operations: {}, nextId: 1 }),
    install,
    decodeDeposit: (log) => {
      const { sender, token, amount, commitmentId } = log.args as { sender?: Address; token?: Address; amount?: bigint; commitmentId?: bigint };
      if (!sender || !token || typeof amount !== 'bigint' || typeof commitmentId !== 'bigint') return undefined;
      // Only USDC is a venue_a deposit; anything else sits in the bridge uncredited.
      if (getAddress(token) !== ARBITRUM_USDC) return undefined;
      return { depositor: getAddress(sender), amount, reference: quoteIdOf(commitmentId) };
    },
    credit,
    handle,
  };
}

/** Installs the bridge at its sandbox address and makes the vault its operator, once. */
async function install(host: Host): Promise<void> {
  const token = host.chain.tokens.USDC?.address;
  if (!token || getAddress(token) !== ARBITRUM_USDC) throw new Error(`venue_a: the ARB sandbox has no USDC at ${ARBITRUM_USDC}`);
  const code = await host.client.getCode({ address: VENUE_A_SANDBOX_BRIDGE });
  if (!code || code === '0x') await host.rpc('anvil_setCode', [VENUE_A_SANDBOX_BRIDGE, sandboxRhinoBridgeArtifact.deployedBytecode]);
  const initialized = await host.client.readContract({ address: VENUE_A_SANDBOX_BRIDGE, abi: sandboxRhinoBridgeArtifact.abi, functionName: 'initialized' });
  if (!initialized) {
    await host.sendFromVault({
      to: VENUE_A_SANDBOX_BRIDGE,
      data: encodeFunctionData({ abi: sandboxRhinoBridgeArtifact.abi, functionName: 'initialize', args: [host.vaultAddress] }),
    });
  }
}

/** A deposit is credited to its committed quote's account, minus the quote fee; anything else goes back to the sender. */
function credit(draft: Draft, deposit: { key: string; txHash: Hex; depositor: Address; amount: bigint; reference?: string }, host: Host): boolean {
  const state = draft.venue;
  const quote = deposit.reference === undefined ? undefined : state.quotes[deposit.reference];
  const problem = !quote
    ? 'no quote has this commitment id'
    : quote.chainIn !== ARB_CHAIN || quote.chainOut !== STARKNET_CHAIN
      ? 'the quote is not an ARB deposit quote'
      : quote.expiresAt === null
        ? 'the quote was never committed'
        : quote.usedBy !== null
          ? 'the quote was used already'
          : Date.now() > quote.expiresAt
            ? 'the quote expired'
            : BigInt(quote.amount) !== deposit.amount
              ? `the quote is for ${toDecimal(BigInt(quote.amount))} USDC, the deposit ${toDecimal(deposit.amount)} USDC`
              : undefined;
  if (problem || !quote) {
    host.pay(draft, { id: `refund:${deposit.key}`, to: deposit.depositor, token: ARBITRUM_USDC, amount: deposit.amount });
    return false;
  }
  const account = state.accounts[String(quote.accountId)]!;
  const fee = BigInt(quote.fee);
  account.balance = (BigInt(account.balance) + deposit.amount - fee).toString();
  quote.usedBy = deposit.key;
  const id = String(state.nextId++);
  state.operations[id] = {
    id,
    type: 'DEPOSIT',
    accountId: account.id,
    amount: deposit.amount.toString(),
    fee: quote.fee,
    time: Date.now(),
    txHash: deposit.txHash,
  };
  return true;
}

// --- HTTP ----------------------------------------------------------------------------------------

const ok = (data: unknown): VenueResponse => ({ status: 200, body: { status: 'OK', data } });
/** Extended's error envelope; the numeric codes are the sandbox's own (Extended's table is not in research). */
const fail = (status: number, message: string): VenueResponse => ({ status, body: { status: 'ERR', error: { code: status * 10, message } } });

async function handle(request: VenueRequest, host: Host): Promise<VenueResponse> {
  const { method, path } = request;
  let body: unknown;
  if (request.body !== '') {
    try {
      body = JSON.parse(request.body);
    } catch {
      return fail(400, 'The request body is not JSON');
    }
  }
  if (method === 'POST' && path === '/auth/onboard') return onboard(body, host);
  if (method === 'GET' && path === '/api/v1/user/accounts') return withL1(request, host, false, (account) => ok(account ? [accountView(account)] : []));
  if (method === 'POST' && path === '/api/v1/user/account/api-key') return withL1(request, host, true, (account) => issueApiKey(account!, body, host));
  if (method === 'DELETE' && path.startsWith('/api/v1/user/account/api-key/')) {
    return withL1(request, host, true, (account) => revokeApiKey(account!, decodeURIComponent(path.slice('/api/v1/user/account/api-key/'.length)), host));
  }
  const keyed: Record<string, (account: AccountRecord) => Promise<VenueResponse> | VenueResponse> = {
    'GET /api/v1/user/balance': balance,
    'GET /api/v1/user/bridge/config': () => ok({ chains: [{ chain: ARB_CHAIN, contractAddress: VENUE_A_SANDBOX_BRIDGE }] }),
    'GET /api/v1/user/bridge/quote': (account) => createQuote(account, request.query, host),
    'POST /api/v1/user/bridge/quote': (account) => commitQuote(account, request.query, host),
    'POST /api/v1/user/withdrawal': (account) => withdraw(account, body, host),
    'GET /api/v1/user/assetOperations': (account) => assetOperations(account, request.query, host.read()),
  };
  const route = keyed[`${method} ${path}`];
  if (!route) return fail(404, `No route ${method} ${path}`);
  const apiKey = request.headers['x-api-key'];
  const accountId = apiKey === undefined ? undefined : host.read().venue.apiKeys[apiKey];
  if (accountId === undefined) return fail(401, 'Missing or invalid X-Api-Key');
  return route(host.read().venue.accounts[String(accountId)]!);
}

async function onboard(body: unknown, host: Host): Promise<VenueResponse> {
  const check = await verifyOnboardingPayload(body, PROFILE.signing, { now: new Date(), maxSkewSeconds: MAX_SKEW_SECONDS });
  if (!check.ok) return fail(401, `Onboarding refused: ${check.reason}`);
  return host.transact((draft) => {
    const state = draft.venue;
    const wallet = check.wallet;
    if (state.byWallet[wallet.toLowerCase()] !== undefined) return fail(409, `Wallet ${wallet} is already onboarded`);
    const sequence = state.nextId++;
    const id = ACCOUNT_ID_BASE + sequence;
    const l2Key = feltToHex(check.starkPublicKey);
    // Sandbox choice: the account's Starknet bridge address is derived, not deployed.
    const account: AccountRecord = {
      id,
      wallet,
      l2Key,
      l2Vault: VAULT_BASE + sequence,
      bridgeStarknetAddress: feltToHex(pedersen(check.starkPublicKey, BigInt(id))),
      balance: '0',
      apiKeys: [],
    };
    state.accounts[String(id)] = account;
    state.byWallet[wallet.toLowerCase()] = id;
    return ok({ l1Address: wallet.toLowerCase(), defaultAccount: accountView(account) });
  });
}

/** L1-signed account endpoints: the signer is whoever `L1_SIGNATURE` over "{path}@{time}" recovers to. */
async function withL1(
  request: VenueRequest,
  host: Host,
  needsActive: boolean,
  then: (account: AccountRecord | undefined) => Promise<VenueResponse> | VenueResponse,
): Promise<VenueResponse> {
  const signature = request.headers.l1_signature;
  const time = request.headers.l1_message_time;
  if (!signature || !time) return fail(401, 'L1_SIGNATURE and L1_MESSAGE_TIME are required');
  const signer = await recoverApiRequestSigner({ requestPath: request.path, signature, time, now: new Date(), maxSkewSeconds: MAX_SKEW_SECONDS });
  if (!signer) return fail(401, 'Invalid or expired L1 signature');
  const id = host.read().venue.byWallet[signer.toLowerCase()];
  const account = id === undefined ? undefined : host.read().venue.accounts[String(id)];
  if (needsActive) {
    if (!account) return fail(404, `Wallet ${signer} has no account`);
    if (request.headers['x-x10-active-account'] !== String(account.id)) return fail(403, 'X-X10-ACTIVE-ACCOUNT must name an account of the signing wallet');
  }
  return then(account);
}

function accountView(account: AccountRecord) {
  return {
    id: account.id,
    description: 'Main account',
    accountIndex: 0,
    status: 'ACTIVE',
    l2Key: account.l2Key,
    l2Vault: account.l2Vault,
    bridgeStarknetAddress: account.bridgeStarknetAddress,
    apiKeys: [...account.apiKeys],
  };
}

function issueApiKey(account: AccountRecord, body: unknown, host: Host): Promise<VenueResponse> {
  const description = (body as { description?: unknown } | undefined)?.description;
  if (typeof description !== 'string' || description.length === 0 || description.length > 100)
    return Promise.resolve(fail(400, 'description: a string of 1 to 100 characters'));
  const key = randomBytes(16).toString('hex');
  return host.transact((draft) => {
    draft.venue.accounts[String(account.id)]!.apiKeys.push(key);
    draft.venue.apiKeys[key] = account.id;
    return ok({ key });
  });
}

function revokeApiKey(account: AccountRecord, key: string, host: Host): Promise<VenueResponse> {
  return host.transact((draft) => {
    const record = draft.venue.accounts[String(account.id)]!;
    if (!record.apiKeys.includes(key)) return fail(404, 'No such API key on this account');
    record.apiKeys = record.apiKeys.filter((k) => k !== key);
    delete draft.venue.apiKeys[key];
    return ok({});
  });
}

function balance(account: AccountRecord): VenueResponse {
  const value = toDecimal(BigInt(account.balance));
  return ok({
    collateralName: 'USD',
    balance: value,
    equity: value,
    availableForTrade: value,
    availableForWithdrawal: value,
    unrealisedPnl: '0',
    initialMargin: '0',
    marginRatio: '0',
    updatedTime: Date.now(),
  });
}

function createQuote(account: AccountRecord, query: Readonly<Record<string, string>>, host: Host): Promise<VenueResponse> | VenueResponse {
  const { chainIn, chainOut } = query;
  const deposit = chainIn === ARB_CHAIN && chainOut === STARKNET_CHAIN;
  const withdrawal = chainIn === STARKNET_CHAIN && chainOut === ARB_CHAIN;
  if (!deposit && !withdrawal) return fail(400, `Unsupported route ${String(chainIn)} → ${String(chainOut)}: this venue bridges ARB ↔ STRK`);
  const amount = fromDecimal(query.amount);
  if (amount === undefined || amount <= 0n) return fail(400, 'amount: a positive decimal with at most 6 decimals');
  const rule = deposit ? RULES.deposit : RULES.withdrawal;
  if (amount < rule.minimum) return fail(400, `The minimum is ${toDecimal(rule.minimum)} USDC`);
  const fee = rule.fee.amount;
  const id = randomBytes(16).toString('hex');
  return host.transact((draft) => {
    draft.venue.quotes[id] = {
      id,
      accountId: account.id,
      chainIn,
      chainOut,
      amount: amount.toString(),
      fee: fee.toString(),
      createdAt: Date.now(),
      expiresAt: null,
      usedBy: null,
    };
    return ok({ id, fee: toDecimal(fee) });
  });
}

function commitQuote(account: AccountRecord, query: Readonly<Record<string, string>>, host: Host): Promise<VenueResponse> {
  return host.transact((draft) => {
    const quote = query.id === undefined ? undefined : draft.venue.quotes[query.id];
    if (!quote || quote.accountId !== account.id) return fail(404, 'No such quote');
    const now = Date.now();
    if (quote.expiresAt !== null) return now > quote.expiresAt ? fail(409, 'The quote expired') : ok({});
    if (now > quote.createdAt + QUOTE_OPEN_MS) return fail(409, 'The quote expired before it was committed');
    quote.expiresAt = now + QUOTE_COMMITTED_MS;
    return ok({});
  });
}

const Felt = v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{1,64}$/));
const SafeUint = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const WithdrawalRequest = v.object({
  accountId: SafeUint,
  amount: v.union([v.string(), v.number()]),
  description: v.optional(v.nullable(v.string())),
  settlement: v.object({
    recipient: Felt,
    positionId: SafeUint,
    collateralId: Felt,
    amount: SafeUint,
    expiration: v.object({ seconds: SafeUint }),
    salt: SafeUint,
    signature: v.object({ r: Felt, s: Felt }),
  }),
  chainId: v.string(),
  quoteId: v.optional(v.nullable(v.string())),
  asset: v.string(),
});

function withdraw(account: AccountRecord, body: unknown, host: Host): Promise<VenueResponse> | VenueResponse {
  const parsed = v.safeParse(WithdrawalRequest, body);
  if (!parsed.success) return fail(400, `Invalid withdrawal: ${parsed.issues[0].message}`);
  const request = parsed.output;
  const { settlement } = request;
  if (request.accountId !== account.id) return fail(403, 'accountId is not the API key’s account');
  if (request.chainId === STARKNET_CHAIN) return fail(400, 'This sandbox pays withdrawals out on ARB only (chainId "ARB" with a committed quote)');
  if (request.chainId !== ARB_CHAIN) return fail(400, `Unsupported chainId ${request.chainId}`);
  if (request.asset !== 'USD') return fail(400, 'asset must be USD');
  const amount = fromDecimal(request.amount);
  if (amount === undefined || amount <= 0n) return fail(400, 'amount: a positive decimal with at most 6 decimals');
  if (BigInt(settlement.amount) !== amount) return fail(400, 'settlement.amount does not match amount');
  if (parseFelt(settlement.recipient) !== parseFelt(account.bridgeStarknetAddress))
    return fail(400, 'A bridged withdrawal must go to the account’s bridgeStarknetAddress');
  if (settlement.positionId !== account.l2Vault) return fail(400, 'settlement.positionId is not the account’s vault');
  if (parseFelt(settlement.collateralId) !== EXTENDED_COLLATERAL_ID) return fail(400, 'settlement.collateralId is not the collateral asset');
  if (settlement.expiration.seconds * 1000 <= Date.now()) return fail(400, 'The settlement expired');
  const signed = verifyWithdrawal(
    {
      recipient: parseFelt(settlement.recipient),
      positionId: BigInt(settlement.positionId),
      collateralId: parseFelt(settlement.collateralId),
      amount,
      expirationSeconds: BigInt(settlement.expiration.seconds),
      salt: BigInt(settlement.salt),
    },
    PROFILE.starknetDomain,
    parseFelt(account.l2Key),
    { r: parseFelt(settlement.signature.r), s: parseFelt(settlement.signature.s) },
  );
  if (!signed) return fail(401, 'Invalid settlement signature');

  return host.transact((draft) => {
    const state = draft.venue;
    const record = state.accounts[String(account.id)]!;
    const salt = String(settlement.salt);
    // Sandbox choice: a settlement salt names one withdrawal; the same salt again answers its id.
    const existing = Object.values(state.operations).find((op) => op.accountId === account.id && op.type === 'SLOW_WITHDRAWAL' && op.salt === salt);
    if (existing) return existing.amount === amount.toString() ? ok(Number(existing.id)) : fail(409, 'This settlement salt was used for another withdrawal');
    const quote = request.quoteId ? state.quotes[request.quoteId] : undefined;
    if (!quote || quote.accountId !== account.id || quote.chainIn !== STARKNET_CHAIN || quote.chainOut !== ARB_CHAIN)
      return fail(400, 'A withdrawal to ARB needs a committed STRK → ARB quote of this account');
    if (quote.expiresAt === null) return fail(400, 'The quote was not committed');
    if (Date.now() > quote.expiresAt) return fail(409, 'The quote expired');
    if (quote.usedBy !== null) return fail(409, 'The quote was used already');
    if (BigInt(quote.amount) !== amount) return fail(400, 'The quote is for another amount');
    const available = BigInt(record.balance);
    if (amount > available) return fail(400, 'Insufficient balance for withdrawal');

    const fault = host.takeFault(draft, 'withdrawal', [record.wallet]);
    // Refused as a whole: nothing debited, the quote and the salt stay free for a retry.
    if (fault?.mode === 'fail') return fail(422, 'Withdrawal failed (sandbox fault)');
    const id = String(state.nextId++);
    quote.usedBy = id;
    const fee = BigInt(quote.fee);
    const base = { id, type: 'SLOW_WITHDRAWAL', accountId: account.id, amount: amount.toString(), fee: quote.fee, time: Date.now(), salt } as const;
    if (fault?.mode === 'refund') {
      state.operations[id] = { ...base, refused: 'Withdrawal returned to the account balance (sandbox fault)' };
      return ok(Number(id));
    }
    record.balance = (available - amount).toString();
    const payout = `withdrawal:${id}`;
    host.pay(draft, { id: payout, to: record.wallet, token: ARBITRUM_USDC, amount: amount - fee, heldBy: fault?.mode === 'stall' ? fault.scope : undefined });
    state.operations[id] = { ...base, payout };
    return ok(Number(id));
  });
}

function assetOperations(account: AccountRecord, query: Readonly<Record<string, string>>, state: Draft): VenueResponse {
  const list = Object.values(state.venue.operations)
    .filter((op) => op.accountId === account.id && (query.id === undefined || op.id === query.id) && (query.type === undefined || op.type === query.type))
    .sort((a, b) => Number(b.id) - Number(a.id))
    .map((op) => {
      const payout = op.payout ? state.payouts[op.payout] : undefined;
      const status =
        op.type === 'DEPOSIT'
          ? 'COMPLETED'
          : op.refused
            ? 'REJECTED'
            : payout?.state === 'completed'
              ? 'COMPLETED'
              : payout?.state === 'failed'
                ? 'REJECTED'
                : 'IN_PROGRESS';
      const transactionHash = op.type === 'DEPOSIT' ? op.txHash : status === 'COMPLETED' ? payout?.txHash : undefined;
      return {
        id: op.id,
        type: op.type,
        status,
        amount: toDecimal(BigInt(op.amount)),
        fee: toDecimal(BigInt(op.fee)),
        asset: 1,
        time: op.time,
        accountId: op.accountId,
        ...(transactionHash ? { transactionHash } : {}),
      };
    });
  return ok(list);
}

/** A commitment id as the quote id the venue issued (32 hex digits). */
function quoteIdOf(commitmentId: bigint): string {
  return commitmentId.toString(16).padStart(32, '0');
}
