import { address } from '@solana/kit';
import { findAssociatedTokenPda } from '@solana-program/token';
import { inScope } from './evaluate.ts';
import type { SignFacts } from './facts.ts';
import { hasUsdLimit, type NativePrices, priceNativeFacts } from './native-usd.ts';
import type { Policy } from './policy.ts';

/** Derived associated token accounts kept per process (owner, mint, program → account): a policy's list is derived once, not per signature. */
const MAX_CACHED = 20_000;
const derived = new Map<string, Promise<string | null>>();

/** The associated token account of `owner` for `mint` under `program`; null when `owner` is no Solana address. */
function associatedTokenAccount(owner: string, mint: string, program: string): Promise<string | null> {
  const key = `${owner}:${mint}:${program}`;
  let account = derived.get(key);
  if (!account) {
    account = (async () => {
      try {
        const [pda] = await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram: address(program) });
        return pda as string;
      } catch {
        return null; // not a base58 address (an EVM entry of a mixed list)
      }
    })();
    if (derived.size >= MAX_CACHED) derived.delete(derived.keys().next().value as string);
    derived.set(key, account);
  }
  return account;
}

/**
 * Which address a policy lists owns each SPL TransferChecked destination of `facts` (issue 22:
 * `to` lists are matched on the recipient, and a Solana user means a wallet, not a token account).
 * The message names only the destination token account and its mint; an owner is found when the
 * destination is the owner's associated token account for that mint and token program, derived
 * for the Solana addresses of the `to` lists of the rules in scope. A token account that is no
 * listed owner's associated account keeps matching only by its own address.
 */
export async function resolveTokenOwners<F extends SignFacts>(facts: F, policy: Policy): Promise<F> {
  if (!facts.tokenAccounts?.length) return facts;
  const candidates = new Set<string>();
  for (const rule of policy.rules) {
    if (!rule.to || !inScope(rule, facts)) continue;
    for (const entry of [...(rule.to.allow ?? []), ...(rule.to.deny ?? [])]) if (!entry.startsWith('0x')) candidates.add(entry);
  }
  if (candidates.size === 0) return facts;
  const owners = new Map<string, string>();
  for (const { account, mint, program } of facts.tokenAccounts) {
    for (const owner of candidates) {
      if ((await associatedTokenAccount(owner, mint, program)) === account) {
        owners.set(account, owner);
        break;
      }
    }
  }
  return owners.size ? { ...facts, owners } : facts;
}

/**
 * What decoding leaves for the policy to complete before it decides, the same for a signature
 * (policy-gate.ts) and for /policies/evaluate: a native coin's USD value when the policy has a USD
 * limit (native-usd.ts), and the listed owners of SPL destinations.
 */
export async function completeFacts<F extends SignFacts>(facts: F, policy: Policy, prices: NativePrices | undefined): Promise<F> {
  return resolveTokenOwners(hasUsdLimit(policy) ? await priceNativeFacts(facts, prices) : facts, policy);
}
