import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { ChainsConfig } from '../../shared/chains/chain-config.ts';
import { ValidationError } from '../../shared/errors.ts';
import { toErrorResponse } from '../../shared/http/error-handler.ts';
import { type HttpResult, jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { formatAmount, parseAmount } from '../../shared/money.ts';
import { FaucetRequest } from '../../shared/sandbox/faucet-request.ts';
import { FaultRequest } from '../../shared/sandbox/fault-request.ts';
import { PricesRequest, SANDBOX_PRICE_DECIMALS } from '../../shared/sandbox/prices-request.ts';
import type { SandboxInfo } from '../../shared/sandbox/sandbox-info.ts';
import { CHAIN_CODES } from '../../shared/wallets/networks.ts';
import { normaliseRecipient } from '../../shared/withdrawals/withdraw-rules.ts';
import type { SandboxBridge } from './bridge/server.ts';
import type { EvmSandbox } from './evm-sandbox.ts';
import { FaucetRefusedError, MAX_UNITS } from './faucet-refused.ts';
import type { SolanaSandbox } from './solana-sandbox/index.ts';
import { type SandboxVenues, VenueNotRunningError } from './venues/framework.ts';

/**
 * Sandbox-only endpoints of the account service (never deployed to AWS; marked so in the
 * OpenAPI document): `GET /sandbox/info`, `GET /sandbox/chains`, `POST /sandbox/faucet`,
 * `GET /sandbox/venues`, `GET /sandbox/bridge`, `POST /sandbox/faults` and `GET`/`POST /sandbox/prices`. They need no credentials: the sandbox listens on 127.0.0.1 only.
 */
export interface SandboxChains {
  readonly config: ChainsConfig;
  readonly evm: EvmSandbox;
  readonly sol: SolanaSandbox;
  /** The sandbox venues (infra/local/venues/), when running. */
  readonly venues?: SandboxVenues;
  /** The sandbox bridge (infra/local/bridge/), when running. */
  readonly bridge?: SandboxBridge;
  /** `GET /sandbox/info`: DATA_DIR, URLs, which applications (no secrets); set once the services listen. */
  readonly info?: SandboxInfo;
}

const SANDBOX_ROUTES = new Set([
  'GET /sandbox/info',
  'GET /sandbox/chains',
  'POST /sandbox/faucet',
  'GET /sandbox/venues',
  'GET /sandbox/bridge',
  'POST /sandbox/faults',
  'GET /sandbox/prices',
  'POST /sandbox/prices',
]);

function parseJsonBody(event: APIGatewayProxyEvent): unknown {
  try {
    return JSON.parse(event.body ?? '');
  } catch {
    throw new ValidationError('The request body is not valid JSON', 'INVALID_JSON');
  }
}

/** `POST /sandbox/faults`: sets or clears a sandbox venue's or the sandbox bridge's fault, for one address or for anyone. */
async function setFault(venues: SandboxVenues | undefined, bridge: SandboxBridge | undefined, json: unknown) {
  const body = parseInput(FaultRequest, json, 'body');
  const answer = (fault: { mode: string; remaining: number } | null, address: string | undefined) => ({
    success: true,
    sandbox: true,
    target: body.target,
    operation: body.operation,
    ...(address === undefined ? {} : { address }),
    fault: fault ? { mode: fault.mode, remaining: fault.remaining } : null,
  });
  if (body.target === 'bridge') {
    if (body.operation !== 'bridge') throw new ValidationError('body.operation: the bridge takes "bridge"', 'INVALID_OPERATION');
    if (body.mode !== 'clear' && body.count === undefined) throw new ValidationError('body.count: is required unless mode is "clear"');
    const address = body.address === undefined ? undefined : faultAddress(body.address, ['evm', 'sol'], 'the bridge');
    if (!bridge) throw new ValidationError('body.target: the sandbox bridge is not running', 'TARGET_NOT_AVAILABLE');
    return answer(await bridge.setFault({ mode: body.mode, count: body.count ?? 0, ...(address === undefined ? {} : { address }) }), address);
  }
  if (body.operation === 'bridge')
    throw new ValidationError('body.operation: a venue takes "deposit" or "withdrawal"; "bridge" is for the bridge target', 'INVALID_OPERATION');
  if (body.mode !== 'clear' && body.count === undefined) throw new ValidationError('body.count: is required unless mode is "clear"');
  const address = body.address === undefined ? undefined : (faultAddress(body.address, ['evm'], body.target) as `0x${string}`);
  if (!venues) throw new ValidationError(`body.target: ${body.target} has no sandbox venue running`, 'VENUE_NOT_RUNNING');
  try {
    const fault = await venues.setFault({
      target: body.target,
      operation: body.operation,
      mode: body.mode,
      count: body.count ?? 0,
      ...(address === undefined ? {} : { address }),
    });
    return answer(fault, address);
  } catch (error) {
    if (error instanceof VenueNotRunningError) throw new ValidationError(`body.target: ${error.message}`, error.code);
    throw error;
  }
}

/** `GET /sandbox/prices`, and `POST` once its rounds are written: the feeds as the chain answers them. */
async function pricesListing(evm: EvmSandbox) {
  const feeds = await evm.priceFeeds.read();
  const prices = Object.fromEntries(Object.entries(feeds).map(([coin, feed]) => [coin, feed.price]));
  return { success: true, sandbox: true, prices, feeds };
}

/** `POST /sandbox/prices`: new rounds on the sandbox's Chainlink feeds (8 decimals), dated now or `updated_at`. */
async function setPrices(evm: EvmSandbox, json: unknown) {
  const body = parseInput(PricesRequest, json, 'body');
  if (body.updated_at !== undefined && body.updated_at > Math.floor(Date.now() / 1000)) {
    throw new ValidationError('body.updated_at: must not be in the future');
  }
  const answers: Partial<Record<'ETH' | 'POL' | 'SOL', bigint>> = {};
  for (const coin of ['ETH', 'POL', 'SOL'] as const) {
    const price = body[coin];
    if (price !== undefined) answers[coin] = parseAmount(price, SANDBOX_PRICE_DECIMALS, `body.${coin}`);
  }
  await evm.priceFeeds.set(answers, body.updated_at);
  return pricesListing(evm);
}

function decimalsOf(config: ChainsConfig, chain: (typeof CHAIN_CODES)[number], token: string): number {
  const entry = config[chain];
  if (token === entry.native) return entry.family === 'sol' ? 9 : 18;
  // Own properties only: "constructor" or "__proto__" must not find Object.prototype's members.
  const tokens = entry.tokens as Record<string, { decimals: number }>;
  const configured = Object.hasOwn(tokens, token) ? tokens[token] : undefined;
  if (!configured) throw new ValidationError(`body.token: ${chain} carries ${[entry.native, ...Object.keys(entry.tokens)].join(', ')}`, 'UNSUPPORTED_TOKEN');
  return configured.decimals;
}

export function chainsListing(config: ChainsConfig) {
  return {
    sandbox: true,
    chains: CHAIN_CODES.map((code) => {
      const entry = config[code];
      return {
        chain: code,
        ...(entry.family === 'evm' ? { chain_id: entry.chain_id, rpc_url: entry.rpc_url, delegate: entry.delegate ?? null } : { rpc_url: entry.rpc_url }),
        tokens: [
          { token: entry.native, native: true, decimals: entry.family === 'sol' ? 9 : 18 },
          ...Object.entries(entry.tokens).map(([token, t]) => ({
            token,
            native: false,
            decimals: t.decimals,
            ...('address' in t ? { address: t.address } : { mint: t.mint }),
          })),
        ],
      };
    }),
  };
}

export async function sandboxRoute(chains: SandboxChains, event: APIGatewayProxyEvent): Promise<HttpResult | undefined> {
  const route = `${event.httpMethod === 'HEAD' ? 'GET' : event.httpMethod} ${event.path}`; // HEAD: GET without the body (node:http drops it)
  if (!SANDBOX_ROUTES.has(route)) return undefined;
  try {
    if (route === 'GET /sandbox/info') return chains.info ? jsonResponse(200, chains.info) : undefined;
    if (route === 'GET /sandbox/chains') return jsonResponse(200, chainsListing(chains.config));
    if (route === 'GET /sandbox/venues') return jsonResponse(200, { sandbox: true, ...(chains.venues?.listing ?? { venues: [] }) });
    if (route === 'GET /sandbox/bridge') return jsonResponse(200, { sandbox: true, bridge: chains.bridge?.listing ?? null });
    if (route === 'GET /sandbox/prices') return jsonResponse(200, await pricesListing(chains.evm));
    const json = parseJsonBody(event);
    if (route === 'POST /sandbox/prices') return jsonResponse(200, await setPrices(chains.evm, json));
    if (route === 'POST /sandbox/faults') return jsonResponse(200, await setFault(chains.venues, chains.bridge, json));
    const body = parseInput(FaucetRequest, json, 'body');
    const decimals = decimalsOf(chains.config, body.chain, body.token);
    const family = body.chain === 'SOL' ? 'sol' : 'evm';
    // 2^256 base units is 78 digits: a longer string is refused before it becomes a bigint.
    if (body.amount.length > 100) throw new ValidationError('body.amount: must be at most 100 characters', 'AMOUNT_TOO_LARGE');
    const amount = parseAmount(body.amount, decimals, 'body.amount', MAX_UNITS[family]);
    const address = faucetAddress(body.chain, body.address);
    if (body.chain === 'SOL') await chains.sol.faucet(address, body.token as 'SOL' | 'USDC', amount);
    else await chains.evm.faucet(body.chain, address as `0x${string}`, body.token, amount);
    return jsonResponse(200, { success: true, sandbox: true, chain: body.chain, token: body.token, address, amount: formatAmount(amount, decimals) });
  } catch (error) {
    return toErrorResponse(error instanceof FaucetRefusedError ? new ValidationError(error.message, error.code) : error);
  }
}

/**
 * A fault's address: EIP-55 (EVM) or base58 (Solana), of the kinds the target sees; a venue sees
 * only EVM wallets, the bridge both.
 */
function faultAddress(address: string, kinds: readonly ('evm' | 'sol')[], target: string): string {
  for (const kind of kinds) {
    try {
      return normaliseRecipient(kind === 'sol' ? 'SOL' : 'ARB', address);
    } catch {
      // not this kind
    }
  }
  const expected = kinds.length === 2 ? 'a 0x-prefixed 20-byte EVM address or a base58 Solana address (32 bytes)' : 'a 0x-prefixed 20-byte EVM address';
  throw new ValidationError(
    `body.address: must be ${expected}: ${target} sees its users by ${kinds.length === 2 ? 'their EVM or Solana wallet' : 'their EVM wallet'}`,
    'INVALID_ADDRESS',
  );
}

const ZERO_KEYS = new Set(['0x0000000000000000000000000000000000000000', '11111111111111111111111111111111']);

/** The checksummed (EVM) or base58 (SOL) address to credit; the zero address is nobody's wallet. */
function faucetAddress(chain: (typeof CHAIN_CODES)[number], address: string): string {
  let normalised: string;
  try {
    normalised = normaliseRecipient(chain, address);
  } catch {
    throw new ValidationError(
      `body.address: must be ${chain === 'SOL' ? 'a base58 Solana address (32 bytes)' : 'a 0x-prefixed 20-byte EVM address'}`,
      'INVALID_ADDRESS',
    );
  }
  if (ZERO_KEYS.has(normalised)) throw new ValidationError('body.address: the zero address cannot be credited', 'INVALID_ADDRESS');
  return normalised;
}
