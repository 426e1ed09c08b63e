import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EvmSandbox, startEvmSandbox } from '../../infra/local/evm-sandbox.ts';
import { SANDBOX_INITIAL_PRICES } from '../../infra/local/price-feeds.ts';
import { createEvmClient, type EvmClient } from '../../shared/chains/evm/evm-client.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { CHAINLINK_FEEDS } from '../../shared/prices/chainlink-feeds.ts';
import { answerToMicroUsd, ChainlinkPrices, stalenessBoundSeconds } from '../../shared/prices/chainlink-prices.ts';
import { loadPriceCacheSeconds } from '../../shared/prices/config.ts';
import type { NativeCoin } from '../../shared/prices/price-source.ts';
import { PriceUnavailableError } from '../../shared/prices/price-unavailable.ts';
import { estimateTransferCost } from '../../shared/transfers/estimate.ts';
import { planTransfer } from '../../shared/transfers/planner.ts';
import { TransferRequest } from '../../shared/transfers/schemas.ts';

/**
 * ChainlinkPrices (shared/prices/) against the sandbox ETH chain's feeds (SandboxPriceFeed at the
 * real mainnet proxies, infra/local/price-feeds.ts), through the same viem client deployments
 * use; and against a counting fake client for the cache and the answers a contract cannot give.
 */
let dataDir: string;
let evm: EvmSandbox;
let client: EvmClient;
/** Seconds the feeds' clock runs ahead of the wall clock. */
let ahead = 0;
const priceClock = () => nowSeconds() + ahead;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'chainlink-prices-'));
  evm = await startEvmSandbox({ dataDir, priceClock });
  client = createEvmClient(evm.chains.ETH.rpc_url);
}, 120_000);

afterAll(async () => {
  await evm?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

const onChain = (options: { now?: () => number } = {}) => new ChainlinkPrices({ client: () => Promise.resolve(client), cacheSeconds: 0, ...options });
const nowSeconds = () => Math.floor(Date.now() / 1000);

async function refusal(promise: Promise<unknown>): Promise<PriceUnavailableError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PriceUnavailableError);
  return error as PriceUnavailableError;
}

