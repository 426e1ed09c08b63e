import * as v from 'valibot';
import { type ChainsConfig, ChainsConfigSchema } from './chains/chain-config.ts';
import { DEFAULT_LEASE_TIMING, type LeaseTiming } from './chains/sender/sender-lease.ts';
import { DEFAULT_SPONSOR_POOL_SIZE, MAX_SPONSOR_POOL_SIZE } from './chains/sender/sponsor-pool.ts';
import { VENUE_IDS, type VenueId } from './venues/default-status.ts';

/**
 * Configuration read from the environment once, at module load (cold start), validated by
 * valibot. A missing or malformed variable stops the cold start with a message naming it.
 *
 * | variable            | used by                 | meaning                                              |
 * |---------------------|-------------------------|------------------------------------------------------|
 * | TABLE_NAME          | all                     | the single DynamoDB table                            |
 * | DYNAMODB_ENDPOINT   | all (optional)          | a local engine (dynalite, DynamoDB Local, LocalStack)|
 * | KEY_PROVIDER        | account, enclave        | `kms` (AWS) or `local` (master key files in DATA_DIR)|
 * | ENCLAVE_KMS_KEY_ID  | enclave, when kms       | KMS key wrapping wallet keys                         |
 * | ACCOUNT_KMS_KEY_ID  | account, when kms       | KMS key wrapping stored access keys                  |
 * | OP_JWT_SIGNER       | account                 | `kms` (asymmetric KMS key) or `local` (key in DATA_DIR)|
 * | OP_JWT_KMS_KEY_ID   | account, when kms       | ECC_NIST_P256 signing key for op_jwt                 |
 * | SPONSOR_SIGNER      | functions that sponsor gas | `kms` or `local`: the gas sponsor's own signing key |
 * | SPONSOR_KMS_KEY_ID  | those, when kms         | ECC_NIST_P256 key the platform application trusts alone |
 * | TEE_URL             | account                 | base URL of the wallet enclave service               |
 * | DATA_DIR            | when anything is local  | where local key material lives                       |
 * | CHAINS_CONFIG       | account (chain routes)  | chains, tokens; RPC URLs inline in the sandbox only  |
 * | RPC_URLS_SECRET     | account, when no rpc_url| Secrets Manager secret with the RPC URLs (JSON)      |
 * | VENUE_URLS          | account (venue routes)  | JSON `{ "venue_a": "https://…", … }`: venue API base URLs |
 */
const nonEmpty = v.pipe(v.string(), v.trim(), v.minLength(1));

const BaseEnv = v.object({
  TABLE_NAME: nonEmpty,
  DYNAMODB_ENDPOINT: v.optional(v.pipe(v.string(), v.url())),
  DATA_DIR: v.optional(nonEmpty),
});

const KeyProviderEnv = v.variant('KEY_PROVIDER', [
  v.object({ KEY_PROVIDER: v.literal('kms'), KMS_KEY_ID: nonEmpty }),
  v.object({ KEY_PROVIDER: v.literal('local'), DATA_DIR: nonEmpty }),
]);

const OpJwtSignerEnv = v.variant('OP_JWT_SIGNER', [
  v.object({ OP_JWT_SIGNER: v.literal('kms'), OP_JWT_KMS_KEY_ID: nonEmpty }),
  v.object({ OP_JWT_SIGNER: v.literal('local'), DATA_DIR: nonEmpty }),
]);

/** The gas sponsor's signing key (functions/routes.ts `sponsorKey`): never the op_jwt key. */
const SponsorSignerEnv = v.variant('SPONSOR_SIGNER', [
  v.object({ SPONSOR_SIGNER: v.literal('kms'), SPONSOR_KMS_KEY_ID: nonEmpty }),
  v.object({ SPONSOR_SIGNER: v.literal('local'), DATA_DIR: nonEmpty }),
]);

export class ConfigError extends Error {}

