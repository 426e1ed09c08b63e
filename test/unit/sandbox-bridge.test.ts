import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { getAddressDecoder } from '@solana/kit';
import { type Address, createPublicClient, createWalletClient, decodeFunctionData, defineChain, encodeFunctionData, erc20Abi, type Hex, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SandboxBridge, startSandboxBridge } from '../../infra/local/bridge/server.ts';
import { sandboxLifiDiamondArtifactAbi } from '../../infra/local/contracts/sandbox-lifi-diamond.artifact.ts';
import { type EvmSandbox, SANDBOX_DELEGATE, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { type SolanaSandbox, startSolanaSandbox } from '../../infra/local/solana-sandbox/index.ts';
import { readDurableDocument } from '../../infra/local/venues/durable-state.ts';
import type { EvmChainCode } from '../../shared/chains/chain-config.ts';
import { executeCalldata, executorTypedData } from '../../shared/chains/evm/sponsored-executor.ts';
import { SolanaChain } from '../../shared/chains/solana-chain.ts';
import { signSolanaMessage } from '../../shared/enclave/solana-message.ts';
import { type BridgeQuote, BridgeRefusedError, type BridgeStatus } from '../../shared/transfers/bridge.ts';
import { BRIDGE_ROUTES, type BridgeRoute, bridgeFee, findBridgeRoute } from '../../shared/transfers/bridge-routes.ts';
import { HttpBridgeClient } from '../../shared/transfers/http-bridge-client.ts';
import { LIFI_CONTRACTS } from '../../shared/transfers/lifi.ts';

/** The bridge's tick here (its pollMs): a wait for "nothing happens" lasts a few ticks. */
const TICK_MS = 50;
const ticks = (n: number) => new Promise((wake) => setTimeout(wake, n * TICK_MS));

/**
 * The sandbox bridge on the real sandbox chains (anvil ×4, the LiteSVM Solana RPC), driven through
 * the account service's port (HttpBridgeClient): quotes, deposits credited from the chain, fills
 * to the base unit, EVM ↔ SOL, expiry, faults, refunds on the source chain, restart mid-fill.
 */
const USDC = 1_000_000n;
const ETHER = 10n ** 18n;

/** Test-only overrides: ETH→ARB quotes live 1 s, POL→ARB fills expire after 1 s. */
const ROUTES: readonly BridgeRoute[] = BRIDGE_ROUTES.map((route) => {
  if (route.id === 'across:ETH.USDC->ARB.USDC') return { ...route, quote_ttl_s: 1 };
  if (route.id === 'across:POL.USDC->ARB.USDC') return { ...route, fill_deadline_s: 1 };
  return route;
});

let dataDir: string;
let evm: EvmSandbox;
let sol: SolanaSandbox;
let bridge: SandboxBridge;
let client: HttpBridgeClient;
let solana: SolanaChain;

const startBridge = async () => {
  bridge = await startSandboxBridge({ dataDir, evm, sol, routes: ROUTES, pollMs: TICK_MS, receiptTimeoutMs: 2_000 });
  client = new HttpBridgeClient({ baseUrl: bridge.url, contracts: bridge.contracts });
};

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sandbox-bridge-'));
  [evm, sol] = await Promise.all([startEvmSandbox({ dataDir }), startSolanaSandbox({ dataDir })]);
  solana = new SolanaChain(sol.chain);
  await startBridge();
}, 180_000);

