import { CfnOutput, CrossStackReferences, Duration, ReferenceStrength, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  AwsIntegration,
  CfnAccount,
  EndpointType,
  type IResource,
  type Integration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import { ROUTES, type ServiceName } from '../functions/routes.ts';
import { API_INTEGRATION_TIMEOUT_SECONDS, parseRouteKey, resourceTree } from './api-resources.ts';
import { type NeedsResources, ServiceFunction } from './constructs/service-function.ts';
import { TransferMachine } from './constructs/transfer-machine.ts';
import { TRANSFER_STEP_FUNCTIONS, type TransferStepFunction } from '../functions/transfer-steps.ts';
import { loadPlatformFee, type PlatformFeeSettings } from '../shared/transfers/platform-fee.ts';
import type { StatefulResources } from './stateful-stack.ts';
import type { ChainsConfig } from '../shared/chains/chain-config.ts';
import { loadVenueUrls, type VenueUrls } from '../shared/config.ts';

export interface ApiThrottle {
  /**
   * Steady-state requests per second. Set as the stage's default method throttling, which API
   * Gateway applies to each method of the stage separately (not one budget for the whole API).
   */
  readonly rateLimit: number;
  readonly burstLimit: number;
}

export interface ServicesStackProps extends StackProps, StatefulResources {
  /** @default DEFAULT_API_THROTTLE */
  readonly throttle?: ApiThrottle;
  /**
   * Chain ids, tokens and EIP-7702 delegates (infra/config/chains.mainnet.json by default). Any
   * `rpc_url` in it is dropped: RPC URLs reach the functions only through `rpcUrlsSecret`.
   */
  readonly chainsConfig: ChainsConfig;
  /**
   * A REGIONAL AWS WAFv2 web ACL (`arn:aws:wafv2:<region>:<account>:regional/webacl/<name>/<id>`)
   * to associate with each API's stage. @default none (LocalStack's free edition has no WAF)
   */
  readonly webAclArn?: string;
  /**
   * Create API Gateway's account-level CloudWatch Logs role (AWS::ApiGateway::Account: one
   * setting per account and region, which REST API logging needs). Turn it off where the account
   * already manages that setting elsewhere (docs/deploy.md). @default true
   */
  readonly apiGatewayCloudWatchRole?: boolean;
  /**
   * The venues' API base URLs by venue id (VENUE_URLS of the venue routes; checked as the
   * functions check it at cold start). A venue left out answers 503 VENUE_NOT_CONFIGURED.
   * @default {} (no venue configured)
   */
  readonly venueUrls?: VenueUrls;
  /**
   * The bridge API's base URL (BRIDGE_URL of the routes and steps that need `bridge`; an http(s)
   * URL, trailing slashes dropped). @default none: BRIDGE_URL is not set and the transfer routes
   * answer 503 (no bridge configured)
   */
  readonly bridgeUrl?: string;
  /**
   * The platform fee as PLATFORM_FEE's JSON (shared/transfers/platform-fee.ts: `{ bps, fixed?,
   * recipients: { EVM?, SOL? } }`), checked as the functions check it. @default none: no fee
   */
  readonly platformFee?: unknown;
  /** The transfer step Lambdas. @default TRANSFER_STEP_FUNCTIONS (functions/transfer-steps.ts) */
  readonly transferSteps?: readonly TransferStepFunction[];
}

/** Well under the account-wide 10,000 rps: a runaway client should hit this, not the bill. */
export const DEFAULT_API_THROTTLE: ApiThrottle = { rateLimit: 50, burstLimit: 100 };

/** The one stage of each REST API; it is the first path segment of every URL (`https://…/prod/health`). */
export const API_STAGE_NAME = 'prod';

/**
 * REST APIs stop waiting for a Lambda integration after 29 s by default (set explicitly here);
 * API_FUNCTION_TIMEOUT (infra/constructs/service-function.ts) ends the function before that.
 */
export const API_INTEGRATION_TIMEOUT = Duration.seconds(API_INTEGRATION_TIMEOUT_SECONDS);

const API_IDS: Record<ServiceName, string> = { account: 'AccountApi', enclave: 'EnclaveApi', express: 'ExpressApi' };

/**
 * One JSON line per request in each API's access log. Only request metadata: no header, query
 * string, body or identity variable other than the source IP, so no credential can reach it.
 * `extendedRequestId` is the id API Gateway returns in `x-amz-apigw-id`; `requestId` is the one
 * the handlers log (`requestContext.requestId`).
 */
export const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  extendedRequestId: '$context.extendedRequestId',
  time: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  method: '$context.httpMethod',
  resourcePath: '$context.resourcePath',
  path: '$context.path',
  protocol: '$context.protocol',
  status: '$context.status',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationStatus: '$context.integrationStatus',
  integrationLatencyMs: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  errorType: '$context.error.responseType',
  xrayTraceId: '$context.xrayTraceId',
});

