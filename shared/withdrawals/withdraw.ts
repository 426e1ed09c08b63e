import { type Address, type Hex, HttpRequestError, hashTypedData, keccak256, TimeoutError } from 'viem';
import type { AccountDeps } from '../accounts/account-service.ts';
import { requireAccount } from '../accounts/account-service.ts';
import type { AccountRecord } from '../accounts/account-record.ts';
import { type WalletSigner, walletSigner } from '../accounts/wallet-signer.ts';
import type { AuthenticatedUser } from '../auth/authenticate.ts';
import type { EvmChainCode } from '../chains/chain-config.ts';
import type { Chains } from '../chains/chains.ts';
import type { EvmCall, EvmChain } from '../chains/evm-chain.ts';
import { BroadcastRejectedError } from '../chains/errors.ts';
import { SolanaChain } from '../chains/solana-chain.ts';
import { executeCalldata, executorTypedData, isDelegatedTo, readExecutorNonce } from '../chains/evm/sponsored-executor.ts';
import { acquireLease, LeaseTimeoutError } from '../db/lease.ts';
import { keys } from '../db/keys.ts';
import { ConflictError, DomainError, UnprocessableError, UpstreamError } from '../errors.ts';
import { logger } from '../logger.ts';
import { formatAmount, parseAmount } from '../money.ts';
import type { GasSponsor } from './gas-sponsor.ts';
import { type Broadcast, claimIdempotencyKey, type IdempotencyRecord, requestHash, type StoredResponse } from './idempotency.ts';
import { assertWithdrawable, normaliseRecipient, type WithdrawInput } from './withdraw-rules.ts';

/**
 * `POST /withdraw` (spec, Endpoints): from the user's wallet to an external address, exactly
 * once. Funds are checked before anything is signed; the transaction is built here, signed by the
 * enclave and broadcast; the answer waits for inclusion within a bound.
 */
export interface WithdrawDeps extends AccountDeps {
  readonly chains: Chains;
  readonly sponsor: GasSponsor;
  readonly inclusionTimeoutMs: number;
}

/** Milliseconds spent signing, broadcasting and waiting for inclusion (Server-Timing). */
export interface WithdrawTimings {
  sign: number;
  broadcast: number;
  inclusion: number;
}

export interface WithdrawOutcome {
  readonly response: StoredResponse;
  readonly timings: WithdrawTimings;
  readonly replayed: boolean;
}

/** How long one sender's lease is held at most (sign + broadcast), and how long to queue for it. */
const LEASE_MS = 15_000;
const LEASE_WAIT_MS = 20_000;
/** Sponsored calls must execute within this long after the user signs them. */
const EXECUTE_DEADLINE_SECONDS = 600n;

interface Plan {
  readonly chain: WithdrawInput['chain'];
  readonly token: WithdrawInput['token'];
  readonly decimals: number;
  readonly amount: bigint;
  readonly to: string;
  readonly from: string;
  readonly sponsored: boolean;
}

export async function withdraw(deps: WithdrawDeps, user: AuthenticatedUser, input: WithdrawInput, idempotencyKey?: string): Promise<WithdrawOutcome> {
  assertWithdrawable(input.chain, input.token);
  const to = normaliseRecipient(input.chain, input.to_address);
  const decimals = input.chain === 'SOL' ? deps.chains.sol().decimals(input.token) : deps.chains.evm(input.chain).decimals(input.token);
  const amount = parseAmount(input.amount, decimals);
  const account = await requireAccount(deps, user);
  const plan: Plan = {
    chain: input.chain,
    token: input.token,
    decimals,
    amount,
    to,
    from: input.chain === 'SOL' ? account.public_address.SOL : account.public_address.ETH,
    // Spec, Limits: gas sponsorship is EVM only; ignored for Solana.
    sponsored: input.gas_sponsored && input.chain !== 'SOL',
  };
  const timings: WithdrawTimings = { sign: 0, broadcast: 0, inclusion: 0 };

  let record: IdempotencyRecord | undefined;
  let resumed: Broadcast | undefined;
  if (idempotencyKey) {
    const hash = requestHash({ chain: plan.chain, token: plan.token, amount: plan.amount.toString(), to: plan.to, sponsored: plan.sponsored });
    const claim = await claimIdempotencyKey(deps.table, { appId: user.app.app_id, sub: user.identity.sub, key: idempotencyKey }, hash, deps.now().getTime());
    if (claim.kind === 'replay') return { response: claim.response, timings, replayed: true };
    record = claim.record;
    if (claim.kind === 'resume') resumed = claim.broadcast;
  }

  let broadcast: Broadcast | undefined = resumed;
  const onBroadcast = async (next: Broadcast) => {
    broadcast = next;
    await record?.recordBroadcast(next);
  };
  try {
    const txHash =
      plan.chain === 'SOL'
        ? await sendSolana(deps, user, account, plan, timings, onBroadcast, resumed)
        : await sendEvm(deps, user, account, plan, plan.chain, timings, onBroadcast, resumed);
    const response = { status: 200, body: successBody(plan, txHash) };
    await record?.complete(response);
    return { response, timings, replayed: false };
  } catch (error) {
    if (record && (!broadcast || error instanceof BroadcastRejectedError)) {
      await record.abandon(); // nothing left this service: the key may be used again
    } else if (record && error instanceof UnprocessableError && error.code === 'TRANSACTION_REVERTED') {
      await record.complete({ status: error.status, body: { success: false, error: { code: error.code, message: error.message } } });
    } else if (record) {
      // Broadcast, outcome unknown (inclusion timeout, RPC trouble): a retry with the same key
      // resumes with the same signed transaction. After a crash the lease expires instead.
      await record.releaseLease();
    }
    throw error;
  }
}

