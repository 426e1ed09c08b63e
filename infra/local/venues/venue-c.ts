import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { type Address, encodeFunctionData, formatUnits, getAddress, type Hex, isAddress, parseUnits } from 'viem';
import { VENUE_RULES } from '../../../shared/venues/rules.ts';
import { FELT_LIMIT, feltToHex, parseFelt, type StarkSignature, starknetKeccak } from '../../../shared/venues/stark.ts';
import {
  authTypedData,
  type ParadexSystemConfig,
  parseParadexSignature,
  STARKGATE_BRIDGE_ABI,
  verifyOnboarding,
  verifyParadexTypedData,
  verifySubkeyRegistration,
} from '../../../shared/venues/venue-c/signing.ts';
import { PARACLEAR_DECIMALS, withdrawalTypedData } from '../../../shared/venues/venue-c/withdrawal.ts';
import mainnetTokens from '../../config/mainnet-tokens.json' with { type: 'json' };
import { sandboxStarkgateBridgeArtifact } from '../contracts/sandbox-starkgate-bridge.artifact.ts';
import type { DepositLog, VenueHost, VenueModule, VenueRequest, VenueResponse, VenueState } from './framework.ts';

/**
 * The sandbox venue_c, modelled on Paradex (research §3). It speaks a subset of Paradex's REST API
 * under `/v1` (paths, headers, bodies and `{ error, message }` error bodies as Paradex's OpenAPI,
 * [O] P2):
 *
 * - `GET /v1/system/config`: chain ids, the account class hashes, Paraclear's 8 decimals and
 *   `bridged_tokens[]` with the L1 bridge this sandbox installs on the ETH chain;
 * - `POST /v1/onboarding` (PARADEX-ETHEREUM-ACCOUNT / -STARKNET-ACCOUNT / -STARKNET-SIGNATURE,
 *   body `{ public_key }`): the account must be the address of that key and the Stark signature
 *   over the Onboarding typed data must verify; idempotent;
 * - `POST /v1/auth` (and `/v1/auth/{public_key}`): a JWT for a Stark signature over the auth
 *   Request typed data, by the main key or an active subkey;
 * - JWT: `GET /v1/balance`, `GET /v1/account`, `GET /v1/transfers`,
 *   `GET|POST /v1/account/keys/subkeys`, `GET|DELETE /v1/account/keys/subkeys/{public_key}`
 *   (subkeys cannot manage subkeys, [O] P8);
 * - `POST /v1/withdrawals` (sandbox choice, see shared/venues/venue-c/withdrawal.ts): a main-key
 *   signed withdrawal paid on ETH from the vault; its record is a `GET /v1/transfers` entry.
 *
 * Deposits: the StarkGate-like bridge (SandboxStarkgateBridge, installed at VENUE_C_BRIDGE) emits
 * `Deposit(sender, token, amount, l2Recipient, nonce, fee)`; the watcher credits `amount` to the
 * L2 account `l2Recipient`. Sandbox choices (rules.ts): below the 1 USDC minimum or above the
 * published 500,000 USDC per transaction, a deposit is not credited and the vault sends it back.
 */
const RULES = VENUE_RULES.venue_c;
const DECIMALS = RULES.decimals;
/** Real USDC on Ethereum; the sandbox's ETH chain has its faucet token at the same address. */
const ETHEREUM_USDC = getAddress(mainnetTokens.ETH.tokens.USDC.address);
/** Sandbox choice: Paradex's mainnet bridge address is unknown to research (§6.3); clients read it from /v1/system/config. */
export const VENUE_C_BRIDGE: Address = '0x00000000000000000000000000000000000C0001';
/** [O] P4: at most 500,000 USDC per deposit transaction. */
const DEPOSIT_MAXIMUM = 500_000n * 10n ** 6n;
/** [O] P2 (AuthResp example: exp − iat = 300 s). */
const JWT_SECONDS = 300;
/** [O] P2: signature expiration at most one week after its timestamp. */
const MAX_SIGNATURE_SECONDS = 7 * 24 * 60 * 60;
/** Sandbox choice: how far in the future a signature timestamp may lie. */
const CLOCK_SKEW_SECONDS = 300;
/** Sandbox choice (unknown in research): active subkeys per account. */
const MAX_ACTIVE_SUBKEYS = 10;
/** Sandbox choice (unknown in research): subkey name length. */
const MAX_SUBKEY_NAME = 64;
const SCALE = 10n ** BigInt(PARACLEAR_DECIMALS - DECIMALS);

