import { CfnOutput, CrossStackReferences, ReferenceStrength, Stack, type StackProps } from 'aws-cdk-lib';
import { CfnStage, HttpApi, HttpMethod, HttpRoute, HttpRouteKey } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { Construct } from 'constructs';
import { ROUTES, SERVICE_NEEDS, type RouteDefinition, type ServiceName } from '../functions/routes.ts';
import { ServiceFunction } from './constructs/service-function.ts';
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
  /** RPC URLs, chain ids, tokens and EIP-7702 delegates (infra/config/chains.mainnet.json by default). */
  readonly chainsConfig: ChainsConfig;
}

/** Well under the account-wide 10,000 rps: a runaway client should hit this, not the bill. */
export const DEFAULT_API_THROTTLE: ApiThrottle = { rateLimit: 50, burstLimit: 100 };

const API_IDS: Record<ServiceName, string> = { account: 'AccountApi', enclave: 'EnclaveApi', express: 'ExpressApi' };

/**
 * The stateless side: one HTTP API per service and one function per route of functions/routes.ts,
 * each granted exactly what SERVICE_NEEDS lists for its service.
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

    const functions = new Map<string, ServiceFunction>();
    for (const route of ROUTES) {
      const fn = new ServiceFunction(this, route.id, {
        entry: route.entry,
        description: `${route.service}: ${route.routeKey}`,
        environment: { KEY_PROVIDER: 'kms', OP_JWT_SIGNER: 'kms' },
      });
      this.bindNeeds(fn, route, props);
      this.bindChains(fn, route, props.chainsConfig);
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
    return api;
  }

  private bindChains(fn: ServiceFunction, route: RouteDefinition, chains: ChainsConfig): void {
    const needs = SERVICE_NEEDS[route.service];
    if (needs.chains) fn.lambda.addEnvironment('CHAINS_CONFIG', JSON.stringify(chains));
    if (needs.delegates) {
      const delegates = [chains.ETH, chains.ARB, chains.POL, chains.INK].map((chain) => chain.delegate).filter((d): d is string => Boolean(d));
      fn.lambda.addEnvironment('ALLOWED_7702_DELEGATES', [...new Set(delegates)].join(','));
    }
  }

  private bindNeeds(fn: ServiceFunction, route: RouteDefinition, resources: StatefulResources): void {
    const needs = SERVICE_NEEDS[route.service];
    if (needs.table) fn.bindTable(resources.table);
    if (needs.enclaveKey) fn.bindEnclaveKey(resources.enclaveKey);
    if (needs.accountKey) fn.bindAccountKey(resources.accountKey);
    if (needs.opJwtKey) fn.bindOpJwtKey(resources.opJwtKey);
    if (needs.enclaveUrl) fn.bindTeeUrl(this.apis.enclave.apiEndpoint);
  }
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
