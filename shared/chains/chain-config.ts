import * as v from 'valibot';

/**
 * Chain configuration (issue: no address or RPC hard-coded in business code). Given to functions
 * as CHAINS_CONFIG (JSON). The sandbox writes one for its local chains with each `rpc_url`
 * inline; a deployment leaves `rpc_url` out (hosted RPC URLs hold API keys) and names a Secrets
 * Manager secret with them in RPC_URLS_SECRET (see rpc-urls.ts), plus the token table
 * of infra/config/mainnet-tokens.json.
 *
 * Native coins (ETH on ETH/ARB/INK, POL on POL, SOL on SOL) have 18 decimals on EVM chains and 9
 * on Solana; tokens carry their own decimals (USDC and USDC.E: 6).
 */
const EvmAddress = v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address'));

const EvmChain = v.object({
  family: v.literal('evm'),
  chain_id: v.pipe(v.number(), v.integer(), v.minValue(1)),
  rpc_url: v.optional(v.pipe(v.string(), v.url())),
  native: v.picklist(['ETH', 'POL']),
  tokens: v.record(v.picklist(['USDC', 'USDC.E']), v.object({ address: EvmAddress, decimals: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(36)) })),
  /** The EIP-7702 delegate (SponsoredExecutor) used for gas-sponsored sends; absent = no sponsorship. */
  delegate: v.optional(EvmAddress),
});

const SolanaChain = v.object({
  family: v.literal('sol'),
  rpc_url: v.optional(v.pipe(v.string(), v.url())),
  native: v.literal('SOL'),
  tokens: v.record(
    v.picklist(['USDC']),
    v.object({
      mint: v.pipe(v.string(), v.regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 mint address')),
      decimals: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(18)),
    }),
  ),
});

export const ChainsConfigSchema = v.object({
  ETH: EvmChain,
  ARB: EvmChain,
  POL: EvmChain,
  INK: EvmChain,
  SOL: SolanaChain,
  /** True only for the local sandbox: enables the sandbox-only endpoints. */
  sandbox: v.optional(v.boolean(), false),
});

/** As configured: `rpc_url` may be absent (then it comes from RPC_URLS_SECRET). */
export type ChainsConfig = v.InferOutput<typeof ChainsConfigSchema>;
/** One chain with its RPC URL resolved: what the chain adapters are built from. */
export type EvmChainConfig = v.InferOutput<typeof EvmChain> & { readonly rpc_url: string };
export type SolanaChainConfig = v.InferOutput<typeof SolanaChain> & { readonly rpc_url: string };

export const EVM_CHAIN_CODES = ['ETH', 'ARB', 'POL', 'INK'] as const;
export type EvmChainCode = (typeof EVM_CHAIN_CODES)[number];

const EVM_CODES = new Set<string>(EVM_CHAIN_CODES);
/** A chain code of an EVM chain (what `EvmChains.evm` takes): every chain but SOL. */
export const isEvmChain = (code: string): code is EvmChainCode => EVM_CODES.has(code);

export const NATIVE_DECIMALS = { evm: 18, sol: 9 } as const;
