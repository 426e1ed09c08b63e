import { type Address, encodeFunctionData, erc20Abi, formatUnits, getAddress, type Hex, isAddress, parseUnits } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { DepositPlan, TradingSetup, VenueBalances, VenueDriver, VenueFields, VenueWallet, WithdrawalStatus } from '../driver.ts';
import { VenueRuleError } from '../driver.ts';
import { type PayoutWatch, PayoutWatcher, type TransferLogs } from '../payouts.ts';
import { VENUE_RULES } from '../rules.ts';
import {
  ARBITRUM_USDC,
  actionNonce,
  type HyperliquidChain,
  toWireSignature,
  type UserSignedAction,
  userSignedTypedData,
  VENUE_B_BRIDGE,
  VENUE_B_DECIMALS,
} from './actions.ts';

/**
 * venue_b's adapter (modelled on Hyperliquid, research §1), speaking Hyperliquid's own API at
 * `baseUrl` (`POST /info`, `POST /exchange`): the local stand-in, or the live venue
 * (https://api.hyperliquid.xyz) when pointed at it. Nothing here knows which it talks to.
 *
 * Withdrawal status, as the live venue shows it (research E): the user's ledger
 * (`userNonFundingLedgerUpdates`) has a `withdraw` entry with the request's nonce once the venue
 * accepted it (none: failed), and the validators pay `usdc - fee` from Bridge2 to the destination
 * on Arbitrum: the USDC Transfer from the bridge to the user, after the request, claimed once
 * (shared/venues/payouts.ts), completes it.
 *
 * Withdrawal idempotency: Hyperliquid has no client id on withdraw3, so the request's nonce
 * (`time`) is derived from the idempotency key, which must be a UUIDv7: its millisecond timestamp
 * plus a 0–999 ms offset from the key's hash. A retry signs the same action; before sending, the
 * driver looks for a ledger withdrawal with that nonce and, when the venue answers "duplicate
 * nonce", looks again, so a second call never withdraws twice. The key must be used within the
 * venue's nonce window (two days after it was minted).
 */
export interface VenueBDriverOptions {
  readonly baseUrl: string;
  /** "Mainnet" (default): which Hyperliquid network the signed actions are for. */
  readonly hyperliquidChain?: HyperliquidChain;
  /** The chain id the user's wallet signs with, hex; Arbitrum One (0xa4b1) by default. */
  readonly signatureChainId?: Hex;
  readonly usdc?: Address;
  /** Bridge2: where deposits go and payouts come from. */
  readonly bridge?: Address;
  /** Arbitrum's USDC Transfer logs (the account service's chain client): where payouts are seen. */
  readonly payouts: TransferLogs;
  /** Without a PayoutWatch, how far back a payout is looked for: 50,000 blocks (about 3.5 hours of Arbitrum). */
  readonly payoutLookbackBlocks?: bigint;
  readonly now?: () => number;
  readonly timeoutMs?: number;
}

/** The venue answered, and refused (`{"status":"err"}` or a 4xx). */
export class VenueBRefusedError extends VenueRuleError {
  constructor(message: string) {
    super('VENUE_REFUSED', `venue_b refused: ${message}`);
  }
}

/** The venue could not be reached or answered something unreadable. */
export class VenueBUnavailableError extends Error {
  readonly code = 'VENUE_UNAVAILABLE';
}

const RULES = VENUE_RULES.venue_b;
const PERCENT = /^(0|[1-9][0-9]*)(\.[0-9]{1,3})?%$/;
const DAY_MS = 24 * 60 * 60 * 1000;

export class VenueBDriver implements VenueDriver {
  readonly id = 'venue_b' as const;
  readonly rules = RULES;
  private readonly options: Required<VenueBDriverOptions>;
  private readonly payouts: PayoutWatcher;

