import { decodeJwt } from 'jose';
import { type Address, encodeFunctionData, erc20Abi, formatUnits, getAddress, type Hex, isAddress, parseUnits } from 'viem';
import type { DepositPlan, TradingSetup, VenueBalances, VenueDriver, VenueFields, VenueWallet, WithdrawalStatus } from '../driver.ts';
import { VenueRuleError } from '../driver.ts';
import { VENUE_RULES } from '../rules.ts';
import { feltToHex, parseFelt, type StarkKeyPair, starknetTypedDataHash, starkSign } from '../stark.ts';
import {
  authHeaders,
  deriveParadexKeyPairWithWallet,
  generateSubkey,
  onboardingHeaders,
  type ParadexSystemConfig,
  paradexAccountAddress,
  STARKGATE_BRIDGE_ABI,
  subkeyRegistrationRequest,
} from './signing.ts';
import { formatWithdrawalSignature, PARACLEAR_DECIMALS, type WithdrawalRequestBody, withdrawalNonceFromKey, withdrawalTypedData } from './withdrawal.ts';

/**
 * venue_c's adapter (modelled on Paradex, research §3), speaking Paradex's REST API at
 * `baseUrl` + `/v1/...`: the local stand-in, or the live venue (https://api.prod.paradex.trade)
 * when pointed at it. Everything chain-specific (L1 chain id, Starknet chain id, account class
 * hashes, the USDC bridge) is read from the venue's own `GET /v1/system/config`.
 *
 * The account's L2 key is never stored: whenever the driver must sign (onboarding, JWT, subkey
 * registration, withdrawal) it asks the wallet for the EIP-712 "STARK Key" signature again and
 * grinds the key from it (deterministic: the same wallet gives the same key).
 *
 * A read (balances, withdrawal status) reuses the account's JWT from an earlier call of this
 * driver (a warm Lambda's) until a minute before its `exp`, as Paradex's SDKs keep theirs: no wallet
 * signature, no key grinding, no Stark signature per read. It is kept only in memory, keyed by
 * the wallet's address and checked against the stored `l2_address`; a 401 on it drops it and the
 * read authenticates once more. Writes (subkeys, withdrawals) always authenticate afresh (they
 * need the key anyway), and their JWT is kept for the reads that follow.
 *
 * Withdrawals are not live: the request (`POST /v1/withdrawals`, shared/venues/venue-c/withdrawal.ts)
 * is the local stand-in's HTTP shortcut for Paradex's Starknet withdraw transaction, which live
 * would be an invoke through the venue's full node followed by hours of proving before the L1
 * payout. The venue rules mark venue_c withdrawals unsupported, so no transfer route reaches
 * `withdraw` (the planner answers 422 VENUE_WITHDRAWAL_UNSUPPORTED).
 */
export interface VenueCDriverOptions {
  /** The venue's API origin, without `/v1` (live: https://api.prod.paradex.trade). */
  readonly baseUrl: string;
  /**
   * The L1→L2 message fee sent with the bridge deposit, wei. StarkGate's
   * `estimateDepositFeeWei()` = 20000 gas × 5 gwei; the bridge accepts 10^12 to 10^16.
   */
  readonly depositMessageFeeWei?: bigint;
  /** Seconds a JWT auth signature stays valid (the venue allows at most one week). */
  readonly signatureSeconds?: number;
  readonly now?: () => number;
  readonly timeoutMs?: number;
}

/** The venue answered, and refused (4xx `{ error, message }`). */
export class VenueCRefusedError extends VenueRuleError {
  readonly venueError: string;
  /** The venue's HTTP status (4xx). */
  readonly status: number;
  constructor(venueError: string, message: string, status: number) {
    super('VENUE_REFUSED', `venue_c refused: ${venueError}: ${message}`);
    this.venueError = venueError;
    this.status = status;
  }
}

/** The venue could not be reached or answered something unreadable. */
export class VenueCUnavailableError extends Error {
  readonly code = 'VENUE_UNAVAILABLE';
}

const RULES = VENUE_RULES.venue_c;
/** [O] P4: at most 500,000 USDC per deposit transaction. */
export const VENUE_C_DEPOSIT_MAXIMUM = 500_000n * 10n ** 6n;
/** StarkGate's estimateDepositFeeWei(): 20000 gas × 5 gwei (the rules' depositNativeValue, which eth_required counts). */
export const STARKGATE_DEPOSIT_FEE_WEI = starkgateDepositFee();

