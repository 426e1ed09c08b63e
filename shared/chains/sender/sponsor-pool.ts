import type { EvmSigner, GasPayer, SponsorPool } from './ports.ts';

/**
 * A pool of gas sponsors per EVM chain (issue 25): one sponsor account's nonce serialised every
 * sponsored send of the platform (40 concurrent withdrawals: 20 sends/s sponsored against 77/s
 * unsponsored). Each member is its own account with its own sender lease, so up to `size`
 * sponsored sends sign and broadcast at once; one treasury funds them.
 *
 * Amounts are in sends' worth of gas at the chain's current fee cap, so one rule fits Ethereum
 * and the L2s: a first sponsored send (delegation + execute) is budgeted FIRST_SPONSORED_SEND_GAS.
 */

/** The pool size unless SPONSOR_POOL_SIZE says otherwise: 8 members measured 40 concurrent sends within 0.8× the unsponsored rate (README, "Gas sponsorship at scale"). */
export const DEFAULT_SPONSOR_POOL_SIZE = 8;
export const MAX_SPONSOR_POOL_SIZE = 64;
/** A member holding less than this many first-time sponsored sends' gas is skipped and reported (SponsorBelowFloor). */
export const SPONSOR_FLOOR_SENDS = 20n;
/** A top-up (sponsor:setup, the sandbox at start) brings a member back to this many sends' gas. */
export const SPONSOR_TARGET_SENDS = 100n;
/** The gas of a sponsored send that also sets the delegation (the sponsor must hold this × maxFeePerGas). */
export const FIRST_SPONSORED_SEND_GAS = 250_000n;

export function sponsorBalanceFloor(maxFeePerGas: bigint): bigint {
  return SPONSOR_FLOOR_SENDS * FIRST_SPONSORED_SEND_GAS * maxFeePerGas;
}

export function sponsorBalanceTarget(maxFeePerGas: bigint): bigint {
  return SPONSOR_TARGET_SENDS * FIRST_SPONSORED_SEND_GAS * maxFeePerGas;
}

/** A member skipped because its balance is under the floor (native base units). */
export interface SponsorBelowFloor {
  readonly chain: string;
  readonly slot: number;
  readonly address: string;
  readonly balance: bigint;
  readonly floor: bigint;
}

/** The enclave wallet group of pool member `slot` (the treasury is the platform app's default group: the one sponsor of before the pool). */
export function sponsorWalletGroup(slot: number): string {
  if (!Number.isSafeInteger(slot) || slot < 0) throw new RangeError(`sponsor slot ${slot}`);
  return `gas-sponsor-${slot}`;
}

/** A GasPayer as an EvmSigner for its own plain sends (top-ups, the delegate's deployment): it signs transactions only. */
export function gasPayerSigner(payer: GasPayer): EvmSigner {
  return {
    signTransaction: (transaction) => payer.signTransaction(transaction),
    signAuthorization: () => Promise.reject(new Error('a gas payer signs transactions only')),
    signDigest: () => Promise.reject(new Error('a gas payer signs transactions only')),
  };
}

/** One account as a pool of one, and its own treasury (tests, and a deployment that wants a single sponsor: SPONSOR_POOL_SIZE=1 is the enclave pool's). */
export function singleSponsor(payer: GasPayer): SponsorPool {
  return { size: 1, member: () => payer, treasury: payer };
}
