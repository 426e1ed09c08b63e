import type { Address } from 'viem';
import type { AccountRecord } from '../accounts/account-record.ts';
import type { AccountDeps } from '../accounts/account-service.ts';
import { requireAccount } from '../accounts/account-service.ts';
import { walletSigner } from '../accounts/wallet-signer.ts';
import type { AuthenticatedUser } from '../auth/authenticate.ts';
import type { Chains } from '../chains/chains.ts';
import { enclaveEvmSigner, enclaveSolanaSigner } from '../chains/sender/enclave-signers.ts';
import { classifySendFailure } from '../chains/sender/outcome.ts';
import type { SendJournal, SendTimings } from '../chains/sender/ports.ts';
import type { Senders } from '../chains/sender/senders.ts';
import { newTimings } from '../chains/sender/timings.ts';
import { DomainError } from '../errors.ts';
import { formatAmount, MAX_EVM_UNITS, MAX_SOLANA_UNITS, parseAmount } from '../money.ts';
import { claimIdempotencyKey, type IdempotencyRecord, requestHash, type StoredResponse } from './idempotency.ts';
import type { SponsorshipBudget } from './sponsorship-budget.ts';
import { assertWithdrawable, normaliseRecipient, type WithdrawInput } from './withdraw-rules.ts';
import { WithdrawalRecord, withdrawalId } from './withdrawal-record.ts';

/**
 * `POST /withdraw` (spec, Endpoints): from the user's wallet to an external address, exactly
 * once. This module plans (rules, recipient, amount in base units, which sender) and keeps the
 * Idempotency-Key; the exactly-once send itself (lease, nonce, funds under the lease, enclave
 * signature, record before broadcast, broadcast, inclusion, resume) is shared/chains/sender.
 */
export interface WithdrawDeps extends AccountDeps {
  readonly chains: Chains;
  readonly senders: Senders;
  /** How long an Idempotency-Key's claim keeps retries out (claimLeaseMs); DEFAULT_CLAIM_LEASE_MS when unset. */
  readonly claimLeaseMs?: number;
  /** The daily sponsorship budget and minimum amounts of `gas_sponsored` withdrawals (shared/withdrawals/sponsorship-budget.ts). */
  readonly sponsorship: SponsorshipBudget;
}

/** Milliseconds spent signing, broadcasting and waiting for inclusion (Server-Timing). */
export type WithdrawTimings = SendTimings;

export interface WithdrawOutcome {
  readonly response: StoredResponse;
  readonly timings: WithdrawTimings;
  readonly replayed: boolean;
}

interface Plan {
  readonly account: AccountRecord;
  readonly chain: WithdrawInput['chain'];
  readonly token: WithdrawInput['token'];
  readonly decimals: number;
  readonly amount: bigint;
  readonly to: string;
  readonly from: string;
  readonly sponsored: boolean;
}

export async function withdraw(deps: WithdrawDeps, user: AuthenticatedUser, input: WithdrawInput, idempotencyKey?: string): Promise<WithdrawOutcome> {
  const plan = await planWithdrawal(deps, user, input);
  // Before the Idempotency-Key is claimed: a refused request changes nothing.
  if (plan.sponsored) deps.sponsorship.assertMinimum(plan.token, plan.amount, plan.decimals);
  const timings = newTimings();

  let record: IdempotencyRecord | undefined;
  let resumed = false;
  if (idempotencyKey) {
    const hash = requestHash({ chain: plan.chain, token: plan.token, amount: plan.amount.toString(), to: plan.to, sponsored: plan.sponsored });
    const claim = await claimIdempotencyKey(
      deps.table,
      { appId: user.app.app_id, sub: user.identity.sub, key: idempotencyKey },
      hash,
      deps.now().getTime(),
      deps.claimLeaseMs,
    );
    if (claim.kind === 'replay') return { response: claim.response, timings, replayed: true };
    record = claim.record;
    resumed = claim.kind === 'resume';
  }

  // Its events (issue 24): sent with the journaled transaction, then confirmed or failed.
  const withdrawal = new WithdrawalRecord(
    deps.table,
    { appId: user.app.app_id, sub: user.identity.sub, id: withdrawalId({ appId: user.app.app_id, sub: user.identity.sub }, idempotencyKey) },
    {
      chain: plan.chain,
      token: plan.token,
      amount: formatAmount(plan.amount, plan.decimals),
      from_address: plan.from,
      to_address: plan.to,
      gas_sponsored: plan.sponsored,
    },
    record,
    deps.now,
  );
  try {
    // Counted once per withdrawal: not again when a retry resumes an attempt that recorded its send (or crashed after counting).
    if (plan.sponsored && !resumed) await deps.sponsorship.consume(user.app.app_id, user.identity.sub);
    const txHash = await send(deps, user, plan, withdrawal, timings);
    const response = { status: 200, body: successBody(plan, txHash) };
    await record?.complete(response);
    await withdrawal.confirmed(txHash);
    return { response, timings, replayed: false };
  } catch (error) {
    await record?.settleFailure(error);
    // Failed on chain after it was sent (a revert): withdrawal.failed. An unknown outcome (inclusion
    // timed out) is no failure: a retry with the same Idempotency-Key finds out; never sent: no record.
    if (classifySendFailure(error, true) === 'failed' && error instanceof DomainError) await withdrawal.failed({ code: error.code, message: error.message });
    throw error;
  }
}

async function planWithdrawal(deps: WithdrawDeps, user: AuthenticatedUser, input: WithdrawInput): Promise<Plan> {
  assertWithdrawable(input.chain, input.token);
  const to = normaliseRecipient(input.chain, input.to_address);
  const decimals = deps.chains.decimals(input.chain, input.token);
  const amount = parseAmount(input.amount, decimals, 'body.amount', input.chain === 'SOL' ? MAX_SOLANA_UNITS : MAX_EVM_UNITS);
  const account = await requireAccount(deps, user);
  return {
    account,
    chain: input.chain,
    token: input.token,
    decimals,
    amount,
    to,
    from: input.chain === 'SOL' ? account.public_address.SOL : account.public_address.ETH,
    // Spec, Limits: gas sponsorship is EVM only; ignored for Solana.
    sponsored: input.gas_sponsored && input.chain !== 'SOL',
  };
}

/** One call to the sender of the plan's chain kind; the enclave signs as the user's wallet. */
async function send(deps: WithdrawDeps, user: AuthenticatedUser, plan: Plan, journal: SendJournal | undefined, timings: SendTimings): Promise<string> {
  const { account } = plan;
  if (plan.chain === 'SOL') {
    const signer = enclaveSolanaSigner(() => walletSigner(deps, user, account, 'sol'));
    const chain = await deps.chains.sol();
    const sent = await deps.senders.solana.send({ chain, from: plan.from, to: plan.to, token: plan.token, amount: plan.amount, signer, journal, timings });
    return sent.txHash;
  }
  const chain = await deps.chains.evm(plan.chain);
  const signer = enclaveEvmSigner(() => walletSigner(deps, user, account, 'evm'));
  const call = chain.transferCall(plan.token, plan.to as Address, plan.amount);
  const spends = { token: plan.token, amount: plan.amount, to: plan.to };
  const sent = plan.sponsored
    ? await deps.senders.sponsored.send({ chain, account: plan.from as Address, call, spends, signer, journal, timings })
    : await deps.senders.evm.send({ chain, from: plan.from as Address, call, spends, signer, journal, timings });
  return sent.txHash;
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
