import { randomBytes } from 'node:crypto';
import {
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getAddressDecoder,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import { findAssociatedTokenPda, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { describe, expect, it } from 'vitest';
import { BridgeQuoteRejectedError, type BridgeQuoteRequest } from '../../shared/transfers/bridge.ts';
import { HttpBridgeClient } from '../../shared/transfers/http-bridge-client.ts';
import { LIFI_CONTRACTS } from '../../shared/transfers/lifi.ts';

/**
 * HttpBridgeClient against LI.FI-shaped answers (a fake fetch): the request it sends (LI.FI's
 * parameter names, the optional x-lifi-api-key) and each check a quote must pass before
 * anything is signed (issue 23).
 */
const DIAMOND = '0x1231DEB6f5749EF6cE6943a275A1D3E7486F4EaE';
const USER = '0x00000000000000000000000000000000000000A1';
/** USDC on Arbitrum (Circle's native USDC), as LI.FI's `action.fromToken` names it. */
const ARB_USDC = '0xaf88d065e77c8cC2239327C5EDb3A432268e5831';
const REQUEST: BridgeQuoteRequest = {
  route: { from: { chain: 'ARB', token: 'USDC' }, to: { chain: 'ETH', token: 'USDC' } },
  amount: 100_000_000n,
  sender: USER,
  recipient: USER,
};

const step = (patch: { action?: object; estimate?: object; transactionRequest?: object | null } = {}) => ({
  id: 'quote-1',
  type: 'lifi',
  tool: 'across',
  action: {
    fromChainId: 42161,
    fromAmount: '100000000',
    fromToken: { address: ARB_USDC, symbol: 'USDC', decimals: 6, chainId: 42161 },
    fromAddress: USER,
    toChainId: 1,
    toAddress: USER,
    slippage: 0.005,
    ...patch.action,
  },
  estimate: {
    tool: 'across',
    fromAmount: '100000000',
    toAmount: '98000000',
    toAmountMin: '97510000',
    approvalAddress: DIAMOND,
    feeCosts: [],
    gasCosts: [],
    executionDuration: 12,
    ...patch.estimate,
  },
  includedSteps: [],
  ...(patch.transactionRequest === null
    ? {}
    : { transactionRequest: { to: DIAMOND, data: '0xabcdef', value: '0x0', chainId: 42161, gasLimit: '0x30d40', ...patch.transactionRequest } }),
});

function clientAnswering(body: unknown, seen: { url?: string; headers?: Record<string, string> } = {}, contracts?: Record<string, string[]>) {
  const fake = (async (url: string, init?: RequestInit) => {
    seen.url = url;
    seen.headers = init?.headers as Record<string, string>;
    return new Response(JSON.stringify(body), { status: 200 });
  }) as typeof fetch;
  return new HttpBridgeClient({ baseUrl: 'https://li.quest/v1/', apiKey: 'k-1', fetch: fake, now: () => 0, ...(contracts ? { contracts } : {}) });
}

describe('HttpBridgeClient speaks LI.FI', () => {
  it("asks GET /v1/quote with LI.FI's parameter names and the API key header, and maps the step", async () => {
    const seen: { url?: string; headers?: Record<string, string> } = {};
    const quote = await clientAnswering(step(), seen).quote(REQUEST);
    const url = new URL(seen.url!);
    expect(url.origin + url.pathname).toBe('https://li.quest/v1/quote');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      fromChain: '42161',
      toChain: '1',
      fromToken: 'USDC',
      toToken: 'USDC',
      fromAmount: '100000000',
      fromAddress: USER,
      toAddress: USER,
      slippage: '0.005',
    });
    expect(seen.headers).toEqual({ 'x-lifi-api-key': 'k-1' });
    expect(quote).toMatchObject({
      quote_id: 'quote-1',
      amount: 100_000_000n,
      fee: 2_000_000n,
      to_amount: 98_000_000n,
      to_amount_min: 97_510_000n,
      estimated_fill_ms: 12_000,
      expires_at: new Date(60_000).toISOString(),
      deposit: [{ kind: 'evm_transaction', chain: 'ARB', token: ARB_USDC, spender: DIAMOND, to: DIAMOND, data: '0xabcdef', value: 0n }],
    });
  });

  it('maps GET /v1/status: a fill on the destination is `receiving`, a refund back on the source chain is `refund`', async () => {
    const done = {
      status: 'DONE',
      substatus: 'COMPLETED',
      transactionId: 'quote-1',
      sending: { txHash: '0x01', chainId: 42161, amount: '5' },
      receiving: { txHash: '0x02', chainId: 1, amount: '4' },
    };
    expect(await clientAnswering(done).status({ chain: 'ARB', tx: '0x01' })).toEqual({
      status: 'DONE',
      substatus: 'COMPLETED',
      quote_id: 'quote-1',
      sending: { chain: 'ARB', tx_hash: '0x01', amount: 5n },
      receiving: { chain: 'ETH', tx_hash: '0x02', amount: 4n },
    });
    const refunded = { ...done, substatus: 'REFUNDED', receiving: { txHash: '0x03', chainId: 42161, amount: '5' } };
    expect(await clientAnswering(refunded).status({ chain: 'ARB', tx: '0x01' })).toMatchObject({ refund: { chain: 'ARB', tx_hash: '0x03', amount: 5n } });
    const pending = { status: 'PENDING', substatus: 'WAIT_DESTINATION_TRANSACTION', sending: done.sending, receiving: { chainId: 1 } };
    expect((await clientAnswering(pending).status({ chain: 'ARB', tx: '0x01' })).receiving).toBeUndefined();
  });
});

