import { readFileSync } from 'node:fs';
import type { App } from 'aws-cdk-lib';
import * as v from 'valibot';
import { TRANSFER_STEP_FUNCTIONS } from '../../../functions/transfer-steps.ts';
import { ServicesStack, type ServicesStackProps } from '../../../infra/services-stack.ts';
import { StatefulStack, type StatefulStackProps } from '../../../infra/stateful-stack.ts';
import { ChainsConfigSchema } from '../../../shared/chains/chain-config.ts';

/** Optional ServicesStack props a test may set (the rest come from the stateful stack and the chains config). */
type ServicesOptions = Pick<ServicesStackProps, 'throttle' | 'webAclArn' | 'apiGatewayCloudWatchRole' | 'venueUrls' | 'bridgeUrl' | 'platformFee' | 'transferSteps'>;

/** The two stacks as infra/app.ts wires them, with the default (mainnet) chains config. */
export function buildStacks(app: App, options: { ids?: readonly [string, string]; stateful?: StatefulStackProps; services?: ServicesOptions } = {}) {
  const [statefulId, servicesId] = options.ids ?? ['Stateful', 'Services'];
  const stateful = new StatefulStack(app, statefulId, options.stateful);
  const services = new ServicesStack(app, servicesId, {
    table: stateful.table,
    enclaveKey: stateful.enclaveKey,
    accountKey: stateful.accountKey,
    opJwtKey: stateful.opJwtKey,
    rpcUrlsSecret: stateful.rpcUrlsSecret,
    chainsConfig: v.parse(ChainsConfigSchema, JSON.parse(readFileSync(new URL('../../../infra/config/chains.mainnet.json', import.meta.url), 'utf8'))),
    transferSteps: TRANSFER_STEP_FUNCTIONS,
    ...options.services,
  });
  return { stateful, services };
}
