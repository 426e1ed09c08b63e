import type { Environment, Stack } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import type { Construct } from 'constructs';
import { EVENT_FUNCTIONS, type EventFunction } from '../functions/events.ts';
import { ROUTES, type ServiceName } from '../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS, type TransferStepFunction } from '../functions/transfer-steps.ts';
import type { ChainsConfig } from '../shared/chains/chain-config.ts';
import { loadSponsorPoolSize, loadVenueUrls, type VenueUrls } from '../shared/config.ts';
import { loadPlatformFee, type PlatformFeeSettings } from '../shared/transfers/platform-fee.ts';
import { ApiGatewayLoggingStack } from './api-gateway-logging-stack.ts';
import { type ApiThrottle, ServiceApiStack, type SharedNeedsResources } from './api-stack.ts';
import type { ServiceFunction } from './constructs/service-function.ts';
import { EventsStack } from './events-stack.ts';
import type { StatefulResources } from './stateful-stack.ts';
import { TransfersStack } from './transfers-stack.ts';

// The stateless stacks' public names, where infra/api-stack.ts defines them.
export {
  ACCESS_LOG_FORMAT,
  API_INTEGRATION_TIMEOUT,
  API_STAGE_NAME,
  type ApiThrottle,
  DEFAULT_API_THROTTLE,
  GATEWAY_RESPONSES,
  stageUrl,
} from './api-stack.ts';

export interface ServiceStacksProps extends StatefulResources {
  /** Stack ids are `<prefix>Enclave`, `<prefix>Transfers`, … @default 'PerpWallet-' */
  readonly prefix?: string;
  readonly env?: Environment;
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
   * setting per account and region, which REST API logging needs) in its own stack,
   * `<prefix>ApiGatewayLogging`. Turn it off where the account already manages that setting
   * elsewhere (docs/deploy.md). @default true
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
   * URL, trailing slashes dropped), speaking LI.FI's public API (docs/bridge.md).
   * @default LIFI_API_URL, LI.FI's public endpoint
   */
  readonly bridgeUrl?: string;
  /**
   * The platform fee as PLATFORM_FEE's JSON (shared/transfers/platform-fee.ts: `{ bps, fixed?,
   * recipients: { EVM?, SOL? } }`), checked as the functions check it. @default none: no fee
   */
  readonly platformFee?: unknown;
  /**
   * Gas sponsors per EVM chain (SPONSOR_POOL_SIZE of the functions that sponsor: 1-64), the same
   * number `npm run sponsor:setup --pool-size` creates and funds. @default unset: the functions' 8
   */
  readonly sponsorPoolSize?: number | string;
  /** The transfer step Lambdas. @default TRANSFER_STEP_FUNCTIONS (functions/transfer-steps.ts) */
  readonly transferSteps?: readonly TransferStepFunction[];
  /** The event publisher and webhook deliverer. @default EVENT_FUNCTIONS (functions/events.ts) */
  readonly eventFunctions?: readonly EventFunction[];
}

const STACK_NAMES = { enclave: 'Enclave', account: 'Account', express: 'Express' } as const satisfies Record<ServiceName, string>;

/**
 * The stateless side, one stack per seam (docs/deploy.md, "Stacks"): each service's REST API with
 * its route functions (`<prefix>Account`, `<prefix>Enclave`, `<prefix>Express`), the transfer state
 * machine with its step functions (`<prefix>Transfers`), events and webhooks (`<prefix>Events`: the
 * delivery queue, the stream publisher and the deliverer), and API Gateway's region-wide logging
 * role (`<prefix>ApiGatewayLogging`). CloudFormation allows 500 resources per stack; split so, each
 * holds under 300 (asserted in test/infra/stacks.test.ts). They refer to the stateful stack and to
 * each other by passing constructs, which CDK turns into exports and imports:
 * Stateful <- Enclave (TEE_URL) <- Transfers <- Account, Enclave <- Express, Stateful <- Events
 * (<- Account once a route sends to the delivery queue); no cycle.
 */
export class ServiceStacks {
  readonly apiGatewayLogging?: ApiGatewayLoggingStack;
  readonly enclave: ServiceApiStack;
  readonly transfers: TransfersStack;
  readonly events: EventsStack;
  readonly account: ServiceApiStack;
  readonly express: ServiceApiStack;

