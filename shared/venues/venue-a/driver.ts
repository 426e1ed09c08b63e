import { type Address, encodeFunctionData, erc20Abi, getAddress, type Hex, isAddress, keccak256, toHex } from 'viem';
import type { DepositPlan, TradingSetup, VenueBalances, VenueDriver, VenueFields, VenueWallet, WithdrawalStatus } from '../driver.ts';
import { VenueRuleError } from '../driver.ts';
import { VENUE_RULES } from '../rules.ts';
import { feltToHex, parseFelt, type StarkKeyPair } from '../stark.ts';
import {
  type AccountView,
  ARB_CHAIN,
  ARBITRUM_USDC,
  commitmentIdOf,
  EXTENDED_MAINNET_BASE_URL,
  fromDecimal,
  STARKNET_CHAIN,
  toDecimal,
  VenueARefusedError,
  type VenueARequest,
  VenueAUnavailableError,
  venueARequest,
} from './api.ts';
import {
  buildOnboardingPayload,
  deriveExtendedKeyPairWithWallet,
  EXTENDED_MAINNET_SIGNING,
  type ExtendedSigningConfig,
  RHINO_BRIDGE_ABI,
  signApiRequest,
} from './signing.ts';
import { EXTENDED_COLLATERAL_ID, EXTENDED_MAINNET_STARKNET_DOMAIN, type StarknetDomain, signWithdrawal } from './withdrawal.ts';

/**
 * venue_a's adapter (modelled on Extended, Starknet era; research §2), speaking Extended's own API
 * at `baseUrl`: the local stand-in, or https://api.starknet.extended.exchange live. The live
 * values (EIP-712 signing domain and onboarding host, Starknet domain, Arbitrum USDC) are the
 * defaults; the local ones are passed by configuration (the local profile in ./api.ts).
 *
 * - Account: the wallet signs AccountCreation (→ the Stark key, deterministic per wallet and
 *   account index 0) and AccountRegistration (+ the Stark key's L2 proof) for `POST
 *   /auth/onboard`; an account that already exists is found with the L1-signed accounts list.
 *   An API key is issued at once: the stored fields are `account_id`, `vault`,
 *   `stark_public_key`, `api_key`.
 * - Trading: the Stark private key is re-derived from the wallet's AccountCreation signature and
 *   handed out once as `stark_private_key`. It is a function of the wallet and account index, so
 *   it cannot be replaced without a new account; `replace` (force_reinit) rotates what the venue
 *   can revoke instead: a new API key is issued and every earlier one revoked.
 * - Deposit: bridge quote ARB→STRK, commit, then approve + `depositWithId(token, amount, quote id)`
 *   on the bridge contract named by `/user/bridge/config`; the venue credits amount − quote fee.
 * - Withdrawal: bridge quote STRK→ARB, commit, then `POST /user/withdrawal` with the Stark-signed
 *   settlement to the account's `bridgeStarknetAddress`; paid out on Arbitrum minus the quote fee.
 *   The settlement salt is derived from the idempotency key, so a retry is the same withdrawal.
 */
export interface VenueADriverOptions {
  readonly baseUrl: string;
  /** EIP-712 signing domain + onboarding host: the live venue's by default. */
  readonly signing?: ExtendedSigningConfig;
  /** Domain of Stark-signed settlements: the live venue's (SN_MAIN) by default. */
  readonly starknetDomain?: StarknetDomain;
  readonly collateralId?: bigint;
  readonly usdc?: Address;
  readonly now?: () => Date;
  readonly timeoutMs?: number;
}

const RULES = VENUE_RULES.venue_a;
const API_KEY_DESCRIPTION = 'trading';
/** Settlements expire 15 days out, as the SDK's create_withdrawal_object sets them. */
const SETTLEMENT_EXPIRY_SECONDS = 15n * 24n * 60n * 60n;

export class VenueADriver implements VenueDriver {
  readonly id = 'venue_a' as const;
  readonly rules = RULES;
  private readonly options: Required<VenueADriverOptions>;

  constructor(options: VenueADriverOptions) {
    this.options = {
      signing: EXTENDED_MAINNET_SIGNING,
      starknetDomain: EXTENDED_MAINNET_STARKNET_DOMAIN,
      collateralId: EXTENDED_COLLATERAL_ID,
      usdc: ARBITRUM_USDC,
      now: () => new Date(),
      timeoutMs: 10_000,
      ...options,
      baseUrl: (options.baseUrl || EXTENDED_MAINNET_BASE_URL).replace(/\/+$/, ''),
    };
  }

