import * as v from 'valibot';
import { type Address, encodeFunctionData, getAddress, type Hex, isHex, size, slice, zeroAddress } from 'viem';
import { VENUE_RULES } from '../../../shared/venues/rules.ts';
import {
  linkSignerTypedData,
  NADO_ENDPOINT_ABI,
  NADO_INK_MAINNET,
  type NadoDomainConfig,
  parseSubaccountSender,
  recoverNadoSigner,
  withdrawCollateralTypedData,
} from '../../../shared/venues/venue-d/signing.ts';
import { sandboxNadoEndpointArtifact } from '../contracts/sandbox-nado-endpoint.artifact.ts';
import type { VenueHost, VenueModule, VenueRequest, VenueResponse, VenueState } from './framework.ts';

/**
 * The sandbox venue_d, modelled on Nado (research §4). It speaks a subset of Nado's gateway API
 * (`https://gateway.prod.nado.xyz/v1`): `POST /v1/execute` with `link_signer` and
 * `withdraw_collateral`, and `POST /v1/query` (or `GET /v1/query?type=…`) with `nonces`,
 * `subaccount_info`, `linked_signer` and `fee_rates`. Answers are HTTP 200 `{ status: "success",
 * data, … }` or `{ status: "failure", error, error_code, … }` as @nadohq/engine-client reads them.
 *
 * Deposits: the Endpoint at Nado's real address on the INK sandbox chain
 * (SandboxNadoEndpoint: approve, then `depositCollateral(bytes12 name, 0, amount)`); its
 * `DepositCollateral` log credits the subaccount owner ‖ name. The first deposit that opens a
 * subaccount must be at least 5 ([O] N5); the sandbox returns a smaller one to the depositor
 * on chain and opens nothing (sandbox choice: what the live venue does is unknown). Balances are
 * x18 on the wire, base units of the token inside.
 *
 * Executes are verified as the engine does: the EIP-712 signature over the exact typed data
 * (domain Nado / 0.0.1 / chain id / Endpoint) must recover the subaccount owner (link_signer,
 * withdraw_collateral) or its linked signer (withdraw_collateral only, [O] N8), and the nonce
 * must be the owner's current tx nonce (the `nonces` query), used once.
 *
 * Withdrawals: `amount` is what arrives (base units); the per-product sequencer fee is debited on
 * top ([O] N5 useWithdrawForm: "the amount in tx is exclusive" of the fee), and the amount is paid
 * on INK from Nado's WithdrawPool address (a SandboxPayoutPool there, the framework's
 * `payoutContract`) to the subaccount owner: the same token Transfer as Nado's
 * `submitWithdrawal` (research E). No query beyond Nado's own: the driver sees the payout on
 * chain. A withdrawal the `refund` fault returns is never paid, and nothing shows it failed (the
 * live gateway has no per-withdrawal query either).
 */
const RULES = VENUE_RULES.venue_d;
const X18_PER_UNIT = 10n ** 12n; // 6-decimal token units to x18
const QUOTE_PRODUCT_ID = 0;
const DEPOSIT_EVENT = NADO_ENDPOINT_ABI.find((item) => item.type === 'event' && item.name === 'DepositCollateral')!;
const LINKS_PER_WEEK = 50;
const WEEK_MS = 7 * 24 * 60 * 60 * 1000;
/** "To enable a linked signer, your subaccount must have a minimum of 5 USDT0 worth in account value" (docs.nado.xyz Link Signer; [O] N5). */
const LINK_MINIMUM_VALUE = 5n * 10n ** 6n;

/**
 * Nado's error codes (docs.nado.xyz, API reference "Errors"), the ones this subset can answer.
 * Which code a malformed query gets is the sandbox's choice (the reference lists none for it).
 */
export const VENUE_D_ERROR = {
  zeroAmount: 2002,
  invalidProductId: 2016,
  spotExecuteExceedsBorrowLimit: 2017,
  invalidNonce: 2022,
  noPriorDeposit: 2024,
  singleSignatureInsufficientAccountValue: 2025,
  signatureLength: 2027,
  invalidSigner: 2028,
  linkedSignerUpdateLimitExceeded: 2030,
  subaccountHealthTooLow: 2036,
  invalidExecuteMessage: 2038,
  notImplemented: 4001,
  internalError: 5000,
} as const;

interface WithdrawalRecord {
  readonly nonce: string;
  readonly amount: string;
  readonly fee: string;
  readonly signer: Address;
  readonly time: number;
  /** The vault payout id, or why there is none. */
  readonly payout?: string;
  readonly refused?: string;
}

