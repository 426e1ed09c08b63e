import { encodeFunctionData, erc20Abi } from 'viem';
import type { Chains } from '../../chains/chains.ts';
import type { Senders } from '../../chains/sender/senders.ts';
import { solanaSendOutcome } from '../../chains/sender/solana-sender.ts';
import type { ChainCode } from '../../wallets/networks.ts';
import { type BridgeClient, type BridgeDepositCall, BridgeRefusedError } from '../bridge.ts';
import {
  amountInOf,
  type Ctx,
  NO_ADDRESS,
  type Outcome,
  platformFeeOwed,
  refresh,
  requireFunded,
  type SolanaSends,
  type StepCoreDeps,
  type StepKind,
  sendEvm,
  sendOnce,
  takePlatformFee,
  writeOwnStep,
} from './core.ts';
import { StepFailure, StepTransient } from './outcomes.ts';

/** What a bridge step adds: Solana (the chains and its sender) and the bridge client (none: the step fails BRIDGE_NOT_CONFIGURED). */
export interface BridgeStepDeps extends StepCoreDeps {
  readonly chains: Chains;
  readonly senders: Senders;
  readonly bridge?: BridgeClient;
}

function sendSolana(ctx: Ctx<BridgeStepDeps>, label: string, to: string, token: string, amount: bigint, memo?: string): Promise<string> {
  const { deps, wallet } = ctx;
  return sendOnce(ctx, label, 'SOL', async (journal) => {
    const chain = await deps.chains.sol();
    return deps.senders.solana.send({ chain, from: wallet.solAddress, to, token, amount, ...(memo ? { reference: memo } : {}), signer: wallet.sol, journal });
  });
}

const SOLANA: SolanaSends<BridgeStepDeps> = {
  send: sendSolana,
  outcome: async (ctx, send) => solanaSendOutcome(await ctx.deps.chains.sol(), send),
};

/**
 * The user's wallet sends `from` into the bridge; the bridge fills `to` to the same user. A quote
 * is asked for as long as no deposit is recorded (an expired one is simply replaced); once the
 * deposit is recorded, only its status matters.
 */
async function bridgeStep(ctx: Ctx<BridgeStepDeps, 'bridge'>): Promise<Outcome> {
  const { deps } = ctx;
  if (!deps.bridge) throw new StepFailure('BRIDGE_NOT_CONFIGURED', 'No bridge is configured on this deployment (BRIDGE_URL)');
  const { from, to } = ctx.step;
  const fee = BigInt(ctx.step.platform_fee ?? '0');
  const addressOn = (chain: ChainCode) => (chain === 'SOL' ? ctx.wallet.solAddress : ctx.wallet.evmAddress);
  let waitSeconds: number | undefined;
  if (!ctx.step.sends?.bridge) await adoptBridgeDeposit(ctx, deps.bridge);
  if (!ctx.step.sends?.bridge) {
    const amount = amountInOf(ctx.step) - fee;
    // Quoted first: a route or amount the bridge refuses fails the step with nothing sent.
    const quote = await deps.bridge.quote({ route: { from, to }, amount, sender: addressOn(from.chain), recipient: addressOn(to.chain) });
    const owed = quote.amount + (await platformFeeOwed(ctx));
    requireFunded(`${from.token} on ${from.chain} for the bridge deposit and the platform fee`, owed, await walletBalance(ctx, from.chain, from.token));
    if (Date.parse(quote.expires_at) <= deps.now().getTime()) throw new StepTransient('the bridge quote expired before the deposit');
    await writeOwnStep(ctx, { stepStatusIn: ['submitted'], step: { reference: quote.quote_id } });
    waitSeconds = Math.min(30, Math.max(1, Math.ceil(quote.estimated_fill_ms / 1000)));
    const call = quote.deposit[0];
    if (!call || quote.deposit.length !== 1) throw new StepFailure('BRIDGE_FAILED', 'The bridge quote carries no single deposit call');
    await sendBridgeDeposit(ctx, call, from.token, quote.amount);
    await refresh(ctx);
  } else {
    const recorded = ctx.step.sends.bridge;
    // Resume (or finish) the recorded deposit: re-broadcast and await it, never a new one.
    if (recorded.chain === 'SOL') await sendSolana(ctx, 'bridge', '', from.token, 0n);
    else await sendEvm(ctx, 'bridge', recorded.chain, { to: NO_ADDRESS, data: '0x', value: 0n }, { token: from.token, amount: 0n });
  }
  // The fee only once the bridge deposit itself landed (a deposit that could not be sent keeps no fee).
  await takePlatformFee(ctx, from.chain, from.token);
  const deposit = ctx.step.sends?.bridge;
  // Recorded above (sent, or resumed from its record) before the fee: only a lost race gets here without it.
  if (!deposit) throw new StepTransient('the bridge deposit is not recorded');
  const status = await deps.bridge.status({ chain: from.chain, tx: deposit.tx_hash });
  if (status.status === 'DONE' && status.substatus === 'COMPLETED' && status.receiving) {
    return { done: true, amountOut: status.receiving.amount, results: { fill: status.receiving.tx_hash } };
  }
  if (status.status === 'FAILED' || (status.status === 'DONE' && status.substatus === 'REFUNDED')) {
    if (!status.refund) return { done: false, waitSeconds };
    await writeOwnStep(ctx, { step: { result_tx_hashes: { refund: status.refund.tx_hash } } });
    const code = status.status === 'FAILED' ? 'BRIDGE_FAILED' : 'BRIDGE_REFUNDED';
    throw new StepFailure(
      code,
      `The bridge did not fill (${status.substatus ?? status.status}); ${status.refund.amount} base units were refunded to your wallet on ${from.chain}`,
    );
  }
  return { done: false, waitSeconds };
}

