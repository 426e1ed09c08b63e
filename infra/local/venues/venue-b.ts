import * as v from 'valibot';
import {
  type Address,
  formatUnits,
  getAddress,
  type Hex,
  isAddress,
  keccak256,
  parseAbiItem,
  parseUnits,
  recoverTypedDataAddress,
  toHex,
  zeroAddress,
} from 'viem';
import { VENUE_RULES } from '../../../shared/venues/rules.ts';
import {
  ARBITRUM_USDC,
  actionNonce,
  fromWireSignature,
  type UserSignedAction,
  userSignedTypedData,
  VENUE_B_BRIDGE,
  VENUE_B_DECIMALS,
} from '../../../shared/venues/venue-b/actions.ts';
import type { VenueHost, VenueModule, VenueRequest, VenueResponse, VenueState } from './framework.ts';

/**
 * The sandbox venue_b, modelled on Hyperliquid (research §1). It speaks a subset of Hyperliquid's
 * own API: `POST /info` (`clearinghouseState`, `extraAgents`, `maxBuilderFee`,
 * `userNonFundingLedgerUpdates`) and `POST /exchange` with the user-signed actions `approveAgent`,
 * `approveBuilderFee` and `withdraw3`. As on the real venue the user is whoever the EIP-712
 * signature recovers to (no user field is trusted); errors are HTTP 200
 * `{"status":"err","response":"…"}`.
 *
 * Deposits: a USDC Transfer on the ARB sandbox chain to the bridge address credits its sender;
 * less than 5 USDC is not credited (lost, as published). Withdrawals: an accepted withdraw3 is a
 * `withdraw` entry `{ usdc, nonce, fee }` on the user's ledger, and the amount minus the 1 USDC
 * fee is paid on chain from Bridge2 itself (a SandboxPayoutPool at its address, the framework's
 * `payoutContract`) to `destination`: the same USDC Transfer from the bridge as Hyperliquid's
 * finalized withdrawals (research E). Nothing here that the live API lacks: the driver sees the
 * payout on chain. Sandbox choice: a withdrawal the `refund` fault returns leaves no ledger entry
 * (what Hyperliquid's ledger shows for a failed withdrawal is unknown).
 */
const RULES = VENUE_RULES.venue_b;
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_STORED_NONCES = 100;
const MAX_NAMED_AGENTS = 3;
const MAX_AGENT_VALIDITY_MS = 180 * DAY_MS;
/** Builder fee caps in tenths of a basis point: 0.1% for perps ([O] H5). */
const MAX_BUILDER_FEE_TENTHS_BP = 100;
const MAX_BUILDER_APPROVALS = 10;
const BUILDER_MINIMUM_VALUE = 100n * 10n ** 6n;

interface AgentRecord {
  readonly address: Address;
  readonly validUntil: number | null;
}

type LedgerDelta = { type: 'deposit'; usdc: string } | { type: 'withdraw'; usdc: string; nonce: number; fee: string };

interface LedgerEntry {
  readonly time: number;
  readonly hash: Hex;
  readonly delta: LedgerDelta;
  /** The vault payout id of a withdrawal. */
  readonly payout?: string;
  /** Older state files: a withdrawal the refund fault returned (not shown). */
  readonly refused?: string;
}

interface UserRecord {
  /** USDC base units (6 decimals). */
  balance: string;
  /** Agents by name; "" is the unnamed one. */
  agents: Record<string, AgentRecord>;
  /** Approved builder fee caps in tenths of a basis point, by lower-case builder address. */
  builderFees: Record<string, number>;
  /** The highest nonces used by this signer ([O] H4: 100 kept). */
  nonces: number[];
  ledger: LedgerEntry[];
}

export interface VenueBState {
  users: Record<string, UserRecord>;
  /** Lower-case agent address -> lower-case user address. */
  agentOwners: Record<string, string>;
}

type Host = VenueHost<VenueBState>;
type Draft = VenueState<VenueBState>;

const HexString = v.pipe(
  v.string(),
  v.regex(/^0x[0-9a-fA-F]*$/),
  v.transform((s) => s as Hex),
);
const Addr = v.pipe(
  v.string(),
  v.check((s) => isAddress(s, { strict: false }), 'not an address'),
);
const Nonce = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const Base = { hyperliquidChain: v.picklist(['Mainnet', 'Testnet']), signatureChainId: HexString };

