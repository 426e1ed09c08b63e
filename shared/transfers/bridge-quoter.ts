import { type BridgeClient, BridgeRefusedError, BridgeUnavailableError } from './bridge.ts';
import { findBridgeRoute } from './bridge-routes.ts';
import { BridgeAmountRefused, type BridgeQuote, BridgeQuoteError, type BridgeQuoter, type BridgeRoute } from './estimate.ts';

/**
 * The estimate's BridgeQuoter over the bridge's client (shared/transfers/bridge.ts), for one user:
 * the bridge's quote names who sends (on the source chain) and who receives (on the destination
 * chain). The bridge refusing the amount (AMOUNT_TOO_LOW / AMOUNT_TOO_HIGH) becomes
 * BridgeAmountRefused with the route's limits from the route table, so the estimate answers with
 * the effective minimum; any other failure becomes a BridgeQuoteError with a message naming no
 * host (the estimate's `bridge_estimation_error`).
 */
export class BridgeClientQuoter implements BridgeQuoter {
  readonly provider: string;
  readonly #client: BridgeClient;
  readonly #wallet: { readonly evm: string; readonly sol: string };

  constructor(client: BridgeClient, wallet: { readonly evm: string; readonly sol: string }, provider = 'lifi') {
    this.#client = client;
    this.#wallet = wallet;
    this.provider = provider;
  }

  async quote(route: BridgeRoute, amount: bigint): Promise<BridgeQuote> {
    const on = (chain: string) => (chain === 'SOL' ? this.#wallet.sol : this.#wallet.evm);
    try {
      const quote = await this.#client.quote({ route, amount, sender: on(route.from.chain), recipient: on(route.to.chain) });
      // LI.FI's quote names no limits: the route table's (the planner only plans its routes).
      const table = findBridgeRoute(route.from, route.to);
      return { fee: quote.fee, minAmount: table?.min ?? 0n, maxAmount: table?.max ?? quote.amount, expiresAt: quote.expires_at };
    } catch (error) {
      const table = findBridgeRoute(route.from, route.to);
      if (error instanceof BridgeRefusedError && table && (error.code === 'AMOUNT_TOO_LOW' || error.code === 'AMOUNT_TOO_HIGH')) {
        throw new BridgeAmountRefused(error.code === 'AMOUNT_TOO_LOW' ? 'too_low' : 'too_high', { minAmount: table.min, maxAmount: table.max });
      }
      if (error instanceof BridgeRefusedError) throw new BridgeQuoteError(`the bridge refused the quote (${error.code})`);
      if (error instanceof BridgeUnavailableError) throw new BridgeQuoteError('the bridge is unavailable');
      throw error;
    }
  }
}
