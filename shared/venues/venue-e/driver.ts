import { type Address, encodeFunctionData, erc20Abi, formatUnits, getAddress, type Hex, isAddress } from 'viem';
import type { DepositPlan, TradingSetup, VenueBalances, VenueDriver, VenueFields, VenueWallet, WithdrawalStatus } from '../driver.ts';
import { VenueRuleError } from '../driver.ts';
import { VENUE_RULES } from '../rules.ts';
import { BRIDGE_URL, POLY_PROXY_SIGNATURE_TYPE, POLYGON_USDC_E, PUSD, withdrawalIdOf, withdrawTypedData } from './bridge.ts';
import { type ClobApiCredentials, createL1Headers, createL2Headers, POLYGON_CHAIN_ID, proxyWalletAddress } from './signing.ts';

/**
 * venue_e's adapter (modelled on Polymarket, research §5), speaking Polymarket's CLOB API at
 * `baseUrl` (`/auth/api-key`, `/auth/derive-api-key`, `/balance-allowance`) and its Bridge API at
 * `bridgeUrl` (`/withdraw`, `/status/{address}`), and reading the proxy wallet's USDC.e and pUSD
 * on Polygon through `polygonBalanceOf` (the account service's Polygon client). Locally both URLs are the local stand-in's; live they are
 * https://clob.polymarket.com and https://bridge.polymarket.com.
 *
 * - Account: the Polymarket Proxy wallet of the user's EOA (published CREATE2 derivation) and,
 *   as `service_wallet_address`, that EOA itself: this service's wallet for the user, which owns
 *   the proxy, signs ClobAuth (POLY_ADDRESS) and would sign orders (maker = proxy, signer = EOA,
 *   signature type 1). No venue call: the proxy is counterfactual until the relayer deploys it,
 *   and a transfer to its address is already a deposit.
 * - Trading setup: CLOB API credentials created with the owner's ClobAuth signature for a nonce.
 *   Stored: `clob_api_key` (the key id, not a secret) and `clob_api_nonce`; returned once:
 *   `clob_api_key`, `clob_secret`, `clob_passphrase`. No private key is made ([I] research §5.3).
 *   Replacing derives the old key (L1, same nonce), deletes it (`DELETE /auth/api-key`, L2) and
 *   creates a key for the next nonce, so the old credentials stop working.
 * - Balance: `GET /balance-allowance?asset_type=COLLATERAL` with L2 headers once the credentials
 *   exist (derived again with an L1 signature: the secret is never stored); before that, the
 *   proxy's pUSD on chain (what the CLOB counts).
 * - Withdrawal: not live. `POST /withdraw` signed by the owner (bridge.ts) is the local
 *   stand-in's shortcut; live, Polymarket's Bridge API answers with a one-time address the owner
 *   must send pUSD to out of the proxy wallet. The venue rules mark venue_e withdrawals
 *   unsupported, so no transfer route reaches `withdraw` (422 VENUE_WITHDRAWAL_UNSUPPORTED).
 */
export interface VenueEDriverOptions {
  /** The CLOB API. */
  readonly baseUrl: string;
  /** The Bridge API; https://bridge.polymarket.com by default (the local stand-in serves both on one URL). */
  readonly bridgeUrl?: string;
  /** Reads an ERC-20 balance on Polygon (the account service's chains, whose RPC URL may come from a secret): the proxy wallet's on-chain balances. */
  readonly polygonBalanceOf: (token: Address, owner: Address) => Promise<bigint>;
  readonly usdcE?: Address;
  readonly pusd?: Address;
  readonly now?: () => number;
  readonly timeoutMs?: number;
}

/** The venue answered, and refused (4xx). */
export class VenueERefusedError extends VenueRuleError {
  readonly status: number;
  constructor(status: number, message: string) {
    super('VENUE_REFUSED', `venue_e refused: ${message}`);
    this.status = status;
  }
}

/** The venue (or the Polygon RPC) could not be reached or answered something unreadable. */
export class VenueEUnavailableError extends Error {
  readonly code = 'VENUE_UNAVAILABLE';
}

const RULES = VENUE_RULES.venue_e;

export class VenueEDriver implements VenueDriver {
  readonly id = 'venue_e' as const;
  readonly rules = RULES;
  private readonly options: Required<Omit<VenueEDriverOptions, 'polygonBalanceOf'>>;
  private readonly readBalance: (token: Address, owner: Address) => Promise<bigint>;

  constructor(options: VenueEDriverOptions) {
    const { polygonBalanceOf: _reader, ...rest } = options;
    const bridgeUrl = (options.bridgeUrl ?? BRIDGE_URL).replace(/\/+$/, '');
    this.options = { usdcE: POLYGON_USDC_E, pusd: PUSD, now: Date.now, timeoutMs: 10_000, ...rest, bridgeUrl, baseUrl: options.baseUrl.replace(/\/+$/, '') };
    // The chain reader comes from the caller (the account service's own Polygon client): a driver
    // building a viem public client would carry every public action into the function bundles.
    if (!options.polygonBalanceOf) throw new Error('VenueEDriver needs polygonBalanceOf');
    this.readBalance = options.polygonBalanceOf;
  }

