import {
  type BridgeClient,
  type BridgeLeg,
  type BridgeQuote,
  type BridgeQuoteRequest,
  type BridgeReference,
  BridgeRefusedError,
  type BridgeStatus,
  type BridgeSubstatus,
  BridgeUnavailableError,
} from './bridge.ts';
import { checkBridgeQuote } from './bridge-quote-checks.ts';
import type { BridgeChain } from './bridge-routes.ts';
import { bridgeChainOfLifi, LIFI_CHAIN_IDS, LIFI_CONTRACTS, LIFI_TOKEN_SYMBOLS } from './lifi.ts';
import { type LifiStatusLeg, parseLifiStatus, parseLifiStep } from './lifi-wire.ts';

export interface HttpBridgeClientOptions {
  /** LI.FI's API base, e.g. `https://li.quest` (paths `/v1/quote`, `/v1/status`). */
  readonly baseUrl: string;
  /** Sent as `x-lifi-api-key` when given (only raises rate limits); a function is asked per request (a secret's cached read). */
  readonly apiKey?: string | (() => Promise<string | undefined>);
  /** Who a quote may send to or ask an allowance for per EVM source chain, and on SOL the programs its transaction may invoke; LI.FI's (LIFI_CONTRACTS) by default. */
  readonly contracts?: Readonly<Partial<Record<BridgeChain, readonly string[]>>>;
  /** LI.FI quotes are good for about 60 s (research B). */
  readonly quoteTtlMs?: number;
  readonly slippage?: number;
  readonly integrator?: string;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
  readonly now?: () => number;
}

/** The BridgeClient over LI.FI's public API (`GET /v1/quote`, `GET /v1/status`; research B, docs/bridge.md). */
export class HttpBridgeClient implements BridgeClient {
  readonly #baseUrl: string;
  readonly #options: HttpBridgeClientOptions;
  readonly #fetch: typeof fetch;

  constructor(options: HttpBridgeClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  async quote(request: BridgeQuoteRequest): Promise<BridgeQuote> {
    const slippage = this.#options.slippage ?? 0.005;
    const query = new URLSearchParams({
      fromChain: String(LIFI_CHAIN_IDS[request.route.from.chain]),
      toChain: String(LIFI_CHAIN_IDS[request.route.to.chain]),
      fromToken: LIFI_TOKEN_SYMBOLS[request.route.from.token],
      toToken: LIFI_TOKEN_SYMBOLS[request.route.to.token],
      fromAmount: request.amount.toString(),
      fromAddress: request.sender,
      toAddress: request.recipient,
      slippage: String(slippage),
      integrator: this.#options.integrator ?? 'account-service',
    });
    const receivedAt = (this.#options.now ?? Date.now)();
    const step = parseLifiStep(await this.#get(`/v1/quote?${query}`));
    const deposit = await checkBridgeQuote(step, request, { slippage, contracts: this.#options.contracts ?? LIFI_CONTRACTS });
    const toAmount = BigInt(step.estimate.toAmount);
    return {
      quote_id: step.id,
      route_id: step.tool,
      amount: BigInt(step.estimate.fromAmount),
      fee: BigInt(step.estimate.fromAmount) - toAmount,
      to_amount: toAmount,
      to_amount_min: BigInt(step.estimate.toAmountMin),
      expires_at: new Date(receivedAt + (this.#options.quoteTtlMs ?? 60_000)).toISOString(),
      estimated_fill_ms: step.estimate.executionDuration * 1000,
      deposit: [deposit],
    };
  }

  async status(reference: BridgeReference): Promise<BridgeStatus> {
    const fromChain = LIFI_CHAIN_IDS[reference.chain];
    const body = parseLifiStatus(await this.#get(`/v1/status?${new URLSearchParams({ txHash: reference.tx, fromChain: String(fromChain) })}`));
    const leg = (wire: LifiStatusLeg | undefined): BridgeLeg | undefined => {
      const chain = wire ? bridgeChainOfLifi(wire.chainId) : undefined;
      return wire?.txHash && wire.amount !== undefined && chain ? { chain, tx_hash: wire.txHash, amount: BigInt(wire.amount) } : undefined;
    };
    const sending = leg(body.sending);
    const received = leg(body.receiving);
    // LI.FI reports a refund as the `receiving` leg, back on the source chain.
    const refunded = body.substatus === 'REFUNDED' || body.status === 'FAILED';
    const receiving = received && !(refunded && received.chain === reference.chain) ? received : undefined;
    const refund = received && refunded && received.chain === reference.chain ? received : undefined;
    return {
      status: body.status === 'INVALID' ? 'FAILED' : body.status,
      ...(body.substatus ? { substatus: body.substatus as BridgeSubstatus } : {}),
      ...(body.substatusMessage ? { message: body.substatusMessage } : {}),
      ...(body.transactionId ? { quote_id: body.transactionId } : {}),
      ...(sending ? { sending } : {}),
      ...(receiving ? { receiving } : {}),
      ...(refund ? { refund } : {}),
    };
  }

  async #get(path: string): Promise<unknown> {
    let response: Response;
    const key = typeof this.#options.apiKey === 'function' ? await this.#options.apiKey() : this.#options.apiKey;
    const headers: Record<string, string> = key ? { 'x-lifi-api-key': key } : {};
    try {
      response = await this.#fetch(`${this.#baseUrl}${path}`, { headers, signal: AbortSignal.timeout(this.#options.timeoutMs ?? 10_000) });
    } catch (error) {
      throw new BridgeUnavailableError(`bridge unreachable: ${(error as Error).message}`);
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new BridgeUnavailableError(`bridge answered ${response.status} with a body that is not JSON`);
    }
    if (response.status >= 500 || response.status === 429) throw new BridgeUnavailableError(`bridge answered ${response.status}`);
    if (response.status >= 400) {
      // LI.FI: { message, code: 1002 NoQuote | 1011 Validation | …, errors?: [{ code: 'AMOUNT_TOO_LOW' | … }] }
      const error = json as { message?: string; code?: number; errors?: { code?: string }[] };
      const toolCode = error.errors?.find((e) => typeof e.code === 'string')?.code;
      throw new BridgeRefusedError(
        toolCode ?? LIFI_ERROR_CODES[error.code ?? 0] ?? 'BRIDGE_REFUSED',
        error.message ?? `bridge answered ${response.status}`,
        response.status,
      );
    }
    return json;
  }
}

/** LI.FI's numeric error codes (@lifi/types src/errors.ts) as ours. */
const LIFI_ERROR_CODES: Readonly<Record<number, string>> = {
  1002: 'NO_QUOTE',
  1003: 'NOT_FOUND',
  1004: 'NOT_PROCESSABLE',
  1007: 'SLIPPAGE_ERROR',
  1010: 'UNAUTHORIZED',
  1011: 'INVALID_REQUEST',
};
