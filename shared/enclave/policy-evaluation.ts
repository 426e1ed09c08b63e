import { address } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { encodeFunctionData, erc20Abi } from 'viem';
import { type ChainsConfig, NATIVE_DECIMALS } from '../chains/chain-config.ts';
import type { Table } from '../db/client.ts';
import { MAX_EVM_UNITS, MAX_SOLANA_UNITS, parseAmount } from '../money.ts';
import { defaultPolicy } from '../policies/default-policy.ts';
import { evaluatePolicy, hasDailyLimit, type PolicyDecision } from '../policies/evaluate.ts';
import { type SignFacts, signFacts } from '../policies/facts.ts';
import type { NativePrices } from '../policies/native-usd.ts';
import { microToUsd, type Policy, type PolicyChannel, usdToMicro } from '../policies/policy.ts';
import { completeFacts } from '../policies/token-owners.ts';
import { assertWithdrawable, normaliseRecipient } from '../withdrawals/withdraw-rules.ts';
import { currentPolicy } from './policy-store.ts';
import { usdSpentToday } from './policy-usage.ts';
import type { EvaluatePolicyInput } from './schemas.ts';

type Withdrawal = Extract<EvaluatePolicyInput, { operation: 'withdraw' }>;

/** The facts of the signature /withdraw would make: an ERC-20 transfer or a native send on an EVM chain; on Solana an SPL TransferChecked to the recipient's USDC token account, or a System transfer. */
export async function withdrawalFacts(input: Withdrawal, channel: PolicyChannel, chains: ChainsConfig): Promise<SignFacts> {
  assertWithdrawable(input.chain, input.token);
  const to = normaliseRecipient(input.chain, input.to_address);
  if (input.chain === 'SOL') {
    const sol = chains.SOL;
    if (input.token === 'USDC') {
      const usdc = sol.tokens.USDC;
      if (!usdc) return { operation: 'sign_transaction', channel, chain: 'SOL', recipients: [], opaque: true };
      const units = parseAmount(input.amount, usdc.decimals, 'body.amount', MAX_SOLANA_UNITS);
      const [ata] = await findAssociatedTokenPda({ owner: address(to), mint: address(usdc.mint), tokenProgram: TOKEN_PROGRAM_ADDRESS });
      const scale = 10n ** BigInt(Math.abs(usdc.decimals - 6));
      const usd = usdc.decimals >= 6 ? (units + scale - 1n) / scale : units * scale;
      return {
        operation: 'sign_transaction',
        channel,
        chain: 'SOL',
        recipients: [ata],
        opaque: false,
        usd: { value: usd },
        owners: new Map([[ata as string, to]]),
      };
    }
    const lamports = parseAmount(input.amount, NATIVE_DECIMALS.sol, 'body.amount', MAX_SOLANA_UNITS);
    return { operation: 'sign_transaction', channel, chain: 'SOL', recipients: [to], opaque: false, native: { coin: 'SOL', amount: lamports, otherUsd: 0n } };
  }
  const evm = chains[input.chain];
  const body = { operation: 'sign_transaction' as const, channel, chains };
  if (input.token === 'USDC' || input.token === 'USDC.E') {
    const contract = evm.tokens[input.token];
    if (!contract) return { operation: 'sign_transaction', channel, chain: input.chain, recipients: [], opaque: true };
    const units = parseAmount(input.amount, contract.decimals, 'body.amount', MAX_EVM_UNITS);
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as `0x${string}`, units] });
    return signFacts({ ...body, body: { transaction: { chainId: evm.chain_id, to: contract.address, value: '0', data } } });
  }
  const units = parseAmount(input.amount, NATIVE_DECIMALS.evm, 'body.amount', MAX_EVM_UNITS);
  return signFacts({ ...body, body: { transaction: { chainId: evm.chain_id, to, value: units.toString(), data: '0x' } } });
}

export interface EvaluationDeps {
  readonly table: Table;
  readonly chains: ChainsConfig;
  readonly allowedDelegates: ReadonlySet<string>;
  readonly now: () => Date;
  /** Native coin prices, as the enclave reads them when it signs (policy-gate.ts). */
  readonly prices?: NativePrices;
}

/** The rules with a daily limit in scope of the request (operation, channel, chain as evaluate.ts reads them). */
function dailyLimitsInScope(policy: Policy, facts: SignFacts): bigint[] {
  return policy.rules
    .filter(
      (rule) =>
        rule.max_usd_per_day !== undefined &&
        rule.operations.includes(facts.operation) &&
        (!rule.channels || rule.channels.includes(facts.channel)) &&
        (!rule.chains || (facts.chain !== undefined && rule.chains.includes(facts.chain))),
    )
    .map((rule) => usdToMicro(rule.max_usd_per_day as string));
}

/** The decision the enclave would make for `input` on the app's policy (or the built-in default); reads only. */
export async function evaluateForApp(
  deps: EvaluationDeps,
  appId: string,
  input: EvaluatePolicyInput,
): Promise<PolicyDecision & { readonly remaining_usd_today: string | null }> {
  const channel: PolicyChannel = input.channel ?? (input.operation === 'withdraw' ? 'account' : 'enclave');
  const decoded =
    input.operation === 'withdraw'
      ? await withdrawalFacts(input, channel, deps.chains)
      : signFacts({ operation: input.operation, channel, body: input, chains: deps.chains });
  const policy = (await currentPolicy(deps.table, appId))?.policy ?? defaultPolicy(deps.allowedDelegates);
  const facts = await completeFacts(decoded, policy, deps.prices);
  if (!hasDailyLimit(policy)) return { ...evaluatePolicy(policy, facts), remaining_usd_today: null };
  // As the enclave decides (policy-gate.ts), on the user's rolling-24 h total; read, never counted.
  const spent = await usdSpentToday(deps.table, appId, input.sub, deps.now());
  const decision = evaluatePolicy(policy, { ...facts, usdToday: spent });
  const limits = dailyLimitsInScope(policy, facts);
  if (limits.length === 0) return { ...decision, remaining_usd_today: null };
  let tightest = limits[0] as bigint;
  for (const limit of limits) if (limit < tightest) tightest = limit;
  return { ...decision, remaining_usd_today: microToUsd(tightest > spent ? tightest - spent : 0n) };
}