describe('quote checks before signing: each refusal', () => {
  const refused = async (body: unknown, code: string, contracts?: Record<string, string[]>) => {
    const error = await clientAnswering(body, {}, contracts)
      .quote(REQUEST)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BridgeQuoteRejectedError);
    expect(error).toMatchObject({ code });
  };

  it('the destination chain is not the one asked for', () => refused(step({ action: { toChainId: 137 } }), 'BRIDGE_QUOTE_WRONG_CHAIN'));
  it('the transaction is for another chain', () => refused(step({ transactionRequest: { chainId: 1 } }), 'BRIDGE_QUOTE_WRONG_CHAIN'));
  it('the amount is not the one asked for', () => refused(step({ estimate: { fromAmount: '100000001' } }), 'BRIDGE_QUOTE_WRONG_AMOUNT'));
  it("the recipient is not the user's own address", () =>
    refused(step({ action: { toAddress: '0x00000000000000000000000000000000000000B2' } }), 'BRIDGE_QUOTE_WRONG_RECIPIENT'));
  it('toAmountMin is below what the estimate promised (toAmount less the slippage asked for)', () =>
    refused(step({ estimate: { toAmountMin: '97509999' } }), 'BRIDGE_QUOTE_MIN_TOO_LOW'));
  it('transactionRequest.to is not on the allow-list', () =>
    refused(step({ transactionRequest: { to: '0x00000000000000000000000000000000000000C3' } }), 'BRIDGE_QUOTE_UNKNOWN_CONTRACT'));
  it('estimate.approvalAddress is not on the allow-list', () =>
    refused(step({ estimate: { approvalAddress: '0x00000000000000000000000000000000000000C3' } }), 'BRIDGE_QUOTE_UNKNOWN_CONTRACT'));
  it('Ink: the Ethereum diamond is not Ink’s', async () => {
    expect(LIFI_CONTRACTS.INK).toEqual(['0x864b314D4C5a0399368609581d3E8933a63b9232']);
    const ink = { ...REQUEST, route: { from: { chain: 'INK', token: 'USDC' }, to: REQUEST.route.to } } as const;
    const body = step({ action: { fromChainId: 57073 }, transactionRequest: { chainId: 57073 } });
    const error = await clientAnswering(body)
      .quote(ink)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BRIDGE_QUOTE_UNKNOWN_CONTRACT' });
  });
  it('no transactionRequest', () => refused(step({ transactionRequest: null }), 'BRIDGE_QUOTE_NO_TRANSACTION'));
  it('it spends a native coin, not the token asked for', () =>
    refused(
      step({ action: { fromToken: { address: '0x0000000000000000000000000000000000000000', symbol: 'ETH', decimals: 18 } } }),
      'BRIDGE_QUOTE_WRONG_TOKEN',
    ));
  it('its fromToken is not an address', () => refused(step({ action: { fromToken: { address: 'USDC' } } }), 'BRIDGE_QUOTE_WRONG_TOKEN'));
  it('an answer that is not a LiFiStep is the bridge being unavailable, not a quote', async () => {
    await expect(clientAnswering({ id: 'x' }).quote(REQUEST)).rejects.toMatchObject({ code: 'BRIDGE_UNAVAILABLE' });
  });
});

