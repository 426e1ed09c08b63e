import { encodeFunctionData, erc20Abi } from 'viem';
import type { Chains } from '../../chains/chains.ts';
import type { Senders } from '../../chains/sender/senders.ts';
import { solanaSendOutcome } from '../../chains/sender/solana-sender.ts';
import type { SolanaChain } from '../../chains/solana-chain.ts';
import type { ChainCode } from '../../wallets/networks.ts';
import { type BridgeClient, type BridgeDepositCall, type BridgeQuote, BridgeRefusedError } from '../bridge.ts';
import {
  amountInOf,
  type Ctx,
  feeNotCharged,
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

type SolanaBridgeCall = Extract<BridgeDepositCall, { kind: 'solana_transaction' }>;

/** The step's quote (its amount less the platform fee, from and to the user's own addresses), its reference recorded. */
async function quoteBridge(ctx: Ctx<BridgeStepDeps, 'bridge'>, bridge: BridgeClient): Promise<BridgeQuote> {
  const { from, to } = ctx.step;
  const addressOn = (chain: ChainCode) => (chain === 'SOL' ? ctx.wallet.solAddress : ctx.wallet.evmAddress);
  const amount = amountInOf(ctx.step) - BigInt(ctx.step.platform_fee ?? '0');
  const quote = await bridge.quote({ route: { from, to }, amount, sender: addressOn(from.chain), recipient: addressOn(to.chain) });
  if (Date.parse(quote.expires_at) <= ctx.deps.now().getTime()) throw new StepTransient('the bridge quote expired before the deposit');
  if (quote.deposit.length !== 1) throw new StepFailure('BRIDGE_FAILED', 'The bridge quote carries no single deposit call');
  await writeOwnStep(ctx, { stepStatusIn: ['submitted'], step: { reference: quote.quote_id, to_amount_min: quote.to_amount_min.toString() } });
  return quote;
}

/**
 * The user's wallet sends `from` into the bridge; the bridge fills `to` to the same user. A quote
 * is asked for as long as no deposit is recorded (an expired one is simply replaced); once the
 * deposit is recorded, only its status matters.
 */
async function bridgeStep(ctx: Ctx<BridgeStepDeps, 'bridge'>): Promise<Outcome> {
  const { deps } = ctx;
  if (!deps.bridge) throw new StepFailure('BRIDGE_NOT_CONFIGURED', 'No bridge is configured on this deployment (BRIDGE_URL)');
  const bridge = deps.bridge;
  const { from } = ctx.step;
  let waitSeconds: number | undefined;
  if (!ctx.step.sends?.bridge) await adoptBridgeDeposit(ctx, bridge);
  if (!ctx.step.sends?.bridge) {
    // Quoted first: a route or amount the bridge refuses fails the step with nothing sent.
    const quote = await quoteBridge(ctx, bridge);
    const owed = quote.amount + (await platformFeeOwed(ctx));
    requireFunded(`${from.token} on ${from.chain} for the bridge deposit and the platform fee`, owed, await walletBalance(ctx, from.chain, from.token));
    waitSeconds = Math.min(30, Math.max(1, Math.ceil(quote.estimated_fill_ms / 1000)));
    const call = quote.deposit[0];
    if (!call) throw new StepFailure('BRIDGE_FAILED', 'The bridge quote carries no single deposit call');
    await sendBridgeDeposit(ctx, call, from.token, quote.amount);
    await refresh(ctx);
  } else {
    const recorded = ctx.step.sends.bridge;
    // Resume (or finish) the recorded deposit: re-broadcast and await it, never a new one (a Solana
    // one proven expired and absent is signed anew from a new quote).
    if (recorded.chain === 'SOL') await sendSolanaBridge(ctx, undefined, from.token);
    else await sendEvm(ctx, 'bridge', recorded.chain, { to: NO_ADDRESS, data: '0x', value: 0n }, { token: from.token, amount: 0n });
  }
  const deposit = ctx.step.sends?.bridge;
  // Recorded above (sent, or resumed from its record): only a lost race gets here without it.
  if (!deposit) throw new StepTransient('the bridge deposit is not recorded');
  const status = await bridge.status({ chain: from.chain, tx: deposit.tx_hash });
  if (status.status === 'DONE' && status.substatus === 'COMPLETED' && status.receiving) {
    // The fee only once the fill is known (a refunded or failed bridge keeps none), and none for a
    // fill below the minimum the quote guaranteed: the user got less than the move they paid for.
    const minimum = ctx.step.to_amount_min === undefined ? undefined : BigInt(ctx.step.to_amount_min);
    const short =
      minimum !== undefined && status.receiving.amount < minimum
        ? {
            code: 'BRIDGE_FILL_BELOW_MINIMUM',
            message: `The bridge paid ${status.receiving.amount} base units on ${ctx.step.to.chain}, below the ${minimum} its quote guaranteed: no platform fee is charged`,
          }
        : undefined;
    await takePlatformFee(ctx, from.chain, from.token, short);
    return { done: true, amountOut: status.receiving.amount, results: { fill: status.receiving.tx_hash } };
  }
  if (status.status === 'FAILED' || (status.status === 'DONE' && status.substatus === 'REFUNDED')) {
    if (!status.refund) return { done: false, waitSeconds };
    await writeOwnStep(ctx, { step: { result_tx_hashes: { refund: status.refund.tx_hash } } });
    const code = status.status === 'FAILED' ? 'BRIDGE_FAILED' : 'BRIDGE_REFUNDED';
    throw new StepFailure(
      code,
      `The bridge did not fill (${status.substatus ?? status.status}); ${status.refund.amount} base units were refunded to your wallet on ${from.chain}${feeNotCharged(ctx.step)}`,
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
 * chain config: a quote that would spend another token fails the step with nothing sent. Solana:
 * the quote's own transaction, signed as given (sendSolanaBridge).
 */
async function sendBridgeDeposit(ctx: Ctx<BridgeStepDeps, 'bridge'>, call: BridgeDepositCall, token: string, amount: bigint): Promise<void> {
  if (call.kind === 'solana_transaction') {
    await sendSolanaBridge(ctx, call, token);
    return;
  }
  const evm = await ctx.deps.chains.evm(call.chain);
  const ours = evm.tokenAddress(token);
  if (!ours || ours.toLowerCase() !== call.token.toLowerCase())
    throw new StepFailure('BRIDGE_QUOTE_WRONG_TOKEN', `The bridge quote was refused before signing: it spends ${call.token}, not ${token} on ${call.chain}`);
  // An earlier try's approve (a resume after a failure or a crash starts a new try with no sends)
  // may have landed already: an allowance that covers the amount is not approved again.
  if (ctx.step.sends?.bridge_approve || (await evm.allowance(ctx.wallet.evmAddress, call.spender, token)) < amount) {
    const approve = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [call.spender, amount] });
    await sendEvm(ctx, 'bridge_approve', call.chain, { to: ours, data: approve, value: 0n }, { token, amount: 0n });
  }
  await sendEvm(ctx, 'bridge', call.chain, { to: call.to, data: call.data, value: call.value }, { token, amount });
}

/**
 * A Solana bridge deposit (label `bridge`): the quote's transaction, checked before signing
 * (bridge-quote-checks.ts), its mint this deployment's `token`, signed by the wallet as given and
 * journaled before broadcast by the exactly-once Solana sender. It carries LI.FI's blockhash: once
 * that expired and the chain proved the transaction absent, the sender asks for another, and the
 * only way to get one is a new quote, checked again. `first` is the quote just taken (none on a resume).
 */
function sendSolanaBridge(ctx: Ctx<BridgeStepDeps, 'bridge'>, first: SolanaBridgeCall | undefined, token: string): Promise<string> {
  const { deps, wallet } = ctx;
  const bridge = deps.bridge;
  if (!bridge) throw new StepFailure('BRIDGE_NOT_CONFIGURED', 'No bridge is configured on this deployment (BRIDGE_URL)');
  return sendOnce(ctx, 'bridge', 'SOL', async (journal) => {
    const chain = await deps.chains.sol();
    let given = first;
    const prepare = async () => {
      let call = given;
      given = undefined;
      if (!call) {
        const quote = await quoteBridge(ctx, bridge);
        const next = quote.deposit[0];
        if (next?.kind !== 'solana_transaction') throw new StepFailure('BRIDGE_QUOTE_NO_TRANSACTION', 'The bridge quote carries no Solana transaction');
        call = next;
      }
      const ours = chain.config.tokens[token as 'USDC']?.mint;
      if (!ours || ours !== call.mint)
        throw new StepFailure('BRIDGE_QUOTE_WRONG_TOKEN', `The bridge quote was refused before signing: it spends ${call.mint}, not ${token} on SOL`);
      await checkSimulatedOutflows(chain, wallet.solAddress, call);
      return { wire: call.transaction, token, amount: call.amount };
    };
    return deps.senders.solana.sendPrepared({ chain, from: wallet.solAddress, prepare, signer: wallet.sol, journal });
  });
}

/**
 * Lamports a Solana bridge transaction may take from the wallet beyond nothing at all: the network
 * fee, the priority fee (bounded by MAX_BRIDGE_PRIORITY_FEE_LAMPORTS) and rent for accounts the
 * bridge program opens (a Mayan order, an associated token account: about 0.002 SOL each). 0.02 SOL.
 */
const MAX_BRIDGE_LAMPORTS = 20_000_000n;

/**
 * The second half of the check before signing (the first, on the message, is
 * solana-bridge-transaction.ts): what an allow-listed bridge program moves inside its own
 * instruction is not in the message, so the transaction is simulated unsigned and the wallet's
 * state after it compared with now: exactly the quoted amount of the route's mint leaves it, no
 * other token account of the wallet loses anything, and at most MAX_BRIDGE_LAMPORTS of SOL. A
 * simulation that fails (the blockhash just expired, the chain moved) is transient: the step asks again.
 */
async function checkSimulatedOutflows(chain: SolanaChain, owner: string, call: SolanaBridgeCall): Promise<void> {
  const refuse = (code: string, message: string): never => {
    throw new StepFailure(code, `The bridge quote was refused before signing: ${message}`);
  };
  const simulated = await chain.simulateOutflows(Uint8Array.from(Buffer.from(call.transaction, 'base64')), owner);
  if (simulated.err)
    throw new StepTransient(
      `the bridge transaction fails in simulation (${JSON.stringify(simulated.err, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))})`,
    );
  let routeToken = 0n;
  for (const [account, { mint, amount }] of simulated.moved) {
    if (amount <= 0n) continue;
    if (mint !== call.mint) refuse('BRIDGE_QUOTE_WRONG_TOKEN', `it would take ${amount} of ${mint} from the wallet's token account ${account}`);
    routeToken += amount;
  }
  // Exactly the quoted amount: more is what this check exists to stop; less would land and then fail
  // the effect check (the wallet's balance falls by exactly the quoted amount), so it is refused before signing too.
  if (routeToken !== call.amount)
    refuse('BRIDGE_QUOTE_WRONG_AMOUNT', `it would take ${routeToken} of ${call.mint} from the wallet, not the ${call.amount} quoted`);
  if (simulated.lamports > MAX_BRIDGE_LAMPORTS)
    refuse('BRIDGE_QUOTE_FEE_TOO_HIGH', `it would take ${simulated.lamports} lamports from the wallet, over ${MAX_BRIDGE_LAMPORTS}`);
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
      step: {
        ...(previous.reference ? { reference: previous.reference } : {}),
        ...(previous.to_amount_min ? { to_amount_min: previous.to_amount_min } : {}),
      },
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
