import * as v from 'valibot';

/**
 * Enclave networks: a chain code, optionally labelled `-MAINNET`, `-TESTNET` or `-LOCAL`.
 * EVM chains share one secp256k1 key (one address on every EVM chain); SOL uses ed25519.
 */
export const EVM_CHAINS = ['ETH', 'ARB', 'POL', 'INK'] as const;
export const CHAIN_CODES = [...EVM_CHAINS, 'SOL'] as const;
export type ChainCode = (typeof CHAIN_CODES)[number];
export type KeyFamily = 'evm' | 'sol';

const NETWORK_PATTERN = /^(ETH|ARB|POL|INK|SOL)(?:-(MAINNET|TESTNET|LOCAL))?$/;

export const NetworkSchema = v.pipe(
  v.string('must be a string'),
  v.regex(NETWORK_PATTERN, 'must be ETH, ARB, POL, INK or SOL, optionally with -MAINNET, -TESTNET or -LOCAL'),
);

export function chainOf(network: string): ChainCode {
  const match = NETWORK_PATTERN.exec(network);
  if (!match) throw new Error(`not a network: ${network}`);
  return match[1] as ChainCode;
}

export function familyOf(network: string): KeyFamily {
  return chainOf(network) === 'SOL' ? 'sol' : 'evm';
}
