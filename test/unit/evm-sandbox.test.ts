import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  type Hex,
  http,
  parseSignature,
  serializeSignature,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxTokenArtifact } from '../../infra/local/contracts/sandbox-token.artifact.ts';
import { type EvmSandbox, SANDBOX_DELEGATE, startEvmSandbox, UnknownFaucetTokenError } from '../../infra/local/evm-sandbox.ts';
import type { EvmChainCode, EvmChainConfig } from '../../shared/chains/chain-config.ts';
import { sponsoredExecutorArtifact } from '../../shared/chains/evm/contracts/sponsored-executor.artifact.ts';
import {
  type Call,
  EXECUTOR_NONCE_SLOT,
  erc20TransferCall,
  executeCalldata,
  executorTypedData,
  isDelegatedTo,
  readExecutorNonce,
  sponsoredExecutorAbi,
} from '../../shared/chains/evm/sponsored-executor.ts';

const USDC = 10n ** 6n;
const ETHER = 10n ** 18n;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
/** Executor and token errors together, so a bubbled-up token revert decodes by name. */
const EXECUTE_ABI = [...sponsoredExecutorAbi, ...sandboxTokenArtifact.abi.filter((item) => item.type === 'error')];

let dataDir: string;
let sandbox: EvmSandbox;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'evm-sandbox-'));
  sandbox = await startEvmSandbox({ dataDir });
}, 120_000);