  constructor(options: VenueBDriverOptions) {
    this.options = {
      payoutLookbackBlocks: 50_000n,
      hyperliquidChain: 'Mainnet',
      signatureChainId: '0xa4b1',
      usdc: ARBITRUM_USDC,
      bridge: VENUE_B_BRIDGE,
      now: Date.now,
      timeoutMs: 10_000,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
    this.payouts = new PayoutWatcher(this.options.payouts, this.options.payoutLookbackBlocks);
  }

  /** The venue account is the user's own address ([O] H1): no venue call is needed. */
  async initAccount(wallet: VenueWallet): Promise<VenueFields> {
    return { account_address: getAddress(wallet.address) };
  }

  async balances(wallet: VenueWallet, fields: VenueFields): Promise<VenueBalances> {
    const state = (await this.info({ type: 'clearinghouseState', user: accountOf(wallet, fields) })) as {
      marginSummary?: { accountValue?: string; totalRawUsd?: string };
      withdrawable?: string;
    };
    const value = units(state.marginSummary?.accountValue, 'marginSummary.accountValue');
    return {
      balance: units(state.marginSummary?.totalRawUsd ?? state.marginSummary?.accountValue, 'marginSummary.totalRawUsd'),
      account_value: value,
      available_for_withdrawal: units(state.withdrawable, 'withdrawable'),
    };
  }

  /**
   * A fresh random agent key approved by the user's ApproveAgent signature (+ ApproveBuilderFee
   * when `builder_address` is given). Approving the same name again replaces the old agent at
   * the venue ([O] H4), which is what `replace` (force_reinit) relies on; without `replace` an
   * existing named agent of that name is refused rather than silently replaced.
   */
  async initTrading(wallet: VenueWallet, fields: VenueFields, metadata: Readonly<Record<string, unknown>>, replace: boolean): Promise<TradingSetup> {
    const agentName = optionalString(metadata.agent_name, 'agent_name');
    if (agentName !== undefined && (agentName.length === 0 || agentName.length > 16))
      throw new VenueRuleError('INVALID_METADATA', 'metadata.agent_name: 1 to 16 characters');
    const builderRaw = optionalString(metadata.builder_address, 'builder_address');
    if (builderRaw !== undefined && !isAddress(builderRaw, { strict: false }))
      throw new VenueRuleError('INVALID_METADATA', 'metadata.builder_address: must be an EVM address');
    const builder = builderRaw === undefined ? undefined : getAddress(builderRaw);
    const rate = optionalString(metadata.max_builder_fee_rate, 'max_builder_fee_rate');
    if (rate !== undefined && builder === undefined) throw new VenueRuleError('INVALID_METADATA', 'metadata.max_builder_fee_rate: needs builder_address');
    if (builder !== undefined && rate === undefined)
      throw new VenueRuleError('INVALID_METADATA', 'metadata.max_builder_fee_rate: required with builder_address (a percent string such as "0.05%")');
    if (rate !== undefined && (!PERCENT.test(rate) || parseUnits(rate.slice(0, -1), 3) > 100n)) {
      throw new VenueRuleError(
        'INVALID_METADATA',
        'metadata.max_builder_fee_rate: a percent string of at most "0.1%" with at most 3 decimals, such as "0.05%"',
      );
    }

    const user = accountOf(wallet, fields);
    if (!replace && agentName !== undefined) {
      const agents = (await this.info({ type: 'extraAgents', user })) as { name?: string }[];
      if (Array.isArray(agents) && agents.some((agent) => agent.name === agentName)) {
        throw new VenueRuleError('AGENT_EXISTS', `venue_b already has an agent named "${agentName}" for this account; reinitialise to replace it`);
      }
    }

    const agentKey = generatePrivateKey();
    const agentAddress = privateKeyToAddress(agentKey);
    const nonce = this.options.now();
    await this.send(wallet, {
      type: 'approveAgent',
      hyperliquidChain: this.options.hyperliquidChain,
      signatureChainId: this.options.signatureChainId,
      agentAddress: agentAddress.toLowerCase() as Address,
      ...(agentName === undefined ? {} : { agentName }),
      nonce,
    });
    // builder_address and max_builder_fee_rate come together or not at all (checked above).
    if (builder !== undefined && rate !== undefined) {
      await this.send(wallet, {
        type: 'approveBuilderFee',
        hyperliquidChain: this.options.hyperliquidChain,
        signatureChainId: this.options.signatureChainId,
        maxFeeRate: rate,
        builder: builder.toLowerCase() as Address,
        nonce: nonce + 1,
      });
    }
    return {
      stored: {
        trade_initialized: true,
        agent_name: agentName ?? null,
        agent_address: agentAddress,
        builder_address: builder ?? null,
        max_builder_fee_rate: rate ?? null,
      },
      oneTime: { agent_private_key: agentKey },
    };
  }

  /** One plain USDC transfer to the bridge, credited to the sender; below 5 USDC it would be lost, so it is refused here. */
  async prepareDeposit(_wallet: VenueWallet, _fields: VenueFields, amount: bigint): Promise<DepositPlan> {
    if (amount < RULES.deposit.minimum) {
      throw new VenueRuleError(
        'BELOW_MINIMUM_DEPOSIT',
        `venue_b credits deposits of at least ${formatUnits(RULES.deposit.minimum, RULES.decimals)} USDC; ${formatUnits(amount, RULES.decimals)} USDC sent to its bridge would be lost`,
      );
    }
    return {
      chain: RULES.chain,
      calls: [
        {
          to: this.options.usdc,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [this.options.bridge, amount] }),
          label: 'USDC transfer to the venue_b bridge',
        },
      ],
      expectedCredit: amount,
    };
  }

  async withdraw(wallet: VenueWallet, fields: VenueFields, amount: bigint, idempotencyKey: string): Promise<{ readonly reference: string }> {
    if (amount < RULES.withdrawal.minimum) {
      throw new VenueRuleError(
        'BELOW_MINIMUM_WITHDRAWAL',
        `venue_b withdrawals must exceed the ${formatUnits(RULES.withdrawal.fee.amount, RULES.decimals)} USDC fee`,
      );
    }
    const time = nonceFromKey(idempotencyKey);
    const reference = String(time);
    const user = accountOf(wallet, fields);
    if (await this.findWithdrawal(user, time)) return { reference };
    try {
      await this.send(wallet, {
        type: 'withdraw3',
        hyperliquidChain: this.options.hyperliquidChain,
        signatureChainId: this.options.signatureChainId,
        destination: wallet.address.toLowerCase(),
        amount: formatUnits(amount, VENUE_B_DECIMALS),
        time,
      });
    } catch (error) {
      // A retry whose first attempt reached the venue: the nonce is taken by our own withdrawal.
      if (error instanceof VenueBRefusedError && /nonce/i.test(error.message) && (await this.findWithdrawal(user, time))) return { reference };
      throw error;
    }
    return { reference };
  }

  async withdrawalStatus(wallet: VenueWallet, fields: VenueFields, reference: string, watch?: PayoutWatch): Promise<WithdrawalStatus> {
    const time = Number(reference);
    if (!/^[0-9]{1,16}$/.test(reference) || !Number.isSafeInteger(time))
      throw new VenueRuleError('INVALID_REFERENCE', `venue_b withdrawal references are nonces, got "${reference}"`);
    const user = accountOf(wallet, fields);
    const entry = await this.findWithdrawal(user, time);
    if (!entry) return { state: 'failed', reason: 'venue_b has no withdrawal with this reference' };
    // The destination receives the withdrawn amount minus the venue's fee, both on the ledger entry.
    const amount = decimalUnits(entry.delta?.usdc, 'delta.usdc') - decimalUnits(entry.delta?.fee ?? '0', 'delta.fee');
    return this.payouts.status(watch, `${user}:${reference}`, { token: this.options.usdc, from: this.options.bridge, to: getAddress(wallet.address), amount });
  }

  /** Arbitrum's head: recorded before a withdrawal is requested, its payout is looked for after it. */
  payoutBlock(): Promise<bigint> {
    return this.payouts.head();
  }

  private async findWithdrawal(user: Address, nonce: number) {
    // Accepted nonces lie in (T − 2 days, T + 1 day), so the entry's time is within (nonce − 1 day, nonce + 2 days).
    const entries = (await this.info({
      type: 'userNonFundingLedgerUpdates',
      user,
      startTime: Math.max(0, nonce - DAY_MS),
      endTime: nonce + 2 * DAY_MS,
    })) as LedgerEntry[];
    if (!Array.isArray(entries)) throw new VenueBUnavailableError('venue_b answered userNonFundingLedgerUpdates with something other than a list');
    return entries.find((entry) => entry.delta?.type === 'withdraw' && entry.delta.nonce === nonce);
  }

  private async send(wallet: VenueWallet, action: UserSignedAction): Promise<void> {
    const signature = toWireSignature(await wallet.signTypedData(userSignedTypedData(action)));
    const answer = (await this.post('/exchange', { action, nonce: actionNonce(action), signature })) as { status?: string; response?: unknown };
    if (answer?.status !== 'ok') throw new VenueBRefusedError(typeof answer?.response === 'string' ? answer.response : JSON.stringify(answer));
  }

  private info(body: Record<string, unknown>): Promise<unknown> {
    return this.post('/info', body);
  }

  private async post(path: string, body: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${this.options.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      throw new VenueBUnavailableError(`venue_b is unreachable (${(error as Error).name})`);
    }
    const text = await response.text();
    if (response.status >= 400 && response.status < 500) throw new VenueBRefusedError(text.slice(0, 300));
    if (!response.ok) throw new VenueBUnavailableError(`venue_b answered HTTP ${response.status}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new VenueBUnavailableError('venue_b answered something that is not JSON');
    }
  }
}

/** A `userNonFundingLedgerUpdates` row; a withdraw delta is `{ type: "withdraw", usdc, nonce, fee }` (research E). */
interface LedgerEntry {
  readonly time: number;
  readonly delta?: { readonly type?: string; readonly nonce?: number; readonly usdc?: string; readonly fee?: string };
}

/**
 * The withdraw3 nonce for an idempotency key (a UUIDv7): its millisecond timestamp. A user's
 * withdrawal keys are minted under the user's venue balance lock (shared/transfers/steps/venue-lock.ts),
 * each after the previous withdrawal was accepted, so their timestamps strictly increase and no
 * two share a nonce. (A 0–999 ms offset from the key's hash, used before, let two withdrawals
 * less than a second apart collide: the second was refused "duplicate nonce", and the lookup by
 * nonce found the first one's ledger entry. The conservation test caught it once in about 15 runs.)
 */
export function nonceFromKey(key: string): number {
  const match = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.exec(key);
  if (!match) throw new VenueRuleError('INVALID_IDEMPOTENCY_KEY', 'venue_b withdrawals need a UUIDv7 idempotency key (its timestamp becomes the nonce)');
  return Number.parseInt(`${match[1]}${match[2]}`, 16);
}

function accountOf(wallet: VenueWallet, fields: VenueFields): Address {
  const stored = fields.account_address;
  return (typeof stored === 'string' && isAddress(stored, { strict: false }) ? stored : wallet.address).toLowerCase() as Address;
}

function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new VenueRuleError('INVALID_METADATA', `metadata.${name}: must be a string`);
  return value;
}

/** A venue decimal string as USDC base units; digits past the sixth are cut (the venue's own precision). */
function units(value: string | undefined, field: string): bigint {
  return decimalUnits(value, field, 'clearinghouseState');
}

function decimalUnits(value: string | undefined, field: string, answer = 'userNonFundingLedgerUpdates'): bigint {
  if (typeof value !== 'string' || !/^-?[0-9]+(\.[0-9]+)?$/.test(value))
    throw new VenueBUnavailableError(`venue_b answered ${answer} without a decimal ${field}`);
  const [whole, fraction = ''] = value.split('.');
  return parseUnits(`${whole}.${fraction.slice(0, VENUE_B_DECIMALS) || '0'}`, VENUE_B_DECIMALS);
}
