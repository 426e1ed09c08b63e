/** Solana's fixed values the sandbox relies on, and the USDC mint it recreates. */

/** The mainnet USDC mint, recreated here with a sandbox mint authority. */
export const USDC_MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
export const USDC_DECIMALS = 6;

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';
export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
export const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';

/** Agave MAX_PROCESSING_AGE: a blockhash is usable for 150 blocks after the one it names. */
export const MAX_PROCESSING_AGE = 150;
export const U64_MAX = 18_446_744_073_709_551_615n;
