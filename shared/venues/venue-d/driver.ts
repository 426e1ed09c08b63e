import { type Address, encodeFunctionData, erc20Abi, formatUnits, getAddress, type Hex, isHex, size, zeroAddress } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { DepositPlan, TradingSetup, VenueBalances, VenueDriver, VenueFields, VenueWallet, WithdrawalStatus } from '../driver.ts';
import { VenueRuleError } from '../driver.ts';
import { type PayoutWatch, PayoutWatcher, type TransferLogs } from '../payouts.ts';
import { VENUE_RULES } from '../rules.ts';
import {
  linkedSignerBytes32,
  linkSignerExecuteBody,
  linkSignerTypedData,
  NADO_ENDPOINT_ABI,
  NADO_INK_MAINNET,
  type NadoDomainConfig,
  PRIMARY_SUBACCOUNT_NAME,
  parseSubaccountSender,
  subaccountNameToBytes12,
  subaccountSender,
  withdrawCollateralExecuteBody,
  withdrawCollateralTypedData,
} from './signing.ts';

/**
 * venue_d's adapter (modelled on Nado, research §4), speaking Nado's gateway API at `baseUrl`
 * (`POST {baseUrl}/v1/query`, `POST {baseUrl}/v1/execute`): the local stand-in, or the live
 * gateway (https://gateway.prod.nado.xyz) when pointed at it. The options that differ between
 * the two are the chain facts, with Nado's live values as defaults: the local chains pass their
 * INK USDC as `collateral` (it stands in for USDT0, product 0).
 *
 * The venue account is the primary subaccount: `account_address` is its bytes32 `sender`
 * (owner address ‖ "default" as 12 bytes, hex), which the venue opens on the first deposit of at
 * least 5. Trading setup links a fresh signer key with the owner's LinkSigner signature; `name`
 * is our label for that key (LinkSigner itself carries no name, and a subaccount has one linked
 * signer). Withdrawals are signed by the user's wallet (the owner; the linked signer could too).
 *
 * Withdrawal idempotency: a WithdrawCollateral carries no client id and its nonce is the owner's
 * sequential tx nonce, so the venue cannot be asked "did key K withdraw?". This driver keeps the
 * signed request per idempotency key and a retry re-sends that same request, which the venue
 * executes at most once (its nonce is then used). The memory is per driver instance: a retry in
 * another process signs anew (see docs/venues/venue_d.md).
 *
 * Withdrawal status, as the live venue shows it (research E): the gateway has no per-withdrawal
 * query; the sequencer settles the request on Ink, where the WithdrawPool transfers the signed
 * amount of the collateral to the owner (no event of its own). That Transfer, after the request,
 * claimed once (shared/venues/payouts.ts), completes the withdrawal. The reference is
 * `<nonce>:<signed amount>`. A request the venue accepts and then drops shows nothing: it stays
 * pending until the caller's deadline.
 */
export interface VenueDDriverOptions {
  /** The gateway's origin, without `/v1` (live: https://gateway.prod.nado.xyz). */
  readonly baseUrl: string;
  /** Ink mainnet (57073) by default. */
  readonly chainId?: number;
  /** Nado's Endpoint on Ink by default: the deposit contract and the EIP-712 verifying contract. */
  readonly endpoint?: Address;
  /** Product 0's token: USDT0 on Ink by default; the local chains pass their INK USDC. */
  readonly collateral?: Address;
  /** Nado's WithdrawPool on Ink by default: where payouts come from. */
  readonly withdrawPool?: Address;
  /** Ink's Transfer logs (the account service's chain client): where payouts are seen. */
  readonly payouts: TransferLogs;
  /** Without a PayoutWatch, how far back a payout is looked for: 50,000 blocks. */
  readonly payoutLookbackBlocks?: bigint;
  readonly timeoutMs?: number;
}

/** The venue answered, and refused (`status: "failure"`, or a 4xx). */
export class VenueDRefusedError extends VenueRuleError {
  readonly errorCode: number | null;
  constructor(message: string, errorCode: number | null = null) {
    super('VENUE_REFUSED', `venue_d refused: ${message}`);
    this.errorCode = errorCode;
  }
}

/** The venue could not be reached or answered something unreadable. */
export class VenueDUnavailableError extends Error {
  readonly code = 'VENUE_UNAVAILABLE';
}

const RULES = VENUE_RULES.venue_d;
const X18_PER_UNIT = 10n ** 12n;
const QUOTE_PRODUCT_ID = NADO_INK_MAINNET.quoteProductId;
const MAX_NAME_LENGTH = 64;
const MAX_REMEMBERED_WITHDRAWALS = 1_000;

interface SubaccountInfo {
  readonly exists: boolean;
  readonly healths: readonly { readonly health: string }[];
  readonly spot_balances: readonly { readonly product_id: number; readonly balance: { readonly amount: string } }[];
}

