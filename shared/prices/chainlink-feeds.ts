import type { Address } from 'viem';
import type { NativeCoin } from './price-source.ts';

/**
 * The Chainlink Data Feeds the prices come from: the Ethereum-mainnet proxies (read through the
 * proxy, never the aggregator; research/rails-and-events.md §A), each with its heartbeat, the
 * longest a healthy feed goes without a new round. All three answer with 8 decimals, but
 * `decimals()` is read from the chain, never assumed.
 *
 * Sources:
 * - ETH/USD: [1P] smartcontractkit/documentation src/content/data-feeds/feed-address-api.mdx
 *   (proxy, heartbeat 1 h, deviation 0.5 %). Confirmed.
 * - SOL/USD: proxy from [3P] jeonghoyeo7/Web3Library_for_GoogleSheet src/Chainlink/ChainlinkAddress.js,
 *   heartbeat from [3P] LZeroAnalytics/chainlink-package src/package_io/constants_backup.star.
 *   UNCONFIRMED: check against Chainlink's Feed Address API before relying on it.
 * - MATIC/USD (POL): proxy and heartbeat from [3P] the same constants_backup.star ("matic-usd").
 *   UNCONFIRMED, as is whether its `description()` now says MATIC or POL.
 * The Feed Address API (`GET https://docs.chain.link/api/feeds/addresses?network=…`) lists the
 * live values.
 */
export interface ChainlinkFeed {
  readonly pair: string;
  /** The feed's proxy on Ethereum mainnet (AggregatorV3Interface). */
  readonly proxy: Address;
  /** Seconds between heartbeat rounds. */
  readonly heartbeatSeconds: number;
}

export const CHAINLINK_FEEDS: Readonly<Record<NativeCoin, ChainlinkFeed>> = {
  ETH: { pair: 'ETH/USD', proxy: '0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419', heartbeatSeconds: 3_600 },
  POL: { pair: 'MATIC/USD', proxy: '0x7bAC85A8a13A4BcD8abb3eB7d6b4d632c5a57676', heartbeatSeconds: 3_600 },
  SOL: { pair: 'SOL/USD', proxy: '0x4ffC43a60e009B551865A93d232E33Fce9f01507', heartbeatSeconds: 86_400 },
};

/** The part of AggregatorV3Interface the prices read (@chainlink/contracts AggregatorV3Interface.sol). */
export const AGGREGATOR_V3_ABI = [
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'uint8' }] },
  {
    type: 'function',
    name: 'latestRoundData',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'roundId', type: 'uint80' },
      { name: 'answer', type: 'int256' },
      { name: 'startedAt', type: 'uint256' },
      { name: 'updatedAt', type: 'uint256' },
      { name: 'answeredInRound', type: 'uint80' },
    ],
  },
] as const;