/**
 * The published shape of `/v1/system/config` ([O] P2). Sandbox choices: the Starknet chain id of
 * Paradex mainnet ([O] P7), the class hashes Paradex testnet publishes (mainnet's are not in
 * research), L2 addresses as labelled felts, the sandbox ETH chain's id (1, as mainnet).
 */
function systemConfig(host: Host) {
  const label = (text: string) => feltToHex(starknetKeccak(`sandbox venue_c ${text}`));
  return {
    environment: 'sandbox',
    starknet_chain_id: 'PRIVATE_SN_PARACLEAR_MAINNET',
    l1_chain_id: String(host.chain.chain_id),
    paraclear_account_proxy_hash: '0x3530cc4759d78042f1b543bf797f5f3d647cde0388c33734cf91b7f7b9314a9',
    paraclear_account_hash: '0x41cb0280ebadaa75f996d8d92c6f265f6d040bb3ba442e5f86a554f1765244e',
    paraclear_address: label('paraclear'),
    paraclear_decimals: PARACLEAR_DECIMALS,
    l1_core_contract_address: null,
    l1_operator_address: host.vaultAddress,
    bridged_tokens: [
      {
        name: 'USD Coin',
        symbol: 'USDC',
        decimals: DECIMALS,
        l1_token_address: ETHEREUM_USDC,
        l1_bridge_address: VENUE_C_BRIDGE,
        l2_token_address: label('usdc'),
        l2_bridge_address: label('usdc bridge'),
      },
    ],
  } as const;
}

interface SubkeyRecord {
  readonly id: number;
  readonly name: string;
  readonly public_key: string;
  state: 'active' | 'revoked';
  readonly created_at: number;
  updated_at: number;
  revoked_at: number;
}

interface AccountRecord {
  readonly publicKey: string;
  readonly ethereumAccount: Address;
  readonly createdAt: number;
  /** By lower-case hex public key. */
  subkeys: Record<string, SubkeyRecord>;
}

interface TransferRecord {
  readonly id: string;
  readonly account: string;
  readonly kind: 'DEPOSIT' | 'WITHDRAWAL';
  status: 'PENDING' | 'COMPLETED' | 'FAILED';
  /** Decimal USDC. */
  readonly amount: string;
  readonly external_account: Address;
  external_txn_hash: Hex | null;
  failure_reason: string | null;
  readonly created_at: number;
  last_updated_at: number;
  /** The vault payout of a withdrawal. */
  readonly payout?: string;
  /** A withdrawal's nonce (decimal). */
  readonly nonce?: string;
}

export interface VenueCState {
  /** The HS256 key of the venue's JWTs (sandbox choice: Paradex signs with ES384). */
  readonly jwtSecret: string;
  /** Onboarded accounts by lower-case hex address. */
  accounts: Record<string, AccountRecord>;
  /** Lower-case Ethereum address -> account: one wallet per account ([O] P9). */
  ethereumAccounts: Record<string, string>;
  /** USDC base units by L2 address (deposits reach an address whether or not it is onboarded). */
  balances: Record<string, string>;
  transfers: TransferRecord[];
  nextTransferId: number;
  nextSubkeyId: number;
  /** The L2 recipient of a deposit log (`txHash:logIndex`), written in the watcher's transaction. */
  depositRecipients: Record<string, string>;
  /** `account:nonce` -> transfer id of a withdrawal. */
  withdrawalNonces: Record<string, string>;
}

type Host = VenueHost<VenueCState>;
type Draft = VenueState<VenueCState>;

const error = (status: number, code: string, message: string): VenueResponse => ({ status, body: { error: code, message } });

export function venueCModule(): VenueModule<VenueCState> {
  const depositEvent = STARKGATE_BRIDGE_ABI.find((item) => item.type === 'event' && item.name === 'Deposit')!;
  return {
    id: 'venue_c',
    rules: RULES,
    depositAddress: VENUE_C_BRIDGE,
    watch: { address: VENUE_C_BRIDGE, event: depositEvent as never, args: { token: ETHEREUM_USDC } },
    initialState: () => ({
      jwtSecret: randomBytes(32).toString('hex'),
      accounts: {},
      ethereumAccounts: {},
      balances: {},
      transfers: [],
      nextTransferId: 1,
      nextSubkeyId: 1,
      depositRecipients: {},
      withdrawalNonces: {},
    }),
    install,
    decodeDeposit: (log, state) => {
      const { sender, amount, l2Recipient } = log.args as { sender?: Address; amount?: bigint; l2Recipient?: bigint };
      const { transactionHash, logIndex } = log as unknown as { transactionHash: Hex; logIndex: number };
      if (!sender || typeof amount !== 'bigint' || typeof l2Recipient !== 'bigint') return undefined;
      // Runs inside the watcher's transaction: the recipient is written with the credit.
      state.depositRecipients[`${transactionHash}:${logIndex}`] = feltToHex(l2Recipient);
      return { depositor: getAddress(sender), amount };
    },
    credit,
    handle,
  };
}

