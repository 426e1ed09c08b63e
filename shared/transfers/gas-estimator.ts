import {
  type Address,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  isAddress,
  keccak256,
  maxUint256,
  type StateOverride,
} from 'viem';
import type { Chains } from '../chains/chains.ts';
import { ChainUnavailableError } from '../chains/errors.ts';
import type { VenueId } from '../venues/default-status.ts';
import type { EvmChainCode } from '../venues/driver.ts';
import { VENUE_B_BRIDGE } from '../venues/venue-b/actions.ts';
import { proxyWalletAddress } from '../venues/venue-e/signing.ts';
import type { ChainCode } from '../wallets/networks.ts';
import type { BridgeClient } from './bridge.ts';
import type { GasEstimator, GasLeg } from './estimate.ts';

/**
 * The estimate's GasEstimator over the configured chains, for one user's wallets (issue 11 §1,
 * issue 19): the gas of every transaction a step sends from the user's wallet, as the user pays
 * it (gasUsed; the signer's 20 % headroom on the gas limit is not paid).
 *
 * - EVM: `eth_estimateGas` of each call, summed (estimated side by side, each from the state
 *   before the step: the order the step sends them in does not change what each costs):
 *   - the platform fee, when the step takes it: the token's `transfer(recipient, fee)` to the
 *     configured recipient, so a recipient that holds none of the token yet (a first fee, 17k gas
 *     more for the balance store from zero) is priced as it will be paid;
 *   - a bridge deposit: the approve of the quote's spender (from no allowance), then the call of
 *     the bridge's own quote for this amount, estimated with the allowance the approve leaves (the
 *     allowance mapping at each slot of {@link ALLOWANCE_SLOTS}); without a quote, a transfer to an
 *     empty placeholder after an approve of one (the dearest form of those calls);
 *   - a venue deposit, by its mechanism ({@link VENUE_DEPOSIT}). A plain transfer goes to the
 *     venue's own address when it is known without asking the venue (venue_b's bridge, venue_e's
 *     proxy wallet), so it is priced against that address's real balance. For approve + deposit
 *     the deposit contract is named only by the venue's API (whose prepareDeposit may also commit
 *     a quote: venue_a), and no venue API is called here (functions/routes.ts): the approve is
 *     estimated to a placeholder spender (the same fresh allowance slot the real approve writes),
 *     and the deposit call as a transfer to a placeholder that holds none of the token. Its
 *     balance store from zero (about 17k gas over a transfer to a holder) stands in for the deposit
 *     contract's own work around its transferFrom (its call into the token, the allowance it
 *     spends, its event, its bookkeeping): on the sandbox's venue contracts the deposit call
 *     costs 41.5k to 47.5k gas against the stand-in's 51k. A contract that holds none of the token
 *     (a fresh sandbox's, before its first deposit; never a live venue's) costs up to 34k more.
 * - The user may not hold the amount yet, so every call is estimated with a state override: the
 *   wallet's token balance set to what it holds at the step's start (the amount and the fee, the
 *   balance mapping at each slot of {@link BALANCE_SLOTS}), the placeholder's to zero, and a
 *   large native balance (venue_c's deposit sends a message fee).
 * - The gas price is the chain's current `maxFeePerGas` (what the sender signs with).
 * - Solana: the fee is per signature and every transaction the wallet sends has one signer (the
 *   wallet pays its own fee): one signature for the bridge deposit, one for the platform fee.
 *   The gas price is the lamports `getFeeForMessage` charges for one.
 */
export const BALANCE_SLOTS: readonly bigint[] = [
  4n, // SandboxToken (infra/local/contracts/SandboxToken.sol): name, symbol, decimals+initialized, totalSupply, balanceOf
  9n, // Circle FiatToken v2.2 (USDC): balanceAndBlacklistStates
];

/** The allowance mapping's slot in the same tokens: SandboxToken's `allowance` (after balanceOf), FiatToken's `allowed`. */
export const ALLOWANCE_SLOTS: readonly bigint[] = [5n, 10n];

/** How a venue's deposit is sent (shared/venues/<venue>/driver.ts prepareDeposit), and where a plain transfer goes when that is known without the venue. */
export interface VenueDepositShape {
  readonly calls: 'transfer' | 'approve_and_deposit';
  readonly to?: (wallet: Address) => Address;
}