/** The user's wallet balance of a transfer token on an EVM chain or Solana. */
async function walletBalance(ctx: Ctx<BridgeStepDeps>, chain: ChainCode, token: string): Promise<bigint> {
  if (chain === 'SOL') return (await ctx.deps.chains.sol()).balance(ctx.wallet.solAddress, token);
  return (await ctx.deps.chains.evm(chain)).balance(ctx.wallet.evmAddress, token);
}

/**
 * The quote's deposit. EVM: LI.FI's contracts pull the tokens (`transferFrom`), so the wallet first
 * approves the quote's allow-listed spender for exactly the amount (label `bridge_approve`: sent
 * once, like every send; never an unlimited allowance), naming the token from this deployment's
 * chain config: a quote that would spend another token fails the step with nothing sent.
 */
async function sendBridgeDeposit(ctx: Ctx<BridgeStepDeps>, call: BridgeDepositCall, token: string, amount: bigint): Promise<void> {
  if (call.kind === 'spl_transfer') {
    await sendSolana(ctx, 'bridge', call.to, call.token, call.amount, call.memo);
    return;
  }
  const ours = (await ctx.deps.chains.evm(call.chain)).tokenAddress(token);
  if (!ours || ours.toLowerCase() !== call.token.toLowerCase())
    throw new StepFailure('BRIDGE_QUOTE_WRONG_TOKEN', `The bridge quote was refused before signing: it spends ${call.token}, not ${token} on ${call.chain}`);
  const approve = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [call.spender, amount] });
  await sendEvm(ctx, 'bridge_approve', call.chain, { to: ours, data: approve, value: 0n }, { token, amount: 0n });
  await sendEvm(ctx, 'bridge', call.chain, { to: call.to, data: call.data, value: call.value }, { token, amount });
}

/** A previous try's bridge deposit that the bridge has not refused or refunded is adopted (polled), never sent again. */
async function adoptBridgeDeposit(ctx: Ctx<BridgeStepDeps, 'bridge'>, bridge: BridgeClient): Promise<void> {
  for (const previous of [...(ctx.step.previous_tries ?? [])].reverse()) {
    const deposit = previous.sends?.bridge;
    if (!deposit) continue;
    const status = await bridge.status({ chain: ctx.step.from.chain, tx: deposit.tx_hash });
    if (status.status === 'FAILED' || (status.status === 'DONE' && status.substatus === 'REFUNDED')) continue;
    await writeOwnStep(ctx, {
      stepStatusIn: ['submitted'],
      sends: { bridge: deposit },
      step: { ...(previous.reference ? { reference: previous.reference } : {}) },
    });
    await refresh(ctx);
    return;
  }
}

/** The bridge kind (functions/transfers/bridge-step.ts): EVM, Solana and the bridge client; no venue code. */
export const BRIDGE_KIND: StepKind<BridgeStepDeps, 'bridge'> = {
  action: 'bridge',
  run: bridgeStep,
  failure: (error) => (error instanceof BridgeRefusedError ? new StepFailure(error.code, error.message) : undefined),
  solana: SOLANA,
};
