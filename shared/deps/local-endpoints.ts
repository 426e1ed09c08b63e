/**
 * AWS SDK clients for an `endpoint` that is served inside this very process: the local sandbox's
 * DynamoDB (behind its streams proxy) and SQS; and `localFetch`, the same for the functions' viem
 * clients and the sandbox's RPC gateway. The sandbox registers each such endpoint with the
 * function that answers its requests; a client built for that endpoint then hands its request to
 * that function instead of opening a socket to itself. What the SDK does before and
 * after the wire (serialising, retries, error parsing) is unchanged, as is what the server does
 * with the request: only the loopback HTTP hop goes (measured on the 2-core machine: a DynamoDB
 * PutItem or GetItem 1.19 → 0.80 ms of CPU; the conservation test makes about 36,000).
 *
 * Nor is such a request SigV4-signed: nothing in this process checks a signature (the sandbox's
 * dynalite, its SQS, and DynamoDB Local behind the streams proxy read only the Authorization
 * header's form and access key: infra/local/dynamodb-stream/upstream.ts). The client sends the
 * header SigV4 would, with its access key, date, region and service, and a signature of zeros
 * (UnsignedAuthorization below): about 5 % of a sandbox table call's CPU was the HMACs and
 * hashes of a signature no one verified (the conservation run: 85.4 / 84.4 → 81.2 / 80.1 CPU-s,
 * concurrent pairs).
 *
 * In AWS nothing is registered and no endpoint is configured: `clientEndpoint()` returns `{}` and
 * the SDK's default HTTP handler is used. An endpoint in another process (LocalStack, DynamoDB
 * Local, a runtime started by a test) is not registered either, and is spoken to over HTTP.
 */

/** A request as the SDK's HTTP handler receives it, and the answer it expects (@smithy/protocol-http's shapes). */
export interface LocalRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** The client gave up (the SDK's abortSignal): a long poll ends early. */
  readonly signal?: AbortSignal;
}

export interface LocalResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

export type LocalEndpointHandler = (request: LocalRequest) => Promise<LocalResponse>;

interface SdkHttpRequest {
  method: string;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}

/** The SDK's RequestHandler interface (`handle` and the config hooks the clients call). */
interface SdkRequestHandler {
  handle(
    request: SdkHttpRequest,
    options?: { abortSignal?: { readonly aborted: boolean } },
  ): Promise<{ response: { statusCode: number; headers: Record<string, string>; body: Uint8Array } }>;
  updateHttpClientConfig(key: never, value: never): void;
  httpHandlerConfigs(): Record<string, never>;
  destroy(): void;
}

/** An endpoint served in this process: its function, and the SDK's request handler over it. */
interface Served {
  readonly handle: LocalEndpointHandler;
  readonly sdk: SdkRequestHandler;
}

/** Shared by every module instance in the process (a test runner may load this file more than once). */
const REGISTRY = Symbol.for('perp-wallet.local-endpoints');
type Registry = Map<string, Served>;
const scope = globalThis as Record<symbol, Registry | undefined>;
scope[REGISTRY] ??= new Map();
const registry: Registry = scope[REGISTRY];

/** Serves `endpoint` from `handle` for the clients built after this call (and `localFetch`'s calls); returns the function that stops it. */
export function registerLocalEndpoint(endpoint: string, handle: LocalEndpointHandler): () => void {
  const key = normalise(endpoint);
  const served: Served = { handle, sdk: requestHandler(handle) };
  registry.set(key, served);
  return () => {
    if (registry.get(key) === served) registry.delete(key);
  };
}

/**
 * A `fetch` for an HTTP client of ours that takes one (viem's http transport, `fetchFn`): a
 * request to an endpoint served in this process at the time of the call (the sandbox's RPC
 * gateway) goes to its function, as clientEndpoint's SDK clients' do; any other goes to the
 * global fetch (in AWS, all of them). Looked up per call: once the endpoint stops, a request
 * meets the closed port, as it would over HTTP.
 */
export const localFetch: typeof fetch = async (input, init = {}) => {
  if (input instanceof Request) return fetch(input, init);
  const url = new URL(input);
  const served = registry.get(url.origin);
  if (!served) return fetch(input, init);
  init.signal?.throwIfAborted();
  const answer = await served.handle(fetchRequest(url, init));
  // As fetch: an aborted request rejects with the signal's reason, whatever came back.
  init.signal?.throwIfAborted();
  return fetchResponse(answer);
};

