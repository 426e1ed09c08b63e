import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { Connection, PublicKey } from '@solana/web3.js';
import { type Address, createPublicClient, erc20Abi, http, type PublicClient } from 'viem';
import { accountHeaders, call } from './client.ts';
import type { TestApp } from './global-setup.ts';

/** Reading balances straight from the sandbox chains, and funding through the sandbox faucet. */
export interface SandboxChain {
  chain: string;
  chain_id?: number;
  rpc_url: string;
  delegate?: string | null;
  tokens: { token: string; native: boolean; decimals: number; address?: string; mint?: string }[];
}

let listing: Promise<SandboxChain[] | undefined> | undefined;

/** The sandbox's chains, or undefined when the target is not a sandbox (a deployed stack). */
export function sandboxChains(): Promise<SandboxChain[] | undefined> {
  listing ??= call('account', 'GET', '/sandbox/chains').then((r) => (r.status === 200 ? (r.body.chains as SandboxChain[]) : undefined));
  return listing;
}

const clients = new Map<string, PublicClient>();

export async function chainInfo(code: string): Promise<SandboxChain> {
  const chain = (await sandboxChains())?.find((c) => c.chain === code);
  if (!chain) throw new Error(`no sandbox chain ${code}`);
  return chain;
}

export async function evmClient(code: string): Promise<PublicClient> {
  let client = clients.get(code);
  if (!client) {
    client = createPublicClient({ transport: http((await chainInfo(code)).rpc_url) });
    clients.set(code, client);
  }
  return client;
}

/** Base units held by `owner` of `token` on `chain`, read from the chain itself. */
export async function chainBalance(code: string, owner: string, token: string): Promise<bigint> {
  const info = await chainInfo(code);
  const entry = info.tokens.find((t) => t.token === token);
  if (!entry) throw new Error(`${code} has no ${token}`);
  if (code === 'SOL') {
    const connection = new Connection(info.rpc_url, 'confirmed');
    if (entry.native) return BigInt(await connection.getBalance(new PublicKey(owner)));
    const ata = getAssociatedTokenAddressSync(new PublicKey(entry.mint!), new PublicKey(owner), true);
    if (!(await connection.getAccountInfo(ata))) return 0n;
    return BigInt((await connection.getTokenAccountBalance(ata)).value.amount);
  }
  const client = await evmClient(code);
  if (entry.native) return client.getBalance({ address: owner as Address });
  return client.readContract({ address: entry.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [owner as Address] });
}

export async function faucet(chain: string, address: string, token: string, amount: string): Promise<void> {
  const response = await call('account', 'POST', '/sandbox/faucet', { json: { chain, address, token, amount } });
  if (response.status !== 200) throw new Error(`faucet failed: ${JSON.stringify(response.body)}`);
}

/** A user with an account; returns its headers and addresses. */
export async function newAccount(app: TestApp, sub: string) {
  const headers = await accountHeaders(app, sub);
  const account = await call('account', 'POST', '/account', { headers });
  if (account.status !== 200) throw new Error(`account creation failed: ${JSON.stringify(account.body)}`);
  return { headers, evm: account.body.public_address.ETH as Address, sol: account.body.public_address.SOL as string };
}
