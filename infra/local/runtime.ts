import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import { ROUTES, type ServiceName } from '../../functions/routes.ts';
import { AppRegistry, deleteApplication, putApplication } from '../../shared/apps/app-registry.ts';
import type { Application } from '../../shared/apps/application.ts';
import { platformApplication } from '../../shared/apps/register-application.ts';
import type { ChainsConfig } from '../../shared/chains/chain-config.ts';
import { EvmChain } from '../../shared/chains/evm-chain.ts';
import { loadSponsorPoolSize } from '../../shared/config.ts';
import { setLocalKmsGuard } from '../../shared/crypto/local-kms-guard.ts';
import { LOCAL_SPONSOR_KEY_FILE, LocalOpJwtSigner } from '../../shared/crypto/local-op-jwt-signer.ts';
import { createDocumentClient, getItem, type Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { localCreateTableInput } from '../../shared/db/table-definition.ts';
import { type LocalRequest, type LocalResponse, registerLocalEndpoint } from '../../shared/deps/local-endpoints.ts';
import { requestIdOf } from '../../shared/http/request-id.ts';
import { withServiceName } from '../../shared/observability/service-name.ts';
import type { SandboxInfo } from '../../shared/sandbox/sandbox-info.ts';
import { HttpWalletEnclave } from '../../shared/wallets/enclave-client.ts';
import { EnclaveSponsorPool } from '../../shared/withdrawals/gas-sponsor.ts';
import { API_FUNCTION_TIMEOUT_SECONDS, matchResource, type ResourceTree, resourceTree } from '../api-resources.ts';
import { anvilExchange } from './anvil-fetch.ts';
import {
  gatewayRequestId,
  installInvokeStore,
  invokeWithinLimits,
  lambdaContext,
  lambdaErrorResult,
  requestTarget,
  runInvocation,
  toEvent,
  writeResult,
} from './api-gateway.ts';
import { type AppFileEntry, loadOrCreateDevApp, readAppsFile, toApplication } from './applications.ts';
import { type SandboxBridgeListing, startSandboxBridge } from './bridge/server.ts';
import { ChainHeads } from './chain-heads.ts';
import { serveDocs } from './docs-routes.ts';
import { type DynamoDbStore, dynamodbStore, prepareDynamoDbStore } from './dynamodb-store.ts';
import { startDynamoDbStreamProxy } from './dynamodb-stream/proxy.ts';
import type { LocalDynamoDbStream } from './dynamodb-stream/stream.ts';
import type { EngineListener } from './dynamodb-stream/upstream.ts';
import { DELIVERY_DLQ, DELIVERY_QUEUE, startLocalEvents, startLocalQueues } from './events.ts';
import { startEvmSandbox } from './evm-sandbox.ts';
import { dynamodbAccessRequests } from './iam/dynamodb.ts';
import { dynamodbAccessDenied, iamModeOf, loadRolePolicies, recordIamUsage, SandboxIam, sqsAccessDenied, stepFunctionsAccessDenied } from './iam/enforcer.ts';
import { kmsGuard } from './iam/kms.ts';
import type { RolePolicies } from './iam/role-policies.ts';
import { sqsAccessRequests, stepFunctionsAccessRequests } from './iam/services.ts';
import { LocalRuntimeError } from './local-runtime-error.ts';
import { chainsListing, type SandboxChains, sandboxRoute } from './sandbox-routes.ts';
import { sandboxTickMs, stepWaitMs } from './sandbox-tick.ts';
import { startSolanaSandbox } from './solana-sandbox/index.ts';
import { SQS_REGION } from './sqs/server.ts';
import { type LocalStepFunctions, startLocalStepFunctions } from './step-functions/server.ts';
import { localStepFunctionNames, sandboxPlatformFee, transferStepResolver } from './step-functions/transfer-functions.ts';
import { type SandboxVenueListing, startSandboxVenues } from './venues/framework.ts';

/**
 * The embedded local sandbox: three HTTP listeners whose requests become API Gateway events for
 * the very handler modules Lambda runs, DynamoDB in dynalite persisted under DATA_DIR (or an
 * external engine), and local key providers behind the KMS interfaces.
 */
export interface LocalRuntimeOptions {
  readonly dataDir: string;
  readonly ports: Record<ServiceName, number>;
  /** Use this DynamoDB endpoint (DynamoDB Local, LocalStack) instead of embedded dynalite. */
  readonly dynamodbEndpoint?: string;
  /** Where embedded dynalite keeps the table (default: SANDBOX_DYNAMODB_STORE, else on disk; infra/local/dynamodb-store.ts). */
  readonly dynamodbStore?: DynamoDbStore;
  readonly appsFile?: string;
  readonly tableName?: string;
  readonly host?: string;
  /**
   * The credential the functions' RPC URLs carry as their first path segment (as hosted RPC
   * providers do), so a test can prove no log line leaks it; random when unset.
   */
  readonly rpcCredential?: string;
  /** Called once per request, after the response, with its access-log record. */
  readonly onRequest?: (line: AccessLogRecord) => void;
  /** The sandbox's tick, ms: its venues' and bridge's pollers, and each local Wait (default: SANDBOX_TICK_MS, else 200; infra/local/sandbox-tick.ts). */
  readonly tickMs?: number;
  /** How long each Wait of the transfer machine takes locally, ms (default: SANDBOX_STEP_WAIT_MS, else one tick). */
  readonly stepWaitMs?: number;
  /** Tests: the policies to enforce instead of the committed ones, from them (a grant removed, to see the refusal). */
  readonly rolePolicies?: (committed: RolePolicies) => RolePolicies;
}

/** One access-log line (JSON): like API Gateway's, never with query values, headers or bodies. */
export interface AccessLogRecord {
  readonly time: string;
  readonly service: ServiceName;
  readonly method: string;
  /** The path, and the query's parameter names only (`/demo/wallet/balance?chain`). */
  readonly path: string;
  readonly status: number;
  readonly duration_ms: number;
  readonly request_id: string;
}

export interface LocalRuntime {
  readonly urls: Record<ServiceName, string>;
  readonly chains: ReturnType<typeof chainsListing>;
  /** The sandbox venues (`GET /sandbox/venues`). */
  readonly venues: SandboxVenueListing;
  /** The sandbox bridge (`GET /sandbox/bridge`). */
  readonly bridge: SandboxBridgeListing;
  /** The local Step Functions running the transfer machine (SFN_ENDPOINT; `GET {endpoint}/executions/{name}` has the counts). */
  readonly stepFunctions: Pick<LocalStepFunctions, 'endpoint' | 'stateMachineArn' | 'execution' | 'closed'>;
  readonly apps: readonly AppFileEntry[];
  /** The table's endpoint as the handlers see it: the stream proxy in front of the engine. */
  readonly dynamodbEndpoint: string;
  readonly tableName: string;
  /** The table's stream (NEW_IMAGE): every write the sandbox makes, as DynamoDB Streams records (benches and tests count them). */
  readonly tableStream: LocalDynamoDbStream;
  /** The functions' IAM as the sandbox enforces it (SANDBOX_IAM; docs/sandbox-iam.md): its refusals and the statements used. */
  readonly iam: SandboxIam;
  stop(): Promise<void>;
}

const ROOT = resolve(import.meta.dirname, '../..');
/** The transfer machine's name in the sandbox's ARNs (`arn:aws:states:…:stateMachine:transfer`). */
const LOCAL_STATE_MACHINE = 'transfer';
/** The account id of the sandbox's ARNs (as in its Lambda contexts). */
const SANDBOX_ACCOUNT = '000000000000';
/** API Gateway REST APIs refuse larger payloads (413) before any function runs; routes refuse far less (shared/http/handler.ts). */
const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;
const SERVICES: readonly ServiceName[] = ['account', 'enclave', 'express'];

export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const dataDir = resolve(options.dataDir);
  const host = options.host ?? '127.0.0.1';
  // Before anything starts, as a bad APPS_FILE: a bad tick is one line.
  const tickMs = options.tickMs ?? sandboxTickMs();
  const store = options.dynamodbStore ?? dynamodbStore();
  const waitMs = options.stepWaitMs ?? stepWaitMs(tickMs);
  const tableName = options.tableName ?? 'perp-wallet';
  // Before anything starts: a bad APPS_FILE is one line, not a half-started sandbox.
  const appsFromFile = options.appsFile ? await readAppsFile(options.appsFile) : undefined;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const releaseDataDir = await lockDataDir(dataDir);
  const closers: (() => Promise<void>)[] = [releaseDataDir];
  try {
    return await startOnLockedDataDir(options, { dataDir, host, tableName, tickMs, waitMs, store }, appsFromFile, closers);
  } catch (error) {
    // A start that fails half-way frees what it took (the lock, the ports, the chains) before it says why.
    for (const closeOne of closers) await closeOne().catch(() => undefined);
    throw error;
  }
}

