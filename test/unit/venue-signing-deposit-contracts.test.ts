import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  type Hex,
  http,
  parseEventLogs,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxNadoEndpointArtifact } from '../../infra/local/contracts/sandbox-nado-endpoint.artifact.ts';
import { sandboxRhinoBridgeArtifact } from '../../infra/local/contracts/sandbox-rhino-bridge.artifact.ts';
import { sandboxStarkgateBridgeArtifact } from '../../infra/local/contracts/sandbox-starkgate-bridge.artifact.ts';
import { sandboxTokenArtifact } from '../../infra/local/contracts/sandbox-token.artifact.ts';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import type { EvmChainCode } from '../../shared/chains/chain-config.ts';
import { RHINO_BRIDGE_ABI } from '../../shared/venues/venue-a/signing.ts';
import { STARKGATE_BRIDGE_ABI } from '../../shared/venues/venue-c/signing.ts';
import { NADO_ENDPOINT_ABI, NADO_INK_MAINNET, subaccountNameToBytes12, subaccountSender } from '../../shared/venues/venue-d/signing.ts';

/**
 * The venues' sandbox deposit contracts on real anvil chains, installed as the sandbox will
 * install them (anvil_setCode + initialize): each deposit's event carries exactly what moved,
 * the token balances move by exactly that, and a failed transferFrom reverts the whole deposit.
 */

const USDC = 10n ** 6n;
const ETHER = 10n ** 18n;
const TOKEN_ERRORS = sandboxTokenArtifact.abi.filter((item) => item.type === 'error');
/** Where these tests install the bridges (the sandbox venues choose their own; Nado's is the real Endpoint). */
const RHINO_BRIDGE: Address = '0x00000000000000000000000000000000000a0001';
const STARKGATE_BRIDGE: Address = '0x00000000000000000000000000000000000c0001';

let dataDir: string;
let sandbox: EvmSandbox;
/** The sponsor's clients per chain: it installed the contracts and is their operator. */
let operators: Record<'ARB' | 'ETH' | 'INK', ReturnType<typeof chainClients>>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'venue-contracts-'));
  sandbox = await startEvmSandbox({ dataDir });
  operators = {
    ARB: await install('ARB', RHINO_BRIDGE, sandboxRhinoBridgeArtifact.deployedBytecode, sandboxRhinoBridgeArtifact.abi, [sandbox.sponsor.address]),
    ETH: await install('ETH', STARKGATE_BRIDGE, sandboxStarkgateBridgeArtifact.deployedBytecode, sandboxStarkgateBridgeArtifact.abi, [sandbox.sponsor.address]),
    INK: await install('INK', NADO_INK_MAINNET.endpoint, sandboxNadoEndpointArtifact.deployedBytecode, sandboxNadoEndpointArtifact.abi, [
      sandbox.chains.INK.tokens.USDC?.address as Address,
      sandbox.sponsor.address,
    ]),
  };
}, 120_000);