  async initAccount(wallet: VenueWallet): Promise<VenueFields> {
    const owner = getAddress(wallet.address);
    return { proxy_wallet_address: proxyWalletAddress(owner), service_wallet_address: owner };
  }

  async balances(wallet: VenueWallet, fields: VenueFields): Promise<VenueBalances> {
    const proxy = proxyOf(wallet, fields);
    const [usdcE, pusd] = await Promise.all([this.balanceOf(this.options.usdcE, proxy), this.balanceOf(this.options.pusd, proxy)]);
    let collateral = pusd;
    const nonce = nonceOf(fields);
    if (typeof fields.clob_api_key === 'string' && nonce !== undefined) {
      const credentials = await this.derive(wallet, nonce);
      const answer = (await this.l2(wallet, credentials, 'GET', '/balance-allowance', {
        asset_type: 'COLLATERAL',
        signature_type: String(POLY_PROXY_SIGNATURE_TYPE),
      })) as { balance?: unknown };
      if (typeof answer?.balance !== 'string' || !/^\d+$/.test(answer.balance))
        throw new VenueEUnavailableError('venue_e answered /balance-allowance without a base-unit balance');
      collateral = BigInt(answer.balance);
    }
    return {
      balance: collateral,
      account_value: collateral,
      available_for_withdrawal: collateral,
      extra: { proxy_wallet_usdc_e: usdcE, proxy_wallet_pusd: pusd },
    };
  }

  async initTrading(wallet: VenueWallet, fields: VenueFields, _metadata: Readonly<Record<string, unknown>>, replace: boolean): Promise<TradingSetup> {
    const stored = nonceOf(fields);
    let nonce = stored ?? 0n;
    if (replace) {
      const old = await this.derive(wallet, nonce).catch((error: unknown) => {
        // None at the venue (never made, or deleted earlier): nothing to revoke.
        if (error instanceof VenueERefusedError && error.status === 400) return undefined;
        throw error;
      });
      if (old) await this.l2(wallet, old, 'DELETE', '/auth/api-key');
      if (old || stored !== undefined) nonce += 1n;
    }
    const credentials = await this.createOrDerive(wallet, nonce);
    return {
      stored: { trade_initialized: true, clob_api_key: credentials.apiKey, clob_api_nonce: nonce.toString() },
      // The key id is stored (not a secret: it names the credentials); secret and passphrase are shown once.
      oneTime: { clob_secret: credentials.secret, clob_passphrase: credentials.passphrase },
    };
  }

