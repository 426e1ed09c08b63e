import { readFileSync } from 'node:fs';
import type { App } from 'aws-cdk-lib';
import * as v from 'valibot';
import { TRANSFER_STEP_FUNCTIONS } from '../../../functions/transfer-steps.ts';
import { ServiceStacks, type ServiceStacksProps } from '../../../infra/services-stack.ts';
import { StatefulStack, type StatefulStackProps } from '../../../infra/stateful-stack.ts';
import { ChainsConfigSchema } from '../../../shared/chains/chain-config.ts';

/** Optional ServiceStacks props a test may set (the rest come from the stateful stack and the chains config). */
type ServicesOptions = Pick<
  ServiceStacksProps,
  'throttle' | 'webAclArn' | 'apiGatewayCloudWatchRole' | 'venueUrls' | 'bridgeUrl' | 'platformFee' | 'sponsorPoolSize' | 'transferSteps'
>;

/**
 * The stacks as infra/app.ts wires them, with the default (mainnet) chains config. Stack ids are
 * `<prefix>Stateful`, `<prefix>Enclave`, `<prefix>Transfers`, `<prefix>Account`, … (no prefix by default).
 */
export function buildStacks(app: App, options: { prefix?: string; stateful?: StatefulStackProps; services?: ServicesOptions } = {}) {
  const prefix = options.prefix ?? '';
  const stateful = new StatefulStack(app, `${prefix}Stateful`, options.stateful);
  const services = new ServiceStacks(app, {
    prefix,
    table: stateful.table,
    enclaveKey: stateful.enclaveKey,
    accountKey: stateful.accountKey,
    opJwtKey: stateful.opJwtKey,
    sponsorKey: stateful.sponsorKey,
    rpcUrlsSecret: stateful.rpcUrlsSecret,
    chainsConfig: v.parse(ChainsConfigSchema, JSON.parse(readFileSync(new URL('../../../infra/config/chains.mainnet.json', import.meta.url), 'utf8'))),
    transferSteps: TRANSFER_STEP_FUNCTIONS,
    ...options.services,
  });
  return { stateful, services };
}