function successBody(plan: Plan, txHash: string) {
  const amount = formatAmount(plan.amount, plan.decimals);
  return {
    success: true,
    tx_hash: txHash,
    from_address: plan.from,
    to_address: plan.to,
    amount,
    token: plan.token,
    chain: plan.chain,
    message: `Sent ${amount} ${plan.token} on ${plan.chain} to ${plan.to}${plan.sponsored ? '; gas was sponsored (EIP-7702)' : ''}.`,
  };
}

function insufficient(what: string, needed: bigint, available: bigint, decimals: number): UnprocessableError {
  return new UnprocessableError(
    'INSUFFICIENT_FUNDS',
    `Insufficient ${what}: needs ${formatAmount(needed, decimals)}, available ${formatAmount(available, decimals)}`,
  );
}

async function timed<T>(timings: WithdrawTimings, phase: keyof WithdrawTimings, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    timings[phase] += performance.now() - started;
  }
}

/** Holds one sender's lease while choosing its nonce and broadcasting, so parallel sends never collide. */
async function withSenderLease<T>(deps: WithdrawDeps, chain: string, sender: string, work: (lastNonce: number | undefined) => Promise<{ result: T; nonce?: number }>): Promise<T> {
  let lease;
  try {
    lease = await acquireLease<{ next_nonce?: number }>(deps.table, keys.senderLease(chain, sender), { leaseMs: LEASE_MS, waitMs: LEASE_WAIT_MS });
  } catch (error) {
    if (error instanceof LeaseTimeoutError) throw new ConflictError('SENDER_BUSY', `Too many withdrawals from ${sender} on ${chain} at once; retry shortly`);
    throw error;
  }
  try {
    const { result, nonce } = await work(lease.state?.next_nonce);
    await lease.release(nonce === undefined ? undefined : { next_nonce: nonce + 1 });
    return result;
  } catch (error) {
    await lease.release();
    throw error;
  }
}

async function confirmEvm(chain: EvmChain, hash: Hex, deps: WithdrawDeps, timings: WithdrawTimings): Promise<Hex> {
  const receipt = await timed(timings, 'inclusion', () => chain.waitForReceipt(hash, deps.inclusionTimeoutMs));
  if (!receipt) {
    throw new DomainError(504, 'INCLUSION_TIMEOUT', `Transaction ${hash} was broadcast but not included within ${deps.inclusionTimeoutMs} ms; retry with the same Idempotency-Key to get its outcome`);
  }
  if (receipt.status !== 'success') throw new UnprocessableError('TRANSACTION_REVERTED', `Transaction ${hash} was included but reverted; nothing was sent`);
  return hash;
}

async function rebroadcastEvm(chain: EvmChain, raw: Hex): Promise<void> {
  try {
    await chain.broadcast(raw);
  } catch (error) {
    // Already known or already mined: exactly what a resumed send wants.
    logger.info('re-broadcast not accepted (already known or mined)', { chain: chain.code, error });
  }
}

const wire = (value: bigint) => value.toString();

export { BroadcastRejectedError };

/**
 * A refusal from the node means "not sent"; a timeout or lost connection means "maybe sent", and
 * then the idempotency record keeps the signed transaction so a retry re-sends that one.
 */
async function broadcastOnce<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof TimeoutError || error instanceof HttpRequestError) throw error;
    if (error instanceof BroadcastRejectedError) throw error; // the Solana adapter classifies its own
    if ((error as { name?: string }).name?.endsWith('RpcError') || (error as Error).name === 'TransactionExecutionError') {
      throw new BroadcastRejectedError((error as Error).message.split('\n')[0] ?? 'rejected');
    }
    throw error;
  }
}

