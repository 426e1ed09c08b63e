import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, concatHex, createWalletClient, defineChain, encodeFunctionData, erc20Abi, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import type { EvmChainCode } from '../../shared/chains/chain-config.ts';
import { Chains } from '../../shared/chains/chains.ts';
import type { BridgeClient, BridgeQuote } from '../../shared/transfers/bridge.ts';
import { BridgeUnavailableError } from '../../shared/transfers/bridge.ts';
import type { GasLeg } from '../../shared/transfers/estimate.ts';
import { ChainGasEstimator, PLACEHOLDER } from '../../shared/transfers/gas-estimator.ts';
import { VENUE_B_BRIDGE } from '../../shared/venues/venue-b/actions.ts';
import { proxyWalletAddress } from '../../shared/venues/venue-e/signing.ts';

/**
 * ChainGasEstimator against the sandbox's anvils (real eth_estimateGas, the sandbox ERC-20s at the
 * USDC addresses): a wallet that holds nothing still gets an estimate (state override of its
 * token balance), where a plain estimate reverts; the bridge's own deposit call is estimated when
 * it quotes, the same call shape when it does not. Issue 19: what the estimator says a step's
 * transactions cost is compared with the gasUsed of the same transactions really sent.
 */
const USDC = 1_000_000n;
let dataDir: string;
let sandbox: EvmSandbox;
let chains: Chains;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'transfer-gas-'));
  sandbox = await startEvmSandbox({ dataDir });
  chains = new Chains({ ...sandbox.chains, SOL: { family: 'sol', native: 'SOL', tokens: {} }, sandbox: true });
}, 120_000);

afterAll(async () => {
  await sandbox?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

/** A new wallet holding `units` of `token` and native gas for its sends. */
async function fundedWallet(chain: EvmChainCode, token: string, units: bigint) {
  const key = generatePrivateKey();
  const address = privateKeyToAddress(key);
  await sandbox.faucet(chain, address, token, units);
  await sandbox.faucet(chain, address, chain === 'POL' ? 'POL' : 'ETH', 10n ** 18n);
  return { key, address };
}

/** Sends the token's `transfer(to, amount)` from the wallet and answers the receipt's gasUsed. */
async function sendTransfer(chainCode: EvmChainCode, key: `0x${string}`, token: string, to: Address, amount: bigint): Promise<bigint> {
  const evm = await chains.evm(chainCode);
  const config = sandbox.chains[chainCode];
  const chain = defineChain({
    id: config.chain_id,
    name: chainCode,
    nativeCurrency: { name: 'native', symbol: 'N', decimals: 18 },
    rpcUrls: { default: { http: [config.rpc_url] } },
  });
  const wallet = createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(config.rpc_url) });
  const hash = await wallet.writeContract({ address: evm.tokenAddress(token)!, abi: erc20Abi, functionName: 'transfer', args: [to, amount] });
  return (await evm.client.waitForTransactionReceipt({ hash })).gasUsed;
}

/** The estimate is never below what the send used, and at most 25 % above it. */
function expectWithinBand(estimated: bigint, used: bigint) {
  expect(estimated).toBeGreaterThanOrEqual(used);
  expect(estimated * 100n).toBeLessThanOrEqual(used * 125n);
}

const noBridge: BridgeClient = {
  quote: () => Promise.reject(new BridgeUnavailableError('down')),
  status: () => Promise.reject(new Error('unused')),
};

