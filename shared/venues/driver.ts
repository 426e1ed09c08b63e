import type { Address, Hex, TypedDataDefinition } from 'viem';
import type { VenueId } from './default-status.ts';

/**
 * The account service's port to one perpetual-trading venue (issue 10). One adapter per venue
 * (shared/venues/<venue>/driver.ts) speaks that venue's own HTTP API at a configured base URL
 * (VENUE_URLS): the sandbox venues locally (infra/local/venues/), the live venue when pointed at
 * it. Adapters hold no sandbox-only shortcut and read no field only a sandbox writes: the base URL
 * (and chain facts such as a token address) is the only difference.
 *
 * Amounts are bigint base units of the venue's token (`rules.decimals`); wire formats (decimal
 * strings, x18 fixed point, 8-decimal Starknet amounts) are the adapter's business.
 */
export interface VenueDriver {
  readonly id: VenueId;
  /** What the venue publishes (or, where research says unknown, the sandbox's marked choice). */
  readonly rules: VenueRules;

  /**
   * Creates the user's account at the venue (or finds it: venues' onboarding calls are
   * idempotent per wallet) and returns the venue fields to store in `perp_dex_status[id]`
   * (spec, Account: venue_a `account_id`, `vault`, `stark_public_key`, `api_key`; venue_b
   * `account_address`; venue_c `l2_address`, `l2_public_key`; venue_d `account_address`; venue_e
   * `proxy_wallet_address`, `service_wallet_address`). Never a private key.
   */
  initAccount(wallet: VenueWallet, metadata: Readonly<Record<string, unknown>>): Promise<VenueFields>;

  /** Balances at the venue, read from the venue's own balance endpoint. */
  balances(wallet: VenueWallet, fields: VenueFields): Promise<VenueBalances>;

  /**
   * The trading setup (venue_b ApproveAgent [+ ApproveBuilderFee]; venue_a Stark key + API key;
   * venue_c subkey; venue_d LinkSigner; venue_e CLOB API credentials). `stored` is the credential
   * metadata kept in `perp_dex_status[id]` (no secret); `oneTime` holds what the caller gets once
   * (`agent_private_key`, `stark_private_key`, `subkey_private_key`, `linked_signer_private_key`,
   * venue_e's CLOB credentials) and is never stored or logged. With `replace`, the previous
   * trading key is revoked at the venue (force_reinit).
   */
  initTrading(wallet: VenueWallet, fields: VenueFields, metadata: Readonly<Record<string, unknown>>, replace: boolean): Promise<TradingSetup>;

  /**
   * The on-chain calls that deposit `amount` from the user's wallet to the venue (the venue's
   * real mechanism: a plain transfer to its bridge, approve + deposit call, a committed bridge
   * quote + deposit, a transfer to the proxy wallet). The caller sends them in order through
   * the exactly-once sender (shared/chains/sender/). Refuses (VenueRuleError) an amount below
   * the venue's minimum before anything is prepared.
   */
  prepareDeposit(wallet: VenueWallet, fields: VenueFields, amount: bigint): Promise<DepositPlan>;

  /**
   * Asks the venue to pay `amount` out to the user's own wallet on `rules.chain` (the venue's
   * signed request). `reference` identifies the withdrawal at the venue for `withdrawalStatus`;
   * calling again with the same `idempotencyKey` must not withdraw twice.
   */
  withdraw(wallet: VenueWallet, fields: VenueFields, amount: bigint, idempotencyKey: string): Promise<{ readonly reference: string }>;

  /**
   * Where the withdrawal stands, from what the live venue shows: its own API, or the payout on
   * chain. Drivers that find the payout on chain (venue_b, venue_d: shared/venues/payouts.ts) look
   * from `watch.fromBlock` and claim the log they match through `watch.claim`, so one payout never
   * completes two withdrawals; without `watch` they look back `payoutLookbackBlocks` and claim in
   * process.
   */
  withdrawalStatus(wallet: VenueWallet, fields: VenueFields, reference: string, watch?: PayoutWatch): Promise<WithdrawalStatus>;