  constructor(scope: Construct, props: ServiceStacksProps) {
    const prefix = props.prefix ?? 'PerpWallet-';
    if (props.webAclArn !== undefined) assertRegionalWebAclArn(props.webAclArn);
    const shared: SharedNeedsResources = {
      table: props.table,
      enclaveKey: props.enclaveKey,
      accountKey: props.accountKey,
      opJwtKey: props.opJwtKey,
      sponsorKey: props.sponsorKey,
      publicChainsConfig: JSON.stringify(publicChainsConfig(props.chainsConfig)),
      rpcUrlsSecret: props.rpcUrlsSecret,
      delegates: allowedDelegates(props.chainsConfig),
      // Parsed as the functions parse it: a bad URL or venue id stops the synth, not a cold start.
      venueUrls: JSON.stringify(loadVenueUrls({ VENUE_URLS: JSON.stringify(props.venueUrls ?? {}) })),
      bridgeUrl: checkedBridgeUrl(props.bridgeUrl ?? LIFI_API_URL),
      ...(props.platformFee !== undefined ? { platformFee: checkedPlatformFee(props.platformFee) } : {}),
      // Checked as the functions check it: an out-of-range size stops the synth.
      ...(props.sponsorPoolSize !== undefined ? { sponsorPoolSize: String(loadSponsorPoolSize({ SPONSOR_POOL_SIZE: String(props.sponsorPoolSize) })) } : {}),
    };

    // The delivery queue for the routes that send to it (replay), and the event functions themselves.
    this.events = new EventsStack(scope, `${prefix}Events`, {
      env: props.env,
      description: 'Perp wallet: events and webhooks (delivery queue, stream publisher, deliverer)',
      resources: shared,
      table: props.table,
      functions: props.eventFunctions ?? EVENT_FUNCTIONS,
    });
    const resources: SharedNeedsResources = { ...shared, deliveryQueue: this.events.deliveryQueue };

    if (props.apiGatewayCloudWatchRole ?? true) {
      this.apiGatewayLogging = new ApiGatewayLoggingStack(scope, `${prefix}ApiGatewayLogging`, {
        env: props.env,
        description: "Perp wallet: API Gateway's account-level CloudWatch Logs role (one per region)",
      });
    }
    const api = (service: ServiceName, extra: { enclaveApi?: RestApi; transfers?: TransfersStack }) =>
      new ServiceApiStack(scope, `${prefix}${STACK_NAMES[service]}`, {
        env: props.env,
        description: `Perp wallet: ${service} REST API and its functions`,
        service,
        routes: ROUTES.filter((route) => route.service === service),
        resources,
        throttle: props.throttle,
        webAclArn: props.webAclArn,
        apiGatewayAccount: this.apiGatewayLogging?.apiGatewayAccount,
        enclaveApi: extra.enclaveApi,
        transfers: extra.transfers?.transferResources,
      });

    // The enclave first: the others call it (TEE_URL). The machine before the account service, whose routes start it.
    this.enclave = api('enclave', {});
    this.transfers = new TransfersStack(scope, `${prefix}Transfers`, {
      env: props.env,
      description: 'Perp wallet: transfer state machine and its step functions',
      steps: props.transferSteps ?? TRANSFER_STEP_FUNCTIONS,
      resources,
      enclaveApi: this.enclave.api,
    });
    this.account = api('account', { enclaveApi: this.enclave.api, transfers: this.transfers });
    this.express = api('express', { enclaveApi: this.enclave.api });
  }

  /** Every stateless stack, in deployment order. */
  get stacks(): Stack[] {
    return [...(this.apiGatewayLogging ? [this.apiGatewayLogging] : []), this.enclave, this.transfers, this.events, this.account, this.express];
  }

  /** The three services' stacks. */
  get apiStacks(): Readonly<Record<ServiceName, ServiceApiStack>> {
    return { account: this.account, enclave: this.enclave, express: this.express };
  }

  /** The three REST APIs. */
  get apis(): Readonly<Record<ServiceName, RestApi>> {
    return { account: this.account.api, enclave: this.enclave.api, express: this.express.api };
  }

  /** Every route's function (by route id), every transfer step's (by step id) and the event functions (by id). */
  get functions(): ReadonlyMap<string, ServiceFunction> {
    return new Map([
      ...[this.account, this.enclave, this.express].flatMap((stack) => [...stack.functions]),
      ...[...this.transfers.transfers.stepFunctions.values(), ...this.events.functions.values()].map((fn) => [fn.node.id, fn] as const),
    ]);
  }
}

/** LI.FI's public API (research B: base `https://li.quest/v1`; the client adds `/v1/…`). */
export const LIFI_API_URL = 'https://li.quest';

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
