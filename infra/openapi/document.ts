import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { ROUTES, type ServiceName } from '../../functions/routes.ts';
import { ErrorResponse } from '../../shared/http/schemas.ts';
import { FaultRequest } from '../../shared/sandbox/fault-request.ts';
import { FaucetRequest } from '../../shared/sandbox/faucet-request.ts';
import { SandboxInfo } from '../../shared/sandbox/sandbox-info.ts';
import { OPERATIONS, type OperationDoc } from './operations.ts';

/** Builds the OpenAPI 3.1 document of one service from the route table and valibot schemas. */
const TITLES: Record<ServiceName, string> = {
  account: 'Account service',
  enclave: 'Wallet enclave service',
  express: 'Express wallet service',
};

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input; the message names the field',
  401: 'Missing or invalid credentials',
  403: 'Credentials valid but not allowed for this resource',
  404: 'Not found',
  409: 'The wallet is in another state (MIGRATION_REQUIRED, WALLET_MIGRATED)',
  410: 'Retired (V1_RETIRED)',
  413: 'PAYLOAD_TOO_LARGE: the request body is over 256 KiB',
  415: 'Content-Type must be application/json',
  502: 'A dependency (the wallet enclave) failed',
};

function schema(valibot: v.GenericSchema) {
  // OpenAPI 3.1 schemas are JSON Schema 2020-12 already; the per-schema $schema is noise.
  const { $schema: _draft, ...json } = toJsonSchema(valibot, { target: 'draft-2020-12', errorMode: 'ignore' });
  return json;
}

function parameters(path: string, doc: OperationDoc) {
  const list = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  for (const [name, entry] of Object.entries(doc.query?.entries ?? {})) {
    list.push({ name, in: 'query', required: entry.type !== 'optional', schema: schema(entry) as { type: string } });
  }
  return list.length ? { parameters: list } : {};
}

/**
 * The local sandbox's own endpoints (served by the local runtime, not Lambda functions): marked
 * `x-sandbox-only` and absent from AWS deployments.
 */