const ActionSchema = v.variant('type', [
  v.object({ type: v.literal('approveAgent'), ...Base, agentAddress: Addr, agentName: v.optional(v.nullable(v.string())), nonce: Nonce }),
  v.object({ type: v.literal('approveBuilderFee'), ...Base, maxFeeRate: v.pipe(v.string(), v.regex(/^[0-9]+(\.[0-9]+)?%$/)), builder: Addr, nonce: Nonce }),
  v.object({ type: v.literal('withdraw3'), ...Base, destination: v.string(), amount: v.pipe(v.string(), v.regex(/^[0-9]+(\.[0-9]+)?$/)), time: Nonce }),
]);

const ExchangeRequest = v.object({
  action: ActionSchema,
  nonce: Nonce,
  signature: v.object({ r: v.pipe(HexString, v.length(66)), s: v.pipe(HexString, v.length(66)), v: v.picklist([27, 28]) }),
  vaultAddress: v.optional(v.nullable(v.string())),
  expiresAfter: v.optional(v.nullable(v.number())),
});

const InfoRequest = v.variant('type', [
  v.object({ type: v.literal('clearinghouseState'), user: Addr, dex: v.optional(v.string()) }),
  v.object({ type: v.literal('extraAgents'), user: Addr }),
  v.object({ type: v.literal('maxBuilderFee'), user: Addr, builder: Addr }),
  v.object({ type: v.literal('userNonFundingLedgerUpdates'), user: Addr, startTime: v.optional(Nonce), endTime: v.optional(v.nullable(Nonce)) }),
]);

export function venueBModule(): VenueModule<VenueBState> {
  return {
    id: 'venue_b',
    rules: RULES,
    depositAddress: VENUE_B_BRIDGE,
    payoutContract: VENUE_B_BRIDGE,
    watch: { address: ARBITRUM_USDC, event: TRANSFER, args: { to: VENUE_B_BRIDGE } },
    initialState: () => ({ users: {}, agentOwners: {} }),
    decodeDeposit: (log) => {
      const { from, value } = log.args as { from?: Address; value?: bigint };
      // A mint (the faucet funding the bridge's payouts) is no one's deposit.
      if (!from || from === zeroAddress || typeof value !== 'bigint') return undefined;
      return { depositor: getAddress(from), amount: value };
    },
    credit: (draft, deposit) => {
      // Below the minimum the real venue keeps the money and credits nothing ([O] H1).
      if (deposit.amount < RULES.deposit.minimum) return false;
      const user = userOf(draft, deposit.depositor, true)!;
      user.balance = (BigInt(user.balance) + deposit.amount).toString();
      user.ledger.push({ time: Date.now(), hash: keccak256(toHex(`deposit:${deposit.key}`)), delta: { type: 'deposit', usdc: usdc(deposit.amount) } });
      return true;
    },
    handle,
  };
}

async function handle(request: VenueRequest, host: Host): Promise<VenueResponse> {
  if (request.method !== 'POST' || (request.path !== '/info' && request.path !== '/exchange')) return { status: 404, body: 'Not Found' };
  let json: unknown;
  try {
    json = JSON.parse(request.body);
  } catch {
    return { status: 400, body: 'Failed to parse the request body as JSON' };
  }
  if (request.path === '/info') {
    const parsed = v.safeParse(InfoRequest, json);
    if (!parsed.success) return { status: 422, body: `Failed to deserialize the JSON body into the target type: ${parsed.issues[0].message}` };
    return { status: 200, body: info(parsed.output, host.read()) };
  }
  const parsed = v.safeParse(ExchangeRequest, json);
  if (!parsed.success) return { status: 422, body: `Failed to deserialize the JSON body into the target type: ${parsed.issues[0].message}` };
  return { status: 200, body: await exchange(parsed.output, host) };
}

// --- /info -------------------------------------------------------------------------------------

