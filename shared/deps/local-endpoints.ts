/**
 * AWS SDK clients for an `endpoint` that is served inside this very process: the local sandbox's
 * DynamoDB (behind its streams proxy) and SQS. The sandbox registers each such endpoint with the
 * function that answers its requests; a client built for that endpoint then hands its signed
 * request to that function instead of opening a socket to itself. Everything the SDK does before
 * and after the wire (serialising, signing, retries, error parsing) is unchanged, as is what the
 * server does with the request: only the loopback HTTP hop goes (measured on the 2-core machine:
 * a DynamoDB PutItem or GetItem 1.19 → 0.80 ms of CPU; the conservation test makes about 36,000).
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

/** Shared by every module instance in the process (a test runner may load this file more than once). */
const REGISTRY = Symbol.for('perp-wallet.local-endpoints');
type Registry = Map<string, SdkRequestHandler>;
const scope = globalThis as Record<symbol, Registry | undefined>;
scope[REGISTRY] ??= new Map();
const registry: Registry = scope[REGISTRY];

/** Serves `endpoint` from `handle` for the clients built after this call; returns the function that stops it. */
export function registerLocalEndpoint(endpoint: string, handle: LocalEndpointHandler): () => void {
  const key = normalise(endpoint);
  const handler = requestHandler(handle);
  registry.set(key, handler);
  return () => {
    if (registry.get(key) === handler) registry.delete(key);
  };
}

/** The client configuration for `endpoint`: `{}` when unset (AWS), the in-process handler when the endpoint is served here. */
export function clientEndpoint(endpoint: string | undefined): { endpoint?: string; requestHandler?: SdkRequestHandler } {
  if (!endpoint) return {};
  const handler = registry.get(normalise(endpoint));
  return handler ? { endpoint, requestHandler: handler } : { endpoint };
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

function bodyOf(body: unknown): Buffer {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new Error('a local endpoint takes string or byte bodies (the JSON protocols)');
}