describe('quote checks: the Solana form (a base64 transaction)', () => {
  const randomAddress = () => getAddressDecoder().decode(randomBytes(32)) as Address;
  const user = randomAddress();
  const vault = randomAddress();
  const mint = randomAddress();
  const request: BridgeQuoteRequest = {
    route: { from: { chain: 'SOL', token: 'USDC' }, to: { chain: 'ARB', token: 'USDC' } },
    amount: 7_000_000n,
    sender: user,
    recipient: USER,
  };

  async function transferTx(to: Address, amount: bigint): Promise<string> {
    const payer = createNoopSigner(user);
    const [[source], [destination]] = await Promise.all([
      findAssociatedTokenPda({ owner: user, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }),
      findAssociatedTokenPda({ owner: to, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }),
    ]);
    const memo = { programAddress: address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr'), accounts: [], data: new TextEncoder().encode('quote-sol') };
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(user, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: '11111111111111111111111111111111' as Blockhash, lastValidBlockHeight: 1n }, m),
      (m) =>
        appendTransactionMessageInstructions([getTransferCheckedInstruction({ source, mint, destination, authority: payer, amount, decimals: 6 }), memo], m),
    );
    return Buffer.from(getTransactionEncoder().encode(compileTransaction(message))).toString('base64');
  }

  const solStep = async (to: Address, amount = request.amount) =>
    step({
      action: { fromChainId: 1151111081099710, toChainId: 42161, fromAmount: amount.toString(), fromAddress: user },
      estimate: { fromAmount: amount.toString(), toAmount: '6800000', toAmountMin: '6766000', approvalAddress: vault },
      transactionRequest: { to: undefined, chainId: undefined, value: undefined, gasLimit: undefined, data: await transferTx(to, amount) },
    });

  it('an SPL transfer with a memo into an allowed account becomes the deposit call', async () => {
    const quote = await clientAnswering(await solStep(vault), {}, { SOL: [vault] }).quote(request);
    expect(quote.deposit).toEqual([{ kind: 'spl_transfer', chain: 'SOL', token: 'USDC', mint, to: vault, amount: 7_000_000n, memo: 'quote-sol' }]);
  });
  it('a transfer into an account no allowed address owns is refused', async () => {
    const error = await clientAnswering(await solStep(randomAddress()), {}, { SOL: [vault] })
      .quote(request)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BRIDGE_QUOTE_UNKNOWN_CONTRACT' });
  });
  it('with LI.FI’s own allow-list (no Solana program is known to this service) a Solana source is refused', async () => {
    const error = await clientAnswering(await solStep(vault))
      .quote(request)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BRIDGE_QUOTE_UNKNOWN_CONTRACT' });
  });
  it('data that is not a Solana transaction is refused', async () => {
    const body = await solStep(vault);
    body.transactionRequest!.data = Buffer.from('not a transaction').toString('base64');
    const error = await clientAnswering(body, {}, { SOL: [vault] })
      .quote(request)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BRIDGE_QUOTE_NO_TRANSACTION' });
  });
});
