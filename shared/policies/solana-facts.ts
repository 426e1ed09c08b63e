import { getCompiledTransactionMessageCodec } from '@solana/kit';
import type { DecodedFacts, PolicyChains } from './decoded-facts.ts';

type Facts = DecodedFacts;

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const TOKEN_PROGRAMS = new Set(['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb']);
/** Programs whose instructions move nothing to anyone: fee settings, memos, creating an associated token account. */
const INERT_PROGRAMS = new Set([
  'ComputeBudget111111111111111111111111111111',
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
  'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
]);
const SYSTEM_TRANSFER = 2;
const TOKEN_TRANSFER = 3;
const TOKEN_APPROVE = 4;
const TOKEN_TRANSFER_CHECKED = 12;
const TOKEN_APPROVE_CHECKED = 13;

function usdcMint(chains: PolicyChains | undefined): { mint: string; decimals: number } | undefined {
  const sol = chains?.SOL as { tokens?: { USDC?: { mint?: unknown; decimals?: unknown } } } | undefined;
  const usdc = sol?.tokens?.USDC;
  return typeof usdc?.mint === 'string' && typeof usdc.decimals === 'number' ? { mint: usdc.mint, decimals: usdc.decimals } : undefined;
}

const u64 = (data: Uint8Array, offset: number) => new DataView(data.buffer, data.byteOffset, data.byteLength).getBigUint64(offset, true);

/**
 * A Solana transaction message's facts (chain SOL). Recipients: the `to` of System transfers, the
 * destination token account of SPL Transfer / TransferChecked, the delegate of Approve /
 * ApproveChecked (token accounts, not their owners: the owner is not in the message; a
 * TransferChecked destination is listed in `tokenAccounts` so token-owners.ts can match the owners a
 * policy lists through their associated token accounts). Lamports
 * moved by System transfers are `native` (SOL), priced later (native-usd.ts). Compute
 * budget, memo and associated-token-account instructions are ignored; any other instruction, or an
 * account only a lookup table names, makes the message opaque. USD: USDC TransferChecked /
 * ApproveChecked amounts at face value when every transfer is one; zero when nothing moves.
 */
export function solanaTransactionFacts(base64: string, chains: PolicyChains | undefined): Facts {
  const scope = { chain: 'SOL' };
  let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageCodec>['decode']>;
  try {
    message = getCompiledTransactionMessageCodec().decode(Buffer.from(base64, 'base64'));
  } catch {
    return { ...scope, recipients: [], opaque: true };
  }
  // The enclave signs legacy and v0 messages only (solana-message.ts).
  if (message.version !== 'legacy' && message.version !== 0) return { ...scope, recipients: [], opaque: true };
  const accounts: readonly string[] = message.staticAccounts;
  const usdc = usdcMint(chains);
  const recipients: string[] = [];
  let opaque = false;
  let usd: bigint | undefined = 0n;
  let lamports = 0n;
  const tokenAccounts: { account: string; mint: string; program: string }[] = [];
  for (const instruction of message.instructions) {
    const program = accounts[instruction.programAddressIndex];
    const data = new Uint8Array(instruction.data ?? []);
    const account = (index: number) => {
      const at = instruction.accountIndices?.[index];
      return at === undefined ? undefined : accounts[at];
    };
    if (program !== undefined && INERT_PROGRAMS.has(program)) continue;
    if (program === SYSTEM_PROGRAM && data.length === 12 && data[0] === SYSTEM_TRANSFER && data[1] === 0 && data[2] === 0 && data[3] === 0) {
      const to = account(1);
      if (to === undefined) opaque = true;
      else recipients.push(to);
      lamports += u64(data, 4); // priced later (native-usd.ts)
      continue;
    }
    if (program !== undefined && TOKEN_PROGRAMS.has(program) && data.length >= 9) {
      const kind = data[0];
      const checked = kind === TOKEN_TRANSFER_CHECKED || kind === TOKEN_APPROVE_CHECKED;
      const plain = kind === TOKEN_TRANSFER || kind === TOKEN_APPROVE;
      if ((plain && data.length === 9) || (checked && data.length === 10)) {
        const to = account(checked ? 2 : 1);
        if (to === undefined) opaque = true;
        else recipients.push(to);
        const amount = u64(data, 1);
        const mint = checked ? account(1) : undefined;
        if (kind === TOKEN_TRANSFER_CHECKED && to !== undefined && mint !== undefined) tokenAccounts.push({ account: to, mint, program });
        if (usdc && mint === usdc.mint && data[9] === usdc.decimals && usd !== undefined) {
          usd +=
            usdc.decimals >= 6
              ? (amount + 10n ** BigInt(usdc.decimals - 6) - 1n) / 10n ** BigInt(usdc.decimals - 6)
              : amount * 10n ** BigInt(6 - usdc.decimals);
        } else if (amount > 0n) {
          usd = undefined; // an unchecked transfer names no mint; another mint is not priced
        }
        continue;
      }
    }
    opaque = true;
  }
  const unique = [...new Set(recipients)];
  if (opaque) return { ...scope, recipients: unique, opaque };
  const decoded = { ...scope, recipients: unique, opaque, ...(tokenAccounts.length ? { tokenAccounts } : {}) };
  if (lamports > 0n) return { ...decoded, native: { coin: 'SOL', amount: lamports, ...(usd === undefined ? {} : { otherUsd: usd }) } };
  return { ...decoded, ...(usd !== undefined ? { usd: { value: usd } } : {}) };
}