async function startOnLockedDataDir(
  options: LocalRuntimeOptions,
  {
    dataDir,
    host,
    tableName,
    tickMs,
    waitMs,
    store,
  }: { dataDir: string; host: string; tableName: string; tickMs: number; waitMs: number; store: DynamoDbStore },
  appsFromFile: readonly AppFileEntry[] | undefined,
  closers: (() => Promise<void>)[],
): Promise<LocalRuntime> {
  // The services listen before anything else starts. With ports 0 the kernel picks each one's
  // port, and a port held from here on cannot be handed to a sandbox component started below
  // (an anvil, a venue, the bridge, dynalite) nor be taken by one: nothing races for it. Until
  // the sandbox is ready they answer 503.
  const servers = Object.fromEntries(SERVICES.map((service) => [service, createServer()])) as Record<ServiceName, Server>;
  const urls = {} as Record<ServiceName, string>;
  const starting: RequestListener = (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(
      JSON.stringify({ success: false, error: { code: 'SANDBOX_STARTING', message: 'The local sandbox is starting: try again once it prints "ready"' } }),
    );
  };
  for (const service of SERVICES) {
    const port = await listen(servers[service], options.ports[service], host).catch((error: unknown) => {
      if (!(error instanceof LocalRuntimeError)) throw error;
      throw servicePortInUse(service, options.ports[service], host, Object.fromEntries(Object.entries(urls).map(([name, url]) => [`${name} service`, url])));
    });
    servers[service].on('request', starting);
    urls[service] = `http://${host}:${port}`;
    closers.unshift(() => close(servers[service]));
  }

  // What Lambda gives a function: per-invocation scoping of Powertools' state (several requests run
  // at once in this one process), cold-start detection, a metrics namespace.
  await installInvokeStore();
  process.env.AWS_LAMBDA_INITIALIZATION_TYPE ??= 'on-demand';
  process.env.POWERTOOLS_METRICS_NAMESPACE ??= 'PerpWalletLocal';
  // AWS SDK clients need a region and credentials even against a local engine.
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'sandbox';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'sandbox';

  let dynamodbEndpoint = options.dynamodbEndpoint;
  let engineListener: EngineListener | undefined;
  if (!dynamodbEndpoint) {
    const path = await prepareDynamoDbStore(dataDir, store);
    const engine = dynalite({ ...(path ? { path } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    const port = await listen(engine, 0, host);
    dynamodbEndpoint = `http://${host}:${port}`;
    engineListener = engine.listeners('request')[0] as EngineListener | undefined;
    closers.push(() => close(engine));
  }
  await ensureTable(dynamodbEndpoint, tableName);
  // Every sandbox writer goes through the table's stream (infra/local/dynamodb-stream/), as every
  // AWS write reaches DynamoDB Streams: the engine's endpoint is known to the proxy alone. NEW_IMAGE,
  // as the AWS table's stream: the publisher needs the image a write made, never the one before.
  // The functions' IAM, as synthesized (docs/sandbox-iam.md): each in-process call is authorised as its function's role.
  const committed = loadRolePolicies({
    account: SANDBOX_ACCOUNT,
    region: process.env.AWS_REGION,
    table: tableName,
    // The stacks' queues and state machine as the sandbox names them (infra/local/events.ts, step-functions/server.ts).
    named: (kind, logicalId) =>
      kind === 'stateMachine'
        ? LOCAL_STATE_MACHINE
        : logicalId.startsWith('DeliveryDeadLetterQueue')
          ? DELIVERY_DLQ
          : logicalId.startsWith('DeliveryQueue')
            ? DELIVERY_QUEUE
            : undefined,
  });
  const policies = options.rolePolicies?.(committed) ?? committed;
  const iam = new SandboxIam(policies, iamModeOf(process.env.SANDBOX_IAM));
  // What it allowed and refused, for npm run iam:report (infra/scripts/iam-report.ts).
  // Only under the committed policies: a test's edited ones would report its own refusals.
  if (!options.rolePolicies) closers.push(recordIamUsage(iam));
  // The local key wrapper and op_jwt signers ask it before each use (shared/crypto/local-kms-guard.ts).
  setLocalKmsGuard(kmsGuard(iam, policies, process.env.AWS_REGION, SANDBOX_ACCOUNT));
  closers.push(async () => setLocalKmsGuard(undefined));
  const tableArn = (name: string) => `arn:aws:dynamodb:${process.env.AWS_REGION}:${SANDBOX_ACCOUNT}:table/${name}`;
  const tableStream = await startDynamoDbStreamProxy({
    upstream: dynamodbEndpoint,
    engine: engineListener,
    host,
    port: 0,
    viewType: 'NEW_IMAGE',
    authorize: (operation, body) => iam.authorizeJson(body, (parsed: never) => dynamodbAccessRequests(operation, parsed, tableArn), dynamodbAccessDenied),
  });
  closers.push(() => tableStream.stop());
  dynamodbEndpoint = tableStream.endpoint;
  // Webhook deliveries' FIFO queue and its dead-letter queue, under DATA_DIR/sqs (infra/local/events.ts).
  const queueArn = (name: string) => `arn:aws:sqs:${SQS_REGION}:${SANDBOX_ACCOUNT}:${name}`;
  const queues = await startLocalQueues(dataDir, host, (operation, body) =>
    iam.authorizeJson(body, (parsed: never) => sqsAccessRequests(operation, parsed, queueArn), sqsAccessDenied),
  );
  closers.push(() => queues.stop());

  // Sandbox chains: one anvil per EVM chain, a LiteSVM-backed Solana RPC.
  const [evm, sol] = await Promise.all([startEvmSandbox({ dataDir, host }), startSolanaSandbox({ dataDir, host })]);
  const stopEvm = () => evm.stop();
  closers.push(stopEvm, () => sol.stop());
  // The price feeds' heartbeat on the sandbox's tick (infra/local/price-feeds.ts): a round older
  // than half its heartbeat is renewed, so a sandbox left running never goes stale. A failed write is tried next tick.
  const heartbeat = setInterval(() => evm.priceFeeds.heartbeat().catch(() => undefined), tickMs);
  heartbeat.unref();
  closers.splice(closers.indexOf(stopEvm), 0, async () => clearInterval(heartbeat));
  // Sandbox venues: each its own server and state under DATA_DIR/venues, watching the chains.
  // Each chain's head from its newHeads subscription (a quiet chain costs its watchers no request);
  // until that is live, one read per half tick, whichever of its watchers asks.
  const heads = new ChainHeads(tickMs / 2, { subscribe: true });
  closers.splice(closers.indexOf(stopEvm), 0, () => heads.close()); // before the chains: no socket outlives its node
  const venues = await startSandboxVenues({ dataDir, host, evm, pollMs: tickMs, heads });
  closers.splice(closers.indexOf(stopEvm), 0, () => venues.stop()); // before the chains: a payout may await its receipt
  // The sandbox bridge: its own server and state under DATA_DIR/bridge, vaults on every chain.
  const bridge = await startSandboxBridge({ dataDir, host, evm, sol, pollMs: tickMs, heads });
  closers.splice(closers.indexOf(stopEvm), 0, () => bridge.stop()); // before the chains, as the venues
  const chains: SandboxChains = { config: { ...evm.chains, SOL: sol.chain, sandbox: true }, evm, sol, venues, bridge };
  const rpcGateway = await startRpcGateway(chains.config, options.rpcCredential ?? `rpc-key-${randomBytes(16).toString('hex')}`, host);
  closers.push(() => rpcGateway.close());

  // Applications, each trusting the account service's local op_jwt signing key, and the platform
  // application whose enclave wallet sponsors gas, trusting the sponsor's own key only (as in AWS:
  // whoever holds the op_jwt key cannot act as the sponsor).
  const apps = appsFromFile ?? [await loadOrCreateDevApp(dataDir)];
  const signer = new LocalOpJwtSigner(dataDir);
  const trustedKey = await signer.publicJwk();
  const sponsorSigner = new LocalOpJwtSigner(dataDir, LOCAL_SPONSOR_KEY_FILE);
  const table = { doc: createDocumentClient(dynamodbEndpoint), name: tableName };
  // The dev app's identity provider is `npm run token`: the enclave's op_jwt refusal says how to mint a valid one.
  const devAppHelp = appsFromFile ? {} : { op_jwt_help: 'in this sandbox: npm run token -- --sub <user> --op' };
  await seedApplications(table, [
    ...apps.map((entry) => ({ ...toApplication(entry, [trustedKey]), ...devAppHelp })),
    platformApplication(await sponsorSigner.publicJwk()),
  ]);

  // The transfer machine (statemachines/transfer.asl.json) behind a local Step Functions endpoint;
  // its step Lambdas run in this process with the handlers' environment set below. Executions a
  // killed process left RUNNING are re-driven at the end, once everything is up.
  const stepFunctions = await startLocalStepFunctions({
    dataDir,
    host,
    functions: transferStepResolver(),
    waitMs,
    name: LOCAL_STATE_MACHINE,
    authorize: (operation, body) => {
      const refusal = iam.authorize(stepFunctionsAccessRequests(operation, body as never));
      return refusal ? stepFunctionsAccessDenied(refusal.message) : undefined;
    },
  });
  closers.unshift(() => stepFunctions.stop());

  // The services listen already (above): configure the handlers' environment, then serve.
  Object.assign(process.env, {
    TABLE_NAME: tableName,
    DYNAMODB_ENDPOINT: dynamodbEndpoint,
    DATA_DIR: dataDir,
    KEY_PROVIDER: 'local',
    OP_JWT_SIGNER: 'local',
    SPONSOR_SIGNER: 'local',
    TEE_URL: urls.enclave,
    CHAINS_CONFIG: JSON.stringify(rpcGateway.config),
    VENUE_URLS: JSON.stringify(venues.urls),
    BRIDGE_URL: bridge.url,
    BRIDGE_CONTRACTS: JSON.stringify(bridge.contracts),
    BRIDGE_PROVIDER: 'sandbox_bridge',
    VENUE_NETWORK: 'sandbox',
    // Webhook endpoints may also be http://127.0.0.1, localhost or [::1] here (shared/events/webhook-url.ts).
    WEBHOOK_URLS: 'sandbox',
    SQS_ENDPOINT: queues.endpoint,
    DELIVERY_QUEUE_URL: queues.queueUrl(DELIVERY_QUEUE),
    ALLOWED_7702_DELEGATES: [
      ...new Set(
        Object.values(evm.chains)
          .map((chain) => chain.delegate)
          .filter(Boolean),
      ),
    ].join(','),
    SFN_ENDPOINT: stepFunctions.endpoint,
    TRANSFER_STATE_MACHINE_ARN: stepFunctions.stateMachineArn,
    TRANSFER_STEP_FUNCTIONS: JSON.stringify(localStepFunctionNames()),
    // A sandbox choice (README "Transfers"): 10 bps to recipients generated once under DATA_DIR.
    PLATFORM_FEE: process.env.PLATFORM_FEE ?? (await sandboxPlatformFee(dataDir)),
    // Prices change on request here (POST /sandbox/prices): the next estimate must read them.
    PRICE_CACHE_SECONDS: process.env.PRICE_CACHE_SECONDS ?? '0',
  });
  const sandbox: SandboxChains = { ...chains, info: sandboxInfo(dataDir, urls, options.appsFile, apps) };
  // Each service's URL as a stage variable, so a request sent to the wrong port is answered with
  // the right one (functions/common/not-found.ts); a deployment's stage has none.
  const stageVariables = Object.fromEntries(SERVICES.map((service) => [`${service}_url`, urls[service]]));
  for (const service of SERVICES) {
    const routes = resourceTree(ROUTES.filter((route) => route.service === service));
    servers[service].off('request', starting);
    servers[service].on('request', (req, res) => {
      const started = performance.now();
      // API Gateway gives every request an id before the function sees it.
      const requestId = gatewayRequestId();
      serve(service, routes, req, res, requestId, urls[service], stageVariables, service === 'account' ? sandbox : undefined)
        .catch(() => {
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json', 'x-request-id': requestId });
          res.end(JSON.stringify({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error', request_id: requestId } }));
        })
        .finally(() =>
          options.onRequest?.({
            time: new Date().toISOString(),
            service,
            method: req.method ?? '',
            path: pathWithoutQueryValues(req.url ?? ''),
            status: res.statusCode,
            duration_ms: Math.round((performance.now() - started) * 10) / 10,
            request_id: String(res.getHeader('x-request-id') ?? requestId),
          }),
        );
    });
  }

  await fundGasSponsors(
    chains,
    new EnclaveSponsorPool(new HttpWalletEnclave(urls.enclave), sponsorSigner, new AppRegistry(table), loadSponsorPoolSize(process.env)),
  );
  await stepFunctions.redriveRunning();
  // The publisher and the deliverer, on the table's stream and the delivery queue (stopped before them).
  const events = await startLocalEvents({ stream: tableStream.stream, sqs: queues, tableName, iam: { iam, streamArn: `${tableArn(tableName)}/stream/local` } });
  closers.unshift(() => events.stop());

  return {
    urls,
    apps,
    chains: chainsListing(chains.config),
    venues: venues.listing,
    bridge: bridge.listing,
    stepFunctions,
    dynamodbEndpoint,
    tableName,
    tableStream: tableStream.stream,
    iam,
    stop: async () => {
      for (const closeOne of closers) await closeOne();
    },
  };
}

/** `GET /sandbox/info`: what the CLIs need to follow this sandbox (never a key). */
function sandboxInfo(dataDir: string, urls: Record<ServiceName, string>, appsFile: string | undefined, apps: readonly AppFileEntry[]): SandboxInfo {
  if (appsFile) return { sandbox: true, data_dir: dataDir, urls, applications: 'apps_file', apps_file: resolve(appsFile) };
  const [dev] = apps;
  return {
    sandbox: true,
    data_dir: dataDir,
    urls,
    applications: 'dev',
    dev_app: { app_id: dev!.app_id, provider_id: dev!.oidc.provider_id, issuer: dev!.oidc.issuer },
  };
}

type Handler = (event: unknown, context: unknown) => Promise<unknown>;
const handlers = new Map<string, Promise<Handler>>();

function loadHandler(entry: string): Promise<Handler> {
  let handler = handlers.get(entry);
  if (!handler) {
    handler = import(pathToFileURL(join(ROOT, entry)).href).then((module: { handler: Handler }) => module.handler);
    handlers.set(entry, handler);
  }
  return handler;
}

async function serve(
  service: ServiceName,
  routes: ResourceTree,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  origin: string,
  stageVariables: Readonly<Record<string, string>>,
  sandbox?: SandboxChains,
) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > GATEWAY_MAX_BODY_BYTES) {
      res.writeHead(413, { 'content-type': 'application/json', 'x-request-id': requestId, connection: 'close' });
      res.end(JSON.stringify({ success: false, error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds 10 MB', request_id: requestId } }));
      return;
    }
    chunks.push(chunk as Buffer);
  }
  const { path } = requestTarget(req.url);
  // The sandbox's own pages and routes, before route matching (never Lambda routes).
  if (
    await serveDocs(
      service,
      req,
      res,
      path,
      origin,
      requestIdOf({ headers: { 'x-request-id': req.headers['x-request-id'] as string | undefined } }, { awsRequestId: requestId }),
    )
  )
    return;
  if (sandbox && path.startsWith('/sandbox/')) {
    const event = toEvent(req, Buffer.concat(chunks), { resource: path, pathParameters: {} }, requestId);
    const result = await sandboxRoute(sandbox, event);
    if (result) return writeResult(res, { ...result, headers: { ...result.headers, 'x-request-id': requestIdOf(event, undefined) } });
  }
  const matched = matchResource(routes, req.method ?? 'GET', path);
  const handler = await loadHandler(matched.route.entry);
  const event = toEvent(req, Buffer.concat(chunks), { resource: matched.resource.path, pathParameters: matched.pathParameters }, requestId, stageVariables);
  const context = lambdaContext(matched.route.id, API_FUNCTION_TIMEOUT_SECONDS * 1000);
  // Lambda sets POWERTOOLS_SERVICE_NAME per function; one process serves all three services here.
  const outcome = await invokeWithinLimits(
    () => withServiceName(service, () => runInvocation(context, () => handler(event, context))),
    API_FUNCTION_TIMEOUT_SECONDS * 1000,
    context.awsRequestId,
  );
  if (outcome.kind !== 'result') {
    process.stdout.write(`${outcome.log}\n`);
    return writeResult(res, lambdaErrorResult(requestId));
  }
  writeResult(res, outcome.result as Parameters<typeof writeResult>[1]);
}

function pathWithoutQueryValues(rawUrl: string): string {
  const { path, query } = requestTarget(rawUrl);
  const names = [...new Set(new URLSearchParams(query).keys())];
  return names.length ? `${path}?${names.join('&')}` : path;
}

/**
 * Hosted RPC providers put the API key in the URL path; the sandbox chains take none. This
 * gateway gives the functions such URLs (`http://host:port/<credential>/<CHAIN>`), refuses any
 * other path, and forwards JSON-RPC to the chain, so a leaked RPC URL is a detectable string.
 * It is also served in process (registerLocalEndpoint): the functions' viem clients here
 * (shared/chains/evm/evm-client.ts, `localFetch`) reach it without a loopback HTTP hop.
 */
async function startRpcGateway(config: ChainsConfig, credential: string, host: string) {
  const upstream = new Map<string, string>();
  const answer = (status: number, body: string): LocalResponse => ({ status, headers: { 'content-type': 'application/json' }, body: Buffer.from(body) });
  const handle = async (request: LocalRequest): Promise<LocalResponse> => {
    const [, key, chain] = request.path.split('?')[0]!.split('/');
    const target = key === credential && chain ? upstream.get(chain) : undefined;
    if (!target || request.method !== 'POST') return answer(target ? 405 : 401, '{"error":"unauthorized"}');
    try {
      // To the chain over the sandbox's kept-alive sockets (infra/local/anvil-fetch.ts); the caller giving up aborts it.
      const reply = await anvilExchange(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: request.body,
        ...(request.signal ? { signal: request.signal } : {}),
      });
      return { status: reply.status, headers: { 'content-type': String(reply.headers['content-type'] ?? 'application/json') }, body: reply.body };
    } catch {
      return answer(502, '{"error":"upstream unavailable"}');
    }
  };
  const server = createServer(async (req, res) => {
    const gaveUp = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gaveUp.abort();
    });
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const reply = await handle({ method: req.method ?? 'GET', path: req.url ?? '/', headers: {}, body: Buffer.concat(chunks), signal: gaveUp.signal });
      if (!gaveUp.signal.aborted) res.writeHead(reply.status, reply.headers).end(reply.body);
    } catch {
      res.destroy(); // the request broke off while it was read
    }
  });
  const port = await listen(server, 0, host);
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const unregister = registerLocalEndpoint(`http://${urlHost}:${port}`, handle);
  const keyed = structuredClone(config) as Record<string, unknown>;
  for (const [code, entry] of Object.entries(config)) {
    if (typeof entry !== 'object' || entry === null || !('rpc_url' in entry) || !entry.rpc_url) continue;
    upstream.set(code, entry.rpc_url);
    (keyed[code] as { rpc_url: string }).rpc_url = `http://${urlHost}:${port}/${credential}/${code}`;
  }
  return {
    config: keyed as unknown as ChainsConfig,
    close: async () => {
      unregister();
      await close(server);
    },
  };
}

/**
 * Makes the table's applications exactly the configured ones: upserts each, and deletes those
 * seeded on an earlier start but no longer configured (an app removed from APPS_FILE, or the dev
 * app once APPS_FILE is used), so their credentials stop working.
 */
async function seedApplications(table: Table, apps: Application[]) {
  const previous = ((await getItem(table, keys.localApps()))?.apps ?? []) as Application[];
  const current = new Set(apps.map((app) => app.app_id));
  for (const stale of previous.filter((app) => !current.has(app.app_id))) await deleteApplication(table, stale);
  for (const app of apps) await putApplication(table, app);
  const seeded = apps.map(({ app_id, secret_key_hash, api_key_hash }) => ({ app_id, secret_key_hash, api_key_hash }));
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.localApps(), apps: seeded } }));
}