/**
 * The stateless side: one REST API per service and one function per route of functions/routes.ts,
 * each granted exactly what its route's `needs` lists (functions/routes.ts). Each API's resources
 * and methods are infra/api-resources.ts's tree of that service's routes: a method per route (and
 * HEAD beside each GET, by the GET route's function), and `ANY` on every resource for the
 * `$default` route, so API Gateway never answers with its own
 * 403 "Missing Authentication Token".
 */
export class ServicesStack extends Stack {
  readonly apis: Readonly<Record<ServiceName, RestApi>>;
  /** Keyed by route id (ROUTES[].id). */
  readonly functions: ReadonlyMap<string, ServiceFunction>;
  /** The transfer state machine and its step functions. */
  readonly transfers: TransferMachine;
  /** What a `needs` may refer to in this stack (the transfer machine included). */
  readonly needsResources: NeedsResources;
  /** API Gateway's account-level CloudWatch Logs setting, when this stack manages it. */
  readonly apiGatewayAccount?: CfnAccount;

  constructor(scope: Construct, id: string, props: ServicesStackProps) {
    super(scope, id, props);
    // Export/ImportValue: CloudFormation refuses to delete the stateful stack while functions use
    // it, and LocalStack understands it (weak references need Fn::GetStackOutput).
    CrossStackReferences.of(this).consume(ReferenceStrength.STRONG);
    const throttle = props.throttle ?? DEFAULT_API_THROTTLE;
    if (props.webAclArn !== undefined) assertRegionalWebAclArn(props.webAclArn);
    if (props.apiGatewayCloudWatchRole ?? true) this.apiGatewayAccount = this.createApiGatewayAccount();

    this.apis = {
      account: this.createApi('account', throttle, props.webAclArn),
      enclave: this.createApi('enclave', throttle, props.webAclArn),
      express: this.createApi('express', throttle, props.webAclArn),
    };

    const resources: NeedsResources = {
      table: props.table,
      enclaveKey: props.enclaveKey,
      accountKey: props.accountKey,
      opJwtKey: props.opJwtKey,
      enclaveUrl: this.stageUrl('enclave'),
      publicChainsConfig: JSON.stringify(publicChainsConfig(props.chainsConfig)),
      rpcUrlsSecret: props.rpcUrlsSecret,
      delegates: allowedDelegates(props.chainsConfig),
      // Parsed as the functions parse it: a bad URL or venue id stops the synth, not a cold start.
      venueUrls: JSON.stringify(loadVenueUrls({ VENUE_URLS: JSON.stringify(props.venueUrls ?? {}) })),
      ...(props.bridgeUrl !== undefined ? { bridgeUrl: checkedBridgeUrl(props.bridgeUrl) } : {}),
      ...(props.platformFee !== undefined ? { platformFee: checkedPlatformFee(props.platformFee) } : {}),
    };

    // The step functions and the machine first: the routes that start transfers refer to both.
    this.transfers = new TransferMachine(this, 'Transfers', { steps: props.transferSteps ?? TRANSFER_STEP_FUNCTIONS, resources });
    const withTransfers: NeedsResources = (this.needsResources = {
      ...resources,
      transfers: {
        stateMachine: this.transfers.stateMachine,
        executionsArn: this.transfers.executionsArn,
        stepFunctionArns: this.transfers.stepFunctionArns(),
      },
    });

    const functions = new Map<string, ServiceFunction>();
    for (const route of ROUTES) {
      const fn = new ServiceFunction(this, route.id, {
        entry: route.entry,
        service: route.service,
        description: `${route.service}: ${route.routeKey}`,
      }).bindNeeds(route.needs, withTransfers);
      functions.set(route.id, fn);
    }
    this.functions = functions;
    for (const service of Object.keys(API_IDS) as ServiceName[]) this.addRoutes(service);

    new CfnOutput(this, 'TransferStateMachineArn', { value: this.transfers.stateMachine.stateMachineArn, description: 'Transfer state machine (redrive, stop: docs/deploy.md)' });
    for (const service of Object.keys(API_IDS) as ServiceName[]) {
      new CfnOutput(this, `${API_IDS[service]}Url`, { value: this.stageUrl(service), description: `${service} API: its stage URL, no trailing slash` });
    }
  }

