import { describe, expect, it } from 'vitest';
import {
  type BridgeClient,
  type BridgeQuoteRequest,
  BridgeRefusedError,
  BridgeUnavailableError,
  type BridgeQuote as ClientQuote,
} from '../../shared/transfers/bridge.ts';
import { BridgeClientQuoter } from '../../shared/transfers/bridge-quoter.ts';
import { BridgeAmountRefused, BridgeQuoteError } from '../../shared/transfers/estimate.ts';

const WALLET = { evm: '0x1111111111111111111111111111111111111111', sol: 'So11111111111111111111111111111111111111112' };
const ARB_TO_SOL = { from: { chain: 'ARB', token: 'USDC' }, to: { chain: 'SOL', token: 'USDC' } } as const;

/** Test double: a BridgeClient answering with a fixed quote or failing with the given error; records requests. */
class ScriptedBridgeClient implements BridgeClient {
  readonly requests: BridgeQuoteRequest[] = [];
  readonly answer: ClientQuote | Error;
  constructor(answer: ClientQuote | Error) {
    this.answer = answer;
  }
  quote(request: BridgeQuoteRequest): Promise<ClientQuote> {
    this.requests.push(request);
    return this.answer instanceof Error ? Promise.reject(this.answer) : Promise.resolve(this.answer);
  }
  status(): never {
    throw new Error('not used');
  }
}

const QUOTE: ClientQuote = {
  quote_id: 'q1',
  route_id: 'cctp:ARB.USDC->SOL.USDC',
  amount: 10_000_000n,
  fee: 201_000n,
  to_amount: 9_799_000n,
  to_amount_min: 9_750_005n,
  expires_at: '2026-11-22T12:05:00.000Z',
  estimated_fill_ms: 0,
  deposit: [],
};

describe('BridgeClientQuoter', () => {
  it('asks with the EVM sender and the Solana recipient, and maps the quote', async () => {
    const client = new ScriptedBridgeClient(QUOTE);
    const quote = await new BridgeClientQuoter(client, WALLET).quote(ARB_TO_SOL, 10_000_000n);
    expect(quote).toEqual({ fee: 201_000n, minAmount: 1_000_000n, maxAmount: 1_000_000_000_000n, expiresAt: '2026-11-22T12:05:00.000Z' });
    expect(client.requests).toEqual([{ route: ARB_TO_SOL, amount: 10_000_000n, sender: WALLET.evm, recipient: WALLET.sol }]);
  });

  it("an amount the bridge refuses carries the route table's limits", async () => {
    const quoter = new BridgeClientQuoter(new ScriptedBridgeClient(new BridgeRefusedError('AMOUNT_TOO_LOW', 'fromAmount: too low', 422)), WALLET);
    const error = await quoter.quote(ARB_TO_SOL, 5n).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BridgeAmountRefused);
    expect(error).toMatchObject({ reason: 'too_low', minAmount: 1_000_000n, maxAmount: 1_000_000_000_000n });
  });

  it('other failures become a BridgeQuoteError naming no host', async () => {
    const down = new BridgeClientQuoter(
      new ScriptedBridgeClient(new BridgeUnavailableError('bridge unreachable: connect ECONNREFUSED 127.0.0.1:4100')),
      WALLET,
    );
    await expect(down.quote(ARB_TO_SOL, 10_000_000n)).rejects.toThrow(new BridgeQuoteError('the bridge is unavailable'));
    const refused = new BridgeClientQuoter(new ScriptedBridgeClient(new BridgeRefusedError('NO_ROUTE', 'no route', 404)), WALLET);
    await expect(refused.quote(ARB_TO_SOL, 10_000_000n)).rejects.toThrow(/the bridge refused the quote \(NO_ROUTE\)/);
  });
});