/**
 * The gas sponsors (issue 25): the treasury (the platform's default enclave wallet, the one
 * sponsor before) and the SPONSOR_POOL_SIZE pool members, enclave wallets created here as the
 * functions and `npm run sponsor:setup` open them. The sandbox funds each from its faucet on every
 * EVM chain (as it funds the treasury): topping the pool up from the treasury with signed
 * transfers, as sponsor:setup does in AWS (test/api/sponsor-setup.test.ts runs that against the
 * sandbox), cost 32 enclave signatures and seconds on every fresh start. A later start tops up
 * only what spent below the minimum.
 */
async function fundGasSponsors(chains: SandboxChains, pool: EnclaveSponsorPool) {
  const addresses = [await pool.treasury.address(), ...(await Promise.all(Array.from({ length: pool.size }, (_, slot) => pool.member(slot).address())))];
  await Promise.all(
    (['ETH', 'ARB', 'POL', 'INK'] as const).map(async (code) => {
      const chain = new EvmChain(code, chains.evm.chains[code]);
      // One chain's faucet credits one at a time (its own queue); the chains in parallel.
      for (const address of addresses) {
        const balance = await chain.balance(address, chain.config.native);
        if (balance < SANDBOX_SPONSOR_MINIMUM) await chains.evm.faucet(code, address, chain.config.native, SANDBOX_SPONSOR_FUNDING - balance);
      }
    }),
  );
}