function sandboxPaths() {
  const note = 'SANDBOX ONLY: served by `npm start`, absent from AWS deployments. No credentials (the sandbox listens on 127.0.0.1).';
  const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  return {
    '/sandbox/info': {
      get: {
        operationId: 'SandboxInfo',
        'x-sandbox-only': true,
        summary: 'The running sandbox: its DATA_DIR, URLs and which applications it serves (no secrets)',
        description: `${note} What \`npm run token\`, \`npm run tasks\` and \`npm run task:watch\` read to follow the sandbox that is running: \`applications\` is \`dev\` (the generated dev app, whose keys are in \`data_dir\`/dev-app.json) or \`apps_file\` (the apps of APPS_FILE, which trust their own identity providers).`,
        security: [],
        responses: { 200: { description: 'OK', content: { 'application/json': { schema: schema(SandboxInfo) } } } },
      },
    },
    '/sandbox/chains': {
      get: {
        operationId: 'SandboxChains',
        'x-sandbox-only': true,
        summary: 'Sandbox chains: code, chain id, RPC URL, tokens (address or mint, decimals)',
        description: note,
        security: [],
        responses: { 200: { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    },
    '/sandbox/venues': {
      get: {
        operationId: 'SandboxVenues',
        'x-sandbox-only': true,
        summary: 'Sandbox venues: id, base URL, chain, token, deposit address, rules',
        description: `${note} \`{ "venues": [{ "dex", "url", "chain", "token", "deposit_address", "rules" }] }\` for every running sandbox venue; \`deposit_address\` is where the venue's deposits go (venue_b: a plain token transfer to it is a deposit credited to the sender, as on the real venue). \`rules\` are decimal strings, with each rule's source or "sandbox choice".`,
        security: [],
        responses: { 200: { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    },
    '/sandbox/bridge': {
      get: {
        operationId: 'SandboxBridge',
        'x-sandbox-only': true,
        summary: 'Sandbox bridge: base URL (BRIDGE_URL), vault addresses, routes with fees, limits and sources',
        description: `${note} \`{ "bridge": { "url", "vaults": { "evm", "sol" }, "routes": [...] } }\`; the bridge's own API is in docs/bridge.md.`,
        security: [],
        responses: { 200: { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    },
    '/sandbox/faults': {
      post: {
        operationId: 'SandboxFaults',
        'x-sandbox-only': true,
        summary: 'Make a sandbox venue\'s or the sandbox bridge\'s next operations fail, stall or refund',
        description: `${note} The target's next \`count\` operations of the kind fail, stall (held until \`clear\`) or refund (a deposit is sent back on chain, a withdrawal returned to the venue balance); \`clear\` ends the fault and releases what a stall held. The \`bridge\` target takes operation \`bridge\`: its next deposits fail (refunded, FAILED/REFUNDED), stall (held until \`clear\` or the fill deadline, then refunded) or refund (DONE/REFUNDED). 400 VENUE_NOT_RUNNING for a venue that is not running.`,
        security: [],
        requestBody: { required: true, content: { 'application/json': { schema: schema(FaultRequest) } } },
        responses: { 200: { description: 'The fault now in force (null after clear)', content: { 'application/json': { schema: { type: 'object' } } } }, 400: { description: 'Invalid input', ...error } },
      },
    },
    '/sandbox/faucet': {
      post: {
        operationId: 'SandboxFaucet',
        'x-sandbox-only': true,
        summary: 'Credit an address on a sandbox chain',
        description: `${note} Body \`{ address, chain, token, amount }\`; amount is a decimal string in whole tokens, validated like every other amount. 400 UNSUPPORTED_TOKEN for a token the chain does not carry; 400 INVALID_ADDRESS for the zero address or (SOL) an account that is not a wallet; 400 AMOUNT_TOO_LARGE when the balance or total supply would pass what the chain holds (2^256 - 1 base units on EVM, 2^64 - 1 on Solana).`,
        security: [],
        requestBody: { required: true, content: { 'application/json': { schema: schema(FaucetRequest) } } },
        responses: { 200: { description: 'Credited', content: { 'application/json': { schema: { type: 'object' } } } }, 400: { description: 'Invalid input', ...error } },
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
  for (const route of ROUTES.filter((r) => r.service === service && r.routeKey !== '$default')) {
    const doc = OPERATIONS[route.id];
    if (!doc) throw new Error(`route ${route.id} has no OpenAPI documentation`);
    const [method, path] = route.routeKey.split(' ') as [string, string];
    const responses: Record<string, unknown> = doc.redirect
      ? { 308: { description: 'Permanent redirect to the /v2/ path (method and body preserved)', headers: { Location: { schema: { type: 'string' } } }, content: { 'application/json': { schema: schema(doc.response) } } } }
      : { [doc.status ?? 200]: { description: doc.status === 202 ? 'Accepted: running asynchronously' : 'OK', content: { 'application/json': { schema: schema(doc.response) } } } };
    // Every body route refuses bodies over 256 KiB (shared/http/handler.ts MAX_BODY_BYTES).
    for (const status of [...doc.errors, ...(doc.body ? [413] : []), 500]) {
      responses[status] = { description: ERROR_TEXT[status] ?? 'Internal error (reveals nothing internal)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    }
    paths[path] ??= {};
    paths[path][method.toLowerCase()] = {
      operationId: route.id,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      ...(doc.deprecated ? { deprecated: true } : {}),
      ...parameters(path, doc),
      security: securityOf(service, doc.security),
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
        'Errors are always `{ "success": false, "error": { "code", "message" } }`. Unknown routes answer 404 ROUTE_NOT_FOUND; another method on a known path answers 405 METHOD_NOT_ALLOWED with an `Allow` header; a request body over 256 KiB answers 413 PAYLOAD_TOO_LARGE. Amounts are decimal strings.',
    },
    paths,
    components: {
      schemas: { Error: schema(ErrorResponse) },
      securitySchemes: {
        userJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'The end user\'s JWT from the app\'s identity provider; `sub` is the app_user_id, at most 255 bytes (UTF-8; a longer one is 401 INVALID_TOKEN). `exp` more than 10 years ahead or not finite is 401 INVALID_TOKEN; an app may set `max_token_age_seconds`, and then tokens must carry `iat` and be no older, and live no longer, than that.' },
        secretKey: { type: 'apiKey', in: 'header', name: 'X-SERVICE-SECRET-KEY', description: 'The application\'s secret key.' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-SERVICE-API-KEY', description: 'The application\'s API key (express wallet service).' },
        providerId: { type: 'apiKey', in: 'header', name: 'X-OIDC-Provider-ID', description: 'The app\'s identity provider id (GET /v1/identity/provider), or a legacy iframe-login id (deprecated).' },
        chain: { type: 'apiKey', in: 'header', name: 'X-SERVICE-CHAIN', description: 'Chain code: ETH, ARB, POL, INK or SOL.' },
        ...(service === 'enclave'
          ? { serviceToken: { type: 'apiKey', in: 'header', name: 'X-SERVICE-TOKEN', description: 'Platform services only (the express service): a ≤ 300 s ES256 JWT from the platform key, iss urn:perp-wallet:platform, aud urn:perp-wallet:enclave, sub = app id.' } }
          : {}),
      },
    },
  };
}