export const VENUE_DEPOSIT: Readonly<Record<VenueId, VenueDepositShape>> = {
  venue_a: { calls: 'approve_and_deposit' }, // approve + rhino bridge depositWithId (the bridge: venue_a's API)
  venue_b: { calls: 'transfer', to: () => VENUE_B_BRIDGE }, // USDC transfer to the venue's bridge (the driver's default; shared/deps/venues.ts never overrides it)
  venue_c: { calls: 'approve_and_deposit' }, // approve + StarkGate deposit (the bridge: venue_c's API)
  venue_d: { calls: 'approve_and_deposit' }, // approve + Endpoint.depositCollateral (the Endpoint: venue_d's API)
  venue_e: { calls: 'transfer', to: proxyWalletAddress }, // USDC.e transfer to the user's proxy wallet (CREATE2 of the user's address, as init stores it)
};

/**
 * Receives the estimated calls that have no known address (never sent: estimates only). Every
 * byte is nonzero, so its calldata costs what the dearest real address's would (16 gas a byte);
 * its token balance is overridden to zero.
 */
export const PLACEHOLDER: Address = getAddress(`0x${'deadbeef'.repeat(5)}`);
const NATIVE_OVERRIDE = 10n ** 24n;

interface Call {
  readonly to: Address;
  readonly data: Hex;
  readonly value: bigint;
  /** The calldata the step will send differs from this one's (a bridge quote's id): see calldataMargin. */
  readonly calldataVaries?: boolean;
  /** A spender this call runs with an allowance from the wallet for what it holds (the approve sent before it). */
  readonly allowance?: Address;
}

export class ChainGasEstimator implements GasEstimator {
  readonly #chains: Chains;
  readonly #wallet: { readonly evm: Address; readonly sol: string };
  readonly #bridge: BridgeClient;

  constructor(chains: Chains, wallet: { readonly evm: Address; readonly sol: string }, bridge: BridgeClient) {
    this.#chains = chains;
    this.#wallet = wallet;
    this.#bridge = bridge;
  }