afterAll(async () => {
  await sandbox?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

function chainClients(code: EvmChainCode, privateKey: Hex) {
  const config = sandbox.chains[code];
  const chain = defineChain({
    id: config.chain_id,
    name: code,
    nativeCurrency: { name: config.native, symbol: config.native, decimals: 18 },
    rpcUrls: { default: { http: [config.rpc_url] } },
  });
  const transport = http(config.rpc_url);
  return {
    usdc: config.tokens.USDC?.address as Address,
    public: createPublicClient({ chain, transport, pollingInterval: 50 }),
    wallet: createWalletClient({ chain, transport, account: privateKeyToAccount(privateKey), pollingInterval: 50 }),
    test: createTestClient({ chain, transport, mode: 'anvil', pollingInterval: 50 }),
  };
}

/** Installs `bytecode` at `address` and initializes it (as the sandbox venue will). */
async function install(code: EvmChainCode, address: Address, bytecode: Hex, abi: Abi, args: readonly unknown[]) {
  const operator = chainClients(code, sandbox.sponsor.privateKey);
  await operator.test.setCode({ address, bytecode });
  const hash = await operator.wallet.writeContract({ address, abi, functionName: 'initialize', args } as never);
  expect((await operator.public.waitForTransactionReceipt({ hash })).status).toBe('success');
  return operator;
}

/** A fresh user with gas and `usdc` base units on `code`. */
async function fundedUser(code: EvmChainCode, usdc: bigint) {
  const privateKey = generatePrivateKey();
  const address = privateKeyToAccount(privateKey).address;
  await sandbox.faucet(code, address, sandbox.chains[code].native, ETHER);
  if (usdc > 0n) await sandbox.faucet(code, address, 'USDC', usdc);
  return { address, clients: chainClients(code, privateKey) };
}

/** Sends one contract call and waits for its successful receipt (the call's types are checked by viem at run time). */
async function send(
  clients: ReturnType<typeof chainClients>,
  request: { address: Address; abi: Abi; functionName: string; args: readonly unknown[]; value?: bigint },
) {
  const hash = await clients.wallet.writeContract(request as never);
  const receipt = await clients.public.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe('success');
  return receipt;
}

async function balance(clients: ReturnType<typeof chainClients>, owner: Address) {
  return clients.public.readContract({ address: clients.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
}

/** The custom error a call reverted with (fails the test if it did not revert). */
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

describe("the ABIs drivers and sandbox venues use (shared/venues) are the compiled contracts' own", () => {
  const shape = (item: Abi[number]) =>
    JSON.stringify({
      type: item.type,
      name: 'name' in item ? item.name : undefined,
      inputs:
        'inputs' in item
          ? item.inputs.map((input) => [
              input.type,
              input.name,
              item.type === 'event' && 'indexed' in input ? Boolean(input.indexed) : item.type === 'event' ? false : undefined,
            ])
          : undefined,
      outputs: 'outputs' in item ? item.outputs.map((output) => output.type) : undefined,
      stateMutability: 'stateMutability' in item ? item.stateMutability : undefined,
    });
  it.each([
    ['RHINO_BRIDGE_ABI', RHINO_BRIDGE_ABI, sandboxRhinoBridgeArtifact.abi],
    ['STARKGATE_BRIDGE_ABI', STARKGATE_BRIDGE_ABI, sandboxStarkgateBridgeArtifact.abi],
    ['NADO_ENDPOINT_ABI', NADO_ENDPOINT_ABI, sandboxNadoEndpointArtifact.abi],
  ] as const)('%s', (_name, shared, compiled) => {
    const compiledShapes = new Set((compiled as Abi).map(shape));
    for (const item of shared as Abi) expect(compiledShapes, shape(item)).toContain(shape(item));
  });
});

describe('venue_a: SandboxRhinoBridge on ARB (depositWithId)', { timeout: 60_000 }, () => {
  const abi = [...sandboxRhinoBridgeArtifact.abi, ...TOKEN_ERRORS];

  it('pulls the tokens and emits BridgedDepositWithId with exactly the sender, token, amount and commitment id', async () => {
    const operator = operators.ARB;
    const user = await fundedUser('ARB', 20n * USDC);
    const amount = 12_345_678n;
    const commitmentId = 2n ** 200n + 17n;
    await send(user.clients, { address: user.clients.usdc, abi: erc20Abi, functionName: 'approve', args: [RHINO_BRIDGE, amount] });
    const receipt = await send(user.clients, { address: RHINO_BRIDGE, abi, functionName: 'depositWithId', args: [user.clients.usdc, amount, commitmentId] });

    const events = parseEventLogs({ abi: RHINO_BRIDGE_ABI, logs: receipt.logs, eventName: 'BridgedDepositWithId' });
    expect(events).toHaveLength(1);
    expect(events[0]?.address).toBe(RHINO_BRIDGE.toLowerCase());
    expect(events[0]?.args).toEqual({ sender: user.address, origin: user.address, token: user.clients.usdc, amount, commitmentId });
    expect(await balance(user.clients, user.address)).toBe(20n * USDC - amount);
    expect(await balance(user.clients, RHINO_BRIDGE)).toBe(amount);

    // The operator pays out; nobody else can.
    expect(
      await revertName(
        user.clients.wallet.writeContract({ address: RHINO_BRIDGE, abi, functionName: 'withdrawV2', args: [user.clients.usdc, user.address, 1n] }),
      ),
    ).toBe('NotOperator');
    const payout = await send(operator, { address: RHINO_BRIDGE, abi, functionName: 'withdrawV2', args: [operator.usdc, user.address, 345_678n] });
    expect(parseEventLogs({ abi, logs: payout.logs, eventName: 'BridgedWithdrawal' })[0]?.args).toEqual({
      user: user.address,
      token: operator.usdc,
      amount: 345_678n,
      withdrawalId: '',
    });
    expect(await balance(user.clients, user.address)).toBe(20n * USDC - amount + 345_678n);
    expect(await revertName(operator.wallet.writeContract({ address: RHINO_BRIDGE, abi, functionName: 'initialize', args: [user.address] }))).toBe(
      'AlreadyInitialized',
    );
  });

  it('reverts when transferFrom fails (no allowance, short balance, not a token) and moves nothing', async () => {
    const user = await fundedUser('ARB', 5n * USDC);
    const deposit = (token: Address, amount: bigint) =>
      user.clients.wallet.writeContract({ address: RHINO_BRIDGE, abi, functionName: 'depositWithId', args: [token, amount, 1n] });
    expect(await revertName(deposit(user.clients.usdc, USDC))).toBe('ERC20InsufficientAllowance');
    await send(user.clients, { address: user.clients.usdc, abi: erc20Abi, functionName: 'approve', args: [RHINO_BRIDGE, 10n * USDC] });
    expect(await revertName(deposit(user.clients.usdc, 6n * USDC))).toBe('ERC20InsufficientBalance');
    expect(await revertName(deposit(user.address, USDC))).toBe('TokenCallFailed');
    expect(await revertName(deposit('0x0000000000000000000000000000000000000000', USDC))).toBe('BlackholeNotAllowed');
    expect(await balance(user.clients, user.address)).toBe(5n * USDC);
  });
});

describe('venue_c: SandboxStarkgateBridge on ETH (deposit with the message fee)', { timeout: 60_000 }, () => {
  const abi = [...sandboxStarkgateBridgeArtifact.abi, ...TOKEN_ERRORS];
  const l2Recipient = 0x3ab795501073e1fc9fb78321a57626e3569111c7eb766db9ccec1c54db227cn;

  it('pulls the tokens, keeps the fee and emits Deposit with exactly the sender, token, amount, recipient, nonce and fee', async () => {
    const operator = operators.ETH;
    const user = await fundedUser('ETH', 50n * USDC);
    const fee = await user.clients.public.readContract({ address: STARKGATE_BRIDGE, abi, functionName: 'estimateDepositFeeWei' });
    expect(fee).toBe(20_000n * 5_000_000_000n);
    await send(user.clients, { address: user.clients.usdc, abi: erc20Abi, functionName: 'approve', args: [STARKGATE_BRIDGE, 2n ** 256n - 1n] });

    const first = await send(user.clients, {
      address: STARKGATE_BRIDGE,
      abi,
      functionName: 'deposit',
      args: [user.clients.usdc, 10n * USDC, l2Recipient],
      value: fee,
    });
    const second = await send(user.clients, {
      address: STARKGATE_BRIDGE,
      abi,
      functionName: 'deposit',
      args: [user.clients.usdc, 1n, l2Recipient],
      value: fee + 1n,
    });
    const events = [
      ...parseEventLogs({ abi: STARKGATE_BRIDGE_ABI, logs: first.logs, eventName: 'Deposit' }),
      ...parseEventLogs({ abi: STARKGATE_BRIDGE_ABI, logs: second.logs, eventName: 'Deposit' }),
    ];
    expect(events.map((event) => event.args)).toEqual([
      { sender: user.address, token: user.clients.usdc, amount: 10n * USDC, l2Recipient, nonce: 0n, fee },
      { sender: user.address, token: user.clients.usdc, amount: 1n, l2Recipient, nonce: 1n, fee: fee + 1n },
    ]);
    expect(await balance(user.clients, STARKGATE_BRIDGE)).toBe(10n * USDC + 1n);
    expect(await balance(user.clients, user.address)).toBe(40n * USDC - 1n);
    expect(await user.clients.public.getBalance({ address: STARKGATE_BRIDGE })).toBe(2n * fee + 1n);

    const payout = await send(operator, { address: STARKGATE_BRIDGE, abi, functionName: 'withdraw', args: [operator.usdc, 4n * USDC, user.address] });
    expect(parseEventLogs({ abi, logs: payout.logs, eventName: 'Withdrawal' })[0]?.args).toEqual({
      recipient: user.address,
      token: operator.usdc,
      amount: 4n * USDC,
    });
    expect(await balance(user.clients, user.address)).toBe(44n * USDC - 1n);
    expect(
      await revertName(
        user.clients.wallet.writeContract({ address: STARKGATE_BRIDGE, abi, functionName: 'withdraw', args: [user.clients.usdc, 1n, user.address] }),
      ),
    ).toBe('NotOperator');
  });

  it("refuses a fee outside StarkGate's bounds, an invalid L2 address, and a failed transferFrom, moving nothing", async () => {
    const user = await fundedUser('ETH', 5n * USDC);
    const fee = 10n ** 14n;
    const deposit = (amount: bigint, recipient: bigint, value: bigint) =>
      user.clients.wallet.writeContract({ address: STARKGATE_BRIDGE, abi, functionName: 'deposit', args: [user.clients.usdc, amount, recipient], value });
    expect(await revertName(deposit(USDC, l2Recipient, fee))).toBe('ERC20InsufficientAllowance');
    await send(user.clients, { address: user.clients.usdc, abi: erc20Abi, functionName: 'approve', args: [STARKGATE_BRIDGE, 100n * USDC] });
    expect(await revertName(deposit(6n * USDC, l2Recipient, fee))).toBe('ERC20InsufficientBalance');
    expect(await revertName(deposit(USDC, l2Recipient, 10n ** 12n - 1n))).toBe('InsufficientFeeValue');
    expect(await revertName(deposit(USDC, l2Recipient, 10n ** 16n + 1n))).toBe('FeeValueTooHigh');
    expect(await revertName(deposit(USDC, 2n ** 251n - 256n, fee))).toBe('L2AddressOutOfRange');
    expect(await revertName(deposit(USDC, 0n, fee))).toBe('L2AddressOutOfRange');
    expect(await balance(user.clients, user.address)).toBe(5n * USDC);
  });
});

describe('venue_d: SandboxNadoEndpoint on INK at the real Endpoint address (depositCollateral)', { timeout: 60_000 }, () => {
  const abi = [...sandboxNadoEndpointArtifact.abi, ...TOKEN_ERRORS];
  const endpoint = NADO_INK_MAINNET.endpoint;

  it("pulls the quote token and emits DepositCollateral with the subaccount's bytes32 sender and the exact amount", async () => {
    const operator = operators.INK;
    expect(await operator.public.readContract({ address: endpoint, abi, functionName: 'quote' })).toBe(operator.usdc);
    const user = await fundedUser('INK', 9n * USDC);
    await send(user.clients, { address: user.clients.usdc, abi: erc20Abi, functionName: 'approve', args: [endpoint, 9n * USDC] });

    const primary = await send(user.clients, {
      address: endpoint,
      abi,
      functionName: 'depositCollateral',
      args: [subaccountNameToBytes12('default'), 0, 5n * USDC],
    });
    const other = await send(user.clients, { address: endpoint, abi, functionName: 'depositCollateral', args: [subaccountNameToBytes12('trading'), 0, 1n] });
    expect(parseEventLogs({ abi: NADO_ENDPOINT_ABI, logs: primary.logs, eventName: 'DepositCollateral' }).map((event) => event.args)).toEqual([
      { sender: subaccountSender(user.address, 'default'), productId: 0, amount: 5n * USDC },
    ]);
    expect(parseEventLogs({ abi, logs: other.logs, eventName: 'DepositCollateral' })[0]?.args.sender).toBe(subaccountSender(user.address, 'trading'));
    expect(await balance(user.clients, endpoint)).toBe(5n * USDC + 1n);
    expect(await balance(user.clients, user.address)).toBe(4n * USDC - 1n);

    const sender = subaccountSender(user.address);
    const payout = await send(operator, { address: endpoint, abi, functionName: 'withdrawCollateral', args: [sender, 0, 2n * USDC, user.address] });
    expect(parseEventLogs({ abi, logs: payout.logs, eventName: 'WithdrawCollateral' })[0]?.args).toEqual({
      sender,
      productId: 0,
      amount: 2n * USDC,
      to: user.address,
    });
    expect(await balance(user.clients, user.address)).toBe(6n * USDC - 1n);
    expect(
      await revertName(user.clients.wallet.writeContract({ address: endpoint, abi, functionName: 'withdrawCollateral', args: [sender, 0, 1n, user.address] })),
    ).toBe('NotOperator');
  });

  it('refuses another product and a failed transferFrom, moving nothing', async () => {
    const user = await fundedUser('INK', 5n * USDC);
    const deposit = (productId: number, amount: bigint) =>
      user.clients.wallet.writeContract({
        address: endpoint,
        abi,
        functionName: 'depositCollateral',
        args: [subaccountNameToBytes12('default'), productId, amount],
      });
    expect(await revertName(deposit(0, USDC))).toBe('ERC20InsufficientAllowance');
    await send(user.clients, { address: user.clients.usdc, abi: erc20Abi, functionName: 'approve', args: [endpoint, 10n * USDC] });
    expect(await revertName(deposit(0, 5n * USDC + 1n))).toBe('ERC20InsufficientBalance');
    expect(await revertName(deposit(1, USDC))).toBe('UnknownProduct');
    expect(await balance(user.clients, user.address)).toBe(5n * USDC);
  });
});