interface SubaccountRecord {
  /** Product 0 balance in base units of the token (6 decimals). */
  balance: string;
  /** The linked signer's address; null when none (or revoked with the zero address). */
  linkedSigner: Address | null;
  /** When link_signer executes were accepted (ms): at most 50 in 7 days ([O] N5). */
  links: number[];
  /** By nonce. */
  withdrawals: Record<string, WithdrawalRecord>;
}

export interface VenueDState {
  /** By lower-case bytes32 sender (owner ‖ name). */
  subaccounts: Record<string, SubaccountRecord>;
  /** The next tx nonce per lower-case owner address (decimal string); absent = 0. */
  txNonces: Record<string, string>;
  /** The bytes32 sender of each DepositCollateral log, by txHash:logIndex, from decodeDeposit until credit. */
  depositSenders: Record<string, Hex>;
}

type Host = VenueHost<VenueDState>;
type Draft = VenueState<VenueDState>;

const Bytes32 = v.pipe(
  v.string(),
  v.check((s) => isHex(s) && size(s as Hex) === 32, 'must be 32 bytes of hex'),
  v.transform((s) => s.toLowerCase() as Hex),
);
const Signature = v.pipe(
  v.string(),
  v.regex(/^0x[0-9a-fA-F]*$/, 'must be hex'),
  v.transform((s) => s as Hex),
);
/** Integers travel as decimal strings (getNadoEIP712Values). */
const Uint = v.pipe(
  v.string(),
  v.regex(/^[0-9]{1,39}$/, 'must be an unsigned integer as a decimal string'),
  v.transform((s): bigint => BigInt(s)),
);
const AddressString = v.pipe(
  v.string(),
  v.regex(/^0x[0-9a-fA-F]{40}$/, 'must be an address'),
  v.transform((s) => getAddress(s)),
);

const LinkSignerExecute = v.object({ tx: v.object({ sender: Bytes32, signer: Bytes32, nonce: Uint }), signature: Signature });
const WithdrawExecute = v.object({
  tx: v.object({ sender: Bytes32, productId: v.pipe(v.number(), v.safeInteger(), v.minValue(0)), amount: Uint, nonce: Uint }),
  signature: Signature,
  spot_leverage: v.optional(v.nullable(v.boolean())),
});

const Query = v.variant('type', [
  v.object({ type: v.literal('nonces'), address: AddressString }),
  v.object({ type: v.literal('subaccount_info'), subaccount: Bytes32 }),
  v.object({ type: v.literal('linked_signer'), subaccount: Bytes32 }),
  v.object({ type: v.literal('fee_rates'), sender: Bytes32 }),
]);

export function venueDModule(): VenueModule<VenueDState> {
  return {
    id: 'venue_d',
    rules: RULES,
    depositAddress: NADO_INK_MAINNET.endpoint,
    payoutContract: NADO_INK_MAINNET.withdrawPool,
    watch: { address: NADO_INK_MAINNET.endpoint, event: DEPOSIT_EVENT },
    initialState: () => ({ subaccounts: {}, txNonces: {}, depositSenders: {} }),
    install,
    decodeDeposit: (log, state) => {
      const { sender, productId, amount } = log.args as { sender?: Hex; productId?: number; amount?: bigint };
      if (!sender || productId !== QUOTE_PRODUCT_ID || typeof amount !== 'bigint') return undefined;
      // The framework keys deposits by txHash:logIndex and hands credit() only depositor and
      // amount: the subaccount name rides along in the venue state until credit() takes it.
      const { transactionHash, logIndex } = log as unknown as { transactionHash: Hex; logIndex: number };
      state.depositSenders[`${transactionHash}:${logIndex}`] = sender.toLowerCase() as Hex;
      return { depositor: parseSubaccountSender(sender).owner, amount };
    },
    credit: (draft, deposit, host) => {
      const sender = draft.venue.depositSenders[deposit.key];
      delete draft.venue.depositSenders[deposit.key];
      if (!sender) return false;
      const existing = draft.venue.subaccounts[sender];
      // A subaccount opens with at least 5 ([O] N5); later deposits at least the sandbox's minimum.
      const minimum = existing ? RULES.deposit.minimum : RULES.firstDepositMinimum;
      if (deposit.amount < minimum) {
        // Sandbox choice: returned to the depositor on chain, nothing opened or credited.
        host.pay(draft, { id: `below-minimum:${deposit.key}`, to: deposit.depositor, token: quoteToken(host), amount: deposit.amount });
        return false;
      }
      let account = existing;
      if (!account) {
        account = { balance: '0', linkedSigner: null, links: [], withdrawals: {} };
        draft.venue.subaccounts[sender] = account;
      }
      account.balance = (BigInt(account.balance) + deposit.amount).toString();
      return true;
    },
    handle,
  };
}