afterAll(async () => {
  await sandbox?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

function clients(code: EvmChainCode) {
  const config = sandbox.chains[code];
  const chain = defineChain({
    id: config.chain_id,
    name: code,
    nativeCurrency: { name: config.native, symbol: config.native, decimals: 18 },
    rpcUrls: { default: { http: [config.rpc_url] } },
  });
  const transport = http(config.rpc_url);
  return {
    config,
    public: createPublicClient({ chain, transport, pollingInterval: 50 }),
    sponsor: createWalletClient({ chain, transport, account: privateKeyToAccount(sandbox.sponsor.privateKey), pollingInterval: 50 }),
  };
}

function tokenAddress(config: EvmChainConfig, symbol: 'USDC' | 'USDC.E'): Address {
  const token = config.tokens[symbol];
  if (!token) throw new Error(`no ${symbol} in the chain config`);
  return token.address as Address;
}

async function tokenBalance(code: EvmChainCode, symbol: 'USDC' | 'USDC.E', owner: Address): Promise<bigint> {
  const { config, public: client } = clients(code);
  return client.readContract({ address: tokenAddress(config, symbol), abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
}

/** The custom error name `promise` reverted with (fails the test if it did not revert). */
async function revertName(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => expect.unreachable('expected a revert'),
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(BaseError);
  const reverted = (error as BaseError).walk((cause) => cause instanceof ContractFunctionRevertedError);
  expect(reverted).toBeInstanceOf(ContractFunctionRevertedError);
  return (reverted as ContractFunctionRevertedError).data?.errorName;
}

describe('EVM sandbox', { timeout: 60_000 }, () => {
  it('runs ETH, ARB, POL and INK with their real chain ids, the delegate and a funded sponsor', async () => {
    const expected: Record<EvmChainCode, number> = { ETH: 1, ARB: 42161, POL: 137, INK: 57073 };
    for (const code of Object.keys(expected) as EvmChainCode[]) {
      const { config, public: client } = clients(code);
      expect(config.chain_id).toBe(expected[code]);
      expect(await client.getChainId()).toBe(expected[code]);
      expect(config.rpc_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(config.delegate).toBe(SANDBOX_DELEGATE);
      expect(await client.getCode({ address: SANDBOX_DELEGATE })).toBe(sponsoredExecutorArtifact.deployedBytecode);
      expect(await client.getBalance({ address: sandbox.sponsor.address })).toBeGreaterThanOrEqual(1_000n * ETHER);
    }
    expect(privateKeyToAccount(sandbox.sponsor.privateKey).address).toBe(sandbox.sponsor.address);
    expect(sandbox.chains.POL.native).toBe('POL');
    expect(sandbox.chains.ARB.native).toBe('ETH');
  });

  it('has the sandbox token at the real USDC addresses, and USDC.e on ARB and POL only', async () => {
    expect(Object.keys(sandbox.chains.ETH.tokens)).toEqual(['USDC']);
    expect(Object.keys(sandbox.chains.ARB.tokens).sort()).toEqual(['USDC', 'USDC.E']);
    expect(Object.keys(sandbox.chains.POL.tokens).sort()).toEqual(['USDC', 'USDC.E']);
    expect(Object.keys(sandbox.chains.INK.tokens)).toEqual(['USDC']);
    expect(tokenAddress(sandbox.chains.ETH, 'USDC')).toBe('0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48');
    expect(tokenAddress(sandbox.chains.POL, 'USDC.E')).toBe('0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174');

    for (const code of ['ETH', 'ARB', 'POL', 'INK'] as const) {
      const { config, public: client } = clients(code);
      for (const symbol of Object.keys(config.tokens) as ('USDC' | 'USDC.E')[]) {
        const address = tokenAddress(config, symbol);
        expect(await client.getCode({ address })).toBe(sandboxTokenArtifact.deployedBytecode);
        expect(await client.readContract({ address, abi: erc20Abi, functionName: 'decimals' })).toBe(6);
        expect(await client.readContract({ address, abi: erc20Abi, functionName: 'symbol' })).toBe(symbol === 'USDC' ? 'USDC' : 'USDC.e');
        expect(await client.readContract({ address, abi: erc20Abi, functionName: 'name' })).toBe('USD Coin');
      }
    }
  });

  it('credits the native coin and tokens exactly, to the base unit', async () => {
    const user = privateKeyToAccount(generatePrivateKey()).address;
    await sandbox.faucet('ARB', user, 'ETH', 1_500_000_000_000_000_001n);
    await sandbox.faucet('ARB', user, 'ETH', 2n);
    await sandbox.faucet('POL', user, 'POL', 7n * ETHER);
    await sandbox.faucet('ARB', user, 'USDC', 123_456_789n);
    await sandbox.faucet('ARB', user, 'USDC', 1n);
    await sandbox.faucet('POL', user, 'USDC.E', 42n);
    await sandbox.faucet('INK', user, 'USDC', 5n * USDC);

    expect(await clients('ARB').public.getBalance({ address: user })).toBe(1_500_000_000_000_000_003n);
    expect(await clients('POL').public.getBalance({ address: user })).toBe(7n * ETHER);
    expect(await clients('ETH').public.getBalance({ address: user })).toBe(0n);
    expect(await tokenBalance('ARB', 'USDC', user)).toBe(123_456_790n);
    expect(await tokenBalance('POL', 'USDC.E', user)).toBe(42n);
    expect(await tokenBalance('POL', 'USDC', user)).toBe(0n);
    expect(await tokenBalance('INK', 'USDC', user)).toBe(5n * USDC);
  });

  it('refuses a token the chain does not have', async () => {
    const user = privateKeyToAccount(generatePrivateKey()).address;
    await expect(sandbox.faucet('ETH', user, 'USDC.E', 1n)).rejects.toThrow('ETH has no token "USDC.E"; it has ETH, USDC');
    await expect(sandbox.faucet('INK', user, 'USDC.E', 1n)).rejects.toThrow('INK has no token "USDC.E"');
    await expect(sandbox.faucet('POL', user, 'ETH', 1n)).rejects.toThrow('POL has no token "ETH"; it has POL, USDC, USDC.E');
    await expect(sandbox.faucet('ARB', user, 'DAI', 1n)).rejects.toThrow('ARB has no token "DAI"');
    await expect(sandbox.faucet('ARB', user, 'DAI', 1n)).rejects.toBeInstanceOf(UnknownFaucetTokenError);
  });

  describe('EIP-7702 sponsored transfer through the SponsoredExecutor', () => {
    const user = privateKeyToAccount(generatePrivateKey());
    const stranger = privateKeyToAccount(generatePrivateKey());
    const recipient = privateKeyToAccount(generatePrivateKey()).address;

    async function signedExecute(calls: Call[], nonce: bigint, deadline: bigint, signer = user) {
      const { config } = clients('ARB');
      const signature = await signer.signTypedData(executorTypedData({ chainId: config.chain_id, account: user.address, calls, nonce, deadline }));
      return { calls, nonce, deadline, signature };
    }

    function simulate(execute: { calls: Call[]; nonce: bigint; deadline: bigint; signature: Hex }) {
      return clients('ARB').public.simulateContract({
        account: sandbox.sponsor.address,
        address: user.address,
        abi: EXECUTE_ABI,
        functionName: 'execute',
        args: [execute.calls, execute.nonce, execute.deadline, execute.signature],
      });
    }

    async function inAnHour(): Promise<bigint> {
      return (await clients('ARB').public.getBlock()).timestamp + 3_600n;
    }

    it('delegates and moves 25 USDC in one sponsor-paid transaction; the user keeps 0 native', async () => {
      const { config, public: client, sponsor } = clients('ARB');
      const usdc = tokenAddress(config, 'USDC');
      await sandbox.faucet('ARB', user.address, 'USDC', 100n * USDC);
      expect(await client.getBalance({ address: user.address })).toBe(0n);
      expect(await isDelegatedTo(client, user.address, SANDBOX_DELEGATE)).toBe(false);
      expect(await readExecutorNonce(client, user.address)).toBe(0n);

      const execute = await signedExecute([erc20TransferCall(usdc, recipient, 25n * USDC)], 0n, await inAnHour());
      // The sponsor sends the transaction, so the authorization carries the user's current nonce (not +1).
      const authorization = await user.signAuthorization({
        contractAddress: SANDBOX_DELEGATE,
        chainId: config.chain_id,
        nonce: await client.getTransactionCount({ address: user.address }),
      });
      const hash = await sponsor.sendTransaction({
        to: user.address,
        data: executeCalldata(execute.calls, execute.nonce, execute.deadline, execute.signature),
        authorizationList: [authorization],
      });
      const receipt = await client.waitForTransactionReceipt({ hash });

      expect(receipt.status).toBe('success');
      expect(receipt.type).toBe('eip7702');
      expect(receipt.from.toLowerCase()).toBe(sandbox.sponsor.address.toLowerCase());
      expect(await tokenBalance('ARB', 'USDC', recipient)).toBe(25n * USDC);
      expect(await tokenBalance('ARB', 'USDC', user.address)).toBe(75n * USDC);
      expect(await client.getBalance({ address: user.address })).toBe(0n);
      expect(await client.getCode({ address: user.address })).toBe(`0xef0100${SANDBOX_DELEGATE.slice(2)}`);
      expect(await isDelegatedTo(client, user.address, SANDBOX_DELEGATE)).toBe(true);
      expect(await client.readContract({ address: user.address, abi: sponsoredExecutorAbi, functionName: 'executorNonce' })).toBe(1n);
      // The nonce lives at the ERC-7201 slot the helper computes, not at slot 0.
      expect(await readExecutorNonce(client, user.address)).toBe(1n);
      expect(await client.getStorageAt({ address: user.address, slot: EXECUTOR_NONCE_SLOT })).toBe(`0x${'1'.padStart(64, '0')}`);
      expect(BigInt((await client.getStorageAt({ address: user.address, slot: '0x0' })) ?? '0x0')).toBe(0n);

      const [executed] = await client.getContractEvents({
        address: user.address,
        abi: sponsoredExecutorAbi,
        eventName: 'Executed',
        fromBlock: receipt.blockNumber,
        toBlock: receipt.blockNumber,
      });
      expect(executed?.args).toEqual({ nonce: 0n, sponsor: sandbox.sponsor.address, callCount: 1n });
    });

    it('rejects a replay of the same signed execute, also when mined', async () => {
      const { config, public: client, sponsor } = clients('ARB');
      const replay = await signedExecute([erc20TransferCall(tokenAddress(config, 'USDC'), recipient, 25n * USDC)], 0n, await inAnHour());
      expect(await revertName(simulate(replay))).toBe('InvalidNonce');

      // Sent anyway (fixed gas, no estimate): mined, reverted, nothing moved.
      const hash = await sponsor.sendTransaction({
        to: user.address,
        data: executeCalldata(replay.calls, replay.nonce, replay.deadline, replay.signature),
        gas: 200_000n,
      });
      expect((await client.waitForTransactionReceipt({ hash })).status).toBe('reverted');
      expect(await tokenBalance('ARB', 'USDC', recipient)).toBe(25n * USDC);
      expect(await readExecutorNonce(client, user.address)).toBe(1n);
    });

    it('rejects an execute signed by another key, a tampered one, and a malleable signature', async () => {
      const usdc = tokenAddress(clients('ARB').config, 'USDC');
      const calls = [erc20TransferCall(usdc, recipient, 1n * USDC)];
      const deadline = await inAnHour();

      expect(await revertName(simulate(await signedExecute(calls, 1n, deadline, stranger)))).toBe('InvalidSignature');

      const genuine = await signedExecute(calls, 1n, deadline);
      expect(await revertName(simulate({ ...genuine, calls: [erc20TransferCall(usdc, stranger.address, 1n * USDC)] }))).toBe('InvalidSignature');
      expect(await revertName(simulate({ ...genuine, deadline: deadline + 1n }))).toBe('InvalidSignature');

      // (r, n - s, flipped v) recovers the same key; the contract accepts only the low-s form (EIP-2).
      const { r, s, yParity } = parseSignature(genuine.signature);
      const twin = serializeSignature({ r, s: `0x${(SECP256K1_N - BigInt(s)).toString(16).padStart(64, '0')}`, yParity: yParity === 0 ? 1 : 0 });
      expect(await revertName(simulate({ ...genuine, signature: twin }))).toBe('InvalidSignature');
      expect(await revertName(simulate({ ...genuine, signature: `${genuine.signature.slice(0, -2)}00` as Hex }))).toBe('InvalidSignature');
      expect((await simulate(genuine)).request.functionName).toBe('execute'); // the untouched one would pass
    });

    it('rejects an expired deadline', async () => {
      const { config, public: client } = clients('ARB');
      const latest = (await client.getBlock()).timestamp;
      const expired = await signedExecute([erc20TransferCall(tokenAddress(config, 'USDC'), recipient, 1n * USDC)], 1n, latest - 1n);
      expect(await revertName(simulate(expired))).toBe('Expired');
    });

    it('bubbles up the failing call’s revert data and consumes no nonce', async () => {
      const { config, public: client } = clients('ARB');
      const tooMuch = await signedExecute([erc20TransferCall(tokenAddress(config, 'USDC'), recipient, 1_000n * USDC)], 1n, await inAnHour());
      expect(await revertName(simulate(tooMuch))).toBe('ERC20InsufficientBalance');
      expect(await readExecutorNonce(client, user.address)).toBe(1n);
    });

    it('runs a second execute (nonce 1) without a new authorization, the account being delegated already', async () => {
      const { config, public: client, sponsor } = clients('ARB');
      const usdc = tokenAddress(config, 'USDC');
      const second = await signedExecute(
        [erc20TransferCall(usdc, recipient, 10n * USDC), erc20TransferCall(usdc, stranger.address, 5n * USDC)],
        await readExecutorNonce(client, user.address),
        await inAnHour(),
      );
      expect(second.nonce).toBe(1n);
      const hash = await sponsor.sendTransaction({ to: user.address, data: executeCalldata(second.calls, second.nonce, second.deadline, second.signature) });
      const receipt = await client.waitForTransactionReceipt({ hash });

      expect(receipt.status).toBe('success');
      expect(receipt.type).toBe('eip1559');
      expect(await tokenBalance('ARB', 'USDC', recipient)).toBe(35n * USDC);
      expect(await tokenBalance('ARB', 'USDC', stranger.address)).toBe(5n * USDC);
      expect(await tokenBalance('ARB', 'USDC', user.address)).toBe(60n * USDC);
      expect(await readExecutorNonce(client, user.address)).toBe(2n);
      expect(await client.getBalance({ address: user.address })).toBe(0n);
    });

    it('keeps balances, delegation and executor nonce across a restart on the same dataDir', { timeout: 120_000 }, async () => {
      const holder = privateKeyToAccount(generatePrivateKey()).address;
      await sandbox.faucet('POL', holder, 'POL', 3n * ETHER + 1n);
      await sandbox.faucet('POL', holder, 'USDC.E', 77n);
      const before = sandbox.chains.POL.rpc_url;

      await sandbox.stop();
      sandbox = await startEvmSandbox({ dataDir });

      expect(sandbox.chains.POL.rpc_url).not.toBe(before);
      expect(await clients('POL').public.getBalance({ address: holder })).toBe(3n * ETHER + 1n);
      expect(await tokenBalance('POL', 'USDC.E', holder)).toBe(77n);
      expect(await tokenBalance('ARB', 'USDC', recipient)).toBe(35n * USDC);
      const arb = clients('ARB').public;
      expect(await isDelegatedTo(arb, user.address, SANDBOX_DELEGATE)).toBe(true);
      expect(await readExecutorNonce(arb, user.address)).toBe(2n);
      // Still initialised once: the restart did not reinstall the token over its storage.
      expect(await arb.readContract({ address: tokenAddress(sandbox.chains.ARB, 'USDC'), abi: erc20Abi, functionName: 'decimals' })).toBe(6);
      await sandbox.faucet('POL', holder, 'USDC.E', 1n);
      expect(await tokenBalance('POL', 'USDC.E', holder)).toBe(78n);
    });
  });
});
