import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { USDC_DECIMALS, USDC_MINT } from './constants.ts';
import { rpcMethods } from './methods.ts';
import { SandboxChain } from './state.ts';
import { serveHttp } from './transport.ts';

/**
 * A local Solana for the sandbox: a JSON-RPC 2.0 server over an in-process LiteSVM, answering the
 * methods the wallet service's @solana/kit RPC client (shared/chains/solana-chain.ts) and the
 * tests' @solana/web3.js v1 `Connection` use for balances, token accounts and sending, with the
 * request and response shapes of an Agave validator (so the production code path runs unchanged).
 *
 * Not a validator: every accepted transaction is executed at once in a one-transaction "block", the
 * slot and block height move by one per transaction, and everything processed is immediately
 * `finalized`. There is no websocket endpoint, so no subscriptions (web3.js `confirmTransaction`
 * needs one): poll `getSignatureStatuses`, as `SolanaChain` does. Blockhashes stay valid for 150
 * blocks, as on mainnet; `advanceBlocks` (in process, tests only) adds empty blocks to expire them.
 * `getSignatureStatuses` always searches the kept history (the last 1000 transactions), with or
 * without `searchTransactionHistory`.
 *
 * Persistence, in `<dataDir>/chains/` (persistence.ts):
 * - `SOL.litesvm`: the engine snapshot (`LiteSVM.toBytes`: accounts, sysvars, features, the
 *   engine's own transaction history), restored when the litesvm version is unchanged;
 * - `SOL.json`: the sandbox's state (mint authority, slot, recent blockhashes, the last 1000
 *   transactions for getTransaction/getSignatureStatuses) and a portable copy of every account the
 *   sandbox has seen (static and looked-up keys of processed transactions, faucet targets, the mint),
 *   used when the snapshot is missing or from another litesvm version.
 * Not preserved: transactions older than the last 1000 (their status and getTransaction answer
 * become null); after a portable-copy restore, also the engine's transaction history and any
 * account never named in a transaction the sandbox processed.
 *
 * Durability: every state change (a landed transaction, a faucet credit) is written and fsynced
 * before the RPC answers or the faucet returns, so whatever was acknowledged survives `kill -9`.
 * `SOL.json` is the commit point: it carries the digest of the snapshot written just before it, and
 * a snapshot that does not match (a crash between the two writes) is ignored for the portable copy.
 *
 * The parts: transport.ts (JSON-RPC over HTTP), methods.ts (the method table), params.ts (their
 * parameters), wire.ts (transactions as sent), fees.ts, errors.ts (the engine's errors as a validator
 * words them), spl.ts (token accounts and mints), encoding.ts (answer shapes), state.ts (the chain)
 * and persistence.ts (the chain on disk).
 */
export interface SolanaSandbox {
  readonly rpcUrl: string;
  readonly chain: { family: 'sol'; rpc_url: string; native: 'SOL'; tokens: { USDC: { mint: string; decimals: number } } };
  /** Credits `address` with `amount` base units: lamports for SOL, 6-decimal units of USDC (into its associated token account). */
  faucet(address: string, token: 'SOL' | 'USDC', amount: bigint): Promise<void>;
  /**
   * Sandbox only (tests): moves the slot and block height on by `count` empty blocks, so a
   * blockhash expires without 150 transactions (a validator's chain moves on by itself).
   */
  advanceBlocks(count: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startSolanaSandbox(options: { dataDir: string; host?: string }): Promise<SolanaSandbox> {
  const host = options.host ?? '127.0.0.1';
  const chain = SandboxChain.open(join(options.dataDir, 'chains'));
  const methods = rpcMethods(chain);
  // Idle keep-alive sockets stay open 65 s, as hosted RPC endpoints keep them (Node's default is 5 s):
  // a client reusing a socket the server closed at that moment gets "fetch failed" (seen once in
  // the unit tests, a getBalance after 5 s of in-process faucet calls on a loaded machine).
  const server = createServer((req, res) => serveHttp(req, res, methods));
  server.keepAliveTimeout = 65_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    chain.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const rpcUrl = `http://${urlHost}:${port}`;
  let stopping: Promise<void> | undefined;
  return {
    rpcUrl,
    chain: { family: 'sol', rpc_url: rpcUrl, native: 'SOL', tokens: { USDC: { mint: USDC_MINT, decimals: USDC_DECIMALS } } },
    faucet: async (address, token, amount) => chain.faucet(address, token, amount),
    advanceBlocks: async (count) => chain.advanceBlocks(count),
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => chain.close())),
  };
}