  /**
   * `https://<api-id>.execute-api.<region>.<suffix>/<stage>`: the base URL clients append
   * `/health`, `/v2/api/wallet`, … to. No trailing slash (RestApi.url has one).
   */
  stageUrl(service: ServiceName): string {
    // The stage's name as a literal, not a reference to the stage: a function's TEE_URL then
    // depends on the API alone, never on the deployment that depends on the functions.
    return `https://${this.apis[service].restApiId}.execute-api.${this.region}.${this.urlSuffix}/${API_STAGE_NAME}`;
  }

  private createApi(service: ServiceName, throttle: ApiThrottle, webAclArn: string | undefined): RestApi {
    const accessLogs = new LogGroup(this, `${API_IDS[service]}AccessLogs`, {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const api = new RestApi(this, API_IDS[service], {
      description: `${service} service`,
      endpointTypes: [EndpointType.REGIONAL],
      // This stack makes the account-level role itself (createApiGatewayAccount), once for the three APIs.
      cloudWatchRole: false,
      deploy: true,
      retainDeployments: false,
      deployOptions: {
        stageName: API_STAGE_NAME,
        description: `${service} service`,
        throttlingRateLimit: throttle.rateLimit,
        throttlingBurstLimit: throttle.burstLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.custom(ACCESS_LOG_FORMAT),
        tracingEnabled: true,
        // Execution logs: errors only, and never request or response bodies (they carry keys and tokens).
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: false,
      },
    });
    addGatewayResponses(api);
    // RestApi adds an `Endpoint` output with a trailing slash; the stack's own `…ApiUrl` outputs replace it.
    api.node.tryRemoveChild('Endpoint');
    if (this.apiGatewayAccount) api.deploymentStage.node.addDependency(this.apiGatewayAccount);
    if (webAclArn) {
      // stageArn refers to the stage (its Ref is the stage name): the association waits for it.
      new CfnWebACLAssociation(this, `${API_IDS[service]}WebAcl`, { resourceArn: api.deploymentStage.stageArn, webAclArn });
    } else {
      Validations.of(api).acknowledge({
        id: 'AwsSolutions-APIG3',
        reason:
          'No AWS WAF web ACL unless the operator passes -c webAclArn=… (ServicesStack webAclArn, associated with each stage): a web ACL costs a monthly fee per ACL and rule, and LocalStack\'s free edition, which this stack must deploy on, has no WAF. Each stage is throttled and every handler authenticates.',
      });
    }
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG2',
      reason:
        'Requests are validated in each handler with the valibot schemas the OpenAPI document is generated from, answering 400 with the spec\'s JSON error body; an API Gateway request validator would duplicate those schemas as models and answer with a different body.',
    });
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Authorization is done in each handler (app secret key, user JWT verified against the app\'s identity provider, API key, op_jwt or service token: shared/auth/), as the spec defines it per route; an API Gateway authorizer cannot express these and would add a hop. /health and the $default 404/405 are public on purpose.',
    });
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-COG4',
      reason:
        'No Cognito user pool: callers authenticate with app secret keys, user JWTs from each app\'s own identity provider, API keys, op_jwt or service tokens, all verified in the handlers (shared/auth/); see AwsSolutions-APIG4.',
    });
    return api;
  }

  /**
   * The service's resource tree (infra/api-resources.ts): each route a method with a Lambda proxy
   * integration to its function, and `ANY` on every resource (root included) to the `$default`
   * function. Each function gets one invoke permission, for this API's stage only: a route's for
   * its own method and resource (a GET route's one more, for HEAD there), the `$default` function's
   * for any method and path of the stage.
   */
  private addRoutes(service: ServiceName): void {
    const api = this.apis[service];
    const tree = resourceTree(ROUTES.filter((route) => route.service === service));
    const nodes = new Map<string, IResource>([['/', api.root]]);
    const fallback = this.functions.get(tree.fallback.id)!.lambda;
    for (const resource of tree.resources) {
      let node = nodes.get(resource.path);
      if (!node) {
        const cut = resource.path.lastIndexOf('/');
        node = nodes.get(resource.path.slice(0, cut) || '/')!.addResource(resource.path.slice(cut + 1));
        nodes.set(resource.path, node);
      }
      for (const [httpMethod, route] of resource.methods) {
        const fn = this.functions.get(route.id)!.lambda;
        const method = node.addMethod(httpMethod, lambdaProxyIntegration(fn));
        // A GET route's function also serves HEAD: a second permission, for that method only.
        const implied = httpMethod !== parseRouteKey(route.routeKey).method;
        fn.addPermission(implied ? `ApiInvoke${httpMethod}` : 'ApiInvoke', { principal: API_GATEWAY, sourceArn: method.methodArn });
      }
      node.addMethod('ANY', lambdaProxyIntegration(fallback));
    }
    fallback.addPermission('ApiInvoke', { principal: API_GATEWAY, sourceArn: api.arnForExecuteApi('*', '/*', api.deploymentStage.stageName) });
  }

  /**
   * The IAM role API Gateway uses to write REST API access and execution logs, set as the
   * account's CloudWatch role for this region. Retained on delete: the setting outlives the stack
   * (CloudFormation cannot unset it), and other APIs of the region may log through it.
   */
  private createApiGatewayAccount(): CfnAccount {
    const role = new Role(this, 'ApiGatewayCloudWatchRole', {
      assumedBy: new ServicePrincipal('apigateway.amazonaws.com'),
      description: 'API Gateway: push REST API logs to CloudWatch Logs (account setting for this region)',
      managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName('service-role/AmazonAPIGatewayPushToCloudWatchLogs')],
    });
    role.applyRemovalPolicy(RemovalPolicy.RETAIN);
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason:
        'The policy AWS documents for API Gateway\'s account-level logging role. The role serves every REST API of the account and region, and API Gateway creates the execution log groups itself (API-Gateway-Execution-Logs_<api-id>/<stage>), so it cannot be narrowed to this stack\'s log groups.',
    });
    return new CfnAccount(this, 'ApiGatewayAccount', { cloudWatchRoleArn: role.roleArn });
  }
}