function parseEnv<S extends v.GenericSchema>(
  schema: S,
  env: Record<string, string | undefined>,
  /** Names to report instead of the schema's own, for variables the schema reads under an alias. */
  aliases: Readonly<Record<string, string>> = {},
): v.InferOutput<S> {
  const result = v.safeParse(schema, env);
  if (!result.success) {
    const problems = result.issues.map((issue) => {
      const path = v.getDotPath(issue) ?? '(env)';
      return `${aliases[path] ?? path}: ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  return result.output;
}

export type BaseConfig = v.InferOutput<typeof BaseEnv>;
export type KeyProviderConfig = v.InferOutput<typeof KeyProviderEnv>;
export type OpJwtSignerConfig = v.InferOutput<typeof OpJwtSignerEnv>;

export function loadBaseConfig(env = process.env): BaseConfig {
  return parseEnv(BaseEnv, env);
}

/** Key provider for one purpose: `kmsKeyVar` names the env var holding that purpose's KMS key. */
export function loadKeyProviderConfig(kmsKeyVar: 'ENCLAVE_KMS_KEY_ID' | 'ACCOUNT_KMS_KEY_ID', env = process.env): KeyProviderConfig {
  return parseEnv(KeyProviderEnv, { ...env, KMS_KEY_ID: env[kmsKeyVar] }, { KMS_KEY_ID: kmsKeyVar });
}

export function loadOpJwtSignerConfig(env = process.env): OpJwtSignerConfig {
  return parseEnv(OpJwtSignerEnv, env);
}

export type SponsorSignerConfig = v.InferOutput<typeof SponsorSignerEnv>;

export function loadSponsorSignerConfig(env = process.env): SponsorSignerConfig {
  return parseEnv(SponsorSignerEnv, env);
}

export function loadTeeUrl(env = process.env): string {
  return parseEnv(v.object({ TEE_URL: v.pipe(v.string(), v.url()) }), env).TEE_URL.replace(/\/+$/, '');
}

/** End of 2026-07-31 UTC: spec, Versioning ("v1 is retired on July 31, 2026"). */
export const DEFAULT_V1_RETIREMENT = '2026-08-01T00:00:00.000Z';

/** V1_RETIREMENT_AT (ISO 8601, optional): the instant enclave v1 access and migrations stop. */
export function loadV1RetirementAt(env = process.env): Date {
  const parsed = parseEnv(
    v.object({ V1_RETIREMENT_AT: v.optional(v.pipe(v.string(), v.isoTimestamp('must be an ISO 8601 timestamp')), DEFAULT_V1_RETIREMENT) }),
    env,
  );
  return new Date(parsed.V1_RETIREMENT_AT);
}

/** ALLOWED_7702_DELEGATES: comma-separated delegate addresses the enclave may authorise (none when unset). */
export function loadAllowedDelegates(env = process.env): ReadonlySet<string> {
  const raw = parseEnv(
    v.object({
      ALLOWED_7702_DELEGATES: v.optional(
        v.pipe(v.string(), v.regex(/^(0x[0-9a-fA-F]{40})(,0x[0-9a-fA-F]{40})*$|^$/, 'must be comma-separated 0x addresses')),
        '',
      ),
    }),
    env,
  );
  return new Set(
    raw.ALLOWED_7702_DELEGATES.split(',')
      .filter(Boolean)
      .map((address) => address.toLowerCase()),
  );
}

/**
 * CHAINS_CONFIG: JSON of every chain's chain id, tokens and (in the sandbox) RPC URL
 * (shared/chains/chain-config.ts). When any chain has no `rpc_url`, RPC_URLS_SECRET must name
 * the Secrets Manager secret holding them (shared/chains/rpc-urls.ts): checked here, at cold
 * start; the secret itself is read on first use.
 */
export function loadChainsConfig(env = process.env): ChainsConfig {
  const config = loadPublicChainsConfig(env);
  const withoutUrl = CHAIN_KEYS.filter((code) => !config[code].rpc_url);
  if (withoutUrl.length > 0 && !loadRpcUrlsSecret(env)) {
    throw new ConfigError(`Invalid configuration: RPC_URLS_SECRET: required, since CHAINS_CONFIG has no rpc_url for ${withoutUrl.join(', ')}`);
  }
  return config;
}

/** CHAINS_CONFIG for its public data alone (need `chainData`: the enclave's policy facts), RPC URLs neither needed nor checked. */
export function loadPublicChainsConfig(env = process.env): ChainsConfig {
  const raw = parseEnv(v.object({ CHAINS_CONFIG: nonEmpty }), env).CHAINS_CONFIG;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError('Invalid configuration: CHAINS_CONFIG: must be JSON');
  }
  const result = v.safeParse(ChainsConfigSchema, json);
  if (!result.success) {
    throw new ConfigError(`Invalid configuration: CHAINS_CONFIG: ${result.issues.map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.message}`).join('; ')}`);
  }
  return result.output;
}

const CHAIN_KEYS = ['ETH', 'ARB', 'POL', 'INK', 'SOL'] as const;

/** RPC_URLS_SECRET (optional): name or ARN of the Secrets Manager secret with the RPC URLs. */
export function loadRpcUrlsSecret(env = process.env): string | undefined {
  const SecretId = v.pipe(v.string(), v.regex(/^[A-Za-z0-9/_+=.@:-]{1,2048}$/, 'must be a secret name or ARN'));
  return parseEnv(v.object({ RPC_URLS_SECRET: v.optional(SecretId) }), env).RPC_URLS_SECRET;
}

/** How long a withdrawal waits for inclusion before answering 504 (it fits API Gateway's 29 s). */
export function loadInclusionTimeoutMs(env = process.env): number {
  const parsed = parseEnv(
    v.object({ WITHDRAW_INCLUSION_TIMEOUT_MS: v.optional(v.pipe(v.string(), v.regex(/^[0-9]+$/, 'must be milliseconds')), '20000') }),
    env,
  );
  const ms = Number(parsed.WITHDRAW_INCLUSION_TIMEOUT_MS);
  if (ms < 1000 || ms > 20_000) throw new ConfigError('Invalid configuration: WITHDRAW_INCLUSION_TIMEOUT_MS: must be between 1000 and 20000');
  return ms;
}

/**
 * SENDER_LEASE_MS (default 15000, 8000 to 15000): how long one send (sign + broadcast) may hold
 * its account's sender lease, and so how long the lease of a holder that died (a Lambda timeout,
 * `kill -9`) keeps the account's next send waiting. A send queues for the lease 5 s longer than
 * that before 409 SENDER_BUSY. Deployments keep the default; the crash test shortens it so its
 * rounds do not each wait out 15 s (test/unit/transfer-crash.test.ts). A holder that overruns it
 * loses the lease and cannot record its send (fencing): it answers SENDER_BUSY. The floor leaves a
 * sponsored send its sponsor's share of the wallet's lease (SPONSOR_WORK_RESERVE_MS, 5 s) and time
 * to sign before it.
 */
export function loadSenderLeaseTiming(env = process.env): LeaseTiming {
  const raw = env.SENDER_LEASE_MS;
  if (raw === undefined || raw === '') return DEFAULT_LEASE_TIMING;
  const ms = /^[0-9]{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(ms >= MIN_SENDER_LEASE_MS && ms <= DEFAULT_LEASE_TIMING.leaseMs))
    throw new ConfigError(
      `Invalid configuration: SENDER_LEASE_MS: must be a whole number of milliseconds, ${MIN_SENDER_LEASE_MS} to ${DEFAULT_LEASE_TIMING.leaseMs}`,
    );
  return { leaseMs: ms, waitMs: ms + SENDER_QUEUE_MARGIN_MS };
}
const MIN_SENDER_LEASE_MS = 8_000;

/** SPONSOR_POOL_SIZE (optional): how many gas sponsors per EVM chain share sponsored sends (default 8, 1-64; shared/chains/sender/sponsor-pool.ts). */
export function loadSponsorPoolSize(env = process.env): number {
  const raw = env.SPONSOR_POOL_SIZE;
  if (raw === undefined || raw === '') return DEFAULT_SPONSOR_POOL_SIZE;
  const size = /^[0-9]{1,2}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(size >= 1 && size <= MAX_SPONSOR_POOL_SIZE))
    throw new ConfigError(`Invalid configuration: SPONSOR_POOL_SIZE: must be a whole number, 1 to ${MAX_SPONSOR_POOL_SIZE}`);
  return size;
}
const SENDER_QUEUE_MARGIN_MS = DEFAULT_LEASE_TIMING.waitMs - DEFAULT_LEASE_TIMING.leaseMs;