afterAll(async () => {
  await bridge?.stop();
  await Promise.all([evm?.stop(), sol?.stop()]);
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

function evmClients(code: EvmChainCode) {
  const config = evm.chains[code];
  const chain = defineChain({
    id: config.chain_id,
    name: code,
    nativeCurrency: { name: config.native, symbol: config.native, decimals: 18 },
    rpcUrls: { default: { http: [config.rpc_url] } },
  });
  return { chain, public: createPublicClient({ chain, transport: http(config.rpc_url), pollingInterval: 50 }) };
}

const usdcOf = (code: EvmChainCode, owner: Address, token: 'USDC' | 'USDC.E' = 'USDC') =>
  evmClients(code).public.readContract({
    address: evm.chains[code].tokens[token]!.address as Address,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [owner],
  });

/** A fresh EVM user with gas and `usdc` on `code`; `send` executes a quote's deposit calls. */
async function evmUser(code: EvmChainCode, usdc: bigint) {
  const key = generatePrivateKey();
  const account = privateKeyToAccount(key);
  await evm.faucet(code, account.address, evm.chains[code].native, ETHER);
  if (usdc > 0n) await evm.faucet(code, account.address, 'USDC', usdc);
  const { chain, public: reader } = evmClients(code);
  const wallet = createWalletClient({ chain, transport: http(evm.chains[code].rpc_url), account });
  const send = async (quote: BridgeQuote): Promise<Hex> => {
    let hash: Hex | undefined;
    for (const call of quote.deposit) {
      if (call.kind !== 'evm_transaction') throw new Error('not an EVM deposit');
      // As the transfer step does (LI.FI's ERC-20 flow): approve the spender for the amount, then the call.
      const approve = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [call.spender, quote.amount] });
      for (const tx of [
        { to: call.token, data: approve, value: 0n },
        { to: call.to, data: call.data, value: call.value },
      ]) {
        hash = await wallet.sendTransaction(tx);
        expect((await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success');
      }
    }
    return hash!;
  };
  return { key, address: account.address, send };
}

function solUser() {
  const secret = ed25519.utils.randomSecretKey();
  return { secret, address: getAddressDecoder().decode(ed25519.getPublicKey(secret)) as string };
}

async function waitFinal(chain: EvmChainCode | 'SOL', tx: string, timeoutMs = 20_000): Promise<BridgeStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await client.status({ chain, tx });
    if (status.status === 'DONE' || status.status === 'FAILED' || Date.now() > deadline) return status;
    await new Promise((wake) => setTimeout(wake, 25));
  }
}

describe('quotes', () => {
  it('quotes fixed + bps (rounded up), min and max, an expiry and the deposit call', async () => {
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'ETH', token: 'USDC' })!;
    const amount = 1_000n * USDC + 1n;
    const quote = await client.quote({
      route,
      amount,
      sender: '0x000000000000000000000000000000000000dEaD',
      recipient: '0x000000000000000000000000000000000000bEEF',
    });
    // 1.5 USDC + ceil(1000.000001 × 4 / 10 000) = 1.5 + 0.400001 (C.6's 1,000 USDC → 998.1).
    expect(quote.fee).toBe(1_500_000n + 400_001n);
    expect(quote.to_amount).toBe(amount - quote.fee);
    expect(quote.to_amount_min).toBe(((amount - quote.fee) * 995_000n) / 1_000_000n);
    // LI.FI's quotes are good for about 60 s; the client counts from receipt.
    expect(Date.parse(quote.expires_at) - Date.now()).toBeGreaterThan(50_000);
    expect(quote.deposit).toHaveLength(1);
    // LI.FI's diamond on Arbitrum (the sandbox's stand-in at that address) is approved, then called; the token is USDC.
    expect(quote.deposit[0]).toMatchObject({
      kind: 'evm_transaction',
      chain: 'ARB',
      token: evm.chains.ARB.tokens.USDC!.address,
      spender: LIFI_CONTRACTS.ARB[0],
      to: LIFI_CONTRACTS.ARB[0],
      value: 0n,
    });
    // LI.FI's BridgeData first: the quote id as its transactionId, the route's token, amount, receiver and destination chain.
    const { functionName, args } = decodeFunctionData({ abi: sandboxLifiDiamondArtifactAbi, data: (quote.deposit[0] as { data: Hex }).data });
    expect(functionName).toBe('startBridgeTokensViaSandbox');
    expect(args[0]).toMatchObject({
      transactionId: `0x${quote.quote_id.replaceAll('-', '')}${'0'.repeat(32)}`,
      sendingAssetId: evm.chains.ARB.tokens.USDC!.address,
      receiver: '0x000000000000000000000000000000000000bEEF',
      minAmount: amount,
      destinationChainId: 1n,
      hasSourceSwaps: false,
      hasDestinationCall: false,
    });
  });

  it('refuses amounts below the minimum or above the maximum, routes that do not exist and bad addresses (4xx with a code)', async () => {
    const route = { from: { chain: 'ARB', token: 'USDC' }, to: { chain: 'ETH', token: 'USDC' } } as const;
    const who = { sender: '0x000000000000000000000000000000000000dEaD', recipient: '0x000000000000000000000000000000000000bEEF' };
    await expect(client.quote({ route, amount: 4_999_999n, ...who })).rejects.toMatchObject({ code: 'AMOUNT_TOO_LOW', httpStatus: 404 });
    await expect(client.quote({ route, amount: 1_000_000n * USDC + 1n, ...who })).rejects.toMatchObject({ code: 'AMOUNT_TOO_HIGH', httpStatus: 404 });
    await expect(client.quote({ route: { from: route.from, to: { chain: 'SOL', token: 'USDC.E' } }, amount: 10n * USDC, ...who })).rejects.toMatchObject({
      code: 'NO_POSSIBLE_ROUTE',
      httpStatus: 404,
    });
    await expect(client.quote({ route, amount: 10n * USDC, ...who, recipient: 'nope' })).rejects.toBeInstanceOf(BridgeRefusedError);
  });

  it('answers NOT_FOUND for a transaction that is not a deposit into it', async () => {
    expect((await client.status({ chain: 'ARB', tx: `0x${'ab'.repeat(32)}` })).status).toBe('NOT_FOUND');
  });
});