/** The Endpoint at Nado's real address, once: code by anvil_setCode, then initialize(quote, vault). */
async function install(host: Host): Promise<void> {
  const endpoint = NADO_INK_MAINNET.endpoint;
  const code = (await host.rpc('eth_getCode', [endpoint, 'latest'])) as Hex;
  if (code === '0x' || code === '0x0') await host.rpc('anvil_setCode', [endpoint, sandboxNadoEndpointArtifact.deployedBytecode]);
  const initialized = await host.client.readContract({ address: endpoint, abi: sandboxNadoEndpointArtifact.abi, functionName: 'initialized' });
  if (!initialized) {
    await host.sendFromVault({
      to: endpoint,
      data: encodeFunctionData({ abi: sandboxNadoEndpointArtifact.abi, functionName: 'initialize', args: [quoteToken(host), host.vaultAddress] }),
    });
  }
}

function quoteToken(host: Host): Address {
  return getAddress(host.chain.tokens[RULES.token as 'USDC']!.address as string);
}

function domain(host: Host): NadoDomainConfig {
  return { chainId: host.chain.chain_id, endpoint: NADO_INK_MAINNET.endpoint };
}

async function handle(request: VenueRequest, host: Host): Promise<VenueResponse> {
  if (request.path === '/v1/query' && request.method === 'GET') return { status: 200, body: query(request.query, host) };
  if (request.method !== 'POST' || (request.path !== '/v1/query' && request.path !== '/v1/execute')) return { status: 404, body: 'Not Found' };
  let json: unknown;
  try {
    json = JSON.parse(request.body);
  } catch {
    return { status: 400, body: 'Invalid JSON body' };
  }
  if (request.path === '/v1/query') return { status: 200, body: query(json, host) };
  return { status: 200, body: await execute(json, host) };
}

// --- queries -----------------------------------------------------------------------------------

const success = (requestType: string, data: unknown) => ({ status: 'success', data, request_type: requestType });
const failure = (requestType: string, error: string, code: number, signature: string | null = null) => ({
  status: 'failure',
  signature,
  error,
  error_code: code,
  request_type: requestType,
});

function query(input: unknown, host: Host): unknown {
  const type = typeof (input as { type?: unknown })?.type === 'string' ? (input as { type: string }).type : 'unknown';
  const parsed = v.safeParse(Query, input);
  if (!parsed.success) {
    return failure(`query_${type}`, `Invalid ${type} query: ${parsed.issues[0].message}`, VENUE_D_ERROR.invalidExecuteMessage); // sandbox choice of code
  }
  const state = host.read().venue;
  const q = parsed.output;
  switch (q.type) {
    case 'nonces':
      // tx_nonce "increments by one each time a successful execute goes through"; order_nonce is
      // "the current timestamp in milliseconds plus 100000 multiplied by 2**20" (docs.nado.xyz, Nonces).
      // Both as decimal strings, as @nadohq/engine-client types them (the docs' example shows numbers).
      return success('query_nonces', {
        tx_nonce: state.txNonces[q.address.toLowerCase()] ?? '0',
        order_nonce: ((BigInt(Date.now()) + 100_000n) << 20n).toString(),
      });
    case 'subaccount_info':
      return success('query_subaccount_info', subaccountInfo(q.subaccount, state.subaccounts[q.subaccount], quoteToken(host)));
    case 'linked_signer':
      return success('query_linked_signer', { linked_signer: (state.subaccounts[q.subaccount]?.linkedSigner ?? zeroAddress).toLowerCase() });
    case 'fee_rates':
      return success('query_fee_rates', {
        liquidation_sequencer_fee: '0',
        health_check_sequencer_fee: '0',
        taker_sequencer_fee: '0',
        withdraw_sequencer_fees: [(RULES.withdrawal.fee.amount * X18_PER_UNIT).toString()],
        taker_fee_rates_x18: ['0'],
        maker_fee_rates_x18: ['0'],
        fee_tier: 0,
      });
  }
}

