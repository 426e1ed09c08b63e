import { type Address, encodeAbiParameters, encodeFunctionData, erc20Abi, type Hex, keccak256, maxUint256, type StateOverride } from 'viem';
import type { Chains } from '../chains/chains.ts';
import { ChainUnavailableError } from '../chains/errors.ts';
import type { EvmChainCode } from '../venues/driver.ts';
import type { VenueId } from '../venues/default-status.ts';
import type { ChainCode } from '../wallets/networks.ts';
import type { BridgeClient } from './bridge.ts';
import type { GasEstimator, GasLeg } from './estimate.ts';

/**
 * The estimate's GasEstimator over the configured chains, for one user's wallets (issue 11 §1):
 *
 * - EVM: `eth_estimateGas` of each call the leg sends from the user's EVM address, summed. A
 *   bridge leg estimates the deposit call(s) of the bridge's own quote for this amount (the
 *   sandbox bridge: the token's `transfer(vault, amount)` plus the quote id); when the bridge
 *   gives no quote, the same call shape to a placeholder recipient. A venue deposit estimates its
 *   mechanism's call shape ({@link VENUE_DEPOSIT_SHAPE}): the venues' prepareDeposit is not called
 *   because it has side effects (venue_a commits a bridge quote) and needs the venue's account
 *   fields; an `approve` + token `transfer` stands in for approve + `deposit` (the deposit
 *   contract's `transferFrom` costs what a `transfer` does; its own bookkeeping is not counted).
 * - The user may not hold the amount yet, so every call is estimated with a state override: the
 *   token balance of the wallet set to the amount (the balance mapping at each slot of
 *   {@link BALANCE_SLOTS}) and a large native balance (venue_c's deposit sends a message fee).
 * - The gas price is the chain's current `maxFeePerGas` (what the sender signs with).
 * - Solana: the fee is per signature; a transfer message from the user's wallet has one signer, so
 *   gas units are 1 signature and the price is the lamports `getFeeForMessage` charges for it.
 */
export const BALANCE_SLOTS: readonly bigint[] = [
  4n, // SandboxToken (infra/local/contracts/SandboxToken.sol): name, symbol, decimals+initialized, totalSupply, balanceOf
  9n, // Circle FiatToken v2.2 (USDC): balanceAndBlacklistStates
];

/** The calls of each venue's deposit mechanism (shared/venues/<venue>/driver.ts prepareDeposit). */
export const VENUE_DEPOSIT_SHAPE: Readonly<Record<VenueId, 'transfer' | 'approve_and_deposit'>> = {
  venue_a: 'approve_and_deposit', // approve + rhino bridge depositWithId
  venue_b: 'transfer', // USDC transfer to the venue's bridge
  venue_c: 'approve_and_deposit', // approve + StarkGate deposit
  venue_d: 'approve_and_deposit', // approve + Endpoint.depositCollateral
  venue_e: 'transfer', // USDC.e transfer to the proxy wallet
};

/** Receives the estimated calls (never sent: estimates only). */
const PLACEHOLDER_RECIPIENT: Address = '0x000000000000000000000000000000000000dEaD';
const NATIVE_OVERRIDE = 10n ** 24n;
/** Signatures of a transfer message from the user's wallet (the fee payer is the only signer). */
const SOLANA_SIGNATURES = 1n;

interface Call {
  readonly to: Address;
  readonly data: Hex;
  readonly value: bigint;
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
    if (leg.chain === 'SOL') return SOLANA_SIGNATURES;
    const chain = await this.#chains.evm(leg.chain);
    const token = chain.tokenAddress(leg.token);
    if (!token) throw new Error(`${leg.token} is not a token on ${leg.chain}`);
    const calls = leg.action === 'bridge' ? await this.#bridgeCalls(leg, token) : depositCalls(leg.venue!, token, leg.amount);
    const stateOverride: StateOverride = [
      { address: this.#wallet.evm, balance: NATIVE_OVERRIDE },
      { address: token, stateDiff: BALANCE_SLOTS.map((slot) => ({ slot: balanceSlot(this.#wallet.evm, slot), value: toWord(leg.amount) })) },
    ];
    let total = 0n;
    for (const call of calls) {
      try {
        total += await chain.client.estimateGas({ account: this.#wallet.evm, to: call.to, data: call.data, value: call.value, stateOverride });
      } catch {
        throw new ChainUnavailableError(leg.chain, `the gas estimate of the ${leg.action} failed`);
      }
    }
    return total;
  }

  async gasPrice(chain: ChainCode): Promise<bigint> {
    if (chain === 'SOL') {
      const sol = await this.#chains.sol();
      try {
        const message = await sol.transferMessage(this.#wallet.sol, this.#wallet.sol, 'SOL', 1n, 'estimate');
        return message.fee / SOLANA_SIGNATURES;
      } catch {
        throw new ChainUnavailableError('SOL', 'the fee could not be read');
      }
    }
    return (await (await this.#chains.evm(chain as EvmChainCode)).fees()).maxFeePerGas;
  }

  /** The bridge quote's deposit calls for this amount, or the same shape (a token transfer) when it gives none. */
  async #bridgeCalls(leg: GasLeg, token: Address): Promise<Call[]> {
    const route = leg.bridge!;
    try {
      const on = (chain: string) => (chain === 'SOL' ? this.#wallet.sol : this.#wallet.evm);
      const quote = await this.#bridge.quote({ route, amount: leg.amount, sender: on(route.from.chain), recipient: on(route.to.chain) });
      const calls = quote.deposit.flatMap((call) => (call.kind === 'evm_transaction' ? [{ to: call.to, data: call.data, value: call.value }] : []));
      if (calls.length) return calls;
    } catch {
      // No quote (refused amount, bridge down): the estimate reports that itself; gas is still computed.
    }
    return [transferCall(token, PLACEHOLDER_RECIPIENT, leg.amount)];
  }
}

function depositCalls(venue: VenueId, token: Address, amount: bigint): Call[] {
  const transfer = transferCall(token, PLACEHOLDER_RECIPIENT, amount);
  if (VENUE_DEPOSIT_SHAPE[venue] === 'transfer') return [transfer];
  return [{ to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [PLACEHOLDER_RECIPIENT, amount] }) }, transfer];
}

function transferCall(token: Address, to: Address, amount: bigint): Call {
  return { to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) };
}

/** Storage slot of `mapping(address => uint256)` at `slot` for `owner` (Solidity layout). */
export function balanceSlot(owner: Address, slot: bigint): Hex {
  return keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [owner, slot]));
}

function toWord(value: bigint): Hex {
  if (value < 0n || value > maxUint256) throw new Error('out of range');
  return `0x${value.toString(16).padStart(64, '0')}`;
}