describe('ChainlinkPrices on the sandbox feeds', () => {
  it('reads the initial answers at the mainnet proxies: ETH 3000, POL 0.25, SOL 150 USD, 8 decimals', async () => {
    const prices = onChain();
    expect(await prices.usdPrice('ETH')).toBe(3_000_000_000n);
    expect(await prices.usdPrice('POL')).toBe(250_000n);
    expect(await prices.usdPrice('SOL')).toBe(150_000_000n);
    const feeds = await evm.priceFeeds.read();
    expect(feeds.ETH).toMatchObject({ address: CHAINLINK_FEEDS.ETH.proxy, decimals: 8, price: '3000', frozen: false });
  });

  it('a new round is read at once without a cache; 8 decimals become micro-USD exactly, rounded up', async () => {
    const prices = onChain();
    try {
      await evm.priceFeeds.set({ ETH: 6_000n * 10n ** 8n, POL: 12_345_678n });
      expect(await prices.usdPrice('ETH')).toBe(6_000_000_000n);
      expect(await prices.usdPrice('POL')).toBe(123_457n); // 0.12345678 USD = 123,456.78 micro-USD, up
    } finally {
      await evm.priceFeeds.set({ ETH: SANDBOX_INITIAL_PRICES.ETH, POL: SANDBOX_INITIAL_PRICES.POL });
    }
    expect(await prices.usdPrice('ETH')).toBe(3_000_000_000n);
  });

  it('stale past heartbeat + 10 %: 503 PRICE_UNAVAILABLE naming the coin; within the grace still good', async () => {
    const prices = onChain();
    const bound = Number(stalenessBoundSeconds(CHAINLINK_FEEDS.SOL));
    expect(bound).toBe(95_040); // 86,400 s + 8,640 s
    try {
      await evm.priceFeeds.set({ SOL: SANDBOX_INITIAL_PRICES.SOL }, nowSeconds() - 86_400 - 600);
      expect(await prices.usdPrice('SOL')).toBe(150_000_000n);
      await evm.priceFeeds.set({ SOL: SANDBOX_INITIAL_PRICES.SOL }, nowSeconds() - bound - 5);
      const error = await refusal(prices.usdPrice('SOL'));
      expect(error).toMatchObject({ status: 503, code: 'PRICE_UNAVAILABLE', coin: 'SOL' });
      expect(error.message).toMatch(/^No current SOL\/USD price: the SOL\/USD feed was last updated \d+ s ago, past its heartbeat of 86400 s/);
      // The heartbeat leaves a feed set with a past time alone.
      await evm.priceFeeds.heartbeat();
      expect((await evm.priceFeeds.read()).SOL.frozen).toBe(true);
      await refusal(prices.usdPrice('SOL'));
    } finally {
      await evm.priceFeeds.set({ SOL: SANDBOX_INITIAL_PRICES.SOL });
    }
    expect(await prices.usdPrice('SOL')).toBe(150_000_000n);
  });

  it('a non-positive answer is refused, never used', async () => {
    const prices = onChain();
    try {
      await evm.priceFeeds.set({ POL: -1n });
      expect((await refusal(prices.usdPrice('POL'))).message).toBe(
        'No current POL/USD price: the MATIC/USD feed answered a price that is not positive. Try again later.',
      );
      await evm.priceFeeds.set({ POL: 0n });
      await refusal(prices.usdPrice('POL'));
    } finally {
      await evm.priceFeeds.set({ POL: SANDBOX_INITIAL_PRICES.POL });
    }
  });

  it('no contract at the address, a revert, an RPC that does not answer: 503, and the message names nothing internal', async () => {
    const empty = { ...CHAINLINK_FEEDS, ETH: { ...CHAINLINK_FEEDS.ETH, proxy: '0x00000000000000000000000000000000000000e7' as const } };
    const noCode = await refusal(new ChainlinkPrices({ client: () => Promise.resolve(client), feeds: empty }).usdPrice('ETH'));
    expect(noCode.message).toBe('No current ETH/USD price: the ETH/USD feed could not be read. Try again later.');
    // The token at USDC's address has no such functions: a revert.
    const usdc = { ...CHAINLINK_FEEDS, ETH: { ...CHAINLINK_FEEDS.ETH, proxy: evm.chains.ETH.tokens.USDC!.address as `0x${string}` } };
    await refusal(new ChainlinkPrices({ client: () => Promise.resolve(client), feeds: usdc }).usdPrice('ETH'));
    const down = createEvmClient('http://127.0.0.1:9/rpc-key-in-the-path');
    const unreachable = await refusal(new ChainlinkPrices({ client: () => Promise.resolve(down) }).usdPrice('ETH'));
    expect(unreachable.message).not.toMatch(/127\.0\.0\.1|rpc-key|http/);
    // The chain's client itself unavailable (its RPC URL secret unreadable).
    await refusal(new ChainlinkPrices({ client: () => Promise.reject(new Error('secret unreadable')) }).usdPrice('ETH'));
  });

  it('a stale ETH price fails the estimate with 503 PRICE_UNAVAILABLE, never a default', async () => {
    const gas = { estimateGas: () => Promise.resolve(60_000n), gasPrice: () => Promise.resolve(100_000_000n) };
    const bridge = { provider: 'none', quote: () => Promise.reject(new Error('no bridge')) };
    const deps = { gas, bridge, platformFee: { fixed: 0n, bps: 10n }, prices: onChain() };
    const plan = planTransfer(parseInput(TransferRequest, { source: 'self', destination: 'venue_b', amount: '25' }, 'body'));
    try {
      await evm.priceFeeds.set({ ETH: SANDBOX_INITIAL_PRICES.ETH }, nowSeconds() - 4_000);
      const error = await estimateTransferCost(deps, plan).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toMatchObject({ status: 503, code: 'PRICE_UNAVAILABLE' });
    } finally {
      await evm.priceFeeds.set({ ETH: SANDBOX_INITIAL_PRICES.ETH });
    }
    expect((await estimateTransferCost(deps, plan)).steps[0]?.gas_breakdown?.gas_cost_usdc).toBe('0.018');
  });
});