  /** A plain USDC.e transfer to the user's proxy wallet on Polygon; below the $2 minCheckoutUsd it is refused. */
  async prepareDeposit(wallet: VenueWallet, fields: VenueFields, amount: bigint): Promise<DepositPlan> {
    if (amount < RULES.deposit.minimum) {
      throw new VenueRuleError(
        'BELOW_MINIMUM_DEPOSIT',
        `venue_e deposits must be at least ${formatUnits(RULES.deposit.minimum, RULES.decimals)} USDC.e (Polygon minCheckoutUsd); got ${formatUnits(amount, RULES.decimals)}`,
      );
    }
    const proxy = proxyOf(wallet, fields);
    return {
      chain: RULES.chain,
      calls: [
        {
          to: this.options.usdcE,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [proxy, amount] }),
          label: 'USDC.e transfer to the venue_e proxy wallet',
        },
      ],
      expectedCredit: amount,
    };
  }

  async withdraw(wallet: VenueWallet, fields: VenueFields, amount: bigint, idempotencyKey: string): Promise<{ readonly reference: string }> {
    if (amount < RULES.withdrawal.minimum) {
      throw new VenueRuleError(
        'BELOW_MINIMUM_WITHDRAWAL',
        `venue_e withdrawals must be at least ${formatUnits(RULES.withdrawal.minimum, RULES.decimals)} USDC.e`,
      );
    }
    if (idempotencyKey.length === 0) throw new VenueRuleError('INVALID_IDEMPOTENCY_KEY', 'venue_e withdrawals need an idempotency key');
    const proxy = proxyOf(wallet, fields);
    const recipient = getAddress(wallet.address);
    const withdrawalId = withdrawalIdOf(idempotencyKey);
    const toChainId = BigInt(POLYGON_CHAIN_ID);
    const signature = await wallet.signTypedData(
      withdrawTypedData({ proxyWallet: proxy, recipientAddr: recipient, toChainId, toTokenAddress: this.options.usdcE, amount, withdrawalId }),
    );
    const answer = (await this.request(this.options.bridgeUrl, 'POST', '/withdraw', {
      body: {
        address: proxy,
        toChainId: toChainId.toString(),
        toTokenAddress: this.options.usdcE,
        recipientAddr: recipient,
        amount: amount.toString(),
        withdrawalId,
        signature,
      },
    })) as { address?: { evm?: unknown } };
    const reference = answer?.address?.evm;
    if (typeof reference !== 'string' || !isAddress(reference, { strict: false }))
      throw new VenueEUnavailableError('venue_e answered /withdraw without an EVM address');
    return { reference: getAddress(reference) };
  }

  async withdrawalStatus(_wallet: VenueWallet, _fields: VenueFields, reference: string): Promise<WithdrawalStatus> {
    if (!isAddress(reference, { strict: false }))
      throw new VenueRuleError('INVALID_REFERENCE', `venue_e withdrawal references are bridge addresses, got "${reference}"`);
    const answer = (await this.request(this.options.bridgeUrl, 'GET', `/status/${reference}`)) as { transactions?: { status?: string; txHash?: string }[] };
    if (!Array.isArray(answer?.transactions)) throw new VenueEUnavailableError('venue_e answered /status without transactions');
    const latest = answer.transactions[0];
    if (!latest) return { state: 'failed', reason: 'venue_e has no withdrawal at this reference' };
    if (latest.status === 'COMPLETED' && typeof latest.txHash === 'string') return { state: 'completed', txHash: latest.txHash as Hex };
    if (latest.status === 'FAILED') return { state: 'failed', reason: 'venue_e reports the withdrawal FAILED' };
    return { state: 'pending' };
  }

  private async createOrDerive(wallet: VenueWallet, nonce: bigint): Promise<ClobApiCredentials> {
    try {
      return credentialsFrom(await this.request(this.options.baseUrl, 'POST', '/auth/api-key', { headers: await this.l1(wallet, nonce) }));
    } catch (error) {
      // The CLOB refuses a second key for the same nonce; the client then derives it (createOrDeriveApiKey).
      if (error instanceof VenueERefusedError && error.status === 400) return this.derive(wallet, nonce);
      throw error;
    }
  }

  private async derive(wallet: VenueWallet, nonce: bigint): Promise<ClobApiCredentials> {
    return credentialsFrom(await this.request(this.options.baseUrl, 'GET', '/auth/derive-api-key', { headers: await this.l1(wallet, nonce) }));
  }

  private async l1(wallet: VenueWallet, nonce: bigint): Promise<Record<string, string>> {
    return createL1Headers(wallet, { timestamp: Math.floor(this.options.now() / 1000), nonce, chainId: POLYGON_CHAIN_ID });
  }

  /** An L2-authenticated CLOB call: the HMAC covers the path without its query, as the clob-client signs. */
  private async l2(wallet: VenueWallet, credentials: ClobApiCredentials, method: string, path: string, query?: Record<string, string>): Promise<unknown> {
    const headers = createL2Headers(getAddress(wallet.address), credentials, { timestamp: Math.floor(this.options.now() / 1000), method, requestPath: path });
    return this.request(this.options.baseUrl, method, path, { headers, query });
  }

  private async balanceOf(token: Address, owner: Address): Promise<bigint> {
    try {
      return await this.readBalance(token, owner);
    } catch (error) {
      throw new VenueEUnavailableError(`venue_e: the Polygon RPC did not answer balanceOf (${(error as Error).name})`);
    }
  }

  private async request(
    base: string,
    method: string,
    path: string,
    input: { headers?: Record<string, string>; query?: Record<string, string>; body?: unknown } = {},
  ): Promise<unknown> {
    const url = `${base}${path}${input.query ? `?${new URLSearchParams(input.query)}` : ''}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: { ...(input.body === undefined ? {} : { 'content-type': 'application/json' }), ...input.headers },
        body: input.body === undefined ? undefined : JSON.stringify(input.body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      throw new VenueEUnavailableError(`venue_e is unreachable (${(error as Error).name})`);
    }
    const text = await response.text();
    if (response.status >= 400 && response.status < 500) {
      let message = text.slice(0, 300);
      try {
        const parsed = JSON.parse(text) as { error?: unknown };
        if (typeof parsed?.error === 'string') message = parsed.error;
      } catch {
        // Not JSON: the raw text is the message.
      }
      throw new VenueERefusedError(response.status, message);
    }
    if (!response.ok) throw new VenueEUnavailableError(`venue_e answered HTTP ${response.status}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new VenueEUnavailableError('venue_e answered something that is not JSON');
    }
  }
}

function credentialsFrom(answer: unknown): ClobApiCredentials {
  const { apiKey, secret, passphrase } = (answer ?? {}) as Record<string, unknown>;
  if (typeof apiKey !== 'string' || typeof secret !== 'string' || typeof passphrase !== 'string' || !apiKey || !secret || !passphrase) {
    throw new VenueEUnavailableError('venue_e answered without apiKey, secret and passphrase');
  }
  return { apiKey, secret, passphrase };
}

function proxyOf(wallet: VenueWallet, fields: VenueFields): Address {
  const stored = fields.proxy_wallet_address;
  return typeof stored === 'string' && isAddress(stored, { strict: false }) ? getAddress(stored) : proxyWalletAddress(getAddress(wallet.address));
}

function nonceOf(fields: VenueFields): bigint | undefined {
  const nonce = fields.clob_api_nonce;
  return typeof nonce === 'string' && /^\d{1,78}$/.test(nonce) ? BigInt(nonce) : undefined;
}