describe("LI.FI's public API shapes (GET /v1/quote, GET /v1/status)", () => {
  const get = async (path: string) => {
    const response = await fetch(`${bridge.url}${path}`);
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };

  it('answers LI.FI quote parameters (chain ids or keys, token symbols or addresses) with a LiFiStep: action, estimate, transactionRequest', async () => {
    const sender = '0x000000000000000000000000000000000000dEaD';
    const query = new URLSearchParams({
      fromChain: '42161',
      toChain: 'eth',
      fromToken: evm.chains.ARB.tokens.USDC!.address,
      toToken: 'USDC',
      fromAmount: '20000000',
      fromAddress: sender,
      slippage: '0.01',
      integrator: 'test-suite',
    });
    const { status, body } = await get(`/v1/quote?${query}`);
    expect(status).toBe(200);
    const fee = bridgeFee(findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'ETH', token: 'USDC' })!, 20n * USDC);
    expect(body).toMatchObject({
      type: 'lifi',
      tool: 'across',
      integrator: 'test-suite',
      action: { fromChainId: 42161, toChainId: 1, fromAmount: '20000000', fromAddress: sender, toAddress: sender, slippage: 0.01 },
      estimate: {
        fromAmount: '20000000',
        toAmount: (20n * USDC - fee).toString(),
        toAmountMin: (((20n * USDC - fee) * 99n) / 100n).toString(),
        approvalAddress: LIFI_CONTRACTS.ARB[0],
        gasCosts: [],
        executionDuration: 0,
      },
      transactionRequest: { to: LIFI_CONTRACTS.ARB[0], chainId: 42161, value: '0x0', from: sender },
    });
    expect(body.action.fromToken).toMatchObject({ chainId: 42161, symbol: 'USDC', decimals: 6 });
    const feeCosts = body.estimate.feeCosts as { amount: string; included: boolean; token: { symbol: string } }[];
    expect(feeCosts.reduce((sum, cost) => sum + BigInt(cost.amount), 0n)).toBe(fee);
    const { args } = decodeFunctionData({ abi: sandboxLifiDiamondArtifactAbi, data: body.transactionRequest.data });
    expect(args[0].transactionId).toBe(`0x${String(body.id).replaceAll('-', '')}${'0'.repeat(32)}`);
  });

  it("a Solana source's transactionRequest is LI.FI's Solana form: only `data`, a base64 transaction", async () => {
    const user = solUser();
    const query = new URLSearchParams({
      fromChain: '1151111081099710',
      toChain: '42161',
      fromToken: 'USDC',
      toToken: 'USDC',
      fromAmount: '5000000',
      fromAddress: user.address,
      toAddress: '0x000000000000000000000000000000000000bEEF',
    });
    const { status, body } = await get(`/v1/quote?${query}`);
    expect(status).toBe(200);
    expect(Object.keys(body.transactionRequest)).toEqual(['data']);
    expect(Buffer.from(body.transactionRequest.data, 'base64').length).toBeGreaterThan(100);
    expect(body.estimate.approvalAddress).toBe(bridge.listing.vaults.sol);
  });

  it("refuses as LI.FI does: 400 code 1011 for a bad parameter, 404 code 1002 with the tool's errors[] for no quote", async () => {
    const base = { fromChain: 'ARB', toChain: 'ETH', fromToken: 'USDC', toToken: 'USDC', fromAddress: '0x000000000000000000000000000000000000dEaD' };
    expect(await get(`/v1/quote?${new URLSearchParams({ ...base, fromAmount: 'x' })}`)).toMatchObject({ status: 400, body: { code: 1011 } });
    expect(await get(`/v1/quote?${new URLSearchParams({ ...base, fromAmount: '1' })}`)).toMatchObject({
      status: 404,
      body: { code: 1002, errors: [{ errorType: 'NO_QUOTE', code: 'AMOUNT_TOO_LOW' }] },
    });
    expect(await get(`/v1/status?${new URLSearchParams({ txHash: `0x${'cd'.repeat(32)}`, fromChain: '42161' })}`)).toMatchObject({
      status: 200,
      body: { status: 'NOT_FOUND' },
    });
  });
});