  /**
   * The head block of the chain the payouts arrive on, for drivers that watch the chain: the
   * caller records it before the first request and passes it back as `watch.fromBlock`.
   */
  payoutBlock?(): Promise<bigint>;
}

/** The user's EVM wallet as a driver sees it: signatures through the enclave (the account service's signing path). */
export interface VenueWallet {
  readonly address: Address;
  signTypedData(typedData: TypedDataDefinition): Promise<Hex>;
  /** EIP-191 personal_sign of a UTF-8 message. */
  signMessage(message: string): Promise<Hex>;
}

/** Venue fields as stored in `perp_dex_status[venue]` (JSON values only). */
export type VenueFields = Readonly<Record<string, string | number | boolean | null>>;

export interface TradingSetup {
  readonly stored: VenueFields;
  readonly oneTime: Readonly<Record<string, string>>;
}

export interface VenueBalances {
  readonly balance: bigint;
  readonly account_value: bigint;
  readonly available_for_withdrawal: bigint;
  /** venue_e: USDC.e and pUSD held by the proxy wallet, read on chain. */
  readonly extra?: Readonly<Record<string, bigint>>;
}

export interface DepositPlan {
  readonly chain: EvmChainCode;
  readonly calls: readonly { readonly to: Address; readonly data: Hex; readonly value?: bigint; readonly label: string }[];
  /** The venue's id for this deposit where it has one (venue_a's committed quote id). */
  readonly reference?: string;
  /** What the venue will credit once it sees the deposit on chain (amount minus any deposit fee). */
  readonly expectedCredit: bigint;
}

export type WithdrawalStatus =
  | { readonly state: 'pending' }
  /** `logIndex`: the payout's Transfer log in `txHash`, where the payout was found on chain. */
  | { readonly state: 'completed'; readonly txHash: Hex; readonly logIndex?: number }
  | { readonly state: 'failed'; readonly reason: string };

export type EvmChainCode = 'ETH' | 'ARB' | 'POL' | 'INK';

/**
 * One direction (deposit or withdrawal) of the venue's transfer rules, in base units. Serialised
 * to the spec's `transfer_rules` (`supported`, `minimum_amount`, `fee { amount, token, fee_type,
 * note }`, `note`) by the endpoint.
 */
export interface DirectionRule {
  readonly supported: boolean;
  readonly minimum: bigint;
  readonly fee: { readonly amount: bigint; readonly token: string; readonly feeType: 'none' | 'fixed' | 'quote'; readonly note: string | null };
  readonly note: string | null;
}

export interface VenueRules {
  readonly venue: VenueId;
  readonly chain: EvmChainCode;
  /** Token code in the chains config (`USDC`, `USDC.E`). */
  readonly token: string;
  readonly decimals: number;
  readonly deposit: DirectionRule;
  readonly withdrawal: DirectionRule;
  /** Native coin the deposit call itself sends, besides gas (venue_c: the L1 bridge's message fee); absent = none. */
  readonly depositNativeValue?: bigint;
  /** The first deposit's minimum (requirements' `usdc_required`). */
  readonly firstDepositMinimum: bigint;
}

/** A venue rule refused the request before anything was sent (below a minimum, unsupported direction). */
export class VenueRuleError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Takes one payout log for one withdrawal: true when this withdrawal holds it (now or from an
 * earlier look), false when another withdrawal does.
 */
export type PayoutClaim = (log: { readonly txHash: Hex; readonly logIndex: number }) => Promise<boolean>;

/** Where a withdrawal's payout is looked for: blocks from `fromBlock` (the head before the request), claimed through `claim`. */
export interface PayoutWatch {
  readonly fromBlock: bigint;
  readonly claim: PayoutClaim;
}