function info(request: v.InferOutput<typeof InfoRequest>, state: Draft): unknown {
  const user = state.venue.users[request.user.toLowerCase()];
  switch (request.type) {
    case 'clearinghouseState': {
      const value = usdc(BigInt(user?.balance ?? '0'));
      const summary = { accountValue: value, totalNtlPos: '0.0', totalRawUsd: value, totalMarginUsed: '0.0' };
      return {
        marginSummary: summary,
        crossMarginSummary: summary,
        crossMaintenanceMarginUsed: '0.0',
        withdrawable: value,
        assetPositions: [],
        time: Date.now(),
      };
    }
    case 'extraAgents':
      return Object.entries(user?.agents ?? {})
        .filter(([name]) => name !== '')
        .map(([name, agent]) => ({ name, address: agent.address.toLowerCase(), validUntil: agent.validUntil }));
    case 'maxBuilderFee':
      return user?.builderFees[request.builder.toLowerCase()] ?? 0;
    case 'userNonFundingLedgerUpdates': {
      const start = request.startTime ?? 0;
      const end = request.endTime ?? Number.MAX_SAFE_INTEGER;
      return (user?.ledger ?? [])
        .filter((entry) => entry.time >= start && entry.time <= end && !entry.refused)
        .map((entry) => ({ time: entry.time, hash: entry.hash, delta: entry.delta }));
    }
  }
}

// --- /exchange ---------------------------------------------------------------------------------

type Exchange = v.InferOutput<typeof ExchangeRequest>;
const ok = { status: 'ok', response: { type: 'default' } } as const;
const err = (response: string) => ({ status: 'err', response }) as const;

async function exchange(request: Exchange, host: Host): Promise<unknown> {
  const action = request.action as UserSignedAction & { agentName?: string | null };
  if (action.hyperliquidChain !== 'Mainnet') return err('Invalid hyperliquidChain: this venue is Mainnet');
  if (request.vaultAddress) return err('User-signed actions cannot act for a vault or subaccount');
  if (request.nonce !== actionNonce(action)) return err('Invalid nonce: the request nonce must equal the action nonce');
  if (action.type === 'approveAgent' && action.agentName === null) delete action.agentName;

  // The signer is the user: recover it from the exact typed data the real venue rebuilds.
  let signer: Address;
  try {
    signer = await recoverTypedDataAddress({ ...userSignedTypedData(action), signature: fromWireSignature(request.signature) });
  } catch {
    return err('Invalid signature');
  }
  const now = Date.now();
  return host.transact((draft) => {
    const owner = draft.venue.agentOwners[signer.toLowerCase()];
    if (owner) return err(`Must be signed by the main wallet ${owner}, not by its API wallet ${signer.toLowerCase()}`);
    const user = userOf(draft, signer, false);
    if (!user) return err(`User or API Wallet ${signer.toLowerCase()} does not exist.`);
    const nonceError = useNonce(user, request.nonce, now);
    if (nonceError) return err(nonceError);
    switch (action.type) {
      case 'approveAgent':
        return approveAgent(draft, user, signer, action, now);
      case 'approveBuilderFee':
        return approveBuilderFee(draft, user, action);
      case 'withdraw3':
        return withdraw(draft, user, signer, action, host, now);
    }
  });
}

/** [O] H4: within (T − 2 days, T + 1 day), unused, and above the smallest of the 100 kept. */
function useNonce(user: UserRecord, nonce: number, now: number): string | undefined {
  if (nonce <= now - 2 * DAY_MS || nonce >= now + DAY_MS) return `Invalid nonce: ${nonce} is outside (now - 2 days, now + 1 day)`;
  if (user.nonces.includes(nonce)) return `Invalid nonce: duplicate nonce ${nonce}`;
  if (user.nonces.length >= MAX_STORED_NONCES && nonce < Math.min(...user.nonces)) return `Invalid nonce: ${nonce} is below the smallest stored nonce`;
  user.nonces = [...user.nonces, nonce].sort((a, b) => b - a).slice(0, MAX_STORED_NONCES);
  return undefined;
}

function approveAgent(draft: Draft, user: UserRecord, signer: Address, action: Extract<UserSignedAction, { type: 'approveAgent' }>, now: number) {
  const agent = getAddress(action.agentAddress);
  const raw = action.agentName ?? '';
  const match = / valid_until (\d+)$/.exec(raw);
  const name = match ? raw.slice(0, match.index) : raw;
  const validUntil = match ? Number(match[1]) : null;
  if (name.length > 16) return err('Invalid agent name: at most 16 characters');
  if (validUntil !== null && (validUntil <= now || validUntil > now + MAX_AGENT_VALIDITY_MS))
    return err('Invalid valid_until: must lie within the next 180 days');
  if (agent.toLowerCase() === signer.toLowerCase()) return err('An account cannot approve itself as an agent');
  const otherOwner = draft.venue.agentOwners[agent.toLowerCase()];
  if (otherOwner || draft.venue.users[agent.toLowerCase()]) return err(`Agent address ${agent.toLowerCase()} is already in use`);
  const named = Object.keys(user.agents).filter((n) => n !== '');
  if (name !== '' && !user.agents[name] && named.length >= MAX_NAMED_AGENTS) return err(`Too many named agents: at most ${MAX_NAMED_AGENTS}`);
  // Same name (or a new unnamed agent) deregisters the previous one ([O] H4).
  const previous = user.agents[name];
  if (previous) delete draft.venue.agentOwners[previous.address.toLowerCase()];
  user.agents[name] = { address: agent, validUntil };
  draft.venue.agentOwners[agent.toLowerCase()] = signer.toLowerCase();
  return ok;
}