/** `subaccount_info` in the engine's shape: only product 0 (the quote), amounts x18, healths initial / maintenance / unweighted. */
function subaccountInfo(sender: Hex, account: SubaccountRecord | undefined, token: Address) {
  const x18 = (BigInt(account?.balance ?? '0') * X18_PER_UNIT).toString();
  const health = { assets: x18, liabilities: '0', health: x18 };
  const one = (10n ** 18n).toString();
  return {
    subaccount: sender,
    exists: account !== undefined,
    healths: [health, health, health],
    health_contributions: [[x18, x18, x18]],
    spot_count: 1,
    perp_count: 0,
    spot_balances: [{ product_id: QUOTE_PRODUCT_ID, balance: { amount: x18 } }],
    perp_balances: [],
    spot_products: [
      {
        product_id: QUOTE_PRODUCT_ID,
        oracle_price_x18: one,
        risk: {
          long_weight_initial_x18: one,
          short_weight_initial_x18: one,
          long_weight_maintenance_x18: one,
          short_weight_maintenance_x18: one,
          large_position_penalty_x18: '0',
        },
        config: {
          token: token.toLowerCase(),
          interest_inflection_util_x18: '0',
          interest_floor_x18: '0',
          interest_small_cap_x18: '0',
          interest_large_cap_x18: '0',
          min_deposit_rate_x18: '0',
        },
        state: {
          cumulative_deposits_multiplier_x18: one,
          cumulative_borrows_multiplier_x18: one,
          total_deposits_normalized: '0',
          total_borrows_normalized: '0',
        },
        book_info: { size_increment: '0', price_increment_x18: '0', min_size: '0', collected_fees: '0' },
      },
    ],
    perp_products: [],
  };
}

// --- executes ----------------------------------------------------------------------------------

async function execute(input: unknown, host: Host): Promise<unknown> {
  const keys = input && typeof input === 'object' ? Object.keys(input) : [];
  if (keys.length !== 1) return failure('execute_unknown', 'An execute carries exactly one request type', VENUE_D_ERROR.invalidExecuteMessage);
  const type = keys[0]!;
  const body = (input as Record<string, unknown>)[type];
  const signatureOf = (b: unknown) => (typeof (b as { signature?: unknown })?.signature === 'string' ? (b as { signature: string }).signature : null);
  if (type === 'link_signer') {
    const parsed = v.safeParse(LinkSignerExecute, body);
    if (!parsed.success)
      return failure('execute_link_signer', `Invalid link_signer: ${parsed.issues[0].message}`, VENUE_D_ERROR.invalidExecuteMessage, signatureOf(body));
    return linkSigner(parsed.output, host);
  }
  if (type === 'withdraw_collateral') {
    const parsed = v.safeParse(WithdrawExecute, body);
    if (!parsed.success)
      return failure(
        'execute_withdraw_collateral',
        `Invalid withdraw_collateral: ${parsed.issues[0].message}`,
        VENUE_D_ERROR.invalidExecuteMessage,
        signatureOf(body),
      );
    return withdrawCollateral(parsed.output, host);
  }
  return failure(`execute_${type}`, `The sandbox does not support ${type}`, VENUE_D_ERROR.notImplemented, signatureOf(body));
}

/** The owner's nonce check: the current tx nonce, used once (the engine rejects any other). */
function checkNonce(draft: Draft, owner: Address, nonce: bigint): string | undefined {
  const expected = BigInt(draft.venue.txNonces[owner.toLowerCase()] ?? '0');
  return nonce === expected ? undefined : `Invalid nonce: expected tx nonce ${expected}, got ${nonce}`;
}

function useNonce(draft: Draft, owner: Address, nonce: bigint): void {
  draft.venue.txNonces[owner.toLowerCase()] = (nonce + 1n).toString();
}

async function linkSigner(request: v.InferOutput<typeof LinkSignerExecute>, host: Host): Promise<unknown> {
  const type = 'execute_link_signer';
  const { tx, signature } = request;
  if (size(signature) !== 65) return failure(type, 'The provided signature does not meet the required length', VENUE_D_ERROR.signatureLength, signature);
  const signer = await recoverNadoSigner(linkSignerTypedData(domain(host), tx), signature);
  const { owner } = parseSubaccountSender(tx.sender);
  // Only the owner links ([O] N8: a linked signer cannot re-link; docs.nado.xyz says a linked
  // signer "can perform any execute": the research's narrower official source is followed).
  if (!signer || signer !== owner)
    return failure(type, 'Invalid signer: link_signer must be signed by the subaccount owner', VENUE_D_ERROR.invalidSigner, signature);
  const now = Date.now();
  return host.transact((draft) => {
    const account = draft.venue.subaccounts[tx.sender];
    if (!account)
      return failure(type, 'The provided address has no previous deposits: deposit at least 5 to open the subaccount', VENUE_D_ERROR.noPriorDeposit, signature);
    if (BigInt(account.balance) < LINK_MINIMUM_VALUE)
      return failure(
        type,
        'Your account must hold a minimum value of 5 to enable single signature sessions',
        VENUE_D_ERROR.singleSignatureInsufficientAccountValue,
        signature,
      );
    const nonceError = checkNonce(draft, owner, tx.nonce);
    if (nonceError) return failure(type, nonceError, VENUE_D_ERROR.invalidNonce, signature);
    const recent = account.links.filter((time) => time > now - WEEK_MS);
    if (recent.length >= LINKS_PER_WEEK)
      return failure(type, `Too many link_signer requests: at most ${LINKS_PER_WEEK} in 7 days`, VENUE_D_ERROR.linkedSignerUpdateLimitExceeded, signature);
    // The signer is the first 20 bytes; the rest is ignored; the zero address unlinks.
    const linked = getAddress(slice(tx.signer, 0, 20));
    account.linkedSigner = linked === zeroAddress ? null : linked;
    account.links = [...recent, now];
    useNonce(draft, owner, tx.nonce);
    return { status: 'success', signature, data: null, request_type: type };
  });
}