  async initAccount(wallet: VenueWallet): Promise<VenueFields> {
    const keyPair = await this.starkKey(wallet);
    let account: AccountView;
    try {
      const payload = await buildOnboardingPayload(wallet, this.options.signing, keyPair, { now: this.options.now() });
      const onboarded = (await this.call({ method: 'POST', path: '/auth/onboard', body: payload })) as { defaultAccount?: AccountView };
      account = checkAccount(onboarded?.defaultAccount);
    } catch (error) {
      // Onboarding is once per wallet: an existing account is found through the accounts list.
      if (!(error instanceof VenueARefusedError && error.httpStatus === 409)) throw error;
      account = await this.mainAccount(wallet);
    }
    if (parseFelt(account.l2Key) !== keyPair.publicKey) {
      throw new VenueRuleError('STARK_KEY_MISMATCH', 'venue_a holds another Stark key for this wallet than the one its AccountCreation signature derives');
    }
    const apiKey = await this.issueApiKey(wallet, account.id);
    return { account_id: account.id, vault: Number(account.l2Vault), stark_public_key: feltToHex(keyPair.publicKey), api_key: apiKey };
  }

  async balances(_wallet: VenueWallet, fields: VenueFields): Promise<VenueBalances> {
    const data = (await this.call({ method: 'GET', path: '/api/v1/user/balance', headers: this.apiKeyHeader(fields) })) as Record<string, unknown>;
    return {
      balance: decimalField(data, 'balance'),
      account_value: decimalField(data, 'equity'),
      available_for_withdrawal: decimalField(data, 'availableForWithdrawal'),
    };
  }

  async initTrading(wallet: VenueWallet, fields: VenueFields, _metadata: Readonly<Record<string, unknown>>, replace: boolean): Promise<TradingSetup> {
    const keyPair = await this.starkKey(wallet);
    const account = await this.mainAccount(wallet);
    if (account.id !== Number(fields.account_id))
      throw new VenueRuleError('ACCOUNT_MISMATCH', `venue_a's account for this wallet is ${account.id}, not the stored ${String(fields.account_id)}`);
    if (parseFelt(account.l2Key) !== keyPair.publicKey) {
      throw new VenueRuleError('STARK_KEY_MISMATCH', 'venue_a does not recognise the Stark key this wallet derives for its account');
    }
    const stored: Record<string, string | number | boolean | null> = { trade_initialized: true, stark_public_key: feltToHex(keyPair.publicKey) };
    if (replace) {
      // The Stark key is fixed per wallet and account index; the revocable credential is the API key.
      const fresh = await this.issueApiKey(wallet, account.id);
      for (const old of account.apiKeys ?? []) {
        if (old === fresh) continue;
        const path = `/api/v1/user/account/api-key/${encodeURIComponent(old)}`;
        await this.call({ method: 'DELETE', path, headers: await this.l1Headers(wallet, path, account.id) });
      }
      stored.api_key = fresh;
    }
    return { stored, oneTime: { stark_private_key: feltToHex(keyPair.privateKey) } };
  }