function approveBuilderFee(draft: Draft, user: UserRecord, action: Extract<UserSignedAction, { type: 'approveBuilderFee' }>) {
  const builder = action.builder.toLowerCase();
  const percent = action.maxFeeRate.slice(0, -1);
  // 1% = 100 bp = 1000 tenths of a basis point.
  if ((percent.split('.')[1] ?? '').length > 3) return err('Invalid maxFeeRate: at most 3 decimal places of a percent (tenths of a basis point)');
  const tenths = Number(parseUnits(percent, 3));
  if (tenths > MAX_BUILDER_FEE_TENTHS_BP) return err('Builder fee above the maximum of 0.1%');
  if (tenths === 0) {
    delete user.builderFees[builder];
    return ok;
  }
  const builderValue = BigInt(draft.venue.users[builder]?.balance ?? '0');
  if (builderValue < BUILDER_MINIMUM_VALUE) return err('Builder has insufficient balance to be approved: needs at least 100 USDC account value');
  if (!user.builderFees[builder] && Object.keys(user.builderFees).length >= MAX_BUILDER_APPROVALS)
    return err(`Too many builder approvals: at most ${MAX_BUILDER_APPROVALS}`);
  user.builderFees[builder] = tenths;
  return ok;
}

function withdraw(draft: Draft, user: UserRecord, signer: Address, action: Extract<UserSignedAction, { type: 'withdraw3' }>, host: Host, now: number) {
  if (!isAddress(action.destination, { strict: false })) return err('Invalid destination address');
  if ((action.amount.split('.')[1] ?? '').length > VENUE_B_DECIMALS) return err(`Invalid amount: at most ${VENUE_B_DECIMALS} decimal places`);
  const amount = parseUnits(action.amount, VENUE_B_DECIMALS);
  const fee = RULES.withdrawal.fee.amount;
  if (amount <= fee) return err(`Withdrawal amount must be greater than the ${usdc(fee)} USDC fee`);
  const balance = BigInt(user.balance);
  if (amount > balance) return err('Insufficient balance for withdrawal');
  const fault = host.takeFault(draft, 'withdrawal', [signer, getAddress(action.destination)]);
  if (fault?.mode === 'fail') {
    // Refused as a whole: the nonce stays free, so a retry of the same signed request can succeed.
    user.nonces = user.nonces.filter((nonce) => nonce !== action.time);
    return err('Withdrawal failed (sandbox fault)');
  }
  // Accepted, then returned to the venue balance: nothing debited, nothing on the ledger (sandbox choice).
  if (fault?.mode === 'refund') return ok;
  const hash = keccak256(toHex(`withdraw:${signer.toLowerCase()}:${action.time}`));
  const delta = { type: 'withdraw', usdc: usdc(amount), nonce: action.time, fee: usdc(fee) } as const;
  user.balance = (balance - amount).toString();
  const payout = `withdraw:${signer.toLowerCase()}:${action.time}`;
  host.pay(draft, {
    id: payout,
    to: getAddress(action.destination),
    token: ARBITRUM_USDC,
    amount: amount - fee,
    heldBy: fault?.mode === 'stall' ? fault.scope : undefined,
  });
  user.ledger.push({ time: now, hash, delta, payout });
  return ok;
}

function userOf(draft: Draft, address: Address, create: boolean): UserRecord | undefined {
  const key = address.toLowerCase();
  let user = draft.venue.users[key];
  if (!user && create) {
    user = { balance: '0', agents: {}, builderFees: {}, nonces: [], ledger: [] };
    draft.venue.users[key] = user;
  }
  return user;
}

/** USDC base units as the venue's decimal string ("10.0", "9.5"). */
function usdc(units: bigint): string {
  const text = formatUnits(units, VENUE_B_DECIMALS);
  return text.includes('.') ? text : `${text}.0`;
}