/** Installs the StarkGate-like bridge at its sandbox address once (a restart finds it there) with the vault as operator. */
async function install(host: Host): Promise<void> {
  const code = (await host.rpc('eth_getCode', [VENUE_C_BRIDGE, 'latest'])) as Hex;
  if (!code || code === '0x') await host.rpc('anvil_setCode', [VENUE_C_BRIDGE, sandboxStarkgateBridgeArtifact.deployedBytecode]);
  const initialized = await host.client.readContract({ address: VENUE_C_BRIDGE, abi: sandboxStarkgateBridgeArtifact.abi, functionName: 'initialized' });
  if (!initialized) {
    await host.sendFromVault({
      to: VENUE_C_BRIDGE,
      data: encodeFunctionData({ abi: sandboxStarkgateBridgeArtifact.abi, functionName: 'initialize', args: [host.vaultAddress] }),
    });
  }
}

function credit(draft: Draft, deposit: DepositLog, host: Host): boolean {
  const state = draft.venue;
  const recipient = state.depositRecipients[deposit.key];
  delete state.depositRecipients[deposit.key];
  // Logs a fault failed or refunded are never credited: their recipients are not needed.
  for (const key of Object.keys(state.depositRecipients)) {
    const seen = draft.seen[key];
    if (seen && seen.state !== 'stalled') delete state.depositRecipients[key];
  }
  if (!recipient) return false;
  const now = Date.now();
  const record = (status: TransferRecord['status'], failure: string | null): TransferRecord => ({
    id: String(state.nextTransferId++),
    account: recipient,
    kind: 'DEPOSIT',
    status,
    amount: decimal(deposit.amount),
    external_account: deposit.depositor,
    external_txn_hash: deposit.txHash,
    failure_reason: failure,
    created_at: now,
    last_updated_at: now,
  });
  const refusal =
    deposit.amount < RULES.deposit.minimum
      ? `below the minimum deposit of ${decimal(RULES.deposit.minimum)} USDC`
      : deposit.amount > DEPOSIT_MAXIMUM
        ? `above the maximum deposit of ${decimal(DEPOSIT_MAXIMUM)} USDC per transaction`
        : undefined;
  if (refusal) {
    // Sandbox choice: not credited, returned to the L1 sender by the vault.
    host.pay(draft, { id: `refund:${deposit.key}`, to: deposit.depositor, token: ETHEREUM_USDC, amount: deposit.amount });
    state.transfers.push(record('FAILED', `Deposit ${refusal}; returned to ${deposit.depositor}`));
    return false;
  }
  state.balances[recipient] = (BigInt(state.balances[recipient] ?? '0') + deposit.amount).toString();
  state.transfers.push(record('COMPLETED', null));
  return true;
}

// --- HTTP --------------------------------------------------------------------------------------

