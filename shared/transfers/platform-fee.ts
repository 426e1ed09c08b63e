import * as v from 'valibot';
import { ConfigError } from '../config.ts';
import type { PlatformFeeConfig } from './estimate.ts';

/**
 * The platform fee as configured (PLATFORM_FEE, JSON): what the estimate shows and what the
 * first step that holds the money in the user's wallet sends to the recipient of that chain
 * family. No recipient for a family means no fee on routes whose first wallet holding is there:
 * the service never charges what it cannot collect.
 *
 * `{ "bps": 10, "fixed": "0", "recipients": { "EVM": "0x…", "SOL": "<base58>" } }`
 * Absent PLATFORM_FEE: no fee (AWS default). The local sandbox sets 10 bps with recipients it
 * generates (a sandbox choice, README "Transfers").
 */
export interface PlatformFeeSettings extends PlatformFeeConfig {
  readonly recipients: { readonly EVM?: `0x${string}`; readonly SOL?: string };
}

export const NO_PLATFORM_FEE: PlatformFeeSettings = { fixed: 0n, bps: 0n, recipients: {} };

const Schema = v.object({
  bps: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000)),
  fixed: v.optional(v.pipe(v.string(), v.regex(/^[0-9]{1,18}$/, 'must be base units as a decimal string')), '0'),
  recipients: v.object({
    EVM: v.optional(v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x address'))),
    SOL: v.optional(v.pipe(v.string(), v.regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 address'))),
  }),
});

export function loadPlatformFee(env = process.env): PlatformFeeSettings {
  const raw = env.PLATFORM_FEE;
  if (!raw) return NO_PLATFORM_FEE;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError('Invalid configuration: PLATFORM_FEE: must be JSON');
  }
  const result = v.safeParse(Schema, json);
  if (!result.success)
    throw new ConfigError(`Invalid configuration: PLATFORM_FEE: ${result.issues.map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.message}`).join('; ')}`);
  const { bps, fixed, recipients } = result.output;
  return { bps: BigInt(bps), fixed: BigInt(fixed), recipients: recipients as PlatformFeeSettings['recipients'] };
}

/** The fee settings that apply when the first wallet holding is on `chain` (none without a recipient there). */
export function platformFeeFor(settings: PlatformFeeSettings, chain: string): PlatformFeeConfig & { readonly recipient?: string } {
  const recipient = chain === 'SOL' ? settings.recipients.SOL : settings.recipients.EVM;
  return recipient ? { fixed: settings.fixed, bps: settings.bps, recipient } : { fixed: 0n, bps: 0n };
}