function starkgateDepositFee(): bigint {
  const fee = RULES.depositNativeValue;
  if (fee === undefined) throw new Error("venue_c's rules have no depositNativeValue (StarkGate's deposit fee)");
  return fee;
}

const SCALE = 10n ** BigInt(PARACLEAR_DECIMALS - RULES.decimals);
/** A kept JWT is not used in its last minute (a read must not race its expiry). */
const SESSION_RENEW_MS = 60_000;
/** At most this many wallets' JWTs are kept; the oldest goes first. */
const MAX_SESSIONS = 1_000;
const DEFAULT_SUBKEY_NAME = 'trading';

interface SystemConfig extends ParadexSystemConfig {
  readonly bridged_tokens: readonly {
    readonly symbol: string;
    readonly decimals: number;
    readonly l1_token_address: string;
    readonly l1_bridge_address: string;
    readonly l2_token_address: string;
  }[];
}

/** An account's JWT, kept for reads until SESSION_RENEW_MS before `expiresAt`. */
interface Session {
  readonly account: bigint;
  readonly jwt: string;
  readonly expiresAt: number;
}

interface Signer {
  readonly config: SystemConfig;
  readonly keyPair: StarkKeyPair;
  readonly account: bigint;
}

export class VenueCDriver implements VenueDriver {
  readonly id = 'venue_c' as const;
  readonly rules = RULES;
  private readonly options: Required<VenueCDriverOptions>;
  private configPromise: Promise<SystemConfig> | undefined;
  /** JWTs by wallet address (lower case), for reads. */
  private readonly sessions = new Map<string, Session>();