async function handle(request: VenueRequest, host: Host): Promise<VenueResponse> {
  const { method, path } = request;
  if (method === 'GET' && path === '/v1/system/config') return { status: 200, body: systemConfig(host) };
  if (method === 'POST' && path === '/v1/onboarding') return onboarding(request, host);
  if (method === 'POST' && (path === '/v1/auth' || path.startsWith('/v1/auth/'))) return auth(request, host);

  const isSubkeys = path === '/v1/account/keys/subkeys' || path.startsWith('/v1/account/keys/subkeys/');
  const known =
    (method === 'GET' && ['/v1/balance', '/v1/account', '/v1/transfers'].includes(path)) ||
    (method === 'POST' && path === '/v1/withdrawals') ||
    (isSubkeys &&
      (method === 'GET' || (method === 'POST' && path === '/v1/account/keys/subkeys') || (method === 'DELETE' && path !== '/v1/account/keys/subkeys')));
  if (!known) return error(404, 'NOT_FOUND', `${method} ${path} not found`);

  const session = authenticate(request, host.read().venue);
  if ('status' in session) return session;
  if (path === '/v1/balance') return balance(session.account, host.read().venue);
  if (path === '/v1/account') return accountSummary(session.account, host.read().venue);
  if (path === '/v1/transfers') return transfers(request, session.account, host.read());
  if (!session.main) return error(401, 'UNAUTHORIZED_ERROR', 'Subkeys cannot manage subkeys or withdraw; authenticate with the main account key');
  if (path === '/v1/withdrawals') return withdraw(request, session.account, host);
  const subkey = path.slice('/v1/account/keys/subkeys/'.length);
  if (method === 'POST') return createSubkey(request, session.account, host);
  if (method === 'GET' && path === '/v1/account/keys/subkeys') return listSubkeys(request, session.account, host.read().venue);
  if (method === 'GET') return getSubkey(subkey, session.account, host.read().venue);
  return revokeSubkey(subkey, session.account, host);
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

const OnboardingBody = v.object({ public_key: v.string() });

async function onboarding(request: VenueRequest, host: Host): Promise<VenueResponse> {
  const body = v.safeParse(OnboardingBody, parseJson(request.body));
  if (!body.success) return error(400, 'BINDING_ERROR', 'body must be JSON with a string public_key');
  const headers = request.headers;
  const check = verifyOnboarding({
    headers: {
      'PARADEX-ETHEREUM-ACCOUNT': headers['paradex-ethereum-account'],
      'PARADEX-STARKNET-ACCOUNT': headers['paradex-starknet-account'],
      'PARADEX-STARKNET-SIGNATURE': headers['paradex-starknet-signature'],
    },
    publicKey: body.output.public_key,
    config: systemConfig(host) satisfies ParadexSystemConfig,
  });
  if (!check.ok) {
    const code = /signature/.test(check.reason) ? 'INVALID_STARKNET_SIGNATURE' : /missing/.test(check.reason) ? 'VALIDATION_ERROR' : 'INVALID_STARKNET_ADDRESS';
    return error(400, code, `Onboarding refused: ${check.reason}`);
  }
  const account = feltToHex(check.account);
  const ethereum = check.ethereumAccount.toLowerCase();
  return host.transact((draft) => {
    const state = draft.venue;
    const linked = state.ethereumAccounts[ethereum];
    if (linked && linked !== account)
      return error(400, 'ETHEREUM_ADDRESS_ALREADY_ONBOARDED', `Ethereum account ${check.ethereumAccount} is already linked to another Paradex account`);
    const existing = state.accounts[account];
    if (existing && existing.ethereumAccount.toLowerCase() !== ethereum) {
      return error(400, 'PARENT_ADDRESS_ALREADY_ONBOARDED', `Account ${account} is already onboarded with another Ethereum account`);
    }
    if (!existing) {
      state.accounts[account] = { publicKey: feltToHex(check.publicKey), ethereumAccount: check.ethereumAccount, createdAt: Date.now(), subkeys: {} };
      state.ethereumAccounts[ethereum] = account;
    }
    return { status: 200, body: {} };
  });
}

async function auth(request: VenueRequest, host: Host): Promise<VenueResponse> {
  const headers = request.headers;
  const accountHeader = headers['paradex-starknet-account'];
  const signatureHeader = headers['paradex-starknet-signature'];
  const timestampHeader = headers['paradex-timestamp'];
  const expirationHeader = headers['paradex-signature-expiration'];
  if (!accountHeader || !signatureHeader || !timestampHeader)
    return error(400, 'VALIDATION_ERROR', 'PARADEX-STARKNET-ACCOUNT, PARADEX-STARKNET-SIGNATURE and PARADEX-TIMESTAMP are required');
  let account: string;
  try {
    account = feltToHex(parseFelt(accountHeader));
  } catch {
    return error(400, 'INVALID_STARKNET_ADDRESS', 'PARADEX-STARKNET-ACCOUNT is not a Starknet address');
  }
  const timestamp = Number(timestampHeader);
  const now = Math.floor(Date.now() / 1000);
  // [O] P2: expiration defaults to 30 minutes, at most one week.
  const expiration = expirationHeader === undefined ? timestamp + 30 * 60 : Number(expirationHeader);
  if (!Number.isSafeInteger(timestamp) || !Number.isSafeInteger(expiration))
    return error(400, 'INVALID_TIMESTAMP', 'PARADEX-TIMESTAMP and PARADEX-SIGNATURE-EXPIRATION are unix seconds');
  if (timestamp > now + CLOCK_SKEW_SECONDS) return error(400, 'INVALID_TIMESTAMP', 'PARADEX-TIMESTAMP lies in the future');
  if (expiration <= now) return error(400, 'INVALID_TIMESTAMP', 'the signature has expired');
  if (expiration - timestamp > MAX_SIGNATURE_SECONDS)
    return error(400, 'INVALID_TIMESTAMP', 'PARADEX-SIGNATURE-EXPIRATION is at most one week after PARADEX-TIMESTAMP');
  const signature = parseParadexSignature(signatureHeader);
  if (!signature) return error(400, 'INVALID_STARKNET_SIGNATURE', 'PARADEX-STARKNET-SIGNATURE must be ["<r>","<s>"]');

  const state = host.read().venue;
  const record = state.accounts[account];
  if (!record) return error(400, 'NOT_ONBOARDED', 'User has never called /onboarding endpoint');
  const typedData = authTypedData(systemConfig(host).starknet_chain_id, timestamp, expiration);
  const requested = request.path.startsWith('/v1/auth/') ? request.path.slice('/v1/auth/'.length).toLowerCase() : undefined;
  const candidates = [
    { key: record.publicKey, main: true },
    ...Object.values(record.subkeys)
      .filter((subkey) => subkey.state === 'active')
      .map((subkey) => ({ key: subkey.public_key, main: false })),
  ].filter((candidate) => requested === undefined || sameFelt(candidate.key, requested));
  const signer = candidates.find((candidate) => verifyParadexTypedData(typedData, BigInt(account), BigInt(candidate.key), signature));
  if (!signer) return error(401, 'STARKNET_SIGNATURE_VERIFICATION_FAILED', 'The signature does not verify under the account key or an active subkey');
  return { status: 200, body: { jwt_token: issueJwt(state.jwtSecret, { sub: account, key: signer.key, main: signer.main }) } };
}

function sameFelt(a: string, b: string): boolean {
  try {
    return parseFelt(a) === parseFelt(b);
  } catch {
    return false;
  }
}

// --- JWT (sandbox choice: HS256 with the venue's own secret) -------------------------------------

function base64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

function issueJwt(secret: string, claims: { sub: string; key: string; main: boolean }): string {
  const now = Math.floor(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const payload = base64url(JSON.stringify({ typ: 'at+JWT', iss: 'Paradex sandbox', iat: now, exp: now + JWT_SECONDS, ...claims }));
  const signature = createHmac('sha256', Buffer.from(secret, 'hex')).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}

type Session = { readonly account: string; readonly key: string; readonly main: boolean };

function authenticate(request: VenueRequest, state: VenueCState): Session | VenueResponse {
  const match = /^Bearer (.+)$/.exec(request.headers.authorization ?? '');
  if (!match) return error(401, 'UNAUTHORIZED_ERROR', 'Authorization: Bearer <JWT from POST /v1/auth> is required');
  const parts = match[1]!.split('.');
  if (parts.length !== 3) return error(401, 'UNAUTHORIZED_ERROR', 'malformed JWT');
  const expected = createHmac('sha256', Buffer.from(state.jwtSecret, 'hex')).update(`${parts[0]}.${parts[1]}`).digest();
  const given = Buffer.from(parts[2]!, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return error(401, 'UNAUTHORIZED_ERROR', 'invalid JWT');
  let claims: { sub?: string; key?: string; main?: boolean; exp?: number };
  try {
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    return error(401, 'UNAUTHORIZED_ERROR', 'malformed JWT');
  }
  if (typeof claims.exp !== 'number' || claims.exp <= Math.floor(Date.now() / 1000)) return error(401, 'UNAUTHORIZED_ERROR', 'JWT expired');
  const record = claims.sub ? state.accounts[claims.sub] : undefined;
  if (!record || typeof claims.key !== 'string') return error(401, 'UNAUTHORIZED_ERROR', 'unknown account');
  // A revoked subkey's JWT stops working at once.
  if (!claims.main && record.subkeys[claims.key.toLowerCase()]?.state !== 'active')
    return error(401, 'UNAUTHORIZED_ERROR', 'the subkey of this JWT is revoked');
  return { account: claims.sub!, key: claims.key, main: claims.main === true };
}

// --- balances ------------------------------------------------------------------------------------

function balance(account: string, state: VenueCState): VenueResponse {
  const size = BigInt(state.balances[account] ?? '0');
  const updated = lastUpdate(account, state);
  return {
    status: 200,
    body: {
      results: [
        { token: 'USDC', size: decimal(size), cost: '0', cost_usd: '0', average_entry_price: '1', average_entry_price_usd: '1', last_updated_at: updated },
      ],
    },
  };
}

function accountSummary(account: string, state: VenueCState): VenueResponse {
  // No positions in the sandbox: collateral, value and free collateral are the USDC balance.
  const value = decimal(BigInt(state.balances[account] ?? '0'));
  const updated = lastUpdate(account, state);
  return {
    status: 200,
    body: {
      account,
      account_value: value,
      free_collateral: value,
      initial_margin_requirement: '0',
      maintenance_margin_requirement: '0',
      margin_cushion: value,
      settlement_asset: 'USDC',
      status: 'ACTIVE',
      total_collateral: value,
      seq_no: updated * 1_000_000,
      updated_at: updated,
    },
  };
}

function lastUpdate(account: string, state: VenueCState): number {
  const times = state.transfers.filter((transfer) => transfer.account === account).map((transfer) => transfer.last_updated_at);
  return times.length ? Math.max(...times) : (state.accounts[account]?.createdAt ?? 0);
}

function transfers(request: VenueRequest, account: string, state: Draft): VenueResponse {
  const { status, start_at: startAt, end_at: endAt, page_size: pageSize } = request.query;
  const size = pageSize === undefined ? 100 : Number(pageSize);
  if (!Number.isInteger(size) || size < 1 || size > 5000) return error(400, 'INVALID_REQUEST_PARAMETER', 'page_size is 1 to 5000');
  const results = state.venue.transfers
    .filter((transfer) => transfer.account === account)
    .map((transfer) => transferView(transfer, state))
    .filter(
      (transfer) =>
        (status === undefined || transfer.status === status) &&
        (startAt === undefined || transfer.created_at >= Number(startAt)) &&
        (endAt === undefined || transfer.created_at <= Number(endAt)),
    )
    .sort((a, b) => b.created_at - a.created_at || Number(b.id) - Number(a.id))
    .slice(0, size);
  return { status: 200, body: { next: null, prev: null, results } };
}

/** Paradex's TransferResult; a withdrawal's status follows its vault payout. */
function transferView(transfer: TransferRecord, state: Draft) {
  let status = transfer.status;
  let hash = transfer.external_txn_hash;
  let failure = transfer.failure_reason;
  const payout = transfer.payout ? state.payouts[transfer.payout] : undefined;
  if (payout?.state === 'completed') {
    status = 'COMPLETED';
    hash = payout.txHash ?? null;
  } else if (payout?.state === 'failed') {
    status = 'FAILED';
    failure = payout.reason ?? 'payout failed';
  }
  return {
    id: transfer.id,
    account: transfer.account,
    kind: transfer.kind,
    direction: transfer.kind === 'DEPOSIT' ? 'IN' : 'OUT',
    status,
    amount: transfer.amount,
    token: 'USDC',
    bridge: 'STARKGATE',
    external_chain: 'ETHEREUM',
    external_account: transfer.external_account,
    external_txn_hash: hash ?? '',
    txn_hash: '',
    failure_reason: failure ?? '',
    socialized_loss_factor: '0',
    auto_withdrawal_fee: '0',
    counterparty: '',
    created_at: transfer.created_at,
    last_updated_at: transfer.last_updated_at,
  };
}

// --- subkeys -------------------------------------------------------------------------------------

const CreateSubkeyBody = v.object({
  name: v.string(),
  public_key: v.string(),
  state: v.optional(v.string(), 'active'),
  signature: v.optional(v.tuple([v.string(), v.string()])),
  signature_timestamp: v.optional(v.number()),
  signature_expiry: v.optional(v.number()),
});

async function createSubkey(request: VenueRequest, account: string, host: Host): Promise<VenueResponse> {
  const parsed = v.safeParse(CreateSubkeyBody, parseJson(request.body));
  if (!parsed.success) return error(400, 'BINDING_ERROR', `CreateSubkey: ${parsed.issues[0].message}`);
  const body = parsed.output;
  if (body.state !== 'active') return error(400, 'VALIDATION_ERROR', 'the sandbox registers active subkeys only (pending needs encrypted_key, not supported)');
  if (body.name.length === 0 || body.name.length > MAX_SUBKEY_NAME) return error(400, 'VALIDATION_ERROR', `name must have 1 to ${MAX_SUBKEY_NAME} characters`);
  let publicKey: bigint;
  try {
    publicKey = parseFelt(body.public_key);
  } catch {
    return error(400, 'PUBLIC_KEY_INVALID', 'public_key is not a field element');
  }
  if (publicKey === 0n || publicKey >= FELT_LIMIT) return error(400, 'PUBLIC_KEY_INVALID', 'public_key is out of range');
  // Sandbox choice: the registration signature flag is on ([O] P2 describes it; research §6.3: unknown whether mainnet enforces it).
  if (!body.signature || body.signature_timestamp === undefined || body.signature_expiry === undefined) {
    return error(
      400,
      'INVALID_SUBKEY',
      'signature, signature_timestamp and signature_expiry are required: the main key signs pedersen_array(account, public_key, timestamp, expiry)',
    );
  }
  const now = Math.floor(Date.now() / 1000);
  if (
    body.signature_expiry <= now ||
    body.signature_timestamp > now + CLOCK_SKEW_SECONDS ||
    body.signature_expiry - body.signature_timestamp > MAX_SIGNATURE_SECONDS
  ) {
    return error(400, 'INVALID_TIMESTAMP', 'signature_timestamp / signature_expiry outside the accepted window');
  }
  let signature: StarkSignature;
  try {
    signature = { r: parseFelt(body.signature[0]), s: parseFelt(body.signature[1]) };
  } catch {
    return error(400, 'INVALID_STARKNET_SIGNATURE', 'signature must be two felts');
  }
  const record = host.read().venue.accounts[account]!;
  const valid = verifySubkeyRegistration({
    account: BigInt(account),
    mainPublicKey: BigInt(record.publicKey),
    subkeyPublicKey: publicKey,
    timestamp: body.signature_timestamp,
    expiry: body.signature_expiry,
    signature,
  });
  if (!valid) return error(400, 'STARKNET_SIGNATURE_VERIFICATION_FAILED', 'the registration signature does not verify under the main account key');

  const key = feltToHex(publicKey);
  return host.transact((draft) => {
    const state = draft.venue;
    const owner = state.accounts[account]!;
    if (key === owner.publicKey || Object.values(state.accounts).some((other) => other.publicKey === key || other.subkeys[key]))
      return error(400, 'NOT_UNIQUE', 'this public key is already registered');
    if (Object.values(owner.subkeys).filter((subkey) => subkey.state === 'active').length >= MAX_ACTIVE_SUBKEYS)
      return error(400, 'VALIDATION_ERROR', `at most ${MAX_ACTIVE_SUBKEYS} active subkeys`);
    const nanos = Date.now() * 1_000_000;
    owner.subkeys[key] = { id: state.nextSubkeyId++, name: body.name, public_key: key, state: 'active', created_at: nanos, updated_at: nanos, revoked_at: 0 };
    return { status: 201, body: {} };
  });
}

function subkeyView(account: string, subkey: SubkeyRecord) {
  return { account_id: account, allowed_cidrs: [], ...subkey };
}

function listSubkeys(request: VenueRequest, account: string, state: VenueCState): VenueResponse {
  const withRevoked = request.query.with_revoked === 'true';
  const subkeys = Object.values(state.accounts[account]!.subkeys).filter((subkey) => withRevoked || subkey.state === 'active');
  return { status: 200, body: { results: subkeys.sort((a, b) => a.id - b.id).map((subkey) => subkeyView(account, subkey)) } };
}

function subkeyKey(raw: string): string | undefined {
  try {
    return feltToHex(parseFelt(decodeURIComponent(raw)));
  } catch {
    return undefined;
  }
}

function getSubkey(raw: string, account: string, state: VenueCState): VenueResponse {
  const key = subkeyKey(raw);
  const subkey = key ? state.accounts[account]!.subkeys[key] : undefined;
  return subkey ? { status: 200, body: subkeyView(account, subkey) } : error(404, 'NOT_FOUND', 'no such subkey');
}

async function revokeSubkey(raw: string, account: string, host: Host): Promise<VenueResponse> {
  const key = subkeyKey(raw);
  if (!key) return error(400, 'PUBLIC_KEY_INVALID', 'the path holds no public key');
  return host.transact((draft) => {
    const subkey = draft.venue.accounts[account]!.subkeys[key];
    if (subkey?.state !== 'active') return error(400, 'INVALID_SUBKEY', 'no active subkey with this public key');
    const nanos = Date.now() * 1_000_000;
    subkey.state = 'revoked';
    subkey.revoked_at = nanos;
    subkey.updated_at = nanos;
    return { status: 200, body: { public_key: key } };
  });
}

// --- withdrawals (sandbox choice: see shared/venues/venue-c/withdrawal.ts) ----------------------

const WithdrawalBody = v.object({
  token: v.literal('USDC'),
  amount: v.pipe(v.string(), v.regex(/^[0-9]+(\.[0-9]{1,6})?$/)),
  recipient: v.pipe(
    v.string(),
    v.check((s) => isAddress(s, { strict: false }), 'not an Ethereum address'),
  ),
  nonce: v.pipe(v.string(), v.regex(/^[0-9]{1,20}$/)),
  expiration: v.pipe(v.number(), v.safeInteger()),
  signature: v.tuple([v.string(), v.string()]),
});

async function withdraw(request: VenueRequest, account: string, host: Host): Promise<VenueResponse> {
  const parsed = v.safeParse(WithdrawalBody, parseJson(request.body));
  if (!parsed.success) return error(400, 'BINDING_ERROR', `withdrawal: ${parsed.issues[0].message}`);
  const body = parsed.output;
  const amount = parseUnits(body.amount, DECIMALS);
  const recipient = getAddress(body.recipient);
  if (body.expiration <= Math.floor(Date.now() / 1000)) return error(400, 'INVALID_TIMESTAMP', 'the withdrawal signature has expired');
  let signature: StarkSignature;
  try {
    signature = { r: parseFelt(body.signature[0]), s: parseFelt(body.signature[1]) };
  } catch {
    return error(400, 'INVALID_STARKNET_SIGNATURE', 'signature must be two felts');
  }
  const config = systemConfig(host);
  const typedData = withdrawalTypedData(config.starknet_chain_id, {
    token: BigInt(config.bridged_tokens[0].l2_token_address),
    amount: amount * SCALE,
    recipient,
    nonce: BigInt(body.nonce),
    expiration: body.expiration,
  });
  const mainKey = BigInt(host.read().venue.accounts[account]!.publicKey);
  if (!verifyParadexTypedData(typedData, BigInt(account), mainKey, signature)) {
    return error(400, 'STARKNET_SIGNATURE_VERIFICATION_FAILED', 'the withdrawal is not signed by the main account key');
  }
  if (amount < RULES.withdrawal.minimum) return error(400, 'VALIDATION_ERROR', `withdrawals are at least ${decimal(RULES.withdrawal.minimum)} USDC`);

  return host.transact((draft) => {
    const state = draft.venue;
    const nonceKey = `${account}:${body.nonce}`;
    const previous = state.withdrawalNonces[nonceKey];
    if (previous) {
      // The same withdrawal again (a retry): its record, nothing paid twice.
      const transfer = state.transfers.find((t) => t.id === previous)!;
      if (transfer.amount !== decimal(amount) || transfer.external_account !== recipient)
        return error(400, 'DUPLICATED_CLIENT_ID', 'this nonce belongs to another withdrawal');
      return { status: 200, body: transferView(transfer, draft) };
    }
    const available = BigInt(state.balances[account] ?? '0');
    if (amount > available) return error(400, 'VALIDATION_ERROR', `insufficient free collateral: ${decimal(available)} USDC available`);
    const fault = host.takeFault(draft, 'withdrawal', [state.accounts[account]!.ethereumAccount, recipient]);
    // A failed request is refused as a whole: the nonce stays free for a retry.
    if (fault?.mode === 'fail') return error(400, 'REQUEST_NOT_ALLOWED', 'Withdrawal failed (sandbox fault)');
    const now = Date.now();
    const id = String(state.nextTransferId++);
    const base = {
      id,
      account,
      kind: 'WITHDRAWAL',
      amount: decimal(amount),
      external_account: recipient,
      external_txn_hash: null,
      created_at: now,
      last_updated_at: now,
      nonce: body.nonce,
    } as const;
    let transfer: TransferRecord;
    if (fault?.mode === 'refund') {
      // Accepted, then rejected on L2: the balance stays, the transfer is FAILED.
      transfer = { ...base, status: 'FAILED', failure_reason: 'Withdrawal reverted on L2; funds remain in the account (sandbox fault)' };
    } else {
      state.balances[account] = (available - amount).toString();
      const payout = `withdraw:${account}:${body.nonce}`;
      // No fee and a socialized-loss factor of 0 ([O] P5; sandbox choice): the recipient gets the amount.
      host.pay(draft, { id: payout, to: recipient, token: ETHEREUM_USDC, amount, heldBy: fault?.mode === 'stall' ? fault.scope : undefined });
      transfer = { ...base, status: 'PENDING', failure_reason: null, payout };
    }
    state.transfers.push(transfer);
    state.withdrawalNonces[nonceKey] = id;
    return { status: 201, body: transferView(transfer, draft) };
  });
}

/** USDC base units as Paradex prints them ("12.5", "0"). */
function decimal(units: bigint): string {
  return formatUnits(units, DECIMALS);
}