/** Venue API base URLs by venue id; a venue left out is "not configured" (its routes answer 503 VENUE_NOT_CONFIGURED). */
export type VenueUrls = Readonly<Partial<Record<VenueId, string>>>;

const VenueUrlsSchema = v.strictObject(
  Object.fromEntries(
    VENUE_IDS.map((venue) => [venue, v.optional(v.pipe(v.string(), v.url('must be a URL'), v.regex(/^https?:\/\//, 'must be an http(s) URL')))]),
  ) as Record<
    VenueId,
    v.OptionalSchema<v.SchemaWithPipe<readonly [v.StringSchema<undefined>, v.UrlAction<string, string>, v.RegexAction<string, string>]>, undefined>
  >,
);

/**
 * VENUE_URLS (required by the venue routes): JSON object of venue id to the venue API's base URL
 * (`{}` when no venue is configured). Unknown venue ids and non-http(s) URLs stop the cold start;
 * trailing slashes are dropped.
 */
/**
 * VENUE_NETWORK: `live` (default) or `sandbox`. Like a venue's mainnet/testnet switch, it selects
 * the values a venue signs over besides its URL (venue_a's signing domains: the sandbox's are its
 * own, so nothing signed for the sandbox is valid at the live venue). The local runtime sets
 * `sandbox`; a deployment leaves it unset.
 */
export function loadVenueNetwork(env = process.env): 'live' | 'sandbox' {
  return parseEnv(v.object({ VENUE_NETWORK: v.optional(v.picklist(['live', 'sandbox'], 'must be live or sandbox'), 'live') }), env).VENUE_NETWORK;
}

export function loadVenueUrls(env = process.env): VenueUrls {
  const raw = parseEnv(v.object({ VENUE_URLS: nonEmpty }), env).VENUE_URLS;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError('Invalid configuration: VENUE_URLS: must be JSON');
  }
  const result = v.safeParse(VenueUrlsSchema, json);
  if (!result.success) {
    throw new ConfigError(
      `Invalid configuration: VENUE_URLS: ${result.issues.map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.expected === 'never' ? 'is not a venue id' : i.message}`).join('; ')}`,
    );
  }
  return Object.fromEntries(
    Object.entries(result.output)
      .filter(([, url]) => url !== undefined)
      .map(([venue, url]) => [venue, (url as string).replace(/\/+$/, '')]),
  );
}