async function withdrawCollateral(request: v.InferOutput<typeof WithdrawExecute>, host: Host): Promise<unknown> {
  const type = 'execute_withdraw_collateral';
  const { tx, signature } = request;
  if (size(signature) !== 65) return failure(type, 'The provided signature does not meet the required length', VENUE_D_ERROR.signatureLength, signature);
  if (tx.productId !== QUOTE_PRODUCT_ID)
    return failure(type, `Unknown product ${tx.productId}: the sandbox has only product 0`, VENUE_D_ERROR.invalidProductId, signature);
  const signer = await recoverNadoSigner(
    withdrawCollateralTypedData(domain(host), { sender: tx.sender, productId: tx.productId, amount: tx.amount, nonce: tx.nonce }),
    signature,
  );
  const { owner } = parseSubaccountSender(tx.sender);
  const now = Date.now();
  return host.transact((draft) => {
    const account = draft.venue.subaccounts[tx.sender];
    // Owner or the current linked signer ([O] N8: a linked signer may withdraw).
    if (!signer || (signer !== owner && signer !== account?.linkedSigner)) {
      return failure(type, 'Invalid signer: the signature matches neither the subaccount owner nor its linked signer', VENUE_D_ERROR.invalidSigner, signature);
    }
    if (!account) return failure(type, 'The provided address has no previous deposits', VENUE_D_ERROR.noPriorDeposit, signature);
    const nonceError = checkNonce(draft, owner, tx.nonce);
    if (nonceError) return failure(type, nonceError, VENUE_D_ERROR.invalidNonce, signature);
    if (tx.amount === 0n) return failure(type, 'Withdrawal amount must be positive', VENUE_D_ERROR.zeroAmount, signature);
    const fee = RULES.withdrawal.fee.amount;
    const balance = BigInt(account.balance);
    // The sandbox lends nothing: a withdrawal beyond the balance would borrow (refused without
    // spot leverage) and leave the subaccount unhealthy (refused with it).
    if (tx.amount + fee > balance) {
      return request.spot_leverage === false
        ? failure(
            type,
            'Executing this action could result in exceeding your borrowing limit as your spot leverage is set to false',
            VENUE_D_ERROR.spotExecuteExceedsBorrowLimit,
            signature,
          )
        : failure(
            type,
            'Subaccount health insufficient: the amount plus the withdrawal fee exceeds the balance',
            VENUE_D_ERROR.subaccountHealthTooLow,
            signature,
          );
    }
    const fault = host.takeFault(draft, 'withdrawal', [owner]);
    // Refused as a whole: the nonce stays unused, so the same signed request can succeed later.
    if (fault?.mode === 'fail') return failure(type, 'Withdrawal failed (sandbox fault)', VENUE_D_ERROR.internalError, signature);
    useNonce(draft, owner, tx.nonce);
    const record = { nonce: tx.nonce.toString(), amount: tx.amount.toString(), fee: fee.toString(), signer: signer, time: now };
    if (fault?.mode === 'refund') {
      // Accepted, then returned to the balance: reported failed.
      account.withdrawals[record.nonce] = { ...record, refused: 'Withdrawal returned to the venue balance (sandbox fault)' };
      return { status: 'success', signature, data: null, request_type: type };
    }
    account.balance = (balance - tx.amount - fee).toString();
    const payout = `withdraw:${tx.sender}:${record.nonce}`;
    host.pay(draft, { id: payout, to: owner, token: quoteToken(host), amount: tx.amount, heldBy: fault?.mode === 'stall' ? fault.scope : undefined });
    account.withdrawals[record.nonce] = { ...record, payout };
    return { status: 'success', signature, data: null, request_type: type };
  });
}
