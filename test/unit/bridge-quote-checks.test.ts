import { randomBytes } from 'node:crypto';
import {
  AccountRole,
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getAddressDecoder,
  getTransactionEncoder,
  type Instruction,
  pipe,
  type SignatureBytes,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  findAssociatedTokenPda,
  getApproveInstruction,
  getTransferCheckedInstruction,
  getTransferInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { describe, expect, it } from 'vitest';
import { BridgeQuoteRejectedError, type BridgeQuoteRequest } from '../../shared/transfers/bridge.ts';
import { HttpBridgeClient } from '../../shared/transfers/http-bridge-client.ts';
import { LIFI_CONTRACTS, LIFI_SOLANA_PROGRAMS } from '../../shared/transfers/lifi.ts';
import { MAX_BRIDGE_PRIORITY_FEE_LAMPORTS } from '../../shared/transfers/solana-bridge-transaction.ts';

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

describe('quote checks: the Solana form (a base64 transaction, signed as given)', () => {
  const randomAddress = () => getAddressDecoder().decode(randomBytes(32)) as Address;
  const user = randomAddress();
  const bridgeAccount = randomAddress();
  const mint = randomAddress();
  const MEMO = address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
  const COMPUTE_BUDGET = address('ComputeBudget111111111111111111111111111111');
  const LIFI_PROGRAM = address(LIFI_SOLANA_PROGRAMS[0]!);
  /** The sandbox bridge's allow-list on Solana: the programs its quotes' transactions invoke. */
  const SANDBOX = { SOL: [TOKEN_PROGRAM_ADDRESS, MEMO] };
  const request: BridgeQuoteRequest = {
    route: { from: { chain: 'SOL', token: 'USDC' }, to: { chain: 'ARB', token: 'USDC' } },
    amount: 7_000_000n,
    sender: user,
    recipient: USER,
  };
  const memo = (text = 'quote-sol'): Instruction => ({ programAddress: MEMO, data: new TextEncoder().encode(text) });
  const u64 = (value: bigint) => {
    const bytes = Buffer.alloc(8);
    bytes.writeBigUInt64LE(value);
    return bytes;
  };
  const ataOf = async (owner: Address, ofMint = mint) => (await findAssociatedTokenPda({ owner, mint: ofMint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
  const transferChecked = async (amount: bigint, options: { mint?: Address; authority?: Address } = {}): Promise<Instruction> => {
    const authority = options.authority ?? user;
    return getTransferCheckedInstruction({
      source: await ataOf(authority, options.mint ?? mint),
      mint: options.mint ?? mint,
      destination: await ataOf(bridgeAccount, options.mint ?? mint),
      authority: createNoopSigner(authority),
      amount,
      decimals: 6,
    });
  };

  /** A serialized v0 transaction as LI.FI sends it: `payer` pays, its slot empty; `presigned` signers' slots filled. */
  function transaction(instructions: Instruction[], options: { payer?: Address; presigned?: readonly Address[] } = {}): string {
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(options.payer ?? user, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: '11111111111111111111111111111111' as Blockhash, lastValidBlockHeight: 1n }, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const compiled = compileTransaction(message);
    const signatures = { ...compiled.signatures };
    for (const signer of options.presigned ?? []) signatures[signer] = new Uint8Array(randomBytes(64)) as unknown as SignatureBytes;
    return Buffer.from(getTransactionEncoder().encode({ ...compiled, signatures })).toString('base64');
  }

  const solStep = (data: string, fromToken: string = mint) =>
    step({
      action: { fromChainId: 1151111081099710, toChainId: 42161, fromAmount: '7000000', fromAddress: user, fromToken: { address: fromToken, decimals: 6 } },
      estimate: { fromAmount: '7000000', toAmount: '6800000', toAmountMin: '6766000', approvalAddress: bridgeAccount },
      transactionRequest: { to: undefined, chainId: undefined, value: undefined, gasLimit: undefined, data },
    });
  /** `contracts` null: LI.FI's own allow-list (the client's default). */
  const quoted = (data: string, contracts: Record<string, string[]> | null = SANDBOX) =>
    clientAnswering(solStep(data), {}, contracts ?? undefined).quote(request);
  const refusal = async (data: string, code: string, contracts: Record<string, string[]> | null = SANDBOX) => {
    const error = await quoted(data, contracts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BridgeQuoteRejectedError);
    expect(error).toMatchObject({ code });
    return error as BridgeQuoteRejectedError;
  };

  it('a TransferChecked of the quoted amount plus a memo, on allowed programs, becomes the deposit: the transaction as given', async () => {
    const data = transaction([await transferChecked(7_000_000n), memo()]);
    const quote = await quoted(data);
    expect(quote.deposit).toEqual([{ kind: 'solana_transaction', chain: 'SOL', transaction: data, mint, amount: 7_000_000n }]);
  });
  it('less than the quoted amount, in two transfers, one of them a plain Transfer from the wallet’s token account, passes', async () => {
    const plain = getTransferInstruction({
      source: await ataOf(user),
      destination: await ataOf(bridgeAccount),
      authority: createNoopSigner(user),
      amount: 2_000_000n,
    });
    await expect(quoted(transaction([await transferChecked(4_000_000n), plain, memo()]))).resolves.toMatchObject({ amount: 7_000_000n });
  });
  it('a LI.FI-shaped transaction (compute budget, a call of LI.FI’s program) passes LI.FI’s own allow-list', async () => {
    const price = { programAddress: COMPUTE_BUDGET, data: Uint8Array.from([3, ...u64(50_000n)]) };
    const limit = { programAddress: COMPUTE_BUDGET, data: Uint8Array.from([2, 0x40, 0x0d, 0x03, 0x00]) }; // 200,000 units
    const call = { programAddress: LIFI_PROGRAM, data: Uint8Array.from(randomBytes(16)) };
    const dataSize = { programAddress: COMPUTE_BUDGET, data: Uint8Array.from([4, 0x00, 0x00, 0x04, 0x00]) }; // 256 KiB of loaded accounts
    await expect(quoted(transaction([limit, price, dataSize, call]), null)).resolves.toMatchObject({ deposit: [{ kind: 'solana_transaction' }] });
    // A compute budget instruction it cannot decode (the retired RequestUnits, 0) is not signed on trust.
    const retired = { programAddress: COMPUTE_BUDGET, data: Uint8Array.from([0, 1, 2, 3, 4, 5, 6, 7, 8]) };
    await refusal(transaction([retired, call]), 'BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION', null);
  });
  it('a program off the allow-list is refused (the sandbox’s memo under LI.FI’s list; any unlisted program under the sandbox’s)', async () => {
    await refusal(transaction([await transferChecked(7_000_000n), memo()]), 'BRIDGE_QUOTE_UNKNOWN_PROGRAM', null);
    const unlisted = { programAddress: randomAddress(), data: Uint8Array.from([1, 2, 3]) };
    const error = await refusal(transaction([await transferChecked(7_000_000n), unlisted]), 'BRIDGE_QUOTE_UNKNOWN_PROGRAM');
    expect(error.message).toContain(unlisted.programAddress);
  });
  it('another fee payer is refused', async () => {
    const other = randomAddress();
    await refusal(transaction([await transferChecked(7_000_000n), memo()], { payer: other }), 'BRIDGE_QUOTE_WRONG_SIGNER');
  });
  it('a second signer is refused unless the quote already carries its signature (we sign for the wallet only)', async () => {
    const other = randomAddress();
    const cosigned = { programAddress: MEMO, accounts: [{ address: other, role: AccountRole.READONLY_SIGNER }], data: new TextEncoder().encode('q') };
    const instructions = [await transferChecked(7_000_000n), cosigned];
    await refusal(transaction(instructions), 'BRIDGE_QUOTE_WRONG_SIGNER');
    await expect(quoted(transaction(instructions, { presigned: [other] }))).resolves.toMatchObject({ amount: 7_000_000n });
  });
  it('more than the quoted amount is refused, in one transfer or in two', async () => {
    await refusal(transaction([await transferChecked(7_000_001n), memo()]), 'BRIDGE_QUOTE_WRONG_AMOUNT');
    await refusal(transaction([await transferChecked(4_000_000n), await transferChecked(3_000_001n), memo()]), 'BRIDGE_QUOTE_WRONG_AMOUNT');
  });
  it('another mint is refused, and so is a plain Transfer out of a token account that is not the wallet’s for the route’s mint', async () => {
    await refusal(transaction([await transferChecked(7_000_000n, { mint: randomAddress() }), memo()]), 'BRIDGE_QUOTE_WRONG_TOKEN');
    const otherAccount = await ataOf(user, randomAddress());
    const plain = getTransferInstruction({ source: otherAccount, destination: await ataOf(bridgeAccount), authority: createNoopSigner(user), amount: 1n });
    await refusal(transaction([plain, memo()]), 'BRIDGE_QUOTE_WRONG_TOKEN');
    // The quote's own fromToken is not a Solana mint.
    const error = await clientAnswering(solStep(transaction([await transferChecked(7_000_000n), memo()]), 'USDC'), {}, SANDBOX)
      .quote(request)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BRIDGE_QUOTE_WRONG_TOKEN' });
  });
  it('a token instruction that is not a transfer (Approve) is refused: nothing it cannot decode is signed', async () => {
    const approve = getApproveInstruction({ source: await ataOf(user), delegate: bridgeAccount, owner: createNoopSigner(user), amount: 1n });
    await refusal(transaction([approve, memo()]), 'BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION');
  });
  it('a transfer signed by another authority, and a System transfer even when the System program is allowed, are refused', async () => {
    const other = randomAddress();
    await refusal(transaction([await transferChecked(1n, { authority: other }), memo()], { presigned: [other] }), 'BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION');
    const lamports = getTransferSolInstruction({ source: createNoopSigner(user), destination: bridgeAccount, amount: 1n });
    await refusal(transaction([lamports, memo()]), 'BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION', { SOL: [...SANDBOX.SOL, '11111111111111111111111111111111'] });
  });
  it('a priority fee over the bound is refused', async () => {
    // 1.4 M units × 5,000,000 micro-lamports = 7,000,000 lamports > MAX_BRIDGE_PRIORITY_FEE_LAMPORTS.
    const price = { programAddress: COMPUTE_BUDGET, data: Uint8Array.from([3, ...u64(5_000_000n)]) };
    const limit = { programAddress: COMPUTE_BUDGET, data: Uint8Array.from([2, ...Buffer.from(Uint32Array.of(1_400_000).buffer)]) };
    const error = await refusal(transaction([limit, price, await transferChecked(7_000_000n)]), 'BRIDGE_QUOTE_FEE_TOO_HIGH', {
      SOL: [...SANDBOX.SOL, COMPUTE_BUDGET],
    });
    expect(MAX_BRIDGE_PRIORITY_FEE_LAMPORTS).toBe(5_000_000n);
    expect(error.message).toContain('7000000 lamports');
  });
  it('data that is not a Solana transaction is refused', async () => {
    await refusal(Buffer.from('not a transaction').toString('base64'), 'BRIDGE_QUOTE_NO_TRANSACTION');
  });
});
