import { type Address, erc20Abi, getAddress, type Hex, isAddressEqual, type Log, parseEventLogs, parseTransaction } from 'viem';
import { sponsoredExecutorAbi } from '../evm/sponsored-executor.ts';
import type { EvmChain } from '../evm-chain.ts';
import type { ExpectedEffect } from './ports.ts';

/**
 * Success is decided by the effect, not by the receipt status alone (issue 19): a transaction is
 * sent only when its receipt carries what it was sent for.
 * - ERC-20: a Transfer log of the token contract, from the account, of exactly the amount (and to
 *   the recipient when the send names one).
 * - Native coin, own gas: the signed transaction itself carries the value to the recipient, and a
 *   successful top-level value transfer cannot be skipped.
 * - Sponsored (EIP-7702): the SponsoredExecutor's Executed event, emitted by the account itself,
 *   for the executor nonce the account signed. Without the delegation in force the sponsor's call
 *   reaches an account with no code and succeeds doing nothing: no Executed event.
 */
const TRANSFER_EVENT = erc20Abi.filter((item) => item.type === 'event' && item.name === 'Transfer');
const EXECUTED_EVENT = sponsoredExecutorAbi.filter((item) => item.type === 'event' && item.name === 'Executed');

export interface EvmEffectInput {
  readonly logs: readonly Log[];
  /** The signed transaction (0x-hex), for the native value and recipient of an own-gas send. */
  readonly raw?: Hex;
}

export function evmEffectHeld(chain: EvmChain, receipt: EvmEffectInput, effect: ExpectedEffect): boolean {
  const from = getAddress(effect.from);
  const logs = receipt.logs as Log[];
  if (effect.executor_nonce !== undefined) {
    const nonce = BigInt(effect.executor_nonce);
    const executed = parseEventLogs({ abi: EXECUTED_EVENT, logs }).some((log) => isAddressEqual(log.address, from) && log.args.nonce === nonce);
    if (!executed) return false;
  }
  const amount = BigInt(effect.amount);
  if (amount === 0n) return true;
  const token = chain.tokenAddress(effect.token);
  if (token) return erc20Moved(logs, token, from, amount, effect.to);
  // Native coin: a sponsored call's value moved with its Executed event (execute reverts as a whole otherwise).
  if (effect.executor_nonce !== undefined) return true;
  if (!receipt.raw) return false;
  const signed = parseTransaction(receipt.raw);
  return (
    signed.value === amount && (effect.to === undefined || (signed.to !== undefined && signed.to !== null && isAddressEqual(signed.to, getAddress(effect.to))))
  );
}

function erc20Moved(logs: Log[], token: Address, from: Address, amount: bigint, to: string | undefined): boolean {
  return parseEventLogs({ abi: TRANSFER_EVENT, logs }).some(
    (log) =>
      isAddressEqual(log.address, token) &&
      isAddressEqual(log.args.from, from) &&
      log.args.value === amount &&
      (to === undefined || isAddressEqual(log.args.to, getAddress(to))),
  );
}
