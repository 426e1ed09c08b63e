import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, concatHex, encodeFunctionData, erc20Abi } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { Chains } from '../../shared/chains/chains.ts';
import type { BridgeClient, BridgeQuote } from '../../shared/transfers/bridge.ts';
import { BridgeUnavailableError } from '../../shared/transfers/bridge.ts';
import { ChainGasEstimator } from '../../shared/transfers/gas-estimator.ts';

/**
 * ChainGasEstimator against the sandbox's anvils (real eth_estimateGas, the sandbox ERC-20s at the
 * USDC addresses): a wallet that holds nothing still gets an estimate (state override of its
 * token balance), where a plain estimate reverts; the bridge's own deposit call is estimated when
 * it quotes, the same call shape when it does not.
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

const noBridge: BridgeClient = {
  quote: () => Promise.reject(new BridgeUnavailableError('down')),
  status: () => Promise.reject(new Error('unused')),
};

describe('ChainGasEstimator on the sandbox chains', () => {
  it('estimates a venue deposit from an unfunded wallet; a plain estimate of the same call reverts', async () => {
    const wallet = privateKeyToAddress(generatePrivateKey());
    const estimator = new ChainGasEstimator(chains, { evm: wallet, sol: '11111111111111111111111111111112' }, noBridge);
    const transfer = await estimator.estimateGas({ action: 'deposit', chain: 'ARB', token: 'USDC', amount: 25n * USDC, venue: 'venue_b' });
    expect(transfer).toBeGreaterThan(21_000n);
    expect(transfer).toBeLessThan(100_000n);
    const approveAndDeposit = await estimator.estimateGas({ action: 'deposit', chain: 'INK', token: 'USDC', amount: 25n * USDC, venue: 'venue_d' });
    expect(approveAndDeposit).toBeGreaterThan(transfer);

    const arb = await chains.evm('ARB');
    const plain = arb.client.estimateGas({ account: wallet, to: arb.tokenAddress('USDC')!, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: ['0x000000000000000000000000000000000000dEaD', 25n * USDC] }) });
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
        const data = concatHex([encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [vault, request.amount] }), '0x0123456789abcdef0123456789abcdef']);
        return { deposit: [{ kind: 'evm_transaction', chain: 'POL', to: token, data, value: 0n }] } as unknown as BridgeQuote;
      },
      status: () => Promise.reject(new Error('unused')),
    };
    const leg = { action: 'bridge', chain: 'POL', token: 'USDC', amount: 40n * USDC, bridge: { from: { chain: 'POL', token: 'USDC' }, to: { chain: 'SOL', token: 'USDC' } } } as const;
    const quoted = await new ChainGasEstimator(chains, { evm: wallet, sol: 'So1ana1111111111111111111111111111111111111' }, quoting).estimateGas(leg);
    expect(asked).toMatchObject({ amount: 40n * USDC, sender: wallet, recipient: 'So1ana1111111111111111111111111111111111111' });
    expect(quoted).toBeGreaterThan(21_000n);
    const shape = await new ChainGasEstimator(chains, { evm: wallet, sol: 'x' }, noBridge).estimateGas(leg);
    expect(shape).toBeGreaterThan(21_000n);
    expect(await new ChainGasEstimator(chains, { evm: wallet, sol: 'x' }, noBridge).estimateGas({ ...leg, chain: 'SOL' })).toBe(1n);
  });
});
