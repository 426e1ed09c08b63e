import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createPublicClient, http, type PublicClient } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainHeads } from '../../infra/local/chain-heads.ts';
import { freePort } from '../support/free-port.ts';

/**
 * ChainHeads (infra/local/chain-heads.ts) against one real anvil: polled reads are shared within
 * maxAgeMs; a subscribed chain answers from its newHeads pushes without a request, sees every
 * block mined after the subscription, and falls back to reads where there is no WebSocket.
 */
const ANVIL = join(resolve(import.meta.dirname, '../..'), 'node_modules/.bin/anvil');
let anvil: ChildProcess;
let rpcUrl: string;
let client: PublicClient;

beforeAll(async () => {
  const port = await freePort();
  anvil = spawn(ANVIL, ['--port', String(port), '--silent'], { stdio: 'ignore' });
  rpcUrl = `http://127.0.0.1:${port}`;
  client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) });
  for (const deadline = Date.now() + 20_000; ; ) {
    try {
      await client.getChainId();
      break;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((wake) => setTimeout(wake, 50));
    }
  }
}, 30_000);

afterAll(() => {
  anvil?.kill();
});

/** `client`, counting its eth_blockNumber reads. */
function counting() {
  const counter = {
    reads: 0,
    getBlockNumber: (args?: { cacheTime?: number }) => {
      counter.reads += 1;
      return client.getBlockNumber(args);
    },
  };
  return counter;
}

const mine = () => client.request({ method: 'evm_mine' as never, params: [] as never });

async function eventually(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await check()); ) {
    if (Date.now() > deadline) throw new Error('not within the time');
    await new Promise((wake) => setTimeout(wake, 10));
  }
}

describe('ChainHeads', () => {
  it('polling: one read per maxAgeMs, whoever asks', async () => {
    const heads = new ChainHeads(60_000);
    const reader = counting();
    const [first, second] = await Promise.all([heads.head(rpcUrl, reader), heads.head(rpcUrl, reader)]);
    expect(first).toBe(second);
    expect(reader.reads).toBe(1);
    const fresh = new ChainHeads(0);
    await fresh.head(rpcUrl, reader);
    await fresh.head(rpcUrl, reader);
    expect(reader.reads).toBe(3);
  });

  it('subscribed: answers without a request, and every block mined after it is seen', async () => {
    const heads = new ChainHeads(0, { subscribe: true });
    const reader = counting();
    try {
      const before = await client.getBlockNumber({ cacheTime: 0 });
      expect(await heads.head(rpcUrl, reader)).toBe(before); // read while the subscription starts
      expect(await heads.subscribed(rpcUrl)).toBe(true);
      const readsOnceLive = reader.reads; // the first head() and the seed
      for (let block = 1n; block <= 3n; block += 1n) {
        await mine();
        await eventually(async () => (await heads.head(rpcUrl, reader)) === before + block);
      }
      expect(await heads.head(rpcUrl, reader)).toBe(before + 3n);
      expect(reader.reads).toBe(readsOnceLive);
    } finally {
      await heads.close();
    }
    // Closed: reads again, and starts no new subscription.
    const reader2 = counting();
    await heads.head(rpcUrl, reader2);
    expect(reader2.reads).toBe(1);
    expect(await heads.subscribed(rpcUrl)).toBe(false);
  });

  it('no WebSocket endpoint: the chain is polled', async () => {
    const closedPort = await freePort();
    const elsewhere = `http://127.0.0.1:${closedPort}`;
    const heads = new ChainHeads(0, { subscribe: true });
    const reader = counting(); // reads the real anvil: only the subscription's URL has nothing behind it
    try {
      await heads.head(elsewhere, reader);
      expect(await heads.subscribed(elsewhere)).toBe(false);
      await heads.head(elsewhere, reader);
      await heads.head(elsewhere, reader);
      expect(reader.reads).toBe(3);
    } finally {
      await heads.close();
    }
  });
});