async function sendEvm(
  deps: WithdrawDeps,
  user: AuthenticatedUser,
  account: AccountRecord,
  plan: Plan,
  code: EvmChainCode,
  timings: WithdrawTimings,
  onBroadcast: (b: Broadcast) => Promise<void>,
  resumed: Broadcast | undefined,
): Promise<string> {
  const chain = deps.chains.evm(code);
  if (resumed) {
    await timed(timings, 'broadcast', () => rebroadcastEvm(chain, resumed.raw as Hex));
    return confirmEvm(chain, resumed.tx_hash as Hex, deps, timings);
  }
  const from = plan.from as Address;
  const call = chain.transferCall(plan.token, plan.to as Address, plan.amount);
  const signer = await walletSigner(deps, user, account, 'evm');
  const hash = plan.sponsored
    ? await sendSponsored(deps, chain, signer, from, call, plan, timings, onBroadcast)
    : await withSenderLease(deps, code, from, async (lastNonce) => {
        // Checked under the lease: earlier sends from this wallet are already counted.
        const native = await chain.balance(from, chain.config.native);
        if (plan.token !== chain.config.native) {
          const available = await chain.balance(from, plan.token);
          if (available < plan.amount) throw insufficient(`${plan.token} on ${code}`, plan.amount, available, plan.decimals);
        } else if (native < plan.amount) {
          throw insufficient(`${plan.token} on ${code}`, plan.amount, native, 18);
        }
        const fees = await chain.fees();
        const gas = await chain.estimateGas(from, call).catch((error: unknown) => {
          throw new UnprocessableError('TRANSACTION_WOULD_FAIL', `The transfer would fail on ${code}: ${(error as Error).message.split('\n')[0]}`);
        });
        const needed = gas * fees.maxFeePerGas + (plan.token === chain.config.native ? plan.amount : 0n);
        if (native < needed) throw insufficient(`${chain.config.native} on ${code} for the amount and gas`, needed, native, 18);
        const nonce = Math.max(await chain.pendingNonce(from), lastNonce ?? 0);
        const transaction = {
          type: 'eip1559',
          chainId: chain.config.chain_id,
          nonce,
          to: call.to,
          value: wire(call.value),
          data: call.data,
          gas: wire(gas),
          maxFeePerGas: wire(fees.maxFeePerGas),
          maxPriorityFeePerGas: wire(fees.maxPriorityFeePerGas),
        };
        const signed = await timed(timings, 'sign', () => signer.sign('sign_transaction', { transaction }));
        const raw = signed.signed_transaction as Hex;
        await onBroadcast({ tx_hash: signed.tx_hash as string, raw });
        const result = await timed(timings, 'broadcast', () => broadcastOnce(() => chain.broadcast(raw)));
        return { result, nonce };
      });
  return confirmEvm(chain, hash, deps, timings);
}

/**
 * EIP-7702 path: the user's account delegates to our SponsoredExecutor (authorisation signed by
 * the enclave, only when not delegated yet) and signs the call batch (EIP-712, with the
 * executor's nonce and a deadline); the platform's sponsor wallet sends the type-4 transaction
 * and pays the gas. The user's native balance changes only by a native amount sent.
 */