const API_GATEWAY = new ServicePrincipal('apigateway.amazonaws.com');

/**
 * AWS_PROXY to `fn` (Lambda proxy integration, payload format 1.0): what LambdaIntegration
 * builds, without the permission it adds per method (two with allowTestInvoke, or one for any
 * stage of the API with scopePermissionToMethod: false); addRoutes grants each function once.
 */
function lambdaProxyIntegration(fn: IFunction): Integration {
  return new AwsIntegration({
    proxy: true,
    service: 'lambda',
    path: `2015-03-31/functions/${fn.functionArn}/invocations`,
    options: { timeout: API_INTEGRATION_TIMEOUT },
  });
}

/** BRIDGE_URL as the stack sets it: an http(s) URL without trailing slashes; anything else stops the synth. */
export function checkedBridgeUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`bridgeUrl must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error(`bridgeUrl must be an http(s) URL, got ${JSON.stringify(url)}`);
  return url.replace(/\/+$/, '');
}

/** PLATFORM_FEE as the stack sets it: the JSON the functions parse (loadPlatformFee), refused at synth when they would refuse it. */
export function checkedPlatformFee(fee: unknown): string {
  const json = typeof fee === 'string' ? fee : JSON.stringify(fee);
  const settings: PlatformFeeSettings = loadPlatformFee({ PLATFORM_FEE: json });
  return JSON.stringify({ bps: Number(settings.bps), fixed: settings.fixed.toString(), recipients: settings.recipients });
}

/** A web ACL for API Gateway must be REGIONAL (a CLOUDFRONT one cannot be associated with a stage). */
function assertRegionalWebAclArn(arn: string): void {
  if (!/^arn:aws[a-z-]*:wafv2:[a-z0-9-]+:\d{12}:regional\/webacl\/[^/]+\/[^/]+$/.test(arn)) {
    throw new Error(`webAclArn must be a REGIONAL WAFv2 web ACL ARN (arn:aws:wafv2:<region>:<account>:regional/webacl/<name>/<id>), got "${arn}"`);
  }
}

/**
 * What API Gateway itself answers (before or instead of a function) in the services' error shape,
 * `{ success: false, error: { code, message, request_id } }`, instead of its `{"message": …}`.
 * The local runtime answers the 10 MB limit the same way (infra/local/runtime.ts).
 */
export const GATEWAY_RESPONSES: readonly { type: ResponseType; status: string; code: string; message: string }[] = [
  { type: ResponseType.REQUEST_TOO_LARGE, status: '413', code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds 10 MB' },
  { type: ResponseType.THROTTLED, status: '429', code: 'RATE_LIMITED', message: 'Too many requests: retry later' },
  { type: ResponseType.INTEGRATION_TIMEOUT, status: '504', code: 'TIMEOUT', message: 'The request took too long' },
  // Every resource has ANY (infra/api-resources.ts), so this only guards against a gap in that tree.
  { type: ResponseType.MISSING_AUTHENTICATION_TOKEN, status: '404', code: 'ROUTE_NOT_FOUND', message: 'No such route' },
  // API Gateway's own message (a JSON string: `$context.error.messageString` is quoted), e.g. "Unsupported Media Type".
  { type: ResponseType.DEFAULT_4XX, status: '400', code: 'BAD_REQUEST', message: '$context.error.messageString' },
  { type: ResponseType.DEFAULT_5XX, status: '500', code: 'INTERNAL_ERROR', message: 'Internal server error' },
];

function addGatewayResponses(api: RestApi): void {
  for (const { type, status, code, message } of GATEWAY_RESPONSES) {
    api.addGatewayResponse(`Json${type.responseType}`, {
      type,
      // DEFAULT_4XX/5XX keep the status API Gateway chose (e.g. 415, 502); the others are fixed.
      ...(type === ResponseType.DEFAULT_4XX || type === ResponseType.DEFAULT_5XX ? {} : { statusCode: status }),
      responseHeaders: { 'Cache-Control': "'no-store'" },
      templates: {
        'application/json': `{"success":false,"error":{"code":"${code}","message":${message.startsWith('$context.') ? message : JSON.stringify(message)},"request_id":"$context.requestId"}}`,
      },
    });
  }
}

/** The chains config without RPC URLs: those are secrets (API keys in the path) and live in Secrets Manager. */
export function publicChainsConfig(chains: ChainsConfig): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(chains).map(([code, chain]) => {
      if (typeof chain !== 'object' || chain === null) return [code, chain];
      const { rpc_url: _secret, ...rest } = chain as { rpc_url?: string };
      return [code, rest];
    }),
  );
}

/** ALLOWED_7702_DELEGATES: the distinct delegates of the EVM chains, comma-separated. */
export function allowedDelegates(chains: ChainsConfig): string {
  const delegates = [chains.ETH, chains.ARB, chains.POL, chains.INK].map((chain) => chain.delegate).filter((d): d is string => Boolean(d));
  return [...new Set(delegates)].join(',');
}