  async prepareDeposit(_wallet: VenueWallet, fields: VenueFields, amount: bigint): Promise<DepositPlan> {
    if (amount < RULES.deposit.minimum) {
      throw new VenueRuleError(
        'BELOW_MINIMUM_DEPOSIT',
        `venue_a deposits start at ${toDecimal(RULES.deposit.minimum)} USDC; ${toDecimal(amount)} USDC is below`,
      );
    }
    const headers = this.apiKeyHeader(fields);
    const config = (await this.call({ method: 'GET', path: '/api/v1/user/bridge/config', headers })) as {
      chains?: { chain?: string; contractAddress?: string }[];
    };
    const bridge = config?.chains?.find((entry) => entry.chain === ARB_CHAIN)?.contractAddress;
    if (!bridge || !isAddress(bridge, { strict: false })) throw new VenueAUnavailableError('venue_a names no bridge contract for ARB');
    const quote = await this.quote(headers, ARB_CHAIN, STARKNET_CHAIN, amount);
    if (quote.fee >= amount) throw new VenueRuleError('BELOW_MINIMUM_DEPOSIT', `venue_a's bridge fee ${toDecimal(quote.fee)} USDC takes the whole deposit`);
    await this.call({ method: 'POST', path: '/api/v1/user/bridge/quote', query: { id: quote.id }, headers });
    const to = getAddress(bridge);
    return {
      chain: RULES.chain,
      calls: [
        {
          to: this.options.usdc,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [to, amount] }),
          label: 'approve USDC to the venue_a bridge',
        },
        {
          to,
          data: encodeFunctionData({ abi: RHINO_BRIDGE_ABI, functionName: 'depositWithId', args: [this.options.usdc, amount, commitmentIdOf(quote.id)] }),
          label: `venue_a bridge depositWithId (quote ${quote.id})`,
        },
      ],
      reference: quote.id,
      expectedCredit: amount - quote.fee,
    };
  }

  async withdraw(wallet: VenueWallet, fields: VenueFields, amount: bigint, idempotencyKey: string): Promise<{ readonly reference: string }> {
    if (amount < RULES.withdrawal.minimum) {
      throw new VenueRuleError('BELOW_MINIMUM_WITHDRAWAL', `venue_a withdrawals start at ${toDecimal(RULES.withdrawal.minimum)} USDC`);
    }
    if (idempotencyKey.length === 0) throw new VenueRuleError('INVALID_IDEMPOTENCY_KEY', 'venue_a withdrawals need an idempotency key');
    const keyPair = await this.starkKey(wallet);
    const account = await this.mainAccount(wallet);
    const headers = this.apiKeyHeader(fields);
    const quote = await this.quote(headers, STARKNET_CHAIN, ARB_CHAIN, amount);
    await this.call({ method: 'POST', path: '/api/v1/user/bridge/quote', query: { id: quote.id }, headers });

    const args = {
      recipient: parseFelt(account.bridgeStarknetAddress),
      positionId: BigInt(account.l2Vault),
      collateralId: this.options.collateralId,
      amount,
      expirationSeconds: BigInt(Math.ceil(this.options.now().getTime() / 1000)) + SETTLEMENT_EXPIRY_SECONDS,
      salt: saltFromKey(idempotencyKey),
    };
    const signature = signWithdrawal(args, this.options.starknetDomain, keyPair);
    const id = await this.call({
      method: 'POST',
      path: '/api/v1/user/withdrawal',
      headers,
      body: {
        accountId: account.id,
        amount: toDecimal(amount),
        description: null,
        settlement: {
          recipient: feltToHex(args.recipient),
          positionId: Number(args.positionId),
          collateralId: feltToHex(args.collateralId),
          amount: Number(args.amount),
          expiration: { seconds: Number(args.expirationSeconds) },
          salt: Number(args.salt),
          signature: { r: feltToHex(signature.r), s: feltToHex(signature.s) },
        },
        chainId: ARB_CHAIN,
        quoteId: quote.id,
        asset: 'USD',
      },
    });
    if (typeof id !== 'number' && typeof id !== 'string') throw new VenueAUnavailableError('venue_a answered the withdrawal without an id');
    return { reference: String(id) };
  }

  async withdrawalStatus(_wallet: VenueWallet, fields: VenueFields, reference: string): Promise<WithdrawalStatus> {
    const operations = (await this.call({
      method: 'GET',
      path: '/api/v1/user/assetOperations',
      query: { id: reference },
      headers: this.apiKeyHeader(fields),
    })) as {
      id?: unknown;
      status?: string;
      transactionHash?: string | null;
    }[];
    if (!Array.isArray(operations)) throw new VenueAUnavailableError('venue_a answered assetOperations with something other than a list');
    const operation = operations.find((entry) => String(entry.id) === reference);
    if (!operation) return { state: 'failed', reason: 'venue_a has no withdrawal with this reference' };
    if (operation.status === 'COMPLETED' && typeof operation.transactionHash === 'string' && /^0x[0-9a-fA-F]{64}$/.test(operation.transactionHash)) {
      return { state: 'completed', txHash: operation.transactionHash as Hex };
    }
    if (operation.status === 'REJECTED') return { state: 'failed', reason: 'venue_a rejected the withdrawal' };
    return { state: 'pending' };
  }

  /** The Stark key pair from the wallet's AccountCreation signature (account index 0); never kept. */
  private starkKey(wallet: VenueWallet): Promise<StarkKeyPair> {
    return deriveExtendedKeyPairWithWallet(wallet, this.options.signing, 0);
  }

  private async mainAccount(wallet: VenueWallet): Promise<AccountView> {
    const path = '/api/v1/user/accounts';
    const accounts = await this.call({ method: 'GET', path, headers: await this.l1Headers(wallet, path) });
    if (!Array.isArray(accounts)) throw new VenueAUnavailableError('venue_a answered the accounts list with something other than a list');
    const main = accounts.find((account: { accountIndex?: unknown }) => account?.accountIndex === 0);
    if (!main) throw new VenueRuleError('VENUE_ACCOUNT_MISSING', 'venue_a has no account for this wallet; initialise it first');
    return checkAccount(main);
  }

  private async issueApiKey(wallet: VenueWallet, accountId: number): Promise<string> {
    const path = '/api/v1/user/account/api-key';
    const created = (await this.call({
      method: 'POST',
      path,
      headers: await this.l1Headers(wallet, path, accountId),
      body: { description: API_KEY_DESCRIPTION },
    })) as { key?: unknown };
    if (typeof created?.key !== 'string' || created.key.length === 0) throw new VenueAUnavailableError('venue_a answered the API key request without a key');
    return created.key;
  }

  private async quote(headers: Record<string, string>, chainIn: string, chainOut: string, amount: bigint): Promise<{ id: string; fee: bigint }> {
    const quote = (await this.call({ method: 'GET', path: '/api/v1/user/bridge/quote', query: { chainIn, chainOut, amount: toDecimal(amount) }, headers })) as {
      id?: unknown;
      fee?: unknown;
    };
    const fee = fromDecimal(quote?.fee);
    if (typeof quote?.id !== 'string' || fee === undefined || fee < 0n)
      throw new VenueAUnavailableError('venue_a answered the bridge quote without an id and a fee');
    return { id: quote.id, fee };
  }

  private async l1Headers(wallet: VenueWallet, path: string, accountId?: number): Promise<Record<string, string>> {
    const signed = await signApiRequest(wallet, path, this.options.now());
    return {
      L1_SIGNATURE: signed.L1_SIGNATURE,
      L1_MESSAGE_TIME: signed.L1_MESSAGE_TIME,
      ...(accountId === undefined ? {} : { 'X-X10-ACTIVE-ACCOUNT': String(accountId) }),
    };
  }

  private apiKeyHeader(fields: VenueFields): Record<string, string> {
    if (typeof fields.api_key !== 'string' || fields.api_key.length === 0)
      throw new VenueRuleError('VENUE_ACCOUNT_MISSING', 'venue_a has no API key stored; initialise the account first');
    return { 'X-Api-Key': fields.api_key };
  }

  private call(request: VenueARequest): Promise<unknown> {
    return venueARequest(this.options.baseUrl, request, this.options.timeoutMs);
  }
}