describe('deposits and fills on chain', () => {
  it('ARB USDC → POL USDC.E: the deposit is credited from the chain and the fill pays amount − fee to the base unit', async () => {
    const user = await evmUser('ARB', 50n * USDC);
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'POL', token: 'USDC.E' })!;
    const started = performance.now();
    const quote = await client.quote({ route, amount: 20n * USDC, sender: user.address, recipient });
    const tx = await user.send(quote);
    const status = await waitFinal('ARB', tx);
    const elapsed = performance.now() - started;
    expect(status).toMatchObject({ status: 'DONE', substatus: 'COMPLETED', quote_id: quote.quote_id, sending: { chain: 'ARB', amount: 20n * USDC } });
    expect(status.receiving).toMatchObject({ chain: 'POL', amount: 20n * USDC - bridgeFee(route, 20n * USDC) });
    const raw = (await (await fetch(`${bridge.url}/v1/status?${new URLSearchParams({ txHash: tx, fromChain: '42161', toChain: '137' })}`)).json()) as object;
    expect(raw).toMatchObject({
      status: 'DONE',
      substatus: 'COMPLETED',
      transactionId: quote.quote_id,
      sending: { txHash: tx, chainId: 42161, amount: (20n * USDC).toString() },
      receiving: { txHash: status.receiving!.tx_hash, chainId: 137, amount: (20n * USDC - bridgeFee(route, 20n * USDC)).toString() },
    });
    expect(await usdcOf('POL', recipient, 'USDC.E')).toBe(20n * USDC - bridgeFee(route, 20n * USDC));
    expect(await usdcOf('ARB', user.address)).toBe(30n * USDC);
    process.stdout.write(`sandbox bridge: quote → fill (EVM → EVM, latency 0) ${elapsed.toFixed(0)} ms\n`);
  });

  it('EVM → SOL: ARB USDC arrives on Solana as amount − fee', async () => {
    const user = await evmUser('ARB', 10n * USDC);
    const recipient = solUser().address;
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'SOL', token: 'USDC' })!;
    const quote = await client.quote({ route, amount: 10n * USDC, sender: user.address, recipient });
    const status = await waitFinal('ARB', await user.send(quote));
    expect(status).toMatchObject({ status: 'DONE', substatus: 'COMPLETED' });
    // 0.20 forward fee + ceil(10 USDC × 1 bps) = 0.201 USDC.
    expect(quote.fee).toBe(201_000n);
    expect(await solana.balance(recipient, 'USDC')).toBe(10n * USDC - 201_000n);
  });

  it('SOL → EVM: the quote’s own transaction (an SPL TransferChecked with the quote id as memo), signed as given, fills on ARB', async () => {
    const user = solUser();
    await sol.faucet(user.address, 'SOL', 1_000_000_000n);
    await sol.faucet(user.address, 'USDC', 7n * USDC);
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const route = findBridgeRoute({ chain: 'SOL', token: 'USDC' }, { chain: 'ARB', token: 'USDC' })!;
    const started = performance.now();
    const quote = await client.quote({ route, amount: 7n * USDC, sender: user.address, recipient });
    const call = quote.deposit[0]!;
    if (call.kind !== 'solana_transaction') throw new Error('expected a Solana transaction');
    // LI.FI's Solana form, signed as given: the sender's signature in its fee-payer slot.
    const wire = Uint8Array.from(Buffer.from(call.transaction, 'base64'));
    const { signature } = signSolanaMessage(user.secret, SolanaChain.messageOf(wire).messageBytes);
    await solana.broadcast(SolanaChain.addSignature(wire, user.address, signature));
    expect(await solana.waitForConfirmation(signature, 10_000)).toEqual({ err: null });
    const status = await waitFinal('SOL', signature);
    const elapsed = performance.now() - started;
    expect(status).toMatchObject({ status: 'DONE', substatus: 'COMPLETED', sending: { chain: 'SOL', tx_hash: signature, amount: 7n * USDC } });
    expect(await usdcOf('ARB', recipient)).toBe(7n * USDC - bridgeFee(route, 7n * USDC));
    expect(await solana.balance(user.address, 'USDC')).toBe(0n);
    process.stdout.write(`sandbox bridge: quote → fill (SOL → EVM, latency 0) ${elapsed.toFixed(0)} ms\n`);
  });

  it('a deposit landing after its quote expired is not filled: refunded to the sender on the source chain (FAILED/EXPIRED)', async () => {
    const user = await evmUser('ETH', 10n * USDC);
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const route = findBridgeRoute({ chain: 'ETH', token: 'USDC' }, { chain: 'ARB', token: 'USDC' }, ROUTES)!;
    const quote = await client.quote({ route, amount: 10n * USDC, sender: user.address, recipient });
    await new Promise((wake) => setTimeout(wake, 2_500));
    const hash = await user.send(quote);
    const status = await waitFinal('ETH', hash);
    // The bridge judges by the deposit block's time (seconds) against the quote's expiry (kept in its state): both in the message if it fills.
    const { public: reader } = evmClients('ETH');
    const block = await reader.getBlock({ blockHash: (await reader.getTransactionReceipt({ hash })).blockHash });
    const kept = (await readDurableDocument(join(dataDir, 'bridge', 'bridge.json'))).quotes[quote.quote_id];
    expect(status, `deposit block time ${block.timestamp} s, quote ${JSON.stringify(kept)}, now ${Date.now()}`).toMatchObject({
      status: 'FAILED',
      substatus: 'EXPIRED',
      refund: { chain: 'ETH', amount: 10n * USDC },
    });
    expect(status.receiving).toBeUndefined();
    expect(await usdcOf('ETH', user.address)).toBe(10n * USDC);
    expect(await usdcOf('ARB', recipient)).toBe(0n);
  });
});

