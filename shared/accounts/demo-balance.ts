import * as v from 'valibot';
import type { AuthenticatedUser } from '../auth/authenticate.ts';
import type { Chains } from '../chains/chains.ts';
import { formatAmount } from '../money.ts';
import { CHAIN_CODES } from '../wallets/networks.ts';
import { type AccountDeps, requireAccount } from './account-service.ts';

export const DemoBalanceQuery = v.object({
  chain: v.picklist(CHAIN_CODES, `must be one of ${CHAIN_CODES.join(', ')}`),
});

/**
 * `GET /demo/wallet/balance` (spec; demo only): every token the chain carries, read from the
 * chain for the account's address on it (the ETH address on every EVM chain, SOL on Solana).
 */
export async function demoBalance(
  deps: Pick<AccountDeps, 'table'> & { readonly chains: Chains },
  user: AuthenticatedUser,
  chain: (typeof CHAIN_CODES)[number],
) {
  const account = await requireAccount(deps, user);
  const address = (chain === 'SOL' ? account.public_address.SOL : account.public_address.ETH) ?? null;
  let assets: Record<string, string> = {};
  if (address) {
    const tokens = deps.chains.tokens(chain); // native coin first, then tokens: a stable order
    const balances =
      chain === 'SOL'
        ? await deps.chains.sol().then((sol) => Promise.all(tokens.map((token) => sol.balance(address, token))))
        : await deps.chains.evm(chain).then((evm) => Promise.all(tokens.map((token) => evm.balance(address as `0x${string}`, token))));
    assets = Object.fromEntries(
      tokens.map((token, i) => {
        const balance = balances[i];
        if (balance === undefined) throw new Error(`demo balance: no balance read for ${token} on ${chain}`); // one read per token, in order
        return [token, formatAmount(balance, deps.chains.decimals(chain, token))];
      }),
    );
  }
  return { chain, address, assets, public_address: account.public_address };
}
