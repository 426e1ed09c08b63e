import { CfnOutput, CrossStackReferences, Duration, ReferenceStrength, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  AwsIntegration,
  EndpointType,
  type Integration,
  type IResource,
  type IRestApi,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import type { Construct, IConstruct } from 'constructs';
import type { RouteDefinition, ServiceName } from '../functions/routes.ts';
import { API_INTEGRATION_TIMEOUT_SECONDS, parseRouteKey, resourceTree } from './api-resources.ts';
import { functionRolePath } from './constructs/key-use.ts';
import { type NeedsResources, ServiceFunction, type TransferResources } from './constructs/service-function.ts';

export interface ApiThrottle {
  /**
   * Steady-state requests per second. Set as the stage's default method throttling, which API
   * Gateway applies to each method of the stage separately (not one budget for the whole API).
   */
  readonly rateLimit: number;
  readonly burstLimit: number;
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

/** Each service's REST API construct id; `<id>Url` is its stack's output (AccountApiUrl, …). */
export const API_IDS: Readonly<Record<ServiceName, string>> = { account: 'AccountApi', enclave: 'EnclaveApi', express: 'ExpressApi' };

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
 * `https://<api-id>.execute-api.<region>.<suffix>/<stage>`: the base URL clients append
 * `/health`, `/v2/api/wallet`, … to. No trailing slash (RestApi.url has one). Built in the stack
 * of `scope` (its region and URL suffix), so another stack imports only the API's id.
 */
export function stageUrl(api: IRestApi, scope: IConstruct): string {
  const stack = Stack.of(scope);
  // The stage's name as a literal, not a reference to the stage: a function's TEE_URL then
  // depends on the API alone, never on the deployment that depends on the functions.
  return `https://${api.restApiId}.execute-api.${stack.region}.${stack.urlSuffix}/${API_STAGE_NAME}`;
}

/**
 * Consumers of other stacks' resources import them (Export / Fn::ImportValue): CloudFormation then
 * refuses to delete or change what a deployed stack still uses, and LocalStack understands it
 * (weak references need Fn::GetStackOutput). docs/deploy.md, "Stacks", says why.
 */
export function importStrongly(stack: Stack): void {
  CrossStackReferences.of(stack).consume(ReferenceStrength.STRONG);
}

/**
 * What every stateless stack's functions may refer to, checked once (infra/services-stack.ts):
 * the stateful resources and the configuration. Each stack adds its own `enclaveUrl` (built in
 * that stack: stageUrl) and, for the account service, the transfer machine.
 */
export type SharedNeedsResources = Omit<NeedsResources, 'enclaveUrl' | 'transfers'>;

export interface ServiceApiStackProps extends StackProps {
  readonly service: ServiceName;
  /** This service's routes (functions/routes.ts), the `$default` one included. */
  readonly routes: readonly RouteDefinition[];
  readonly resources: SharedNeedsResources;
  /** The enclave's REST API (TEE_URL of the routes that need `enclaveUrl`). @default this stack's own API */
  readonly enclaveApi?: IRestApi;
  /** The transfer state machine, for routes that need `transfers`. @default none: such a route stops the synth */
  readonly transfers?: TransferResources;
  /** @default DEFAULT_API_THROTTLE */
  readonly throttle?: ApiThrottle;
  /** A REGIONAL WAFv2 web ACL ARN to associate with the stage (checked by ServiceStacks). @default none */
  readonly webAclArn?: string;
  /**
   * API Gateway's account-level CloudWatch Logs setting (infra/api-gateway-logging-stack.ts): the
   * stage waits for it, so this stack deploys after that one. @default none (managed elsewhere)
   */
  readonly apiGatewayAccount?: IConstruct;
}

/**
 * One service: its REST API (one `prod` stage) and one function per route of functions/routes.ts,
 * each granted exactly what its route's `needs` lists. The API's resources and methods are
 * infra/api-resources.ts's tree of the service's routes: a method per route (and HEAD beside each
 * GET, by the GET route's function), and `ANY` on every resource for the `$default` route, so API
 * Gateway never answers with its own 403 "Missing Authentication Token".
 */
export class ServiceApiStack extends Stack {
  readonly service: ServiceName;
  readonly api: RestApi;
  /** Keyed by route id (ROUTES[].id). */
  readonly functions: ReadonlyMap<string, ServiceFunction>;
  /** What a `needs` may refer to in this stack. */
  readonly needsResources: NeedsResources;

  constructor(scope: Construct, id: string, props: ServiceApiStackProps) {
    super(scope, id, props);
    importStrongly(this);
    this.service = props.service;
    const routes = props.routes.filter((route) => route.service === props.service);
    if (routes.length !== props.routes.length) throw new Error(`${id}: routes of another service than ${props.service}`);
    this.api = this.createApi(props.throttle ?? DEFAULT_API_THROTTLE, props.webAclArn, props.apiGatewayAccount);

    this.needsResources = {
      ...props.resources,
      enclaveUrl: stageUrl(props.enclaveApi ?? this.api, this),
      ...(props.transfers ? { transfers: props.transfers } : {}),
    };
    const functions = new Map<string, ServiceFunction>();
    for (const route of routes) {
      const fn = new ServiceFunction(this, route.id, {
        entry: route.entry,
        service: route.service,
        description: `${route.service}: ${route.routeKey}`,
        rolePath: functionRolePath(Stack.of(props.resources.table).stackName, route.id),
      }).bindNeeds(route.needs, this.needsResources);
      functions.set(route.id, fn);
    }
    this.functions = functions;
    this.addRoutes(routes);

    new CfnOutput(this, `${API_IDS[props.service]}Url`, {
      value: stageUrl(this.api, this),
      description: `${props.service} API: its stage URL, no trailing slash`,
    });
  }

  private createApi(throttle: ApiThrottle, webAclArn: string | undefined, apiGatewayAccount: IConstruct | undefined): RestApi {
    const service = this.service;
    const accessLogs = new LogGroup(this, `${API_IDS[service]}AccessLogs`, {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const api = new RestApi(this, API_IDS[service], {
      description: `${service} service`,
      endpointTypes: [EndpointType.REGIONAL],
      // The account-level role is made once for the three APIs (infra/api-gateway-logging-stack.ts).
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
    // RestApi adds an `Endpoint` output with a trailing slash; the stack's own `…ApiUrl` output replaces it.
    api.node.tryRemoveChild('Endpoint');
    // In another stack: CDK makes this a dependency between the stacks (deploy that one first).
    if (apiGatewayAccount) api.deploymentStage.node.addDependency(apiGatewayAccount);
    if (webAclArn) {
      // stageArn refers to the stage (its Ref is the stage name): the association waits for it.
      new CfnWebACLAssociation(this, `${API_IDS[service]}WebAcl`, { resourceArn: api.deploymentStage.stageArn, webAclArn });
    } else {
      Validations.of(api).acknowledge({
        id: 'AwsSolutions-APIG3',
        reason:
          "No AWS WAF web ACL unless the operator passes -c webAclArn=… (ServiceStacks webAclArn, associated with each stage): a web ACL costs a monthly fee per ACL and rule, and LocalStack's free edition, which these stacks must deploy on, has no WAF. Each stage is throttled and every handler authenticates.",
      });
    }
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG2',
      reason:
        "Requests are validated in each handler with the valibot schemas the OpenAPI document is generated from, answering 400 with the spec's JSON error body; an API Gateway request validator would duplicate those schemas as models and answer with a different body.",
    });
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        "Authorization is done in each handler (app secret key, user JWT verified against the app's identity provider, API key, op_jwt or service token: shared/auth/), as the spec defines it per route; an API Gateway authorizer cannot express these and would add a hop. /health and the $default 404/405 are public on purpose.",
    });
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-COG4',
      reason:
        "No Cognito user pool: callers authenticate with app secret keys, user JWTs from each app's own identity provider, API keys, op_jwt or service tokens, all verified in the handlers (shared/auth/); see AwsSolutions-APIG4.",
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
  private addRoutes(routes: readonly RouteDefinition[]): void {
    const api = this.api;
    const tree = resourceTree(routes);
    const nodes = new Map<string, IResource>([['/', api.root]]);
    const lambdaOf = (route: RouteDefinition) => {
      const fn = this.functions.get(route.id);
      if (!fn) throw new Error(`${this.node.path}: no function for route ${route.id}`);
      return fn.lambda;
    };
    const fallback = lambdaOf(tree.fallback);
    for (const resource of tree.resources) {
      let node = nodes.get(resource.path);
      if (!node) {
        // resourceTree lists parents before children.
        const cut = resource.path.lastIndexOf('/');
        const parent = nodes.get(resource.path.slice(0, cut) || '/');
        if (!parent) throw new Error(`${this.node.path}: ${resource.path} comes before its parent`);
        node = parent.addResource(resource.path.slice(cut + 1));
        nodes.set(resource.path, node);
      }
      for (const [httpMethod, route] of resource.methods) {
        const fn = lambdaOf(route);
        const method = node.addMethod(httpMethod, lambdaProxyIntegration(fn));
        // A GET route's function also serves HEAD: a second permission, for that method only.
        const implied = httpMethod !== parseRouteKey(route.routeKey).method;
        fn.addPermission(implied ? `ApiInvoke${httpMethod}` : 'ApiInvoke', { principal: API_GATEWAY, sourceArn: method.methodArn });
      }
      node.addMethod('ANY', lambdaProxyIntegration(fallback));
    }
    fallback.addPermission('ApiInvoke', { principal: API_GATEWAY, sourceArn: api.arnForExecuteApi('*', '/*', api.deploymentStage.stageName) });
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