describe('what is not a quoted deposit', () => {
  it('a transfer to the vault without a quote id is refunded to its sender (FAILED/NOT_PROCESSABLE_REFUND_NEEDED)', async () => {
    const user = await evmUser('ARB', 3n * USDC);
    const { chain, public: reader } = evmClients('ARB');
    const hash = await createWalletClient({ chain, transport: http(evm.chains.ARB.rpc_url), account: privateKeyToAccount(user.key) }).writeContract({
      address: evm.chains.ARB.tokens.USDC!.address as Address,
      abi: erc20Abi,
      functionName: 'transfer',
      args: [bridge.listing.vaults.evm, 3n * USDC],
    });
    await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    expect(await waitFinal('ARB', hash)).toMatchObject({
      status: 'FAILED',
      substatus: 'NOT_PROCESSABLE_REFUND_NEEDED',
      refund: { chain: 'ARB', amount: 3n * USDC },
    });
    expect(await usdcOf('ARB', user.address)).toBe(3n * USDC);
  });

  it("a gas-sponsored deposit (EIP-7702: the sponsor's transaction to the wallet, whose delegated code calls the diamond) is found by the diamond's event and filled", async () => {
    const key = generatePrivateKey();
    const owner = privateKeyToAccount(key);
    await evm.faucet('ARB', owner.address, 'USDC', 10n * USDC);
    const sponsor = await evmUser('ARB', 0n);
    const { chain, public: reader } = evmClients('ARB');
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'INK', token: 'USDC' })!;
    const quote = await client.quote({ route, amount: 10n * USDC, sender: owner.address, recipient: owner.address });
    const deposit = quote.deposit[0]!;
    if (deposit.kind !== 'evm_transaction') throw new Error('not an EVM deposit');
    const calls = [
      { to: deposit.token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [deposit.spender, quote.amount] }) },
      { to: deposit.to, value: deposit.value, data: deposit.data },
    ];
    // The wallet holds no gas: it only signs the delegation and the calls; the sponsor sends and pays.
    const deadline = BigInt(Math.floor(Date.now() / 1000) + 300);
    const authorization = await owner.signAuthorization({ chainId: chain.id, contractAddress: SANDBOX_DELEGATE, nonce: 0 });
    const signature = await owner.signTypedData(executorTypedData({ chainId: chain.id, account: owner.address, calls, nonce: 0n, deadline }));
    const sponsorWallet = createWalletClient({ chain, transport: http(evm.chains.ARB.rpc_url), account: privateKeyToAccount(sponsor.key) });
    const hash = await sponsorWallet.sendTransaction({
      to: owner.address,
      data: executeCalldata(calls, 0n, deadline, signature),
      authorizationList: [authorization],
    });
    const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    expect(receipt.status).toBe('success');
    // The transaction names the sponsor and the wallet, and carries execute(...): none of it is the diamond's call.
    expect([receipt.from, receipt.to]).toEqual([sponsor.address.toLowerCase(), owner.address.toLowerCase()]);
    const inkBefore = await usdcOf('INK', owner.address);
    expect(await waitFinal('ARB', hash)).toMatchObject({ status: 'DONE', substatus: 'COMPLETED', receiving: { chain: 'INK', amount: quote.to_amount } });
    expect((await usdcOf('INK', owner.address)) - inkBefore).toBe(quote.to_amount);
    expect(await usdcOf('ARB', owner.address)).toBe(0n);
  });

  it("a mint to the vault (the faucet topping it up) is nobody's deposit: nothing is refunded", async () => {
    const stateFile = join(dataDir, 'bridge', 'bridge.json');
    const payouts = async () => Object.keys(((await readDurableDocument(stateFile)) as { payouts: object }).payouts).length;
    const before = await payouts();
    const vaultBefore = await usdcOf('ARB', bridge.listing.vaults.evm);
    await evm.faucet('ARB', bridge.listing.vaults.evm, 'USDC', 5n * USDC);
    await ticks(5); // nothing more happens within a few of the bridge's ticks
    expect(await payouts()).toBe(before);
    expect(await usdcOf('ARB', bridge.listing.vaults.evm)).toBe(vaultBefore + 5n * USDC);
  });
});