/** A settlement salt from the idempotency key: the same key signs the same withdrawal (below 2^53, a JSON-safe integer). */
export function saltFromKey(key: string): bigint {
  return BigInt(keccak256(toHex(key))) % 2n ** 53n;
}

function checkAccount(value: unknown): AccountView {
  const account = value as Partial<AccountView> | undefined;
  if (
    typeof account?.id !== 'number' ||
    typeof account.l2Key !== 'string' ||
    (typeof account.l2Vault !== 'number' && typeof account.l2Vault !== 'string') ||
    typeof account.bridgeStarknetAddress !== 'string'
  ) {
    throw new VenueAUnavailableError('venue_a answered an account without id, l2Key, l2Vault and bridgeStarknetAddress');
  }
  return account as AccountView;
}

/** A balance decimal as base units; digits past the sixth are cut (the collateral's own precision). */
function decimalField(data: Record<string, unknown> | undefined, field: string): bigint {
  const raw = data?.[field];
  const text = typeof raw === 'number' && Number.isFinite(raw) ? String(raw) : raw;
  const match = typeof text === 'string' ? /^(-?[0-9]+)(?:\.([0-9]+))?$/.exec(text) : null;
  const value = match ? fromDecimal(`${match[1]}.${(match[2] ?? '0').slice(0, 6)}`) : undefined;
  if (value === undefined) throw new VenueAUnavailableError(`venue_a answered the balance without a decimal ${field}`);
  return value;
}
