import { CfnOutput, CrossStackReferences, ReferenceStrength, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { CfnStage, HttpApi, HttpMethod, HttpRoute, HttpRouteKey } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { Construct } from 'constructs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { ROUTES, type ServiceName } from '../functions/routes.ts';
import { type NeedsResources, ServiceFunction } from './constructs/service-function.ts';
import type { StatefulResources } from './stateful-stack.ts';
import type { ChainsConfig } from '../shared/chains/chain-config.ts';

export interface ApiThrottle {
  /** Steady-state requests per second, per API (default stage, all routes). */
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
}

/** Well under the account-wide 10,000 rps: a runaway client should hit this, not the bill. */
export const DEFAULT_API_THROTTLE: ApiThrottle = { rateLimit: 50, burstLimit: 100 };

const API_IDS: Record<ServiceName, string> = { account: 'AccountApi', enclave: 'EnclaveApi', express: 'ExpressApi' };

/**
 * One JSON line per request in each API's access log. Only request metadata: no header, query
 * string or body variable, so no credential can reach it.
 */
export const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  time: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  method: '$context.httpMethod',
  routeKey: '$context.routeKey',
  path: '$context.path',
  protocol: '$context.protocol',
  status: '$context.status',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationStatus: '$context.integrationStatus',
  integrationLatencyMs: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
});

/**
 * The stateless side: one HTTP API per service and one function per route of functions/routes.ts,
 * each granted exactly what its route's `needs` lists (functions/routes.ts).
 */
export class ServicesStack extends Stack {
  readonly apis: Readonly<Record<ServiceName, HttpApi>>;
  /** Keyed by route id (ROUTES[].id). */
  readonly functions: ReadonlyMap<string, ServiceFunction>;

  constructor(scope: Construct, id: string, props: ServicesStackProps) {
    super(scope, id, props);
    // Export/ImportValue: CloudFormation refuses to delete the stateful stack while functions use
    // it, and LocalStack understands it (weak references need Fn::GetStackOutput).
    CrossStackReferences.of(this).consume(ReferenceStrength.STRONG);
    const throttle = props.throttle ?? DEFAULT_API_THROTTLE;

    this.apis = {
      account: this.createApi('account', throttle),
      enclave: this.createApi('enclave', throttle),
      express: this.createApi('express', throttle),
    };

    const resources: NeedsResources = {
      table: props.table,
      enclaveKey: props.enclaveKey,
      accountKey: props.accountKey,
      opJwtKey: props.opJwtKey,
      enclaveUrl: this.apis.enclave.apiEndpoint,
      publicChainsConfig: JSON.stringify(publicChainsConfig(props.chainsConfig)),
      rpcUrlsSecret: props.rpcUrlsSecret,
      delegates: allowedDelegates(props.chainsConfig),
    };

    const functions = new Map<string, ServiceFunction>();
    for (const route of ROUTES) {
      const fn = new ServiceFunction(this, route.id, {
        entry: route.entry,
        service: route.service,
        description: `${route.service}: ${route.routeKey}`,
      }).bindNeeds(route.needs, resources);
      const api = this.apis[route.service];
      new HttpRoute(api, `${route.id}Route`, {
        httpApi: api,
        routeKey: toHttpRouteKey(route.routeKey),
        integration: new HttpLambdaIntegration(`${route.id}Integration`, fn.lambda),
      });
      functions.set(route.id, fn);
    }
    this.functions = functions;

    for (const service of Object.keys(API_IDS) as ServiceName[]) {
      new CfnOutput(this, `${API_IDS[service]}Url`, { value: this.apis[service].apiEndpoint });
    }
  }

  private createApi(service: ServiceName, throttle: ApiThrottle): HttpApi {
    const api = new HttpApi(this, API_IDS[service], { description: `${service} service` });
    // HttpApi exposes no stage options for its auto-created $default stage; set them on the L1.
    const stage = api.defaultStage?.node.defaultChild as CfnStage;
    stage.defaultRouteSettings = {
      throttlingRateLimit: throttle.rateLimit,
      throttlingBurstLimit: throttle.burstLimit,
    };
    const accessLogs = new LogGroup(this, `${API_IDS[service]}AccessLogs`, {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    stage.accessLogSettings = { destinationArn: accessLogs.logGroupArn, format: ACCESS_LOG_FORMAT };
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Authorization is done in each handler (app secret key, user JWT verified against the app\'s identity provider, API key, op_jwt or service token: shared/auth/), as the spec defines it per route; an API Gateway authorizer cannot express these and would add a hop. /health and the $default 404 are public on purpose.',
    });
    return api;
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

/** `'POST /account'` or `'$default'` (the API Gateway spelling used in ROUTES) to a route key. */
export function toHttpRouteKey(routeKey: string): HttpRouteKey {
  if (routeKey === '$default') return HttpRouteKey.DEFAULT;
  const match = /^([A-Z]+) (\/\S*)$/.exec(routeKey);
  const method = match?.[1];
  const path = match?.[2];
  if (!method || !path || !Object.values<string>(HttpMethod).includes(method)) {
    throw new Error(`Unsupported route key "${routeKey}": expected "METHOD /path" or "$default"`);
  }
  return HttpRouteKey.with(path, method as HttpMethod);
}