  constructor(options: VenueCDriverOptions) {
    this.options = {
      depositMessageFeeWei: STARKGATE_DEPOSIT_FEE_WEI,
      signatureSeconds: 60,
      now: Date.now,
      timeoutMs: 10_000,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
  }

  /** The native coin a deposit sends besides gas: the L1→L2 message fee (part of what the user needs on ETH). */
  get depositMessageFeeWei(): bigint {
    return this.options.depositMessageFeeWei;
  }

  /** Derives the L2 key from the wallet's STARK Key signature and onboards the account (idempotent at the venue). */
  async initAccount(wallet: VenueWallet): Promise<VenueFields> {
    const signer = await this.signer(wallet);
    const headers = onboardingHeaders({
      ethereumAccount: getAddress(wallet.address),
      account: signer.account,
      keyPair: signer.keyPair,
      starknetChainId: signer.config.starknet_chain_id,
    });
    await this.request('POST', '/v1/onboarding', { headers, body: { public_key: feltToHex(signer.keyPair.publicKey) } });
    return { l2_address: feltToHex(signer.account), l2_public_key: feltToHex(signer.keyPair.publicKey) };
  }

  async balances(wallet: VenueWallet, fields: VenueFields): Promise<VenueBalances> {
    const [balance, account] = (await this.read(wallet, fields, (jwt) =>
      Promise.all([this.request('GET', '/v1/balance', { jwt }), this.request('GET', '/v1/account', { jwt })]),
    )) as [{ results?: { token?: string; size?: string }[] }, { account_value?: string; free_collateral?: string }];
    if (!Array.isArray(balance?.results)) throw new VenueCUnavailableError('venue_c answered /v1/balance without results');
    const usdc = balance.results.find((entry) => entry.token === 'USDC');
    return {
      balance: usdc ? units(usdc.size, 'balance size') : 0n,
      account_value: units(account?.account_value, 'account_value'),
      available_for_withdrawal: units(account?.free_collateral, 'free_collateral'),
    };
  }

  /**
   * Registers a fresh random subkey under `metadata.name` ("trading" by default), signed by the
   * main key. Without `replace` an active subkey of that name is refused; with it, that subkey
   * (and the one stored in `fields.subkey_public_key`) is revoked first.
   */
  async initTrading(wallet: VenueWallet, fields: VenueFields, metadata: Readonly<Record<string, unknown>>, replace: boolean): Promise<TradingSetup> {
    const raw = metadata.name;
    if (raw !== undefined && raw !== null && typeof raw !== 'string') throw new VenueRuleError('INVALID_METADATA', 'metadata.name: must be a string');
    const name = raw ?? DEFAULT_SUBKEY_NAME;
    if (name.length === 0 || name.length > 64) throw new VenueRuleError('INVALID_METADATA', 'metadata.name: 1 to 64 characters');

    const signer = await this.signer(wallet, fields);
    const jwt = await this.jwt(signer, wallet);
    const listed = (await this.request('GET', '/v1/account/keys/subkeys', { jwt })) as { results?: { name?: string; public_key?: string; state?: string }[] };
    if (!Array.isArray(listed?.results)) throw new VenueCUnavailableError('venue_c answered the subkey list without results');
    const active = listed.results.flatMap((subkey) =>
      subkey.state === 'active' && typeof subkey.public_key === 'string' ? [{ ...subkey, public_key: subkey.public_key }] : [],
    );
    const sameName = active.filter((subkey) => subkey.name === name);
    if (sameName.length > 0 && !replace)
      throw new VenueRuleError('SUBKEY_EXISTS', `venue_c already has a subkey named "${name}" for this account; reinitialise to replace it`);
    if (replace) {
      const stored = typeof fields.subkey_public_key === 'string' ? fields.subkey_public_key : undefined;
      const revoke = active.filter((subkey) => subkey.name === name || (stored !== undefined && sameFelt(subkey.public_key, stored)));
      for (const subkey of revoke) await this.request('DELETE', `/v1/account/keys/subkeys/${subkey.public_key}`, { jwt });
    }

    const subkey = generateSubkey();
    const timestamp = Math.floor(this.options.now() / 1000);
    const body = subkeyRegistrationRequest({
      name,
      account: signer.account,
      mainPrivateKey: signer.keyPair.privateKey,
      subkeyPublicKey: subkey.publicKey,
      timestamp,
      expiry: timestamp + this.options.signatureSeconds,
    });
    await this.request('POST', '/v1/account/keys/subkeys', { jwt, body });
    return {
      stored: { trade_initialized: true, subkey_name: name, subkey_public_key: feltToHex(subkey.publicKey) },
      oneTime: { subkey_private_key: feltToHex(subkey.privateKey) },
    };
  }

  /** approve USDC to the venue's L1 bridge, then `deposit(token, amount, l2Recipient)` with the message fee. */
  async prepareDeposit(_wallet: VenueWallet, fields: VenueFields, amount: bigint): Promise<DepositPlan> {
    if (amount < RULES.deposit.minimum) {
      throw new VenueRuleError(
        'BELOW_MINIMUM_DEPOSIT',
        `venue_c deposits are at least ${formatUnits(RULES.deposit.minimum, RULES.decimals)} USDC; got ${formatUnits(amount, RULES.decimals)}`,
      );
    }
    if (amount > VENUE_C_DEPOSIT_MAXIMUM) {
      throw new VenueRuleError(
        'ABOVE_MAXIMUM_DEPOSIT',
        `venue_c takes at most ${formatUnits(VENUE_C_DEPOSIT_MAXIMUM, RULES.decimals)} USDC per deposit transaction`,
      );
    }
    const recipient = l2Address(fields);
    const token = await this.usdc();
    return {
      chain: RULES.chain,
      calls: [
        {
          to: token.l1Token,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [token.l1Bridge, amount] }),
          label: 'approve USDC to the venue_c bridge',
        },
        {
          to: token.l1Bridge,
          data: encodeFunctionData({ abi: STARKGATE_BRIDGE_ABI, functionName: 'deposit', args: [token.l1Token, amount, recipient] }),
          value: this.options.depositMessageFeeWei,
          label: 'deposit to the venue_c bridge (with the L1→L2 message fee)',
        },
      ],
      expectedCredit: amount,
    };
  }

  async withdraw(wallet: VenueWallet, fields: VenueFields, amount: bigint, idempotencyKey: string): Promise<{ readonly reference: string }> {
    if (amount < RULES.withdrawal.minimum) {
      throw new VenueRuleError('BELOW_MINIMUM_WITHDRAWAL', `venue_c withdrawals are at least ${formatUnits(RULES.withdrawal.minimum, RULES.decimals)} USDC`);
    }
    const signer = await this.signer(wallet, fields);
    const jwt = await this.jwt(signer, wallet);
    const token = await this.usdc();
    const nonce = withdrawalNonceFromKey(idempotencyKey);
    const expiration = Math.floor(this.options.now() / 1000) + this.options.signatureSeconds;
    const recipient = getAddress(wallet.address);
    const typedData = withdrawalTypedData(signer.config.starknet_chain_id, { token: token.l2Token, amount: amount * SCALE, recipient, nonce, expiration });
    const signature = starkSign(starknetTypedDataHash(typedData, signer.account), signer.keyPair.privateKey);
    const body: WithdrawalRequestBody = {
      token: 'USDC',
      amount: formatUnits(amount, RULES.decimals),
      recipient,
      nonce: nonce.toString(),
      expiration,
      signature: formatWithdrawalSignature(signature),
    };
    const transfer = (await this.request('POST', '/v1/withdrawals', { jwt, body })) as { id?: unknown };
    if (typeof transfer?.id !== 'string') throw new VenueCUnavailableError('venue_c answered the withdrawal without a transfer id');
    return { reference: transfer.id };
  }

  async withdrawalStatus(wallet: VenueWallet, fields: VenueFields, reference: string): Promise<WithdrawalStatus> {
    const listed = (await this.read(wallet, fields, (jwt) => this.request('GET', '/v1/transfers?page_size=5000', { jwt }))) as {
      results?: TransferResult[];
    };
    if (!Array.isArray(listed?.results)) throw new VenueCUnavailableError('venue_c answered /v1/transfers without results');
    const transfer = listed.results.find((entry) => entry.id === reference && entry.kind === 'WITHDRAWAL');
    if (!transfer) return { state: 'failed', reason: 'venue_c has no withdrawal with this reference' };
    if (transfer.status === 'COMPLETED' && transfer.external_txn_hash) return { state: 'completed', txHash: transfer.external_txn_hash as Hex };
    if (transfer.status === 'FAILED') return { state: 'failed', reason: transfer.failure_reason || 'the withdrawal failed' };
    return { state: 'pending' };
  }

  // --- the venue ---------------------------------------------------------------------------------

  private config(): Promise<SystemConfig> {
    this.configPromise ??= (async () => {
      const config = (await this.request('GET', '/v1/system/config', {})) as Partial<SystemConfig>;
      if (
        typeof config?.l1_chain_id !== 'string' ||
        typeof config.starknet_chain_id !== 'string' ||
        typeof config.paraclear_account_hash !== 'string' ||
        typeof config.paraclear_account_proxy_hash !== 'string' ||
        !Array.isArray(config.bridged_tokens)
      ) {
        throw new VenueCUnavailableError('venue_c answered /v1/system/config without chain ids, class hashes or bridged tokens');
      }
      return config as SystemConfig;
    })();
    // A failed read is not cached.
    this.configPromise.catch(() => {
      this.configPromise = undefined;
    });
    return this.configPromise;
  }

  private async usdc(): Promise<{ l1Token: Address; l1Bridge: Address; l2Token: bigint }> {
    const token = (await this.config()).bridged_tokens.find((entry) => entry.symbol === 'USDC');
    if (
      !token ||
      !isAddress(token.l1_token_address, { strict: false }) ||
      !isAddress(token.l1_bridge_address, { strict: false }) ||
      token.decimals !== RULES.decimals
    ) {
      throw new VenueCUnavailableError('venue_c publishes no USDC bridge with 6 decimals in /v1/system/config');
    }
    return { l1Token: getAddress(token.l1_token_address), l1Bridge: getAddress(token.l1_bridge_address), l2Token: parseFelt(token.l2_token_address) };
  }

  /** The L2 key from the wallet's STARK Key signature; when `fields` hold an account, it must be this key's. */
  private async signer(wallet: VenueWallet, fields?: VenueFields): Promise<Signer> {
    const config = await this.config();
    const chainId = Number(config.l1_chain_id);
    if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new VenueCUnavailableError('venue_c published an unreadable l1_chain_id');
    const keyPair = await deriveParadexKeyPairWithWallet(wallet, chainId);
    const account = paradexAccountAddress(keyPair.publicKey, config);
    if (fields && typeof fields.l2_address === 'string' && !sameFelt(fields.l2_address, feltToHex(account))) {
      throw new VenueRuleError('ACCOUNT_MISMATCH', 'the stored venue_c l2_address is not the account this wallet derives');
    }
    return { config, keyPair, account };
  }

  /**
   * A read with the wallet's kept JWT when it is this account's and not about to expire; else (or
   * when the venue refuses the kept one with 401) with a fresh one.
   */
  private async read<T>(wallet: VenueWallet, fields: VenueFields, call: (jwt: string) => Promise<T>): Promise<T> {
    const key = wallet.address.toLowerCase();
    const kept = this.sessions.get(key);
    const stored = typeof fields.l2_address === 'string' ? fields.l2_address : undefined;
    if (kept && stored !== undefined && sameFelt(stored, feltToHex(kept.account)) && kept.expiresAt - SESSION_RENEW_MS > this.options.now()) {
      try {
        return await call(kept.jwt);
      } catch (error) {
        if (!(error instanceof VenueCRefusedError && error.status === 401)) throw error;
        this.sessions.delete(key);
      }
    }
    return call(await this.jwt(await this.signer(wallet, fields), wallet));
  }

  /** A fresh JWT, kept for the wallet's later reads until shortly before its `exp`. */
  private async jwt(signer: Signer, wallet: VenueWallet): Promise<string> {
    const timestamp = Math.floor(this.options.now() / 1000);
    const headers = authHeaders({
      account: signer.account,
      privateKey: signer.keyPair.privateKey,
      starknetChainId: signer.config.starknet_chain_id,
      timestamp,
      expiration: timestamp + this.options.signatureSeconds,
    });
    const answer = (await this.request('POST', '/v1/auth', { headers })) as { jwt_token?: unknown };
    if (typeof answer?.jwt_token !== 'string') throw new VenueCUnavailableError('venue_c answered /v1/auth without jwt_token');
    this.keep(wallet.address.toLowerCase(), signer.account, answer.jwt_token);
    return answer.jwt_token;
  }

  private keep(key: string, account: bigint, jwt: string): void {
    let exp: unknown;
    try {
      exp = decodeJwt(jwt).exp;
    } catch {
      return; // a token we cannot read the expiry of is used once, not kept
    }
    if (typeof exp !== 'number') return;
    this.sessions.delete(key);
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    this.sessions.set(key, { account, jwt, expiresAt: exp * 1000 });
  }

  private async request(method: string, path: string, input: { headers?: Record<string, string>; jwt?: string; body?: unknown }): Promise<unknown> {
    const headers: Record<string, string> = { ...input.headers };
    if (input.jwt) headers.authorization = `Bearer ${input.jwt}`;
    if (input.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${this.options.baseUrl}${path}`, {
        method,
        headers,
        body: input.body === undefined ? undefined : JSON.stringify(input.body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      throw new VenueCUnavailableError(`venue_c is unreachable (${(error as Error).name})`);
    }
    const text = await response.text();
    if (response.status >= 400 && response.status < 500) {
      let parsed: { error?: unknown; message?: unknown } | undefined;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      throw new VenueCRefusedError(
        typeof parsed?.error === 'string' ? parsed.error : `HTTP ${response.status}`,
        typeof parsed?.message === 'string' ? parsed.message : text.slice(0, 300),
        response.status,
      );
    }
    if (!response.ok) throw new VenueCUnavailableError(`venue_c answered HTTP ${response.status}`);
    if (text === '') return {};
    try {
      return JSON.parse(text);
    } catch {
      throw new VenueCUnavailableError('venue_c answered something that is not JSON');
    }
  }
}

interface TransferResult {
  readonly id?: string;
  readonly kind?: string;
  readonly status?: string;
  readonly external_txn_hash?: string;
  readonly failure_reason?: string;
}

function l2Address(fields: VenueFields): bigint {
  const stored = fields.l2_address;
  if (typeof stored !== 'string') throw new VenueRuleError('NOT_INITIALIZED', 'venue_c has no l2_address for this account: initialise it first');
  return parseFelt(stored);
}

function sameFelt(a: string, b: string): boolean {
  try {
    return parseFelt(a) === parseFelt(b);
  } catch {
    return false;
  }
}

/** A venue decimal string (Paradex prints up to 8 decimals) as USDC base units; digits past the sixth are cut. */
function units(value: string | undefined, field: string): bigint {
  if (typeof value !== 'string' || !/^-?[0-9]+(\.[0-9]+)?$/.test(value)) throw new VenueCUnavailableError(`venue_c answered without a decimal ${field}`);
  const [whole, fraction = ''] = value.split('.');
  return parseUnits(`${whole}.${fraction.slice(0, RULES.decimals) || '0'}`, RULES.decimals);
}
