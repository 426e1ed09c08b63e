import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Address } from 'viem';
import type { AccountRecord } from '../accounts/account-record.ts';
import { requireAccount } from '../accounts/account-service.ts';
import type { WalletSignerDeps } from '../accounts/wallet-signer.ts';
import type { AuthenticatedUser } from '../auth/authenticate.ts';
import type { EvmChains } from '../chains/evm-chains.ts';
import { isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { acquireLease, type Lease, LeaseTimeoutError } from '../db/lease.ts';
import { ConflictError, DomainError, NotFoundError, UnprocessableError, UpstreamError } from '../errors.ts';
import { appendOutbox } from '../events/outbox.ts';
import type { EventType } from '../events/types.ts';
import { parseInput } from '../http/validate.ts';
import { logger } from '../logger.ts';
import { formatAmount } from '../money.ts';
import { SECRET_NAME, venueCredentialsView } from './credentials-view.ts';
import type { VenueId, VenueStatus } from './default-status.ts';
import { type DirectionRule, type EvmChainCode, type VenueDriver, type VenueFields, VenueRuleError, type VenueRules } from './driver.ts';
import type { VenueRegistry } from './registry.ts';
import { TRADING_METADATA } from './schemas.ts';
import { venueWallet } from './venue-wallet.ts';

/**
 * The venue onboarding use cases behind the five venue endpoints (spec: Requirements check
 * result, Venue onboarding flags, Venue assets, Venue credentials, Trading setup status). Each
 * takes its dependencies as arguments; the venue itself is reached only through its VenueDriver.
 */

/** What the requirements check reads of the chains (shared/chains through `chainReader`). */
export interface ChainReader {
  /** EVM chains that carry `token`. */
  chainsCarrying(token: string): readonly EvmChainCode[];
  decimals(chain: EvmChainCode, token: string): number;
  native(chain: EvmChainCode): string;
  balance(chain: EvmChainCode, owner: Address, token: string): Promise<bigint>;
  /** What one unit of gas costs now (EIP-1559 maxFeePerGas), in the native coin's base units. */
  gasPrice(chain: EvmChainCode): Promise<bigint>;
}

const EVM_CHAINS: readonly EvmChainCode[] = ['ETH', 'ARB', 'POL', 'INK'];

export function chainReader(chains: EvmChains): ChainReader {
  return {
    chainsCarrying: (token) => EVM_CHAINS.filter((chain) => token in chains.config[chain].tokens),
    decimals: (chain, token) => chains.decimals(chain, token),
    native: (chain) => chains.config[chain].native,
    balance: async (chain, owner, token) => (await chains.evm(chain)).balance(owner, token),
    gasPrice: async (chain) => (await (await chains.evm(chain)).fees()).maxFeePerGas,
  };
}

export interface VenueReadDeps {
  readonly table: Table;
  readonly venues: VenueRegistry;
  /** How long GET /account/perp waits for the venue before answering with `error` (default VENUE_READ_TIMEOUT_MS). */
  readonly venueReadTimeoutMs?: number;
}

/** Well inside the function's 27 s: a stalled venue is an `error`, not a gateway timeout. */
export const VENUE_READ_TIMEOUT_MS = 10_000;
export type RequirementsDeps = VenueReadDeps & { readonly chains: ChainReader };
/** Routes that call the venue with the user's wallet (signatures through the enclave). */
export type VenueSigningDeps = VenueReadDeps & WalletSignerDeps;
export type InitPerpDexDeps = RequirementsDeps & WalletSignerDeps;

/**
 * Gas units of the first deposit on the venue's chain; onboarding itself is off-chain
 * signatures (no gas). Budgets per call of the venue's mechanism (research §0): an ERC-20
 * transfer 65k, an approve 60k, a bridge/deposit contract call 200k, each with headroom.
 * Not an estimate of the actual calls: before the approve is mined, a deposit call cannot be
 * estimated (it reverts), and a wallet without the token cannot estimate its transfer.
 */
const TRANSFER_GAS = 65_000n;
const APPROVE_GAS = 60_000n;
const DEPOSIT_CALL_GAS = 200_000n;
export const FIRST_DEPOSIT_GAS: Readonly<Record<VenueId, bigint>> = {
  venue_a: APPROVE_GAS + DEPOSIT_CALL_GAS, // approve + the bridge's deposit (committed quote)
  venue_b: TRANSFER_GAS, // a plain USDC transfer to the bridge
  venue_c: APPROVE_GAS + DEPOSIT_CALL_GAS, // approve + the L1 bridge's deposit
  venue_d: APPROVE_GAS + DEPOSIT_CALL_GAS, // approve + the endpoint's depositCollateral
  venue_e: TRANSFER_GAS, // a USDC.e transfer to the proxy wallet
};

/** How long one user's venue setup holds the lease: beyond the function timeout (27 s), so a live holder never loses it. */
export const VENUE_LEASE_MS = 30_000;
/** How long a concurrent call waits for it before 409 VENUE_SETUP_IN_PROGRESS. */
export const VENUE_LEASE_WAIT_MS = 20_000;

export interface RequirementsResult {
  readonly requirements_met: boolean;
  readonly message: string;
  readonly usdc_required: string;
  readonly usdc_available: string;
  readonly usdc_sufficient: boolean;
  readonly chain_balances: Record<string, string>;
  readonly eth_required: string;
  readonly eth_available: string;
  readonly eth_sufficient: boolean;
  readonly chain: EvmChainCode;
  readonly token: string;
  readonly gas_token: string;
}

/** `POST /account/check-perp-dex-requirements`. */
export async function checkPerpDexRequirements(deps: RequirementsDeps, user: AuthenticatedUser, dex: VenueId): Promise<RequirementsResult> {
  const account = await requireAccount(deps, user);
  return requirementsFor(deps, account, deps.venues.driver(dex));
}

/**
 * The numbers from the chains (the user's EVM address) and the venue's rules: the venue token
 * on every EVM chain carrying it, the native coin on the venue's chain, and the gas price there.
 * `usdc_available` is the balance on the venue's chain: the first deposit is sent from there;
 * balances elsewhere would need a bridge first, and the message says so.
 */
async function requirementsFor(deps: RequirementsDeps, account: AccountRecord, driver: VenueDriver): Promise<RequirementsResult> {
  const { rules } = driver;
  const owner = account.public_address.ETH as Address;
  const gasToken = deps.chains.native(rules.chain);
  const carrying = deps.chains.chainsCarrying(rules.token);
  // The venue's chain must answer; another chain that does not is left out of chain_balances
  // (it only informs the message) rather than failing the check.
  const otherChainBalance = (chain: EvmChainCode) =>
    deps.chains.balance(chain, owner, rules.token).catch((error: unknown) => {
      logger.warn('chain balance unavailable', { chain, error });
      return undefined;
    });
  const [tokenBalances, nativeBalance, gasPrice] = await Promise.all([
    Promise.all(carrying.map((chain) => (chain === rules.chain ? deps.chains.balance(chain, owner, rules.token) : otherChainBalance(chain)))),
    deps.chains.balance(rules.chain, owner, gasToken),
    deps.chains.gasPrice(rules.chain),
  ]);
  const balanceOn = new Map<EvmChainCode, bigint>(carrying.flatMap((chain, i) => (tokenBalances[i] === undefined ? [] : [[chain, tokenBalances[i]]])));
  const available = balanceOn.get(rules.chain) ?? 0n;
  const gasRequired = FIRST_DEPOSIT_GAS[rules.venue] * gasPrice + (rules.depositNativeValue ?? 0n);
  const nativeDecimals = deps.chains.decimals(rules.chain, gasToken);
  const token = (units: bigint) => formatAmount(units, rules.decimals);
  const native = (units: bigint) => formatAmount(units, nativeDecimals);

  const usdcSufficient = available >= rules.firstDepositMinimum;
  const ethSufficient = nativeBalance >= gasRequired;
  const missing: string[] = [];
  if (!usdcSufficient) {
    const elsewhere = [...balanceOn].filter(([chain, units]) => chain !== rules.chain && units > 0n).map(([chain, units]) => `${token(units)} on ${chain}`);
    missing.push(
      `at least ${token(rules.firstDepositMinimum)} ${rules.token} on ${rules.chain} for the first deposit (the wallet holds ${token(available)})` +
        (elsewhere.length > 0 ? `; it also holds ${rules.token} ${elsewhere.join(', ')}, which would have to be bridged to ${rules.chain} first` : ''),
    );
  }
  if (!ethSufficient) missing.push(`at least ${native(gasRequired)} ${gasToken} on ${rules.chain} for gas (the wallet holds ${native(nativeBalance)})`);
  const met = missing.length === 0;
  const message = met
    ? `Requirements met for ${rules.venue}: ${token(available)} ${rules.token} on ${rules.chain} covers the first deposit minimum of ${token(rules.firstDepositMinimum)}, and ${native(nativeBalance)} ${gasToken} covers the estimated gas of ${native(gasRequired)}.`
    : `Requirements not met for ${rules.venue}: the wallet needs ${missing.join(', and ')}.`;
  return {
    requirements_met: met,
    message,
    usdc_required: token(rules.firstDepositMinimum),
    usdc_available: token(available),
    usdc_sufficient: usdcSufficient,
    chain_balances: Object.fromEntries([...balanceOn].map(([chain, units]) => [chain, formatAmount(units, deps.chains.decimals(chain, rules.token))])),
    eth_required: native(gasRequired),
    eth_available: native(nativeBalance),
    eth_sufficient: ethSufficient,
    chain: rules.chain,
    token: rules.token,
    gas_token: gasToken,
  };
}

/**
 * `POST /account/init-perp-dex` (spec, Venue onboarding flags). Initialized and no
 * `force_reinit`: the stored status, nothing changed, no venue call. Otherwise, on a first
 * initialization the requirements must be met (422 REQUIREMENTS_NOT_MET, nothing stored); the
 * venue account is created under a per-user-and-venue lease, so concurrent calls make one venue
 * account: whoever waited finds it initialized. A forced re-initialization keeps the trading
 * metadata (the venues' onboarding is idempotent per wallet: it is the same venue account).
 */
export async function initPerpDex(
  deps: InitPerpDexDeps,
  user: AuthenticatedUser,
  request: { readonly dex: VenueId; readonly force_reinit: boolean; readonly metadata?: Readonly<Record<string, unknown>> },
): Promise<{ status: VenueStatus; message: string }> {
  const { dex, force_reinit: force } = request;
  const account = await requireAccount(deps, user);
  const stored = account.perp_dex_status[dex];
  if (stored?.initialized && !force) return { status: stored, message: `${dex} is already initialized; pass force_reinit to redo it` };
  const driver = deps.venues.driver(dex);
  if (!stored?.initialized) {
    const requirements = await requirementsFor(deps, account, driver);
    if (!requirements.requirements_met) throw new UnprocessableError('REQUIREMENTS_NOT_MET', requirements.message);
  }
  return withVenueLease(deps.table, dex, user, async () => {
    const current = (await requireAccount(deps, user)).perp_dex_status[dex];
    if (current?.initialized && !force) return { status: current, message: `${dex} is already initialized; pass force_reinit to redo it` };
    const fields = await callVenue(dex, () => driver.initAccount(venueWallet(deps, user, account), request.metadata ?? {}));
    const status: VenueStatus = { ...current, ...fields, initialized: true };
    await storeVenueStatus(deps.table, account, dex, status, 'venue.initialized');
    logger.info('venue account initialized', { venue: dex, forced: force });
    return { status, message: `${dex} ${current?.initialized ? 're-initialized' : 'initialized'}` };
  });
}

/**
 * `POST /account/init-perp-dex-trading`. Refused before init-perp-dex (409 DEX_NOT_INITIALIZED)
 * and while the venue account holds nothing (409 DEX_NOT_FUNDED); set up already and no
 * `force_reinit`: 409 TRADING_ALREADY_INITIALIZED (the one-time key cannot be shown again).
 * The credential metadata is stored; the one-time secret is returned to this caller only,
 * never stored or logged.
 */
export async function initPerpDexTrading(
  deps: VenueSigningDeps,
  user: AuthenticatedUser,
  request: { readonly dex: VenueId; readonly force_reinit: boolean; readonly metadata?: Readonly<Record<string, unknown>> },
): Promise<{ status: Record<string, unknown>; message: string }> {
  const { dex, force_reinit: force } = request;
  const metadata = parseInput(v.object({ metadata: TRADING_METADATA[dex] }), { metadata: request.metadata ?? {} }, 'body').metadata as Record<string, unknown>;
  const account = await requireAccount(deps, user);
  /** The venue's status, when it allows setting trading up. */
  const checkState = (status: VenueStatus | undefined): VenueStatus => {
    if (!status?.initialized) throw new ConflictError('DEX_NOT_INITIALIZED', `${dex} is not initialized: call POST /account/init-perp-dex first`);
    if (status.trade_initialized === true && !force) {
      throw new ConflictError(
        'TRADING_ALREADY_INITIALIZED',
        `Trading on ${dex} is already set up and its key was returned once; pass force_reinit to replace it`,
      );
    }
    return status;
  };
  const initial = checkState(account.perp_dex_status[dex]);
  const driver = deps.venues.driver(dex);
  const wallet = venueWallet(deps, user, account);
  const balances = await callVenue(dex, () => driver.balances(wallet, venueFields(initial)));
  if (balances.balance <= 0n)
    throw new ConflictError(
      'DEX_NOT_FUNDED',
      `The ${dex} account holds no funds yet: deposit at least ${formatAmount(driver.rules.firstDepositMinimum, driver.rules.decimals)} ${driver.rules.token} first`,
    );

  return withVenueLease(deps.table, dex, user, async () => {
    const current = checkState((await requireAccount(deps, user)).perp_dex_status[dex]);
    const setup = await callVenue(dex, () => driver.initTrading(wallet, venueFields(current), metadata, force));
    assertNoSecretIn(setup.stored, setup.oneTime);
    await storeVenueStatus(deps.table, account, dex, { ...current, ...setup.stored, trade_initialized: true }, 'venue.trading_initialized');
    logger.info('venue trading set up', { venue: dex, replaced: force });
    return {
      status: { trade_initialized: true, ...setup.stored, ...setup.oneTime },
      message: `Trading on ${dex} is set up. The private key in this response is shown once and is not stored: keep it now.`,
    };
  });
}

/** `GET /account/perp` (spec, Venue assets): never a 5xx for the venue's sake, `error` instead. */
export async function venueAssets(deps: VenueSigningDeps, user: AuthenticatedUser, dex: VenueId) {
  const account = await requireAccount(deps, user);
  const status = account.perp_dex_status[dex];
  if (!status?.initialized) return { dex, initialized: false, assets: null, transfer_rules: null, error: null };
  if (!deps.venues.isConfigured(dex))
    return { dex, initialized: true, assets: null, transfer_rules: null, error: `${dex} is not configured on this deployment` };
  const driver = deps.venues.driver(dex);
  const { rules } = driver;
  const transfer_rules = transferRules(rules);
  try {
    const balances = await withTimeout(
      driver.balances(venueWallet(deps, user, account), venueFields(status)),
      deps.venueReadTimeoutMs ?? VENUE_READ_TIMEOUT_MS,
    );
    const amount = (units: bigint) => formatAmount(units, rules.decimals);
    const assets = {
      balance: amount(balances.balance),
      account_value: amount(balances.account_value),
      available_for_withdrawal: amount(balances.available_for_withdrawal),
      ...Object.fromEntries(Object.entries(balances.extra ?? {}).map(([name, units]) => [name, amount(units)])),
    };
    return { dex, initialized: true, assets, transfer_rules, error: null };
  } catch (error) {
    logger.warn('venue balances unavailable', { venue: dex, error });
    return { dex, initialized: true, assets: null, transfer_rules, error: `${dex} could not be read just now; try again later` };
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** `GET /account/perp-credentials`: the stored metadata only (the table is the source); never a private key. */
export async function venueCredentials(deps: Pick<VenueReadDeps, 'table'>, user: AuthenticatedUser, dex: VenueId) {
  const account = await requireAccount(deps, user);
  return venueCredentialsView(dex, account.perp_dex_status[dex]);
}

/** The spec's `transfer_rules` from the venue's rules: decimal strings of the venue token. */
export function transferRules(rules: VenueRules) {
  const direction = (rule: DirectionRule) => ({
    supported: rule.supported,
    minimum_amount: formatAmount(rule.minimum, rules.decimals),
    fee: { amount: formatAmount(rule.fee.amount, rules.decimals), token: rule.fee.token, fee_type: rule.fee.feeType, note: rule.fee.note },
    note: rule.note,
  });
  return { chain: rules.chain, token: rules.token, deposit: direction(rules.deposit), withdrawal: direction(rules.withdrawal) };
}

/** A driver bug must not persist a one-time secret: refuse to store anything that carries one. */
function assertNoSecretIn(stored: VenueFields, oneTime: Readonly<Record<string, string>>): void {
  const text = JSON.stringify(stored);
  const leaked =
    Object.keys(stored).some((name) => SECRET_NAME.test(name)) || Object.values(oneTime).some((secret) => secret.length > 0 && text.includes(secret));
  if (leaked) {
    logger.error('venue adapter returned a secret among the fields to store; nothing stored', { fields: Object.keys(stored) });
    throw new UpstreamError('VENUE_UNAVAILABLE', "The venue's trading setup could not be completed");
  }
}

/** The stored status as the driver's VenueFields (JSON scalars only). */
function venueFields(status: VenueStatus): VenueFields {
  return Object.fromEntries(
    Object.entries(status).filter(([, value]) => value === null || ['string', 'number', 'boolean'].includes(typeof value)),
  ) as VenueFields;
}

/**
 * Venue failures as the caller sees them: a rule the venue enforces (VenueRuleError) is a 422
 * with its code; our own domain errors pass; anything else (the venue unreachable, an answer we
 * cannot read) is a 502 that names no internals, the detail going to the log.
 */
async function callVenue<T>(venue: VenueId, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof VenueRuleError) throw new UnprocessableError(error.code, error.message);
    if (error instanceof DomainError) throw error;
    logger.error('venue call failed', { venue, error });
    throw new UpstreamError('VENUE_UNAVAILABLE', `${venue} did not answer as expected; try again later`);
  }
}

async function withVenueLease<T>(table: Table, venue: VenueId, user: AuthenticatedUser, work: () => Promise<T>): Promise<T> {
  let lease: Lease<object>;
  try {
    lease = await acquireLease(table, keys.venueLease(venue, user.app.app_id, user.identity.sub), { leaseMs: VENUE_LEASE_MS, waitMs: VENUE_LEASE_WAIT_MS });
  } catch (error) {
    if (error instanceof LeaseTimeoutError)
      throw new ConflictError('VENUE_SETUP_IN_PROGRESS', `Another request is setting up ${venue} for this user; retry shortly`, { retryAfterSeconds: 5 });
    throw error;
  }
  try {
    return await work();
  } finally {
    await lease.release();
  }
}

/** Writes `perp_dex_status[venue]` of an existing account (only that venue's entry), with its event (shared/events/outbox.ts). */
async function storeVenueStatus(table: Table, account: AccountRecord, venue: VenueId, status: VenueStatus, event: EventType): Promise<void> {
  const update = {
    sets: ['perp_dex_status.#venue = :status'],
    names: { '#venue': venue } as Record<string, string>,
    values: { ':status': status } as Record<string, unknown>,
  };
  appendOutbox(update, [event], new Date().toISOString(), venue);
  try {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: keys.account(account.app_id, account.app_user_id),
        UpdateExpression: `SET ${update.sets.join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: update.names,
        ExpressionAttributeValues: update.values,
      }),
    );
  } catch (error) {
    if (isConditionalCheckFailed(error)) throw new NotFoundError('ACCOUNT_NOT_FOUND', 'No account exists for this user; create it with POST /account');
    throw error;
  }
}