/** A fetch call (a URL and its init: what viem's transport passes) as a LocalRequest: headers by lower-case name, the body as bytes. */
export function fetchRequest(url: URL, init: RequestInit): LocalRequest {
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const signal = init.signal ?? undefined;
  return { method: init.method ?? 'GET', path: `${url.pathname}${url.search}`, headers, body: bodyOf(init.body), ...(signal ? { signal } : {}) };
}

/** The `Response` a fetch answers with for `answer`. */
export function fetchResponse(answer: LocalResponse): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
  }
  return new Response(answer.body.byteLength ? answer.body : null, { status: answer.status, headers });
}

/**
 * The client configuration for `endpoint`: `{}` when unset (AWS), the in-process handler and the
 * unsigned Authorization header when the endpoint is served here, else the endpoint alone (a
 * process elsewhere: LocalStack, DynamoDB Local spoken to directly), signed as in AWS.
 */
export function clientEndpoint(endpoint: string | undefined): {
  endpoint?: string;
  requestHandler?: SdkRequestHandler;
  signerConstructor?: typeof UnsignedAuthorization;
} {
  if (!endpoint) return {};
  const served = registry.get(normalise(endpoint));
  return served ? { endpoint, requestHandler: served.sdk, signerConstructor: UnsignedAuthorization } : { endpoint };
}

/** What the SDK hands a signer's constructor (@smithy/signature-v4's SignatureV4Init, the part read here). */
interface SignerInit {
  readonly credentials: Credentials | (() => Promise<Credentials>);
  readonly region: string | (() => Promise<string>);
  readonly service: string;
}

interface Credentials {
  readonly accessKeyId: string;
}

/**
 * The SDK's signer for an in-process endpoint (its `signerConstructor` option): the Authorization
 * and X-Amz-Date headers SigV4 writes, naming the client's access key and the request's date,
 * region and service, with `Signature=` 64 zeros in place of the HMAC chain over the canonical
 * request. Only for endpoints served in this process (clientEndpoint): a request that leaves it
 * is signed by the SDK's own SignatureV4.
 */
export class UnsignedAuthorization {
  static readonly SIGNATURE = '0'.repeat(64);
  readonly #credentials: () => Promise<Credentials>;
  readonly #region: () => Promise<string>;
  readonly #service: string;

  constructor(init: SignerInit) {
    const { credentials, region } = init;
    this.#credentials = typeof credentials === 'function' ? credentials : async () => credentials;
    this.#region = typeof region === 'function' ? region : async () => region;
    this.#service = init.service;
  }

  async sign<R extends { headers: Record<string, string> }>(
    request: R,
    options: { signingDate?: Date; signingRegion?: string; signingService?: string } = {},
  ): Promise<R> {
    const { accessKeyId } = await this.#credentials();
    // SigV4's basic ISO 8601 form: 20261128T161500Z.
    const amzDate = (options.signingDate ?? new Date()).toISOString().replace(/[-:]|\.\d{3}/g, '');
    // As SignatureV4: the request's region and service when the SDK names them, else the client's.
    const region = options.signingRegion ?? (await this.#region());
    const scope = `${amzDate.slice(0, 8)}/${region}/${options.signingService ?? this.#service}/aws4_request`;
    request.headers['x-amz-date'] = amzDate;
    request.headers.authorization = `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=host;x-amz-date, Signature=${UnsignedAuthorization.SIGNATURE}`;
    return request;
  }
}

function normalise(endpoint: string): string {
  return new URL(endpoint).origin;
}

function requestHandler(handle: LocalEndpointHandler): SdkRequestHandler {
  return {
    async handle(request, options) {
      // The SDK hands Node's AbortSignal on (its own type is a structural subset).
      const signal = options?.abortSignal;
      const query = new URLSearchParams();
      for (const [name, value] of Object.entries(request.query ?? {})) for (const one of Array.isArray(value) ? value : [value]) query.append(name, one ?? '');
      const search = query.toString();
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
      const answer = await handle({
        method: request.method,
        path: search ? `${request.path}?${search}` : request.path,
        headers,
        body: bodyOf(request.body),
        ...(signal instanceof AbortSignal ? { signal } : {}),
      });
      // As the SDK's own handlers: an aborted request rejects, whatever came back.
      if (signal?.aborted) throw Object.assign(new Error('Request aborted'), { name: 'AbortError' });
      const answered: Record<string, string> = {};
      for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) answered[name] = Array.isArray(value) ? value.join(', ') : value;
      return {
        response: { statusCode: answer.status, headers: answered, body: new Uint8Array(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength) },
      };
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
  };
}

/** A request body as bytes: the JSON protocols send strings or bytes. */
export function bodyOf(body: unknown): Buffer {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new Error('a local endpoint takes string or byte bodies (the JSON protocols)');
}