describe('faults', () => {
  it('stall holds the fill (PENDING) until clear, then fills once', async () => {
    const user = await evmUser('ARB', 10n * USDC);
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'INK', token: 'USDC' })!;
    expect(await bridge.setFault({ mode: 'stall', count: 1 })).toEqual({ mode: 'stall', remaining: 1 });
    const quote = await client.quote({ route, amount: 10n * USDC, sender: user.address, recipient });
    const tx = await user.send(quote);
    await ticks(5); // nothing more happens within a few of the bridge's ticks
    expect(await client.status({ chain: 'ARB', tx })).toMatchObject({ status: 'PENDING', substatus: 'WAIT_DESTINATION_TRANSACTION' });
    expect(await usdcOf('INK', recipient)).toBe(0n);
    expect(await bridge.setFault({ mode: 'clear', count: 0 })).toBeNull();
    expect(await waitFinal('ARB', tx)).toMatchObject({ status: 'DONE', substatus: 'COMPLETED' });
    expect(await usdcOf('INK', recipient)).toBe(10n * USDC - bridgeFee(route, 10n * USDC));
  });

  it('refund: the fill expires and the deposit goes back to the sender on the source chain (DONE/REFUNDED); fail: FAILED/REFUNDED', async () => {
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'ETH', token: 'USDC' })!;
    for (const [mode, expected] of [
      ['refund', { status: 'DONE', substatus: 'REFUNDED' }],
      ['fail', { status: 'FAILED', substatus: 'REFUNDED' }],
    ] as const) {
      const user = await evmUser('ARB', 10n * USDC);
      const recipient = privateKeyToAccount(generatePrivateKey()).address;
      await bridge.setFault({ mode, count: 1 });
      const quote = await client.quote({ route, amount: 10n * USDC, sender: user.address, recipient });
      const tx = await user.send(quote);
      expect(await usdcOf('ARB', user.address)).toBe(0n);
      const status = await waitFinal('ARB', tx);
      expect(status).toMatchObject({ ...expected, refund: { chain: 'ARB', amount: 10n * USDC } });
      expect(await usdcOf('ARB', user.address)).toBe(10n * USDC);
      expect(await usdcOf('ETH', recipient)).toBe(0n);
    }
  });

  it("a fault scoped to one sender leaves another sender's deposit alone", async () => {
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'ETH', token: 'USDC' })!;
    const [faulted, other] = [await evmUser('ARB', 10n * USDC), await evmUser('ARB', 10n * USDC)];
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    expect(await bridge.setFault({ mode: 'fail', count: 1, address: faulted.address })).toEqual({ mode: 'fail', remaining: 1 });
    // The other sender bridges first: the fault standing for `faulted` does not take it.
    const otherTx = await other.send(await client.quote({ route, amount: 10n * USDC, sender: other.address, recipient }));
    expect(await waitFinal('ARB', otherTx)).toMatchObject({ status: 'DONE', substatus: 'COMPLETED' });
    const faultedTx = await faulted.send(await client.quote({ route, amount: 10n * USDC, sender: faulted.address, recipient }));
    expect(await waitFinal('ARB', faultedTx)).toMatchObject({ status: 'FAILED', substatus: 'REFUNDED', refund: { chain: 'ARB', amount: 10n * USDC } });
    expect(await usdcOf('ETH', recipient)).toBe(10n * USDC - bridgeFee(route, 10n * USDC));
  });

  it("two scopes at once (a sender's, a Solana recipient's): each held by its own stall, released by its own clear", async () => {
    const toEth = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'ETH', token: 'USDC' })!;
    const toSol = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'SOL', token: 'USDC' })!;
    const [bySender, byRecipient] = [await evmUser('ARB', 10n * USDC), await evmUser('ARB', 10n * USDC)];
    const solRecipient = solUser().address;
    await bridge.setFault({ mode: 'stall', count: 1, address: bySender.address.toLowerCase() });
    await bridge.setFault({ mode: 'stall', count: 1, address: solRecipient });
    const senderTx = await bySender.send(
      await client.quote({ route: toEth, amount: 10n * USDC, sender: bySender.address, recipient: privateKeyToAccount(generatePrivateKey()).address }),
    );
    const recipientTx = await byRecipient.send(await client.quote({ route: toSol, amount: 10n * USDC, sender: byRecipient.address, recipient: solRecipient }));
    // Both held: still pending after ten of the bridge's rounds.
    for (const tx of [senderTx, recipientTx])
      expect(await waitFinal('ARB', tx, 500)).toMatchObject({ status: 'PENDING', substatus: 'WAIT_DESTINATION_TRANSACTION' });
    expect(await bridge.setFault({ mode: 'clear', count: 0, address: solRecipient })).toBeNull();
    expect(await waitFinal('ARB', recipientTx)).toMatchObject({ status: 'DONE', substatus: 'COMPLETED' });
    expect(await solana.balance(solRecipient, 'USDC')).toBe(10n * USDC - bridgeFee(toSol, 10n * USDC));
    expect(await client.status({ chain: 'ARB', tx: senderTx })).toMatchObject({ status: 'PENDING', substatus: 'WAIT_DESTINATION_TRANSACTION' });
    expect(await bridge.setFault({ mode: 'clear', count: 0, address: bySender.address })).toBeNull();
    expect(await waitFinal('ARB', senderTx)).toMatchObject({ status: 'DONE', substatus: 'COMPLETED' });
  });

  it('a stalled fill past its fill deadline is refunded on the source chain', async () => {
    const user = await evmUser('POL', 10n * USDC);
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const route = findBridgeRoute({ chain: 'POL', token: 'USDC' }, { chain: 'ARB', token: 'USDC' }, ROUTES)!;
    await bridge.setFault({ mode: 'stall', count: 1 });
    const quote = await client.quote({ route, amount: 10n * USDC, sender: user.address, recipient });
    const status = await waitFinal('POL', await user.send(quote));
    expect(status).toMatchObject({ status: 'DONE', substatus: 'REFUNDED', refund: { chain: 'POL', amount: 10n * USDC } });
    expect(await usdcOf('POL', user.address)).toBe(10n * USDC);
    expect(await usdcOf('ARB', recipient)).toBe(0n);
  });
});