describe('the sandbox feeds: heartbeat and restarts', () => {
  it('the heartbeat renews a round once it is older than half its heartbeat, same answer; not before', async () => {
    const updated = async () => Object.fromEntries(Object.entries(await evm.priceFeeds.read()).map(([coin, feed]) => [coin, feed.updated_at]));
    const start = await updated();
    try {
      ahead = 1_700; // under half of ETH's and POL's 3,600 s
      await evm.priceFeeds.heartbeat();
      expect(await updated()).toEqual(start);
      ahead = 1_900; // over half of 3,600 s, under half of SOL's 86,400 s
      await evm.priceFeeds.heartbeat();
      const after = await evm.priceFeeds.read();
      // Dated by the feeds' clock, 1,900 s ahead (a second's tick either way).
      for (const coin of ['ETH', 'POL'] as const) expect(Date.parse(after[coin].updated_at) / 1000 - nowSeconds()).toBeGreaterThanOrEqual(1_898);
      expect(after.SOL.updated_at).toBe(start.SOL);
      expect([after.ETH.price, after.POL.price, after.SOL.price]).toEqual(['3000', '0.25', '150']);
    } finally {
      ahead = 0;
    }
  });

  it('a restart on the same DATA_DIR keeps the answers set', async () => {
    await evm.priceFeeds.set({ SOL: 14_050_000_000n });
    await evm.stop();
    evm = await startEvmSandbox({ dataDir, priceClock });
    client = createEvmClient(evm.chains.ETH.rpc_url);
    try {
      expect((await evm.priceFeeds.read()).SOL).toMatchObject({ price: '140.5', round_id: expect.any(String) });
      expect(await onChain().usdPrice('SOL')).toBe(140_500_000n);
    } finally {
      await evm.priceFeeds.set({ SOL: SANDBOX_INITIAL_PRICES.SOL });
    }
  }, 60_000);
});

describe('ChainlinkPrices: cache and answers only a fake feed gives', () => {
  /** A feed client that counts its reads and answers what the test says. */
  function fakeClient(round: () => readonly [bigint, bigint, bigint, bigint, bigint], decimals = 8) {
    const reads = { decimals: 0, latestRoundData: 0 };
    const fake = {
      readContract: (args: { functionName: 'decimals' | 'latestRoundData' }) => {
        reads[args.functionName] += 1;
        return args.functionName === 'decimals' ? Promise.resolve(decimals) : Promise.resolve(round());
      },
    };
    return { reads, client: () => Promise.resolve(fake as unknown as EvmClient) };
  }

  it('keeps a good answer cacheSeconds, reads decimals once, and never keeps a failure', async () => {
    let clock = 1_800_000_000_000;
    let answer = 300_000_000_000n;
    const { reads, client: fake } = fakeClient(() => [1n, answer, 0n, BigInt(Math.floor(clock / 1000)), 1n]);
    const prices = new ChainlinkPrices({ client: fake, cacheSeconds: 30, now: () => clock });
    expect(await prices.usdPrice('ETH')).toBe(3_000_000_000n);
    answer = 600_000_000_000n;
    clock += 29_999;
    expect(await prices.usdPrice('ETH')).toBe(3_000_000_000n);
    expect(reads).toEqual({ decimals: 1, latestRoundData: 1 });
    clock += 1;
    expect(await prices.usdPrice('ETH')).toBe(6_000_000_000n);
    expect(reads).toEqual({ decimals: 1, latestRoundData: 2 });
    // A failure is not kept: the next call reads again and succeeds.
    answer = -5n;
    clock += 30_000;
    await refusal(prices.usdPrice('ETH'));
    answer = 600_000_000_000n;
    expect(await prices.usdPrice('ETH')).toBe(6_000_000_000n);
    expect(reads.latestRoundData).toBe(4);
  });

  it('updatedAt 0 is no round; other decimals convert exactly', async () => {
    const noRound = fakeClient(() => [0n, 1n, 0n, 0n, 0n]);
    expect((await refusal(new ChainlinkPrices({ client: noRound.client }).usdPrice('SOL'))).message).toMatch(/the SOL\/USD feed has no round/);
    const now = Math.floor(Date.now() / 1000);
    const cases: [number, bigint, bigint][] = [
      [18, 2_500n * 10n ** 18n + 1n, 2_500_000_001n],
      [6, 123_456n, 123_456n],
      [0, 7n, 7_000_000n],
    ];
    for (const [decimals, answer, micro] of cases) {
      const fake = fakeClient(() => [1n, answer, 0n, BigInt(now), 1n], decimals);
      expect(await new ChainlinkPrices({ client: fake.client }).usdPrice('ETH' as NativeCoin)).toBe(micro);
      expect(answerToMicroUsd(answer, decimals)).toBe(micro);
    }
  });

  it('PRICE_CACHE_SECONDS: 30 by default, 0 to 300, anything else refused at cold start', () => {
    expect(loadPriceCacheSeconds({})).toBe(30);
    expect(loadPriceCacheSeconds({ PRICE_CACHE_SECONDS: '0' })).toBe(0);
    expect(loadPriceCacheSeconds({ PRICE_CACHE_SECONDS: '300' })).toBe(300);
    for (const bad of ['301', '-1', '1.5', 'x']) expect(() => loadPriceCacheSeconds({ PRICE_CACHE_SECONDS: bad })).toThrow(/PRICE_CACHE_SECONDS/);
  });
});