describe('ChainGasEstimator on the sandbox chains', { timeout: 60_000 }, () => {
  it('estimates a venue deposit from an unfunded wallet; a plain estimate of the same call reverts', async () => {
    const wallet = privateKeyToAddress(generatePrivateKey());
    const estimator = new ChainGasEstimator(chains, { evm: wallet, sol: '11111111111111111111111111111112' }, noBridge);
    const transfer = await estimator.estimateGas({ action: 'deposit', chain: 'ARB', token: 'USDC', amount: 25n * USDC, venue: 'venue_b' });
    expect(transfer).toBeGreaterThan(21_000n);
    expect(transfer).toBeLessThan(100_000n);
    const approveAndDeposit = await estimator.estimateGas({ action: 'deposit', chain: 'INK', token: 'USDC', amount: 25n * USDC, venue: 'venue_d' });
    expect(approveAndDeposit).toBeGreaterThan(transfer);

    const arb = await chains.evm('ARB');
    const plain = arb.client.estimateGas({
      account: wallet,
      to: arb.tokenAddress('USDC')!,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: ['0x000000000000000000000000000000000000dEaD', 25n * USDC] }),
    });
    await expect(plain).rejects.toThrow();
    expect(await estimator.gasPrice('ARB')).toBeGreaterThan(0n);
  });

  it("estimates the bridge quote's deposit call, and the same shape when the bridge gives no quote", async () => {
    const wallet = privateKeyToAddress(generatePrivateKey());
    const pol = await chains.evm('POL');
    const token = pol.tokenAddress('USDC')!;
    const vault: Address = privateKeyToAddress(generatePrivateKey());
    let asked: unknown;
    const quoting: BridgeClient = {
      quote: async (request) => {
        asked = request;
        const data = concatHex([
          encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [vault, request.amount] }),
          '0x0123456789abcdef0123456789abcdef',
        ]);
        return { deposit: [{ kind: 'evm_transaction', chain: 'POL', to: token, data, value: 0n }] } as unknown as BridgeQuote;
      },
      status: () => Promise.reject(new Error('unused')),
    };
    const leg = {
      action: 'bridge',
      chain: 'POL',
      token: 'USDC',
      amount: 40n * USDC,
      bridge: { from: { chain: 'POL', token: 'USDC' }, to: { chain: 'SOL', token: 'USDC' } },
    } as const;
    const quoted = await new ChainGasEstimator(chains, { evm: wallet, sol: 'So1ana1111111111111111111111111111111111111' }, quoting).estimateGas(leg);
    expect(asked).toMatchObject({ amount: 40n * USDC, sender: wallet, recipient: 'So1ana1111111111111111111111111111111111111' });
    expect(quoted).toBeGreaterThan(21_000n);
    const shape = await new ChainGasEstimator(chains, { evm: wallet, sol: 'x' }, noBridge).estimateGas(leg);
    expect(shape).toBeGreaterThan(21_000n);
    expect(await new ChainGasEstimator(chains, { evm: wallet, sol: 'x' }, noBridge).estimateGas({ ...leg, chain: 'SOL' })).toBe(1n);
  });

  it('prices the platform fee transfer to the configured recipient as the send pays it: from zero (about 17k gas more), then to a holder', async () => {
    const { key, address } = await fundedWallet('ARB', 'USDC', 100n * USDC);
    const recipient = privateKeyToAddress(generatePrivateKey());
    const estimator = new ChainGasEstimator(chains, { evm: address, sol: 'x' }, noBridge);
    // A venue payout's only transaction from the wallet: the platform fee out of it.
    const leg: GasLeg = {
      action: 'withdrawal',
      chain: 'ARB',
      token: 'USDC',
      amount: 60n * USDC,
      venue: 'venue_b',
      platformFee: { amount: 60_000n, recipient },
    };
    const { platformFee: _fee, ...withoutFee } = leg;
    expect(await estimator.estimateGas(withoutFee)).toBe(0n);

    const first = await estimator.estimateGas(leg);
    const firstUsed = await sendTransfer('ARB', key, 'USDC', recipient, 60_000n);
    expectWithinBand(first, firstUsed);
    const again = await estimator.estimateGas(leg);
    const againUsed = await sendTransfer('ARB', key, 'USDC', recipient, 60_000n);
    expectWithinBand(again, againUsed);
    expect(first - again).toBeGreaterThan(15_000n);
  });

  it("a plain-transfer deposit is priced against the venue's own address: venue_b's bridge, venue_e's proxy wallet of the user", async () => {
    const arb = await fundedWallet('ARB', 'USDC', 100n * USDC);
    const venueB = new ChainGasEstimator(chains, { evm: arb.address, sol: 'x' }, noBridge);
    const deposit: GasLeg = { action: 'deposit', chain: 'ARB', token: 'USDC', amount: 10n * USDC, venue: 'venue_b' };
    for (let round = 0; round < 2; round++) {
      // The bridge may hold nothing yet (a fresh sandbox), then it does: each estimate follows the chain.
      const estimated = await venueB.estimateGas(deposit);
      expectWithinBand(estimated, await sendTransfer('ARB', arb.key, 'USDC', VENUE_B_BRIDGE, 10n * USDC));
    }

    const pol = await fundedWallet('POL', 'USDC.E', 100n * USDC);
    const venueE = new ChainGasEstimator(chains, { evm: pol.address, sol: 'x' }, noBridge);
    const proxy = proxyWalletAddress(pol.address);
    const withFee: GasLeg = {
      action: 'deposit',
      chain: 'POL',
      token: 'USDC.E',
      amount: 10n * USDC,
      venue: 'venue_e',
      platformFee: { amount: 10_000n, recipient: pol.address },
    };
    const estimated = await venueE.estimateGas(withFee);
    // The proxy holds nothing before the user's first deposit; the fee goes to a holder (the wallet itself here).
    const used = (await sendTransfer('POL', pol.key, 'USDC.E', proxy, 10n * USDC)) + (await sendTransfer('POL', pol.key, 'USDC.E', pol.address, 10_000n));
    expectWithinBand(estimated, used);
  });

  it('an approve + deposit venue is priced as approve + a transfer to the empty placeholder, whatever the placeholder holds on chain', async () => {
    const wallet = privateKeyToAddress(generatePrivateKey());
    const estimator = new ChainGasEstimator(chains, { evm: wallet, sol: 'x' }, noBridge);
    const leg: GasLeg = { action: 'deposit', chain: 'INK', token: 'USDC', amount: 25n * USDC, venue: 'venue_d' };
    const before = await estimator.estimateGas(leg);
    await sandbox.faucet('INK', PLACEHOLDER, 'USDC', 1n);
    expect(await estimator.estimateGas(leg)).toBe(before);
    // approve (a fresh allowance slot, ~46k) + the transfer to an address holding nothing (~51k).
    expect(before).toBeGreaterThan(90_000n);
    expect(before).toBeLessThan(105_000n);
  });

  it('Solana: one signature per transaction the step sends (the bridge deposit, the platform fee)', async () => {
    const estimator = new ChainGasEstimator(chains, { evm: privateKeyToAddress(generatePrivateKey()), sol: 'x' }, noBridge);
    const bridge: GasLeg = {
      action: 'bridge',
      chain: 'SOL',
      token: 'USDC',
      amount: 10n * USDC,
      bridge: { from: { chain: 'SOL', token: 'USDC' }, to: { chain: 'ARB', token: 'USDC' } },
    };
    expect(await estimator.estimateGas(bridge)).toBe(1n);
    expect(await estimator.estimateGas({ ...bridge, platformFee: { amount: 10_000n, recipient: 'So1ana1111111111111111111111111111111111111' } })).toBe(2n);
  });
});