export class VenueDDriver implements VenueDriver {
  readonly id = 'venue_d' as const;
  readonly rules = RULES;
  private readonly options: Required<VenueDDriverOptions>;
  private readonly domain: NadoDomainConfig;
  /** Signed withdraw_collateral requests by idempotency key (re-sent on a retry). */
  private readonly withdrawals = new Map<string, { reference: string; body: unknown }>();
  private readonly payouts: PayoutWatcher;

  constructor(options: VenueDDriverOptions) {
    this.options = {
      withdrawPool: NADO_INK_MAINNET.withdrawPool,
      payoutLookbackBlocks: 50_000n,
      chainId: NADO_INK_MAINNET.chainId,
      endpoint: NADO_INK_MAINNET.endpoint,
      collateral: NADO_INK_MAINNET.quote,
      timeoutMs: 10_000,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
    this.domain = { chainId: this.options.chainId, endpoint: getAddress(this.options.endpoint) };
    this.payouts = new PayoutWatcher(this.options.payouts, this.options.payoutLookbackBlocks);
  }

  /**
   * The primary subaccount's bytes32 sender. The venue is asked about it (so an unreachable venue
   * fails the onboarding) but opens it only on the first deposit of at least 5 ([O] N5).
   */
  async initAccount(wallet: VenueWallet): Promise<VenueFields> {
    const sender = subaccountSender(wallet.address, PRIMARY_SUBACCOUNT_NAME);
    await this.subaccountInfo(sender);
    return { account_address: sender };
  }

  async balances(wallet: VenueWallet, fields: VenueFields): Promise<VenueBalances> {
    const info = await this.subaccountInfo(senderOf(wallet, fields));
    if (!info.exists) return { balance: 0n, account_value: 0n, available_for_withdrawal: 0n };
    const quote = info.spot_balances.find((entry) => entry.product_id === QUOTE_PRODUCT_ID);
    const balance = fromX18(quote?.balance?.amount, 'spot_balances[0].balance.amount');
    // healths: [initial, maintenance, unweighted]; the unweighted health is the account value,
    // and what the initial health allows is what can leave (the engine's max withdrawable).
    const accountValue = fromX18(info.healths[2]?.health, 'healths[2].health');
    // Typed bigint: Math.min (which useMathMinMax would suggest) takes no bigints.
    const initial: bigint = fromX18(info.healths[0]?.health, 'healths[0].health');
    const available = balance < initial ? balance : initial;
    return { balance, account_value: accountValue, available_for_withdrawal: available > 0n ? available : 0n };
  }

  /**
   * Links a fresh signer key to the subaccount with the owner's LinkSigner signature. A
   * subaccount has one linked signer and a new link replaces the old one at the venue ([O] N8),
   * which `replace` (force_reinit) relies on; without `replace` an existing link is refused.
   */
  async initTrading(wallet: VenueWallet, fields: VenueFields, metadata: Readonly<Record<string, unknown>>, replace: boolean): Promise<TradingSetup> {
    const name = metadata.name;
    if (name !== undefined && name !== null && (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH)) {
      throw new VenueRuleError('INVALID_METADATA', `metadata.name: a string of 1 to ${MAX_NAME_LENGTH} characters`);
    }
    const sender = senderOf(wallet, fields);
    const info = await this.subaccountInfo(sender);
    if (!info.exists)
      throw new VenueRuleError('VENUE_ACCOUNT_NOT_FUNDED', 'venue_d opens the subaccount on its first deposit of at least 5; deposit before the trading setup');
    if (!replace) {
      const current = await this.linkedSigner(sender);
      if (current !== zeroAddress)
        throw new VenueRuleError('LINKED_SIGNER_EXISTS', `venue_d already has a linked signer ${current} for this subaccount; reinitialise to replace it`);
    }
    const key = generatePrivateKey();
    const signer = privateKeyToAddress(key);
    const tx = { sender, signer: linkedSignerBytes32(signer), nonce: await this.txNonce(wallet.address) };
    const signature = await wallet.signTypedData(linkSignerTypedData(this.domain, tx));
    await this.execute(linkSignerExecuteBody(tx, signature));
    return {
      stored: { trade_initialized: true, name: typeof name === 'string' ? name : null, linked_signer_address: signer },
      oneTime: { linked_signer_private_key: key },
    };
  }

  /**
   * approve(Endpoint, amount) on product 0's token, then Endpoint.depositCollateral(name, 0,
   * amount) ([O] N2, N4). The first deposit must open the subaccount (at least 5, [O] N5), later
   * ones meet the venue rules' minimum; below either it is refused before anything is prepared.
   */
  async prepareDeposit(wallet: VenueWallet, fields: VenueFields, amount: bigint): Promise<DepositPlan> {
    const sender = senderOf(wallet, fields);
    const info = await this.subaccountInfo(sender);
    const minimum = info.exists ? RULES.deposit.minimum : RULES.firstDepositMinimum;
    if (amount < minimum) {
      const what = info.exists ? 'a deposit' : 'the first deposit, which opens the subaccount,';
      throw new VenueRuleError(
        'BELOW_MINIMUM_DEPOSIT',
        `venue_d needs ${what} to be at least ${formatUnits(minimum, RULES.decimals)}; got ${formatUnits(amount, RULES.decimals)}`,
      );
    }
    const name = parseSubaccountSender(sender).name;
    return {
      chain: RULES.chain,
      calls: [
        {
          to: this.options.collateral,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [this.domain.endpoint, amount] }),
          label: 'approve the venue_d Endpoint',
        },
        {
          to: this.domain.endpoint,
          data: encodeFunctionData({
            abi: NADO_ENDPOINT_ABI,
            functionName: 'depositCollateral',
            args: [subaccountNameToBytes12(name), QUOTE_PRODUCT_ID, amount],
          }),
          label: 'venue_d Endpoint.depositCollateral',
        },
      ],
      expectedCredit: amount,
    };
  }

  /**
   * Withdraws `amount` from the venue balance: the venue's withdrawal fee (its `fee_rates`) is
   * charged on top of the signed amount, so the driver signs `amount - fee` and the wallet
   * receives that, as Nado's own app does ([O] N5 useWithdrawForm). The reference is the nonce
   * and that signed amount (`<nonce>:<amount>`): what the payout on chain will be.
   */
  async withdraw(wallet: VenueWallet, fields: VenueFields, amount: bigint, idempotencyKey: string): Promise<{ readonly reference: string }> {
    if (idempotencyKey.length === 0) throw new VenueRuleError('INVALID_IDEMPOTENCY_KEY', 'venue_d withdrawals need an idempotency key');
    if (amount < RULES.withdrawal.minimum) {
      throw new VenueRuleError(
        'BELOW_MINIMUM_WITHDRAWAL',
        `venue_d withdrawals must exceed the ${formatUnits(RULES.withdrawal.fee.amount, RULES.decimals)} withdrawal fee`,
      );
    }
    const sender = senderOf(wallet, fields);
    const remembered = this.withdrawals.get(idempotencyKey);
    if (remembered) {
      try {
        await this.execute(remembered.body);
      } catch (error) {
        // The nonce is used: by this very request on an earlier attempt (or the venue moved on; the status will say).
        if (!(error instanceof VenueDRefusedError && /nonce/i.test(error.message))) throw error;
      }
      return { reference: remembered.reference };
    }
    const fee = await this.withdrawalFee(sender);
    if (amount <= fee)
      throw new VenueRuleError('BELOW_MINIMUM_WITHDRAWAL', `venue_d withdrawals must exceed its ${formatUnits(fee, RULES.decimals)} withdrawal fee`);
    const tx = { sender, productId: QUOTE_PRODUCT_ID, amount: amount - fee, nonce: await this.txNonce(wallet.address) };
    const body = withdrawCollateralExecuteBody(tx, await wallet.signTypedData(withdrawCollateralTypedData(this.domain, tx)));
    const reference = `${tx.nonce}:${tx.amount}`;
    this.remember(idempotencyKey, { reference, body });
    await this.execute(body);
    return { reference };
  }

  /** The WithdrawPool's Transfer of the signed amount to the owner, after the request (see the class comment). */
  async withdrawalStatus(wallet: VenueWallet, fields: VenueFields, reference: string, watch?: PayoutWatch): Promise<WithdrawalStatus> {
    const signed = /^[0-9]{1,20}:([0-9]{1,39})$/.exec(reference)?.[1];
    if (signed === undefined) throw new VenueRuleError('INVALID_REFERENCE', `venue_d withdrawal references are <nonce>:<amount>, got "${reference}"`);
    const sender = senderOf(wallet, fields);
    const owner = parseSubaccountSender(sender).owner;
    return this.payouts.status(watch, `${sender}:${reference}`, {
      token: getAddress(this.options.collateral),
      from: getAddress(this.options.withdrawPool),
      to: owner,
      amount: BigInt(signed),
    });
  }

  /** Ink's head: recorded before a withdrawal is requested, its payout is looked for after it. */
  payoutBlock(): Promise<bigint> {
    return this.payouts.head();
  }

  private remember(key: string, entry: { reference: string; body: unknown }): void {
    if (this.withdrawals.size >= MAX_REMEMBERED_WITHDRAWALS) {
      const oldest = this.withdrawals.keys().next();
      if (!oldest.done) this.withdrawals.delete(oldest.value);
    }
    this.withdrawals.set(key, entry);
  }

  private async subaccountInfo(sender: Hex): Promise<SubaccountInfo> {
    const data = (await this.query({ type: 'subaccount_info', subaccount: sender })) as SubaccountInfo;
    if (typeof data?.exists !== 'boolean' || !Array.isArray(data.healths) || !Array.isArray(data.spot_balances)) {
      throw new VenueDUnavailableError('venue_d answered subaccount_info without exists, healths and spot_balances');
    }
    return data;
  }

  private async linkedSigner(sender: Hex): Promise<Address> {
    const data = (await this.query({ type: 'linked_signer', subaccount: sender })) as { linked_signer?: string };
    if (typeof data?.linked_signer !== 'string' || !isHex(data.linked_signer))
      throw new VenueDUnavailableError('venue_d answered linked_signer without an address');
    // An address, or a bytes32 whose first 20 bytes are the address.
    return getAddress(size(data.linked_signer as Hex) === 32 ? data.linked_signer.slice(0, 42) : data.linked_signer);
  }

  private async txNonce(owner: Address): Promise<bigint> {
    // A decimal string as @nadohq/engine-client types it; the API reference's example shows a number.
    const data = (await this.query({ type: 'nonces', address: owner.toLowerCase() })) as { tx_nonce?: unknown };
    const raw = typeof data?.tx_nonce === 'number' && Number.isSafeInteger(data.tx_nonce) ? String(data.tx_nonce) : data?.tx_nonce;
    if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw)) throw new VenueDUnavailableError('venue_d answered nonces without a tx_nonce');
    return BigInt(raw);
  }

  /** Product 0's withdrawal sequencer fee in base units (x18 on the wire), rounded up. */
  private async withdrawalFee(sender: Hex): Promise<bigint> {
    const data = (await this.query({ type: 'fee_rates', sender })) as { withdraw_sequencer_fees?: string[] };
    const raw = data?.withdraw_sequencer_fees?.[QUOTE_PRODUCT_ID];
    if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw)) throw new VenueDUnavailableError('venue_d answered fee_rates without withdraw_sequencer_fees[0]');
    return (BigInt(raw) + X18_PER_UNIT - 1n) / X18_PER_UNIT;
  }

  private async query(body: Record<string, unknown>): Promise<unknown> {
    const answer = await this.post('/v1/query', body);
    if (answer.status !== 'success') throw refusal(answer);
    return answer.data;
  }

  private async execute(body: unknown): Promise<void> {
    const answer = await this.post('/v1/execute', body);
    if (answer.status !== 'success') throw refusal(answer);
  }

  private async post(path: string, body: unknown): Promise<{ status?: string; data?: unknown; error?: unknown; error_code?: unknown }> {
    let response: Response;
    try {
      response = await fetch(`${this.options.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      throw new VenueDUnavailableError(`venue_d is unreachable (${(error as Error).name})`);
    }
    const text = await response.text();
    if (response.status >= 400 && response.status < 500) throw new VenueDRefusedError(text.slice(0, 300));
    if (!response.ok) throw new VenueDUnavailableError(`venue_d answered HTTP ${response.status}`);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new VenueDUnavailableError('venue_d answered something that is not JSON');
    }
    if (!json || typeof json !== 'object' || typeof (json as { status?: unknown }).status !== 'string')
      throw new VenueDUnavailableError('venue_d answered without a status');
    return json as { status: string };
  }
}

function refusal(answer: { error?: unknown; error_code?: unknown }): VenueDRefusedError {
  return new VenueDRefusedError(
    typeof answer.error === 'string' ? answer.error : JSON.stringify(answer).slice(0, 300),
    typeof answer.error_code === 'number' ? answer.error_code : null,
  );
}

/** The stored bytes32 sender, which must belong to this wallet (its first 20 bytes are the owner). */
function senderOf(wallet: VenueWallet, fields: VenueFields): Hex {
  const stored = fields.account_address;
  if (typeof stored !== 'string' || !isHex(stored) || size(stored) !== 32)
    throw new VenueRuleError('INVALID_ACCOUNT', 'venue_d account_address must be the 32-byte subaccount sender');
  if (parseSubaccountSender(stored).owner !== getAddress(wallet.address))
    throw new VenueRuleError('INVALID_ACCOUNT', 'venue_d account_address does not belong to this wallet');
  return stored.toLowerCase() as Hex;
}

/** An x18 amount as 6-decimal base units (truncated toward zero: the venue's own precision is finer). */
function fromX18(value: string | undefined, field: string): bigint {
  if (typeof value !== 'string' || !/^-?[0-9]+$/.test(value)) throw new VenueDUnavailableError(`venue_d answered subaccount_info without an integer ${field}`);
  return BigInt(value) / X18_PER_UNIT;
}
