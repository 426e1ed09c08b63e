import { address, getCompiledTransactionMessageDecoder, getTransactionDecoder } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { type BridgeDepositCall, BridgeQuoteRejectedError, type BridgeQuoteRequest } from './bridge.ts';
import type { BridgeChain } from './bridge-routes.ts';
import { LIFI_CHAIN_IDS } from './lifi.ts';
import type { LifiStep } from './lifi-wire.ts';

const MEMO_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** How LI.FI names a chain's native coin (@lifi/types: the zero address; some tools the 0xEeee… form). */
const NATIVE_TOKENS = new Set(['0x0000000000000000000000000000000000000000', '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee']);
/** SPL Token `TransferChecked` (instruction 12): accounts source, mint, destination, authority; data amount u64 LE, decimals u8. */
const TRANSFER_CHECKED = 12;

/**
 * The checks a bridge quote passes before anything is signed (issue 23): the route and amount
 * asked for, the user's own address as recipient, `toAmountMin` no less than the estimate's
 * `toAmount` less the slippage asked for, and a transaction that only pays (or asks an allowance
 * for) an allow-listed contract on the source chain, spending a token (not a native coin). Returns
 * the deposit call to send; on EVM the step approves its `spender` first, naming the token from its
 * own chain config, and refuses a quote whose `token` is another.
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
  if (!allowed.some((contract) => sameAddress(from, contract, step.estimate.approvalAddress)))
    refuse('BRIDGE_QUOTE_UNKNOWN_CONTRACT', `approvalAddress ${step.estimate.approvalAddress} is not an allowed bridge contract on ${from}`);
  const tx = step.transactionRequest;
  if (!tx?.data) return refuse('BRIDGE_QUOTE_NO_TRANSACTION', 'it carries no transactionRequest');
  if (from === 'SOL') return solanaDeposit(tx.data, request, allowed, refuse);
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

/**
 * LI.FI's Solana form (`transactionRequest.data`, a base64 transaction). The step's exactly-once
 * sender builds and signs its own message, so the quote is taken only when it is an SPL
 * TransferChecked of the amount, by the sender, into the token account of an allowed address,
 * with a memo; anything else (a program call) is refused.
 */
async function solanaDeposit(
  data: string,
  request: BridgeQuoteRequest,
  allowed: readonly string[],
  refuse: (code: string, message: string) => never,
): Promise<BridgeDepositCall> {
  let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>;
  try {
    const transaction = getTransactionDecoder().decode(Buffer.from(data, 'base64'));
    message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  } catch {
    return refuse('BRIDGE_QUOTE_NO_TRANSACTION', 'its transactionRequest.data is not a Solana transaction');
  }
  const accounts = message.staticAccounts.map(String);
  let transfer: { mint: string; destination: string; authority: string; amount: bigint } | undefined;
  let memo: string | undefined;
  const instructions = 'instructions' in message ? message.instructions : [];
  for (const instruction of instructions) {
    const program = accounts[instruction.programAddressIndex];
    const bytes = Buffer.from(instruction.data ?? new Uint8Array());
    const at = (i: number) => accounts[instruction.accountIndices?.[i] ?? -1] ?? '';
    if (program === MEMO_PROGRAM) memo = bytes.toString('utf8');
    else if (program === TOKEN_PROGRAM_ADDRESS && bytes[0] === TRANSFER_CHECKED && bytes.length >= 9)
      transfer = { mint: at(1), destination: at(2), authority: at(3), amount: bytes.readBigUInt64LE(1) };
  }
  if (!transfer || !memo) return refuse('BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION', 'its Solana transaction is not a token transfer with a memo');
  if (transfer.authority !== request.sender || transfer.amount !== request.amount)
    refuse('BRIDGE_QUOTE_WRONG_AMOUNT', `its Solana transfer moves ${transfer.amount} from ${transfer.authority}`);
  for (const owner of allowed) {
    const [ata] = await findAssociatedTokenPda({ owner: address(owner), mint: address(transfer.mint), tokenProgram: TOKEN_PROGRAM_ADDRESS });
    if (ata === transfer.destination)
      return { kind: 'spl_transfer', chain: 'SOL', token: 'USDC', mint: transfer.mint, to: owner, amount: transfer.amount, memo };
  }
  return refuse('BRIDGE_QUOTE_UNKNOWN_CONTRACT', `its Solana transfer pays ${transfer.destination}, no allowed bridge account on SOL`);
}

function sameAddress(chain: BridgeChain, a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  return chain === 'SOL' ? a === b : a.toLowerCase() === b.toLowerCase();
}
