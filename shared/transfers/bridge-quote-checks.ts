import { type BridgeDepositCall, BridgeQuoteRejectedError, type BridgeQuoteRequest } from './bridge.ts';
import type { BridgeChain } from './bridge-routes.ts';
import { LIFI_CHAIN_IDS } from './lifi.ts';
import type { LifiStep } from './lifi-wire.ts';
import { checkSolanaBridgeTransaction } from './solana-bridge-transaction.ts';

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** How LI.FI names a chain's native coin (@lifi/types: the zero address; some tools the 0xEeee… form). */
const NATIVE_TOKENS = new Set(['0x0000000000000000000000000000000000000000', '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee']);

/**
 * The checks a bridge quote passes before anything is signed (issue 23): the route and amount
 * asked for, the user's own address as recipient, `toAmountMin` no less than the estimate's
 * `toAmount` less the slippage asked for, and a transaction that only pays (or asks an allowance
 * for) an allow-listed contract on the source chain, spending a token (not a native coin); on
 * Solana a transaction that only our wallet has left to sign, invoking allow-listed programs and
 * moving at most the amount of the route's token (solana-bridge-transaction.ts). Returns the
 * deposit call to send; the step refuses one whose token is not its chain config's (EVM: it
 * approves `spender` first, naming the token from that config).
 */
export async function checkBridgeQuote(
  step: LifiStep,
  request: BridgeQuoteRequest,
  policy: { readonly slippage: number; readonly contracts: Readonly<Partial<Record<BridgeChain, readonly string[]>>> },
): Promise<BridgeDepositCall> {
  const from = request.route.from.chain;
  const to = request.route.to.chain;
  const refuse = (code: string, message: string): never => {
    throw new BridgeQuoteRejectedError(code, `The bridge quote was refused before signing: ${message}`);
  };
  if (step.action.fromChainId !== LIFI_CHAIN_IDS[from] || step.action.toChainId !== LIFI_CHAIN_IDS[to])
    refuse('BRIDGE_QUOTE_WRONG_CHAIN', `it goes from chain ${step.action.fromChainId} to ${step.action.toChainId}, not ${from} to ${to}`);
  if (BigInt(step.action.fromAmount) !== request.amount || BigInt(step.estimate.fromAmount) !== request.amount)
    refuse('BRIDGE_QUOTE_WRONG_AMOUNT', `it takes ${step.estimate.fromAmount}, not the ${request.amount} asked for`);
  if (!sameAddress(to, step.action.toAddress ?? step.action.fromAddress, request.recipient))
    refuse('BRIDGE_QUOTE_WRONG_RECIPIENT', `it pays ${step.action.toAddress ?? 'nobody named'}, not the wallet's own address on ${to}`);
  const toAmount = BigInt(step.estimate.toAmount);
  const promised = (toAmount * BigInt(Math.round((1 - policy.slippage) * 1_000_000))) / 1_000_000n;
  const toAmountMin = BigInt(step.estimate.toAmountMin);
  if (toAmountMin < promised || toAmountMin > toAmount || toAmount > request.amount)
    refuse('BRIDGE_QUOTE_MIN_TOO_LOW', `toAmountMin ${toAmountMin} is below the ${promised} its estimate of ${toAmount} promises`);
  const allowed = policy.contracts[from] ?? [];
  const tx = step.transactionRequest;
  if (from === 'SOL') {
    // Solana has no allowance: `approvalAddress` is not used; the transaction's programs are checked instead.
    if (!tx?.data) return refuse('BRIDGE_QUOTE_NO_TRANSACTION', 'it carries no transactionRequest');
    const mint = step.action.fromToken.address;
    await checkSolanaBridgeTransaction(tx.data, { sender: request.sender, mint, amount: request.amount, programs: allowed });
    return { kind: 'solana_transaction', chain: 'SOL', transaction: tx.data, mint, amount: request.amount };
  }
  if (!allowed.some((contract) => sameAddress(from, contract, step.estimate.approvalAddress)))
    refuse('BRIDGE_QUOTE_UNKNOWN_CONTRACT', `approvalAddress ${step.estimate.approvalAddress} is not an allowed bridge contract on ${from}`);
  if (!tx?.data) return refuse('BRIDGE_QUOTE_NO_TRANSACTION', 'it carries no transactionRequest');
  if (tx.chainId !== undefined && tx.chainId !== LIFI_CHAIN_IDS[from])
    refuse('BRIDGE_QUOTE_WRONG_CHAIN', `its transaction is for chain ${tx.chainId}, not ${from}`);
  if (!tx.to || !EVM_ADDRESS.test(tx.to) || !/^0x[0-9a-fA-F]*$/.test(tx.data))
    return refuse('BRIDGE_QUOTE_NO_TRANSACTION', 'its transactionRequest names no EVM call');
  if (!allowed.some((contract) => sameAddress(from, contract, tx.to)))
    refuse('BRIDGE_QUOTE_UNKNOWN_CONTRACT', `transactionRequest.to ${tx.to} is not an allowed bridge contract on ${from}`);
  const token = step.action.fromToken.address;
  // Our routes move tokens only (USDC, USDC.E): a native coin (LI.FI's zero or 0xEeee… address) is not what was asked for.
  if (!EVM_ADDRESS.test(token) || NATIVE_TOKENS.has(token.toLowerCase()))
    refuse('BRIDGE_QUOTE_WRONG_TOKEN', `it spends ${token}, not ${request.route.from.token} on ${from}`);
  return {
    kind: 'evm_transaction',
    chain: from,
    token: token as `0x${string}`,
    spender: step.estimate.approvalAddress as `0x${string}`,
    to: tx.to as `0x${string}`,
    data: tx.data as `0x${string}`,
    value: BigInt(tx.value ?? '0x0'),
  };
}

function sameAddress(chain: BridgeChain, a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  return chain === 'SOL' ? a === b : a.toLowerCase() === b.toLowerCase();
}
