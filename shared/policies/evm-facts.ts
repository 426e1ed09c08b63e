import { type Address, checksumAddress, decodeFunctionData, erc20Abi, type Hex, parseAbi } from 'viem';
import type { DecodedFacts, NativeCoin, PolicyChains } from './decoded-facts.ts';

type EvmChainView = {
  readonly family: 'evm';
  readonly chain_id: number;
  readonly tokens: Readonly<Record<string, { readonly address: string; readonly decimals: number }>>;
};
type Facts = DecodedFacts;

const PERMIT_ABI = parseAbi(['function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)']);
const TOKEN_ABI = [...erc20Abi, ...PERMIT_ABI] as const;
/** Token calls whose recipient (or spender) and amount are read from the calldata. */
const TOKEN_CALLS = new Set(['transfer', 'transferFrom', 'approve', 'permit']);
/** Tokens counted at face value (one token is one USD). */
const USD_TOKENS = new Set(['USDC', 'USDC.E']);
const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

const normal = (address: string): Address => checksumAddress(`0x${address.slice(2).toLowerCase()}`);

function evmChains(chains: PolicyChains | undefined): [string, EvmChainView][] {
  return Object.entries(chains ?? {}).filter(
    (entry): entry is [string, EvmChainView] =>
      typeof entry[1] === 'object' &&
      entry[1] !== null &&
      (entry[1] as EvmChainView).family === 'evm' &&
      typeof (entry[1] as EvmChainView).chain_id === 'number',
  );
}

/** The chain code of an EVM chain id when configured, else `eip155:<id>`. */
export function evmChainOf(chainId: number, chains: PolicyChains | undefined): string {
  return evmChains(chains).find(([, chain]) => chain.chain_id === chainId)?.[0] ?? `eip155:${chainId}`;
}

/** Token amount in micro-USD when `token` is a USD token on that chain, rounded up (a limit is never undershot). */
function usdOfToken(chainId: number, token: string, amount: bigint, chains: PolicyChains | undefined): bigint | undefined {
  for (const [, chain] of evmChains(chains)) {
    if (chain.chain_id !== chainId) continue;
    for (const [symbol, entry] of Object.entries(chain.tokens ?? {})) {
      if (!USD_TOKENS.has(symbol) || entry.address.toLowerCase() !== token.toLowerCase()) continue;
      const scale = 10n ** BigInt(Math.abs(entry.decimals - 6));
      return entry.decimals >= 6 ? (amount + scale - 1n) / scale : amount * scale;
    }
  }
  return undefined;
}

/** The native coin of a configured EVM chain code (`eip155:<id>`, an unconfigured chain: none, so unpriced). */
const EVM_NATIVE: Readonly<Record<string, NativeCoin>> = { ETH: 'ETH', ARB: 'ETH', INK: 'ETH', POL: 'POL' };

/** `native` for `value` wei moved on `chain` with the rest worth `otherUsd` (unknown: undefined); nothing when the coin is unknown. */
function nativeMoved(chain: string | undefined, value: bigint, otherUsd: bigint | undefined): Pick<Facts, 'native'> {
  const coin = chain === undefined ? undefined : EVM_NATIVE[chain];
  return coin ? { native: { coin, amount: value, ...(otherUsd === undefined ? {} : { otherUsd }) } } : {};
}

function quantity(value: unknown): bigint | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && /^(0|[1-9][0-9]*|0x[0-9a-fA-F]+)$/.test(value)) return BigInt(value);
  return undefined;
}

export function authorizationFacts(chainId: unknown, contractAddress: unknown, chains: PolicyChains | undefined): Facts {
  const chain = typeof chainId === 'number' && Number.isSafeInteger(chainId) && chainId > 0 ? evmChainOf(chainId, chains) : undefined;
  if (typeof contractAddress !== 'string' || !HEX_ADDRESS.test(contractAddress)) return { ...(chain ? { chain } : {}), recipients: [], opaque: true };
  // An authorisation hands the account's code to the delegate: its worth is unknown (everything the account holds).
  return { ...(chain ? { chain } : {}), recipients: [normal(contractAddress)], opaque: false };
}

type TxBody = { readonly chainId?: unknown; readonly to?: unknown; readonly value?: unknown; readonly data?: unknown; readonly input?: unknown };

/**
 * An EVM transaction's facts. Recipients: `to` when it carries value or no calldata (a native
 * transfer or a plain call); the recipient or spender of ERC-20 transfer, transferFrom, approve
 * and permit calldata. Any other calldata, or a contract creation, is opaque. USD: the token
 * amount when the token is a configured USDC/USDC.E on that chain; zero when nothing moves; native
 * value (wei) on a configured chain is reported as `native`, priced later (native-usd.ts);
 * otherwise unknown.
 */
export function evmTransactionFacts(tx: TxBody, chains: PolicyChains | undefined): Facts {
  const chainIdBig = quantity(tx.chainId);
  const chainId = chainIdBig !== undefined && chainIdBig > 0n && chainIdBig <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(chainIdBig) : undefined;
  const scope = chainId === undefined ? {} : { chain: evmChainOf(chainId, chains) };
  const value = tx.value === undefined ? 0n : quantity(tx.value);
  const rawData = tx.data ?? tx.input;
  const data = typeof rawData === 'string' ? rawData : '0x';
  const to = typeof tx.to === 'string' && HEX_ADDRESS.test(tx.to) ? normal(tx.to) : undefined;
  if (value === undefined || !/^0x([0-9a-fA-F]{2})*$/.test(data)) return { ...scope, recipients: [], opaque: true };
  if (to === undefined) return { ...scope, recipients: [], opaque: true }; // a contract creation: the code is not read
  const nativeRecipients = value > 0n || data === '0x' ? [to] : [];
  if (data === '0x') {
    return { ...scope, recipients: nativeRecipients, opaque: false, ...(value === 0n ? { usd: { value: 0n } } : nativeMoved(scope.chain, value, 0n)) };
  }
  const call = decodeTokenCall(data as Hex);
  if (!call) return { ...scope, recipients: nativeRecipients, opaque: true };
  const recipients = [...nativeRecipients, ...(nativeRecipients.includes(call.recipient) ? [] : [call.recipient])];
  const tokenUsd = chainId === undefined ? undefined : usdOfToken(chainId, to, call.amount, chains);
  if (value > 0n) return { ...scope, recipients, opaque: false, ...nativeMoved(scope.chain, value, tokenUsd) };
  return { ...scope, recipients, opaque: false, ...(tokenUsd !== undefined ? { usd: { value: tokenUsd } } : {}) };
}

/** The recipient (or spender) and amount of a known token call; null for any other calldata. */
export function decodeTokenCall(data: Hex): { readonly name: string; readonly recipient: Address; readonly amount: bigint } | null {
  let decoded: ReturnType<typeof decodeFunctionData<typeof TOKEN_ABI>>;
  try {
    decoded = decodeFunctionData({ abi: TOKEN_ABI, data });
  } catch {
    return null;
  }
  if (!TOKEN_CALLS.has(decoded.functionName)) return null;
  const args = decoded.args as readonly unknown[];
  switch (decoded.functionName) {
    case 'transfer':
    case 'approve':
      return { name: decoded.functionName, recipient: normal(args[0] as string), amount: args[1] as bigint };
    case 'transferFrom':
      return { name: decoded.functionName, recipient: normal(args[1] as string), amount: args[2] as bigint };
    case 'permit':
      return { name: decoded.functionName, recipient: normal(args[1] as string), amount: args[2] as bigint };
    default:
      return null;
  }
}
