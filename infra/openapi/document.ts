import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { ROUTES, type ServiceName } from '../../functions/routes.ts';
import { VALID_REQUEST_ID } from '../../shared/http/request-id.ts';
import { ErrorResponse } from '../../shared/http/schemas.ts';
import { FaucetRequest } from '../../shared/sandbox/faucet-request.ts';
import { FaultRequest } from '../../shared/sandbox/fault-request.ts';
import { PricesRequest } from '../../shared/sandbox/prices-request.ts';
import { SandboxInfo } from '../../shared/sandbox/sandbox-info.ts';
import { OPERATIONS, type OperationDoc } from './operations.ts';

/** Builds the OpenAPI 3.1 document of one service from the route table and valibot schemas. */
const TITLES: Record<ServiceName, string> = {
  account: 'Account service',
  enclave: 'Wallet enclave service',
  express: 'Express wallet service',
};

const REQUEST_ID_PATTERN = VALID_REQUEST_ID.source;
/** The header rule of POST /withdraw and POST /transfer (functions/account/withdraw.ts, create-transfer.ts). */
const IDEMPOTENCY_KEY_PATTERN = '^[A-Za-z0-9._:-]{8,128}$';

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input; the message names the field',
  401: 'Missing or invalid credentials',
  403: 'Credentials valid but not allowed for this resource',
  404: 'Not found',
  409: 'The wallet is in another state (MIGRATION_REQUIRED, WALLET_MIGRATED)',
  410: 'Retired (V1_RETIRED)',
  413: 'PAYLOAD_TOO_LARGE: the request body is over 256 KiB',
  415: 'Content-Type must be application/json',
  422: 'Well-formed but refused by a rule; the code says which (e.g. INSUFFICIENT_FUNDS, IDEMPOTENCY_KEY_REUSED)',
  502: 'A dependency (the wallet enclave, a chain, a venue) failed',
  503: 'Not configured on this deployment or not available now (e.g. VENUE_NOT_CONFIGURED, BRIDGE_NOT_CONFIGURED, PRICE_UNAVAILABLE)',
  504: 'INCLUSION_TIMEOUT: broadcast but not included in time; retry with the same Idempotency-Key',
};

function schema(valibot: v.GenericSchema) {
  // OpenAPI 3.1 schemas are JSON Schema 2020-12 already; the per-schema $schema is noise.
  const { $schema: _draft, ...json } = toJsonSchema(valibot, { target: 'draft-2020-12', errorMode: 'ignore' });
  return json;
}

/** The local sandbox's default ports (`npm start`; ACCOUNT_PORT, ENCLAVE_PORT, EXPRESS_PORT). */
export const SANDBOX_PORTS: Record<ServiceName, number> = { account: 3000, enclave: 3001, express: 3002 };
export const SANDBOX_SERVER_DESCRIPTION = 'local sandbox (npm start)';
const STACK_OUTPUTS: Record<ServiceName, string> = { account: 'AccountApiUrl', enclave: 'EnclaveApiUrl', express: 'ExpressApiUrl' };

/** The sandbox on its default port, then the deployed REST API (one stage, `prod`: infra/services-stack.ts). */
function servers(service: ServiceName) {
  return [
    { url: `http://127.0.0.1:${SANDBOX_PORTS[service]}`, description: SANDBOX_SERVER_DESCRIPTION },
    {
      url: 'https://{apiId}.execute-api.{region}.amazonaws.com/prod',
      description: `AWS deployment (the stack output ${STACK_OUTPUTS[service]})`,
      variables: {
        apiId: { default: 'your-api-id', description: `The REST API's id: the host part of the ${STACK_OUTPUTS[service]} output` },
        region: { default: 'us-east-1', description: 'The AWS region the stack is deployed in' },
      },
    },
  ];
}

