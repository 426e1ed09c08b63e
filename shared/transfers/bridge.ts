import type { BridgeChain, BridgeEndpoint } from './bridge-routes.ts';

/**
 * The account service's port to a bridge, and its HTTP adapter for the sandbox bridge
 * (infra/local/bridge/, API in docs/bridge.md). Amounts are base units (bigint inside, decimal
 * strings on the wire). Statuses follow LI.FI (research C.2): NOT_FOUND, PENDING, DONE, FAILED,
 * with a substatus.
 *
 * Flow: `quote` → send every `deposit` call from `sender` on the source chain (EVM: a plain
 * transaction; SOL: an SPL transfer of `amount` to `to` carrying `memo`, e.g. with
 * SolanaChain.transferMessage(sender, to, 'USDC', amount, memo)) → `status({chain, tx})` until DONE
 * or FAILED. The bridge credits a deposit only from what the chain shows; `status` of a
 * transaction it has not read yet makes it read the chain (NOT_FOUND while not there).
 */
export interface BridgeQuoteRequest {
  readonly route: { readonly from: BridgeEndpoint; readonly to: BridgeEndpoint };
  readonly amount: bigint;
  /** Who sends the deposit (a refund goes back here, on the source chain). */
  readonly sender: string;
  /** Who receives the fill on the destination chain. */
  readonly recipient: string;
}

export type BridgeDepositCall =
  | {
      readonly kind: 'evm_transaction';
      readonly chain: Exclude<BridgeChain, 'SOL'>;
      readonly to: `0x${string}`;
      readonly data: `0x${string}`;
      readonly value: bigint;
    }
  | {
      readonly kind: 'spl_transfer';
      readonly chain: 'SOL';
      readonly token: 'USDC';
      readonly mint: string;
      readonly to: string;
      readonly amount: bigint;
      readonly memo: string;
    };

export interface BridgeQuote {
  readonly quote_id: string;
  readonly route_id: string;
  readonly amount: bigint;
  readonly fee: bigint;
  /** amount − fee: what the fill pays, to the base unit. */
  readonly to_amount: bigint;
  readonly min: bigint;
  readonly max: bigint;
  /** ISO time; a deposit landing later is refunded, not filled. */
  readonly expires_at: string;
  readonly estimated_fill_ms: number;
  readonly deposit: readonly BridgeDepositCall[];
}

export type BridgeStatusCode = 'NOT_FOUND' | 'PENDING' | 'DONE' | 'FAILED';
export type BridgeSubstatus =
  | 'WAIT_DESTINATION_TRANSACTION'
  | 'REFUND_IN_PROGRESS'
  | 'COMPLETED'
  | 'REFUNDED'
  | 'EXPIRED'
  | 'NOT_PROCESSABLE_REFUND_NEEDED'
  | 'UNKNOWN_ERROR';

export interface BridgeLeg {
  readonly chain: BridgeChain;
  readonly tx_hash: string;
  readonly amount: bigint;
}

export interface BridgeStatus {
  readonly status: BridgeStatusCode;
  readonly substatus?: BridgeSubstatus;
  readonly message?: string;
  readonly quote_id?: string;
  readonly sending?: BridgeLeg;
  /** The fill on the destination chain, once sent. */
  readonly receiving?: BridgeLeg;
  /** The refund on the source chain, once sent. */
  readonly refund?: BridgeLeg;
}

export interface BridgeReference {
  readonly chain: BridgeChain;
  /** The deposit's transaction hash (EVM) or signature (SOL). */
  readonly tx: string;
}

export interface BridgeClient {
  quote(request: BridgeQuoteRequest): Promise<BridgeQuote>;
  status(reference: BridgeReference): Promise<BridgeStatus>;
}

/** A 4xx from the bridge: the request is wrong or out of the route's limits (`code` says which). */
export class BridgeRefusedError extends Error {
  readonly code: string;
  readonly httpStatus: number;
  constructor(code: string, message: string, httpStatus: number) {
    super(message);
    this.code = code;
    this.httpStatus = httpStatus;
  }
}

/** The bridge did not answer, or answered 5xx / something unreadable: try again later. */
export class BridgeUnavailableError extends Error {
  readonly code = 'BRIDGE_UNAVAILABLE';
}

interface WireLeg {
  chain: BridgeChain;
  tx_hash: string;
  amount: string;
}

export class HttpBridgeClient implements BridgeClient {
  readonly #baseUrl: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(options: { baseUrl: string; fetch?: typeof fetch; timeoutMs?: number }) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#fetch = options.fetch ?? fetch;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  async quote(request: BridgeQuoteRequest): Promise<BridgeQuote> {
    const query = new URLSearchParams({
      fromChain: request.route.from.chain,
      fromToken: request.route.from.token,
      toChain: request.route.to.chain,
      toToken: request.route.to.token,
      fromAmount: request.amount.toString(),
      fromAddress: request.sender,
      toAddress: request.recipient,
    });
    const body = (await this.#get(`/v1/quote?${query}`)) as Record<string, unknown> & { deposit: Record<string, unknown>[] };
    return {
      quote_id: String(body.quote_id),
      route_id: String(body.route_id),
      amount: BigInt(body.amount as string),
      fee: BigInt(body.fee as string),
      to_amount: BigInt(body.to_amount as string),
      min: BigInt(body.min as string),
      max: BigInt(body.max as string),
      expires_at: String(body.expires_at),
      estimated_fill_ms: Number(body.estimated_fill_ms),
      deposit: body.deposit.map((call) =>
        call.kind === 'spl_transfer'
          ? ({ ...call, amount: BigInt(call.amount as string) } as BridgeDepositCall)
          : ({ ...call, value: BigInt(call.value as string) } as BridgeDepositCall),
      ),
    };
  }

  async status(reference: BridgeReference): Promise<BridgeStatus> {
    const body = (await this.#get(`/v1/status?${new URLSearchParams({ fromChain: reference.chain, txHash: reference.tx })}`)) as Record<string, unknown>;
    const leg = (value: unknown) => {
      if (!value) return undefined;
      const wire = value as WireLeg;
      return { chain: wire.chain, tx_hash: wire.tx_hash, amount: BigInt(wire.amount) };
    };
    return {
      status: body.status as BridgeStatusCode,
      ...(body.substatus ? { substatus: body.substatus as BridgeSubstatus } : {}),
      ...(body.message ? { message: String(body.message) } : {}),
      ...(body.quote_id ? { quote_id: String(body.quote_id) } : {}),
      ...(body.sending ? { sending: leg(body.sending) } : {}),
      ...(body.receiving ? { receiving: leg(body.receiving) } : {}),
      ...(body.refund ? { refund: leg(body.refund) } : {}),
    };
  }

  async #get(path: string): Promise<unknown> {
    let response: Response;
    try {
      response = await this.#fetch(`${this.#baseUrl}${path}`, { signal: AbortSignal.timeout(this.#timeoutMs) });
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
    if (response.status >= 500) throw new BridgeUnavailableError(`bridge answered ${response.status}`);
    if (response.status >= 400) {
      const error = (json as { error?: { code?: string; message?: string } }).error;
      throw new BridgeRefusedError(error?.code ?? 'BRIDGE_REFUSED', error?.message ?? `bridge answered ${response.status}`, response.status);
    }
    return json;
  }
}