  async estimateGas(leg: GasLeg): Promise<bigint> {
    if (leg.chain === 'SOL') return (leg.action === 'withdrawal' ? 0n : 1n) + (leg.platformFee ? 1n : 0n);
    const chain = await this.#chains.evm(leg.chain);
    const token = chain.tokenAddress(leg.token);
    if (!token) throw new Error(`${leg.token} is not a token on ${leg.chain}`);
    const calls = [
      ...(leg.platformFee ? [transferCall(token, feeRecipient(leg.platformFee.recipient), leg.platformFee.amount)] : []),
      ...(await this.#stepCalls(leg, token)),
    ];
    const held = leg.amount + (leg.platformFee?.amount ?? 0n);
    const stateOverride = (call: Call): StateOverride => [
      { address: this.#wallet.evm, balance: NATIVE_OVERRIDE },
      {
        address: token,
        stateDiff: [
          ...BALANCE_SLOTS.flatMap((slot) => [
            { slot: balanceSlot(this.#wallet.evm, slot), value: toWord(held) },
            { slot: balanceSlot(PLACEHOLDER, slot), value: toWord(0n) },
          ]),
          ...allowanceDiff(this.#wallet.evm, call.allowance, held),
        ],
      },
    ];
    const estimates = calls.map(
      async (call) =>
        (await chain.client.estimateGas({ account: this.#wallet.evm, to: call.to, data: call.data, value: call.value, stateOverride: stateOverride(call) })) +
        calldataMargin(call),
    );
    try {
      return (await Promise.all(estimates)).reduce((sum, gas) => sum + gas, 0n);
    } catch {
      throw new ChainUnavailableError(leg.chain, `the gas estimate of the ${leg.action} failed`);
    }
  }

  async gasPrice(chain: ChainCode): Promise<bigint> {
    if (chain === 'SOL') {
      const sol = await this.#chains.sol();
      try {
        // One transfer from the wallet: one signature.
        return (await sol.transferMessage(this.#wallet.sol, this.#wallet.sol, 'SOL', 1n, 'estimate')).fee;
      } catch {
        throw new ChainUnavailableError('SOL', 'the fee could not be read');
      }
    }
    return (await (await this.#chains.evm(chain as EvmChainCode)).fees()).maxFeePerGas;
  }

  /** The step's own calls besides the platform fee: a venue deposit's, a bridge deposit's, none for a withdrawal. */
  async #stepCalls(leg: GasLeg, token: Address): Promise<Call[]> {
    if (leg.action === 'withdrawal') return [];
    if (leg.action === 'bridge') return this.#bridgeCalls(leg, token);
    if (leg.venue === undefined) throw new Error(`internal: a ${leg.action} gas leg names no venue`); // gasOf gives every deposit leg its venue
    const shape = VENUE_DEPOSIT[leg.venue];
    if (shape.calls === 'transfer') return [transferCall(token, shape.to?.(this.#wallet.evm) ?? PLACEHOLDER, leg.amount)];
    return [approveCall(token, PLACEHOLDER, leg.amount), transferCall(token, PLACEHOLDER, leg.amount)];
  }

  /** The bridge quote's deposit calls for this amount, or the same shape (a token transfer) when it gives none. */
  async #bridgeCalls(leg: GasLeg, token: Address): Promise<Call[]> {
    const route = leg.bridge;
    if (!route) throw new Error('internal: a bridge gas leg names no route'); // gasOf gives every bridge leg its route
    try {
      const on = (chain: string) => (chain === 'SOL' ? this.#wallet.sol : this.#wallet.evm);
      const quote = await this.#bridge.quote({ route, amount: leg.amount, sender: on(route.from.chain), recipient: on(route.to.chain) });
      // As the step sends them: the approve (from no allowance), then the call, with the allowance it leaves.
      const calls = quote.deposit.flatMap((call): Call[] =>
        call.kind === 'evm_transaction'
          ? [approveCall(token, call.spender, leg.amount), { to: call.to, data: call.data, value: call.value, calldataVaries: true, allowance: call.spender }]
          : [],
      );
      if (calls.length) return calls;
    } catch {
      // No quote (refused amount, bridge down): the estimate reports that itself; gas is still computed.
    }
    return [approveCall(token, PLACEHOLDER, leg.amount), transferCall(token, PLACEHOLDER, leg.amount)];
  }
}

/**
 * A quote's calldata carries the quote's own id: the step sends another quote's, whose bytes differ.
 * Calldata costs 16 gas a non-zero byte and 4 a zero byte (EIP-2028), so the zero bytes of the
 * estimated calldata are priced as non-zero: the estimate never falls below the send.
 */
function calldataMargin(call: Call): bigint {
  if (!call.calldataVaries) return 0n;
  let zeros = 0n;
  for (let i = 2; i < call.data.length; i += 2) if (call.data[i] === '0' && call.data[i + 1] === '0') zeros++;
  return 12n * zeros;
}

/** The configured EVM recipient of the platform fee; the placeholder (no balance: the dearest case) when none is configured. */
function feeRecipient(recipient: string | undefined): Address {
  return recipient && isAddress(recipient, { strict: false }) ? getAddress(recipient) : PLACEHOLDER;
}

function approveCall(token: Address, spender: Address, amount: bigint): Call {
  return { to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, amount] }) };
}

function transferCall(token: Address, to: Address, amount: bigint): Call {
  return { to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) };
}

/** Storage slot of `mapping(address => uint256)` at `slot` for `owner` (Solidity layout). */
export function balanceSlot(owner: Address, slot: bigint): Hex {
  return keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [owner, slot]));
}

/** The allowance of `spender` from `owner` set to `amount` at each of {@link ALLOWANCE_SLOTS}; nothing without a spender. */
function allowanceDiff(owner: Address, spender: Address | undefined, amount: bigint): { slot: Hex; value: Hex }[] {
  return spender ? ALLOWANCE_SLOTS.map((slot) => ({ slot: allowanceSlot(owner, spender, slot), value: toWord(amount) })) : [];
}

/** Storage slot of `mapping(address => mapping(address => uint256))` at `slot` for `owner`, `spender`. */
export function allowanceSlot(owner: Address, spender: Address, slot: bigint): Hex {
  return keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'bytes32' }], [spender, balanceSlot(owner, slot)]));
}

function toWord(value: bigint): Hex {
  if (value < 0n || value > maxUint256) throw new Error('out of range');
  return `0x${value.toString(16).padStart(64, '0')}`;
}