const ref = (kind: 'parameters' | 'headers' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** Every response carries X-Request-Id (shared/http/request-id.ts; the local runtime's own answers too). */
const requestIdHeader = { 'X-Request-Id': ref('headers', 'RequestId') };

function parameters(path: string, doc: OperationDoc) {
  const list: unknown[] = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  for (const [name, entry] of Object.entries(doc.query?.entries ?? {})) {
    list.push({ name, in: 'query', required: entry.type !== 'optional', schema: schema(entry) as { type: string } });
  }
  if (doc.idempotencyKey) list.push(ref('parameters', 'IdempotencyKey'));
  list.push(ref('parameters', 'RequestId'));
  return { parameters: list };
}

function errorResponse(description: string) {
  return { description, headers: requestIdHeader, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

/** What the success answer carries besides X-Request-Id: X-Task-ID on 202, Idempotent-Replayed where a key is honoured. */
function successHeaders(doc: OperationDoc) {
  return {
    ...requestIdHeader,
    ...(doc.status === 202 ? { 'X-Task-ID': ref('headers', 'TaskId') } : {}),
    ...(doc.idempotencyKey ? { 'Idempotent-Replayed': ref('headers', 'IdempotentReplayed') } : {}),
  };
}

/**
 * The local sandbox's own endpoints (served by the local runtime, not Lambda functions): marked
 * `x-sandbox-only` and absent from AWS deployments.
 */
function sandboxPaths() {
  const note = 'SANDBOX ONLY: served by `npm start`, absent from AWS deployments. No credentials (the sandbox listens on 127.0.0.1).';
  const ok = (description: string) => ({ description, headers: requestIdHeader, content: { 'application/json': { schema: { type: 'object' } } } });
  const common = {
    'x-sandbox-only': true,
    security: [],
    parameters: [ref('parameters', 'RequestId')],
  };
  // The local runtime refuses request bodies over 10 MB before routing, as API Gateway does.
  const tooLarge = { 413: errorResponse('PAYLOAD_TOO_LARGE: the request body is over 10 MB') };
  return {
    '/sandbox/info': {
      get: {
        operationId: 'SandboxInfo',
        ...common,
        summary: 'The running sandbox: its DATA_DIR, URLs and which applications it serves (no secrets)',
        description: `${note} What \`npm run token\`, \`npm run tasks\` and \`npm run task:watch\` read to follow the sandbox that is running: \`applications\` is \`dev\` (the generated dev app, whose keys are in \`data_dir\`/dev-app.json) or \`apps_file\` (the apps of APPS_FILE, which trust their own identity providers).`,
        responses: { 200: { description: 'OK', content: { 'application/json': { schema: schema(SandboxInfo) } } }, ...tooLarge },
      },
    },
    '/sandbox/chains': {
      get: {
        operationId: 'SandboxChains',
        ...common,
        summary: 'Sandbox chains: code, chain id, RPC URL, tokens (address or mint, decimals)',
        description: note,
        responses: { 200: ok('OK'), ...tooLarge },
      },
    },
    '/sandbox/venues': {
      get: {
        operationId: 'SandboxVenues',
        ...common,
        summary: 'Sandbox venues: id, base URL, chain, token, deposit address, rules',
        description: `${note} \`{ "venues": [{ "dex", "url", "chain", "token", "deposit_address", "rules" }] }\` for every running sandbox venue; \`deposit_address\` is where the venue's deposits go (venue_b: a plain token transfer to it is a deposit credited to the sender, as on the real venue). \`rules\` are decimal strings, with each rule's source or "sandbox choice".`,
        responses: { 200: ok('OK'), ...tooLarge },
      },
    },
    '/sandbox/bridge': {
      get: {
        operationId: 'SandboxBridge',
        ...common,
        summary: 'Sandbox bridge: base URL (BRIDGE_URL), vault addresses, routes with fees, limits and sources',
        description: `${note} \`{ "bridge": { "url", "vaults": { "evm", "sol" }, "routes": [...] } }\`; the bridge's own API is in docs/bridge.md.`,
        responses: { 200: ok('OK'), ...tooLarge },
      },
    },
    '/sandbox/faults': {
      post: {
        operationId: 'SandboxFaults',
        ...common,
        summary: "Make a sandbox venue's or the sandbox bridge's next operations fail, stall or refund",
        description: `${note} The target's next \`count\` operations of the kind fail, stall (held until \`clear\`) or refund (a deposit is sent back on chain, a withdrawal returned to the venue balance); \`clear\` ends the fault and releases what a stall held. The \`bridge\` target takes operation \`bridge\`: its next deposits fail (refunded, FAILED/REFUNDED), stall (held until \`clear\` or the fill deadline, then refunded) or refund (DONE/REFUNDED). With \`address\` the fault is that wallet's only (a venue: its deposits, withdrawals or payouts to it; the bridge: deposits it sends or is paid by), several addresses' faults at once, and \`clear\` with the address releases only what that fault stalled; without it, the next operations of anyone. 400 INVALID_ADDRESS for an address of a kind the target does not see (a venue: EVM only); 400 VENUE_NOT_RUNNING for a venue that is not running.`,
        requestBody: { required: true, content: { 'application/json': { schema: schema(FaultRequest) } } },
        responses: { 200: ok('The fault now in force (null after clear)'), 400: errorResponse('Invalid input'), ...tooLarge },
      },
    },
    '/sandbox/prices': {
      get: {
        operationId: 'SandboxPrices',
        ...common,
        summary: "The sandbox's Chainlink price feeds (ETH, POL, SOL in USD) as the chain answers them",
        description: `${note} \`{ "prices": { "ETH": "3000", … }, "feeds": { "ETH": { "pair", "address", "decimals", "price", "round_id", "updated_at", "heartbeat_seconds", "frozen" }, … } }\`: the AggregatorV3Interface feeds the sandbox installs at the real Ethereum-mainnet proxy addresses on its ETH chain, which the transfer estimate reads (as a deployment reads the real ones). Initial answers: ETH 3000, POL 0.25, SOL 150 (8 decimals); a heartbeat renews each round before it is half its heartbeat old.`,
        responses: { 200: ok('OK'), ...tooLarge },
      },
      post: {
        operationId: 'SandboxSetPrices',
        ...common,
        summary: "Set the answers of the sandbox's Chainlink price feeds",
        description: `${note} Body e.g. \`{ "ETH": "6000", "SOL": "140.5" }\`: USD per coin, positive decimal strings with at most 8 decimals, at least one of ETH, POL, SOL. Each becomes a new round of the feed, dated now, or \`updated_at\` (unix seconds, not in the future): a time older than the feed's heartbeat (ETH and POL 3600 s, SOL 86400 s, plus 10 %) makes it stale, so estimates answer 503 PRICE_UNAVAILABLE, and the heartbeat leaves the feed alone until it is set again without \`updated_at\`. Answers 200 with the feeds read back from the chain, as GET. 400 INVALID_REQUEST naming the field otherwise.`,
        requestBody: { required: true, content: { 'application/json': { schema: schema(PricesRequest) } } },
        responses: { 200: ok('The feeds after the new rounds'), 400: errorResponse('Invalid input'), ...tooLarge },
      },
    },
    '/sandbox/faucet': {
      post: {
        operationId: 'SandboxFaucet',
        ...common,
        summary: 'Credit an address on a sandbox chain',
        description: `${note} Body \`{ address, chain, token, amount }\`; amount is a decimal string in whole tokens, validated like every other amount. 400 UNSUPPORTED_TOKEN for a token the chain does not carry; 400 INVALID_ADDRESS for the zero address or (SOL) an account that is not a wallet; 400 AMOUNT_TOO_LARGE when the balance or total supply would pass what the chain holds (2^256 - 1 base units on EVM, 2^64 - 1 on Solana).`,
        requestBody: { required: true, content: { 'application/json': { schema: schema(FaucetRequest) } } },
        responses: { 200: ok('Credited'), 400: errorResponse('Invalid input'), ...tooLarge },
      },
    },
  };
}

/** Enclave calls authenticate the app by its secret key, or (platform services) by a service token. */
function securityOf(service: ServiceName, security: readonly string[]) {
  if (security.length === 0) return [];
  const requirement = Object.fromEntries(security.map((name) => [name, []]));
  return service === 'enclave' && security.includes('secretKey') ? [requirement, { serviceToken: [] }] : [requirement];
}

export function openApiDocument(service: ServiceName) {
  const paths: Record<string, Record<string, unknown>> = {};
  const usedSchemes = new Set<string>();
  for (const route of ROUTES.filter((r) => r.service === service && r.routeKey !== '$default')) {
    const doc = OPERATIONS[route.id];
    if (!doc) throw new Error(`route ${route.id} has no OpenAPI documentation`);
    const [method, path] = route.routeKey.split(' ') as [string, string];
    const content = { 'application/json': { schema: schema(doc.response) } };
    const responses: Record<string, unknown> = doc.redirect
      ? {
          308: {
            description: 'Permanent redirect to the /v2/ path (method and body preserved)',
            headers: { Location: { description: 'The same path under /v2/, with the query', schema: { type: 'string' } }, ...requestIdHeader },
            content,
          },
        }
      : { [doc.status ?? 200]: { description: doc.status === 202 ? 'Accepted: running asynchronously' : 'OK', headers: successHeaders(doc), content } };
    // Every body route refuses bodies over 256 KiB (shared/http/handler.ts MAX_BODY_BYTES).
    for (const status of [...doc.errors, ...(doc.body ? [413] : [])]) {
      const text = ERROR_TEXT[status];
      if (text === undefined) throw new Error(`route ${route.id}: error status ${status} has no description in ERROR_TEXT`);
      responses[status] = errorResponse(text);
    }
    responses[429] = ref('responses', 'RateLimited');
    responses[500] = errorResponse('Internal error (reveals nothing internal; quote the request id)');
    const security = securityOf(service, doc.security);
    for (const requirement of security) for (const name of Object.keys(requirement)) usedSchemes.add(name);
    paths[path] ??= {};
    paths[path][method.toLowerCase()] = {
      operationId: route.id,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      ...(doc.deprecated ? { deprecated: true } : {}),
      ...parameters(path, doc),
      security,
      ...(doc.body ? { requestBody: { required: true, content: { 'application/json': { schema: schema(doc.body) } } } } : {}),
      responses,
    };
  }
  if (service === 'account') Object.assign(paths, sandboxPaths());
  return {
    openapi: '3.1.0',
    info: {
      title: TITLES[service],
      version: '2.0.0',
      description:
        'Errors are always `{ "success": false, "error": { "code", "message" } }`. Unknown routes answer 404 ROUTE_NOT_FOUND; another method on a known path answers 405 METHOD_NOT_ALLOWED with an `Allow` header; `HEAD` is answered wherever `GET` is (same status and headers, no body); a request body over 256 KiB answers 413 PAYLOAD_TOO_LARGE. Amounts are decimal strings. Every response carries `X-Request-Id`. The local sandbox serves this document at `GET /openapi.json` and renders it at `GET /docs`.',
    },
    servers: servers(service),
    paths,
    components: {
      schemas: { Error: schema(ErrorResponse) },
      parameters: {
        RequestId: {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description:
            'Your own id for this request, echoed in the `X-Request-Id` response header and in every log line; one that does not match the pattern is replaced, not refused.',
          schema: { type: 'string', pattern: REQUEST_ID_PATTERN },
        },
        ...(service === 'account'
          ? {
              IdempotencyKey: {
                name: 'Idempotency-Key',
                in: 'header',
                required: false,
                description:
                  'A retry with the same key and body returns the first result (`Idempotent-Replayed: true`) instead of acting twice; the same key with another body is 422 IDEMPOTENCY_KEY_REUSED. A malformed key is 400.',
                schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN },
              },
            }
          : {}),
      },
      headers: {
        RequestId: {
          description: "The request's id: yours when you sent a well-formed `X-Request-Id`, else the gateway's. Quote it when reporting a failure.",
          schema: { type: 'string' },
        },
        ...(service === 'account'
          ? {
              TaskId: {
                description: "The transfer task's id (also `task_id` in the body); follow it with GET /task/{task_id}.",
                schema: { type: 'string', format: 'uuid' },
              },
              IdempotentReplayed: {
                description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key.',
                schema: { type: 'string', enum: ['true'] },
              },
            }
          : {}),
      },
      responses: {
        RateLimited: {
          ...errorResponse(
            "RATE_LIMITED (deployed APIs only): the stage's throttle was exceeded (default 50 requests/s, burst 100); retry later. The local sandbox does not throttle.",
          ),
        },
      },
      securitySchemes: Object.fromEntries(Object.entries(SECURITY_SCHEMES).filter(([name]) => usedSchemes.has(name))),
    },
  };
}

const SECURITY_SCHEMES: Record<string, unknown> = {
  userJwt: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "The end user's JWT from the app's identity provider; `sub` is the app_user_id, at most 255 bytes (UTF-8; a longer one is 401 INVALID_TOKEN). `exp` more than 10 years ahead or not finite is 401 INVALID_TOKEN; an app may set `max_token_age_seconds`, and then tokens must carry `iat` and be no older, and live no longer, than that.",
  },
  secretKey: { type: 'apiKey', in: 'header', name: 'X-SERVICE-SECRET-KEY', description: "The application's secret key." },
  apiKey: { type: 'apiKey', in: 'header', name: 'X-SERVICE-API-KEY', description: "The application's API key (express wallet service)." },
  providerId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-OIDC-Provider-ID',
    description: "The app's identity provider id (GET /v1/identity/provider), or a legacy iframe-login id (deprecated).",
  },
  chain: { type: 'apiKey', in: 'header', name: 'X-SERVICE-CHAIN', description: 'Chain code: ETH, ARB, POL, INK or SOL.' },
  serviceToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-SERVICE-TOKEN',
    description:
      'Platform services only (the express service): a ≤ 300 s ES256 JWT from the platform key, iss urn:perp-wallet:platform, aud urn:perp-wallet:enclave, sub = app id.',
  },
};