/** Each sponsor's native coin in the sandbox: topped back up to the funding at start once below the minimum (a long-lived DATA_DIR spends gas). */
const SANDBOX_SPONSOR_MINIMUM = 100n * 10n ** 18n;
const SANDBOX_SPONSOR_FUNDING = 1_000n * 10n ** 18n;

async function ensureTable(endpoint: string, tableName: string) {
  const client = new DynamoDBClient({ endpoint });
  try {
    await client.send(new CreateTableCommand(localCreateTableInput(tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  for (let attempt = 0; attempt < 100; attempt++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return client.destroy();
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

export { LocalRuntimeError };

/**
 * One runtime per DATA_DIR: the embedded engines hold their files open, and a second runtime on
 * the same directory would fail deep inside them. The lock names its owner by pid and, on Linux,
 * by the process's start time (so a reused pid is not mistaken for it). A lock whose owner is gone
 * or dying (a zombie, or SIGKILL already delivered) is taken over: a restart right after
 * `kill -9` works, while the killed process lingers until its parent reaps it.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, 'runtime.lock');
  const mine = `${process.pid} ${(await processStartTime(process.pid)) ?? ''}`.trim();
  for (;;) {
    try {
      await writeFile(path, mine, { flag: 'wx', mode: 0o600 });
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const [pidText = '', startTime] = (await readFile(path, 'utf8').catch(() => '')).trim().split(' ');
    const pid = Number(pidText);
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && (await ownerIsLive(pid, startTime))) {
      throw new LocalRuntimeError(`DATA_DIR ${dataDir} is in use by another local runtime (pid ${pid}): stop it, or set another DATA_DIR`);
    }
    await rm(path, { force: true });
  }
}

/** Whether `pid` is still the running process that wrote the lock (not gone, reused, nor dying). */
async function ownerIsLive(pid: number, startTime: string | undefined): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = await readProcStat(pid);
  if (stat === undefined) return true; // no /proc (macOS): a signalable pid is taken as the owner
  if (stat.state === 'Z' || stat.state === 'X' || stat.state === 'x') return false;
  if (startTime && stat.startTime !== startTime) return false; // the pid was reused
  // SIGKILL delivered but the process not yet torn down (exiting threads, unflushed I/O).
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const pending = [...status.matchAll(/^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/gm)].some((m) => (BigInt(`0x${m[1]}`) & (1n << 8n)) !== 0n);
  return !pending;
}

/** State and start time (clock ticks since boot) from /proc/<pid>/stat; undefined without /proc. */
async function readProcStat(pid: number): Promise<{ state: string; startTime: string } | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', startTime: fields[19] ?? '' };
}

async function processStartTime(pid: number): Promise<string | undefined> {
  return (await readProcStat(pid))?.startTime;
}

/** The variable that sets each service's port (infra/local/start.ts). */
export const PORT_VARIABLES: Record<ServiceName, string> = { account: 'ACCOUNT_PORT', enclave: 'ENCLAVE_PORT', express: 'EXPRESS_PORT' };

/**
 * Names the variable to change, and the holder when it is one of this sandbox's services (they
 * listen before any other part of the sandbox starts, so no other part can be the holder).
 */
function servicePortInUse(service: ServiceName, port: number, host: string, own: Record<string, string | undefined>): LocalRuntimeError {
  const holder = Object.entries(own).find(([, url]) => url && new URL(url).port === String(port))?.[0];
  const variable = PORT_VARIABLES[service];
  return new LocalRuntimeError(
    `${variable}=${port} is in use (${host}:${port}, by ${holder ? `this sandbox's ${holder}` : 'another process'}): set ${variable} to a free port, or 0 for any`,
  );
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((done, fail) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      fail(
        error.code === 'EADDRINUSE' ? new LocalRuntimeError(`port ${port} on ${host} is already in use: stop what holds it, or choose another port`) : error,
      ),
    );
    server.listen(port, host, () => done((server.address() as AddressInfo).port));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((done) => {
    server.close(() => done());
    server.closeAllConnections?.();
  });
}