describe('restart', () => {
  it('a fill signed and recorded but lost with the process is rebroadcast after a restart, never re-signed: paid once', async () => {
    const ink = evmClients('INK').public;
    const user = await evmUser('ARB', 10n * USDC);
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const route = findBridgeRoute({ chain: 'ARB', token: 'USDC' }, { chain: 'INK', token: 'USDC' })!;
    const quote = await client.quote({ route, amount: 10n * USDC, sender: user.address, recipient });
    // INK mines nothing: the fill is signed, recorded, broadcast, and waits.
    await ink.request({ method: 'evm_setAutomine' as never, params: [false] as never });
    try {
      const tx = await user.send(quote);
      const stateFile = join(dataDir, 'bridge', 'bridge.json');
      const deadline = Date.now() + 10_000;
      let fill: { state: string; hash?: string } | undefined;
      while (Date.now() < deadline) {
        const state = (await readDurableDocument(stateFile)) as { payouts: Record<string, { state: string; hash?: string }> };
        fill = state.payouts[`fill:ARB:${tx}`];
        if (fill?.state === 'sent') break;
        await new Promise((wake) => setTimeout(wake, 25));
      }
      expect(fill?.state).toBe('sent');
      await bridge.stop();
      // The broadcast is lost with the process (as after kill -9 before the node relayed it).
      await ink.request({ method: 'anvil_dropAllTransactions' as never, params: [] as never });
      await ink.request({ method: 'evm_setAutomine' as never, params: [true] as never });
      expect(await usdcOf('INK', recipient)).toBe(0n);
      await startBridge();
      const status = await waitFinal('ARB', tx);
      expect(status).toMatchObject({ status: 'DONE', substatus: 'COMPLETED', receiving: { chain: 'INK', tx_hash: fill!.hash } });
      expect(await usdcOf('INK', recipient)).toBe(10n * USDC - bridgeFee(route, 10n * USDC));
      // And a further restart pays nothing more.
      await bridge.stop();
      await startBridge();
      await ticks(5); // nothing more happens within a few of the bridge's ticks
      expect(await usdcOf('INK', recipient)).toBe(10n * USDC - bridgeFee(route, 10n * USDC));
    } finally {
      await ink.request({ method: 'evm_setAutomine' as never, params: [true] as never });
    }
  });
});
