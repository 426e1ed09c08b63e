import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import type { paths as AccountPaths } from './generated/account.ts';
import type { paths as EnclavePaths } from './generated/enclave.ts';
import type { paths as ExpressPaths } from './generated/express.ts';

export type { Middleware } from 'openapi-fetch';
/**
 * Typed clients of the three services: openapi-fetch over the types openapi-typescript generates
 * from docs/openapi/ (`npm run openapi` writes both), so a path, a body field or a response field
 * the documents do not have fails the type check. Each client adds its service's credentials to
 * every request; a header given on the call itself wins. Usage: shared/client/README.md.
 */
export type { AccountPaths, EnclavePaths, ExpressPaths };
export type AccountClient = Client<AccountPaths>;
export type EnclaveClient = Client<EnclavePaths>;
export type ExpressClient = Client<ExpressPaths>;

/** A credential, or a function returning a fresh one per request (user JWTs expire). */
export type Credential = string | (() => string | Promise<string>);

interface BaseOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3000` (a deployed stage URL ends in `/prod`). */
  readonly baseUrl: string;
  /** Another fetch (tests, proxies); defaults to the global one. */
  readonly fetch?: ClientOptions['fetch'];
}

export interface AccountClientOptions extends BaseOptions {
  /** The end user's JWT (`Authorization: Bearer …`); its `sub` is the app_user_id. */
  readonly token?: Credential;
  /** The application's secret key (`X-SERVICE-SECRET-KEY`). */
  readonly secretKey?: string;
}

export interface EnclaveClientOptions extends BaseOptions {
  /** The application's secret key (`X-SERVICE-SECRET-KEY`), on every enclave request. */
  readonly secretKey: string;
}

export interface ExpressClientOptions extends BaseOptions {
  /** The application's API key (`X-SERVICE-API-KEY`): wallet get-or-create and signing. */
  readonly apiKey?: string;
  /** The application's secret key (`X-SERVICE-SECRET-KEY`): `GET /v1/identity/provider` only. */
  readonly secretKey?: string;
  /** The end user's JWT (`Authorization: Bearer …`): wallet get-or-create and signing. */
  readonly token?: Credential;
  /** `X-OIDC-Provider-ID` (from `GET /v1/identity/provider`), for the wallet routes. */
  readonly providerId?: string;
  /** `X-SERVICE-CHAIN` (ETH, ARB, POL, INK or SOL), for the wallet routes; also settable per call. */
  readonly chain?: string;
}

/** Sets each header that has a value and that the call did not set itself. */
function headerMiddleware(headers: Record<string, Credential | undefined>): Middleware {
  return {
    async onRequest({ request }) {
      for (const [name, value] of Object.entries(headers)) {
        if (value === undefined || request.headers.has(name)) continue;
        request.headers.set(name, typeof value === 'function' ? await value() : value);
      }
      return request;
    },
  };
}

function bearer(token: Credential | undefined): Credential | undefined {
  if (token === undefined) return undefined;
  return typeof token === 'function' ? async () => `Bearer ${await token()}` : `Bearer ${token}`;
}

/** Account service: every route takes the user's JWT and the app's secret key (the sandbox routes take none). */
export function createAccountClient(options: AccountClientOptions): AccountClient {
  const client = createClient<AccountPaths>({ baseUrl: options.baseUrl, fetch: options.fetch });
  client.use(headerMiddleware({ authorization: bearer(options.token), 'x-service-secret-key': options.secretKey }));
  return client;
}

/** Wallet enclave: the app's secret key on every request; signing is authorised in the body (`op_jwt` + `access_key`). */
export function createEnclaveClient(options: EnclaveClientOptions): EnclaveClient {
  const client = createClient<EnclavePaths>({ baseUrl: options.baseUrl, fetch: options.fetch });
  client.use(headerMiddleware({ 'x-service-secret-key': options.secretKey }));
  return client;
}

/**
 * Express wallet: `GET /v1/identity/provider` takes the secret key; the wallet routes take the API
 * key, the user's JWT, the provider id and the chain. Give what the calls you make need.
 */
export function createExpressClient(options: ExpressClientOptions): ExpressClient {
  const client = createClient<ExpressPaths>({ baseUrl: options.baseUrl, fetch: options.fetch });
  client.use(
    headerMiddleware({
      'x-service-api-key': options.apiKey,
      'x-service-secret-key': options.secretKey,
      authorization: bearer(options.token),
      'x-oidc-provider-id': options.providerId,
      'x-service-chain': options.chain,
    }),
  );
  return client;
}

/** A non-2xx answer: the service's `{ success: false, error: { code, message } }`, with the HTTP status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly code: string;
  /** The service's own message, without the status and code that `message` starts with. */
  readonly detail: string;
  /** `X-Request-Id` of the answer: quote it when asking about a failed request. */
  readonly requestId: string | null;

  constructor(status: number, code: string, message: string, requestId: string | null) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.detail = message;
    this.requestId = requestId;
  }
}

/**
 * The data of a 2xx answer, or an `ApiError` for anything else:
 * `const account = await unwrap(client.GET('/account'))`.
 */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok && data !== undefined) return data;
  const body = (error ?? {}) as { error?: { code?: unknown; message?: unknown } };
  const code = typeof body.error?.code === 'string' ? body.error.code : 'UNEXPECTED_RESPONSE';
  const message = typeof body.error?.message === 'string' ? body.error.message : typeof error === 'string' ? error.slice(0, 200) : 'no error body';
  throw new ApiError(response.status, code, message, response.headers.get('x-request-id'));
}
