import * as v from 'valibot';
import { CHAIN_CODES } from '../wallets/networks.ts';

/** `POST /sandbox/faucet` (local sandbox only): what to credit, in whole tokens. */
export const FaucetRequest = v.object({
  address: v.pipe(v.string('must be a string'), v.minLength(1, 'is required')),
  chain: v.picklist(CHAIN_CODES, `must be one of ${CHAIN_CODES.join(', ')}`),
  token: v.pipe(v.string('must be a string'), v.minLength(1, 'is required')),
  amount: v.pipe(v.string('must be a decimal string'), v.description('Decimal string in whole tokens, e.g. "100.5".')),
});
