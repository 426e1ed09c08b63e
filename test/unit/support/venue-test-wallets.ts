import { type Address, createPublicClient, createWalletClient, defineChain, erc20Abi, type Hex, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expect } from 'vitest';
import type { EvmSandbox } from '../../../infra/local/evm-sandbox.ts';
import type { EvmChainCode } from '../../../shared/chains/chain-config.ts';
import type { VenueDriver, VenueFields, VenueWallet } from '../../../shared/venues/driver.ts';

/** What the sandbox-venue tests share: test wallets on a sandbox chain, polling, a deposit through a driver's plan. */
const ETHER = 10n ** 18n;

/** A viem chain and public client for one sandbox chain. */
export function sandboxChainClient(evm: Pick<EvmSandbox, 'chains'>, code: EvmChainCode) {
  const config = evm.chains[code];
  const native = { name: config.native, symbol: config.native, decimals: 18 };
  const chain = defineChain({ id: config.chain_id, name: code, nativeCurrency: native, rpcUrls: { default: { http: [config.rpc_url] } } });
  return { chain, client: createPublicClient({ chain, transport: http(config.rpc_url), pollingInterval: 50 }) };
}

/** The VenueWallet of a private key, signing directly (the account service signs through the enclave). */
export function keyWallet(key: Hex): VenueWallet & { readonly account: ReturnType<typeof privateKeyToAccount> } {
  const account = privateKeyToAccount(key);
  return {
    account,
    address: account.address,
    signTypedData: (typedData) => account.signTypedData(typedData as never),
    signMessage: (message) => account.signMessage({ message }),
  };
}

/**
 * A fresh wallet on `code` holding one native coin for gas and `amount` base units of `token`,
 * with `send` (one transaction, asserted successful).
 */
export async function fundedTestWallet(evm: EvmSandbox, code: EvmChainCode, token: string, amount: bigint) {
  const key = generatePrivateKey();
  const wallet = keyWallet(key);
  const { account } = wallet;
  await evm.faucet(code, account.address, evm.chains[code].native, ETHER);
  if (amount > 0n) await evm.faucet(code, account.address, token, amount);
  const { chain, client } = sandboxChainClient(evm, code);
  const walletClient = createWalletClient({ chain, transport: http(evm.chains[code].rpc_url), account, pollingInterval: 50 });
  const send = async (to: Address, data: Hex, value?: bigint) => {
    const hash = await walletClient.sendTransaction({ to, data, value });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    expect(receipt.status).toBe('success');
    return receipt;
  };
  return { key, account, wallet, walletClient, send };
}

/** An ERC-20 balance read on the sandbox chain. */
export function tokenBalance(evm: Pick<EvmSandbox, 'chains'>, code: EvmChainCode, token: Address, owner: Address): Promise<bigint> {
  return sandboxChainClient(evm, code).client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
}

/** Reads until `done` (or the timeout), every 50 ms; returns the last value read. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((wake) => setTimeout(wake, 50));
  }
}

/**
 * Deposits through the driver's plan (each call sent by the user) and waits for the credit, which
 * must be exactly the plan's `expectedCredit`; returns the ms from the last receipt to the credit.
 */
export async function depositThroughPlan(
  driver: VenueDriver,
  user: { readonly wallet: VenueWallet; readonly fields: VenueFields; send(to: Address, data: Hex, value?: bigint): Promise<unknown> },
  amount: bigint,
): Promise<number> {
  const before = (await driver.balances(user.wallet, user.fields)).balance;
  const plan = await driver.prepareDeposit(user.wallet, user.fields, amount);
  for (const call of plan.calls) await user.send(call.to, call.data, call.value);
  const sent = performance.now();
  const after = await eventually(
    () => driver.balances(user.wallet, user.fields),
    (b) => b.balance !== before,
  );
  expect(after.balance - before).toBe(plan.expectedCredit);
  return performance.now() - sent;
}
