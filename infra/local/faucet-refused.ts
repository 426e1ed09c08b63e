import { MAX_EVM_UNITS, MAX_SOLANA_UNITS } from '../../shared/money.ts';
/**
 * The sandbox faucet cannot credit what was asked (the zero address, an account that is not a
 * wallet, a credit past what the chain's integer type holds): a client error, answered 400 by
 * `POST /sandbox/faucet` with this code, not a sandbox fault.
 */
export class FaucetRefusedError extends Error {
  readonly code: 'INVALID_ADDRESS' | 'AMOUNT_TOO_LARGE';

  constructor(code: FaucetRefusedError['code'], message: string) {
    super(message);
    this.code = code;
    this.name = 'FaucetRefusedError';
  }
}

/** Largest balance or supply a chain's token type holds: uint256 on EVM, u64 on Solana. */
/** What a balance can hold at all (shared/money.ts): uint256 on EVM, u64 on Solana. */
export const MAX_UNITS = { evm: MAX_EVM_UNITS, sol: MAX_SOLANA_UNITS } as const;

export const tooLarge = (what: string, family: keyof typeof MAX_UNITS) =>
  new FaucetRefusedError('AMOUNT_TOO_LARGE', `body.amount: ${what} would exceed ${family === 'evm' ? '2^256' : '2^64'} - 1 base units`);