async function sendSponsored(
  deps: WithdrawDeps,
  chain: EvmChain,
  signer: WalletSigner,
  user: Address,
  call: EvmCall,
  plan: Plan,
  timings: WithdrawTimings,
  onBroadcast: (b: Broadcast) => Promise<void>,
): Promise<Hex> {
  const delegate = chain.config.delegate as Address | undefined;
  if (!delegate) throw new UnprocessableError('GAS_SPONSORSHIP_UNAVAILABLE', `Gas sponsorship is not configured on ${chain.code}`);
  const sponsor = await deps.sponsor.address();
  // The user's lease orders executor nonces; the sponsor's lease orders the sponsor's nonces.
  return withSenderLease(deps, `${chain.code}#7702`, user, async () => {
    const available = await chain.balance(user, plan.token);
    if (available < plan.amount) throw insufficient(`${plan.token} on ${chain.code}`, plan.amount, available, plan.decimals);
    const authorizationList: Record<string, unknown>[] = [];
    if (!(await isDelegatedTo(chain.client, user, delegate))) {
      const accountNonce = await chain.pendingNonce(user);
      const signed = await timed(timings, 'sign', () =>
        signer.sign('sign_authorization', { chain_id: chain.config.chain_id, contract_address: delegate, nonce: accountNonce }),
      );
      authorizationList.push(signed.authorization as Record<string, unknown>);
    }
    const executorNonce = await readExecutorNonce(chain.client, user);
    const deadline = BigInt(Math.floor(deps.now().getTime() / 1000)) + EXECUTE_DEADLINE_SECONDS;
    const calls = [call];
    const digest = hashTypedData(executorTypedData({ chainId: chain.config.chain_id, account: user, calls, nonce: executorNonce, deadline }));
    const { signature } = await timed(timings, 'sign', () => signer.sign('sign_data', { raw_data_hash: digest }));
    const data = executeCalldata(calls, executorNonce, deadline, signature as Hex);

    const hash = await withSenderLease(deps, chain.code, sponsor, async (lastNonce) => {
      const fees = await chain.fees();
      const gas = authorizationList.length > 0 ? 250_000n : await chain.estimateGas(sponsor, { to: user, value: 0n, data }).catch(() => 250_000n);
      const sponsorBalance = await chain.balance(sponsor, chain.config.native);
      if (sponsorBalance < gas * fees.maxFeePerGas) {
        logger.error('gas sponsor is out of funds', { chain: chain.code, sponsor });
        throw new UpstreamError('SPONSOR_UNAVAILABLE', `The gas sponsor cannot pay for gas on ${chain.code} right now`);
      }
      const nonce = Math.max(await chain.pendingNonce(sponsor), lastNonce ?? 0);
      // Type 4 only while the delegation is being set (EIP-7702 forbids an empty authorisation
      // list); once delegated, the account keeps its code and a plain type-2 call reaches it.
      const transaction = {
        type: authorizationList.length ? 'eip7702' : 'eip1559',
        chainId: chain.config.chain_id,
        nonce,
        to: user,
        value: '0',
        data,
        gas: wire(gas),
        maxFeePerGas: wire(fees.maxFeePerGas),
        maxPriorityFeePerGas: wire(fees.maxPriorityFeePerGas),
        ...(authorizationList.length ? { authorizationList } : {}),
      };
      const raw = await timed(timings, 'sign', () => deps.sponsor.signTransaction(transaction));
      await onBroadcast({ tx_hash: keccak256(raw), raw });
      const result = await timed(timings, 'broadcast', () => broadcastOnce(() => chain.broadcast(raw)));
      return { result, nonce };
    });
    return { result: hash };
  });
}

async function sendSolana(
  deps: WithdrawDeps,
  user: AuthenticatedUser,
  account: AccountRecord,
  plan: Plan,
  timings: WithdrawTimings,
  onBroadcast: (b: Broadcast) => Promise<void>,
  resumed: Broadcast | undefined,
): Promise<string> {
  const chain = deps.chains.sol();
  let signature: string;
  if (resumed) {
    signature = resumed.tx_hash;
    await timed(timings, 'broadcast', () => chain.broadcast(Buffer.from(resumed.raw, 'base64')).catch(() => signature));
  } else {
    const built = await chain.transferMessage(plan.from, plan.to, plan.token, plan.amount);
    const lamports = await chain.balance(plan.from, 'SOL');
    if (plan.token !== 'SOL') {
      const available = await chain.balance(plan.from, plan.token);
      if (available < plan.amount) throw insufficient(`${plan.token} on SOL`, plan.amount, available, plan.decimals);
    }
    const neededLamports = built.fee + built.rent + (plan.token === 'SOL' ? plan.amount : 0n);
    if (lamports < neededLamports) {
      const what = built.createsTokenAccount ? 'SOL for the fee and the recipient token account' : plan.token === 'SOL' ? 'SOL for the amount and the fee' : 'SOL for the fee';
      throw insufficient(what, neededLamports, lamports, 9);
    }
    const signer = await walletSigner(deps, user, account, 'sol');
    const signed = await timed(timings, 'sign', () => signer.sign('sign_transaction', { transaction: Buffer.from(built.messageBytes).toString('base64') }));
    signature = signed.signature as string;
    const wireTx = SolanaChain.assemble(built.messageBytes, signature);
    await onBroadcast({ tx_hash: signature, raw: Buffer.from(wireTx).toString('base64') });
    await timed(timings, 'broadcast', () => broadcastOnce(() => chain.broadcast(wireTx)));
  }
  const status = await timed(timings, 'inclusion', () => chain.waitForConfirmation(signature, deps.inclusionTimeoutMs));
  if (!status) {
    throw new DomainError(504, 'INCLUSION_TIMEOUT', `Transaction ${signature} was broadcast but not confirmed within ${deps.inclusionTimeoutMs} ms; retry with the same Idempotency-Key to get its outcome`);
  }
  if (status.err) throw new UnprocessableError('TRANSACTION_REVERTED', `Transaction ${signature} failed on chain; nothing was sent`);
  return signature;
}
