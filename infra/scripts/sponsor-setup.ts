import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as v from 'valibot';
import { type Address, formatUnits } from 'viem';
import { getChainId } from 'viem/actions';
import { ChainsConfigSchema, type EvmChainCode, type EvmChainConfig } from '../../shared/chains/chain-config.ts';
import { describeChainError, InclusionTimeoutError } from '../../shared/chains/errors.ts';
import {
  CREATE2_DEPLOYER,
  delegateAddress,
  deployDelegate,
  hasDelegateCode,
  hasDeployer,
  SponsorUnderfundedError,
} from '../../shared/chains/evm/delegate-deployment.ts';
import { topUpSponsors } from '../../shared/chains/evm/sponsor-top-up.ts';
import { EvmChain } from '../../shared/chains/evm-chain.ts';
import {
  FIRST_SPONSORED_SEND_GAS,
  MAX_SPONSOR_POOL_SIZE,
  SPONSOR_FLOOR_SENDS,
  SPONSOR_TARGET_SENDS,
  sponsorBalanceTarget,
} from '../../shared/chains/sender/sponsor-pool.ts';
import { ConfigError, loadSponsorPoolSize } from '../../shared/config.ts';
import { DomainError } from '../../shared/errors.ts';
import { setChainDelegate } from './chains-config-file.ts';
import { ensurePlatformApplication, type platformGasSponsor, platformSponsorPool, scriptSponsorSigner, scriptTable } from './platform-app.ts';

/**
 * `npm run sponsor:setup -- --chain <ETH|ARB|POL|INK> --table <TableName> --sponsor-key <SponsorKeyId>
 *   --enclave-url <EnclaveApiUrl> [--rpc-url <url>] [--chains-config <file>] [--pool-size <n>]`
 *
 * Gas sponsorship on one EVM chain of a deployment, as far as it can be automated, idempotent:
 *  1. the platform application, trusting the sponsor key alone, its treasury wallet (the one gas
 *     sponsor before issue 25: same address) and the pool's sponsor wallets (`--pool-size`, default
 *     SPONSOR_POOL_SIZE or 8: give the functions the same SPONSOR_POOL_SIZE), all enclave wallets;
 *  2. the RPC's chain id must be the chains config's;
 *  3. the SponsoredExecutor delegate: the configured one or the one at its deterministic address
 *     if its code is the artifact's, else deployed from the sponsor through the enclave, exactly
 *     once (shared/chains/evm/delegate-deployment.ts), when the sponsor can pay;
 *  4. its address written as the chain's `delegate` into --chains-config (formatting kept);
 *  5. the pool topped up from the treasury (each sponsor to SPONSOR_TARGET_SENDS first-time sponsored
 *     sends' gas at today's fee; each transfer journaled before broadcast: shared/chains/evm/
 *     sponsor-top-up.ts), and what is left: the treasury's balance, the cdk deploy.
 * Exit 0: done (step 5 says what is left); 1: an error; 2: bad usage; 3: action needed (fund the
 * treasury, then run again: it deploys the delegate and tops up the pool). AWS credentials from the usual environment (DYNAMODB_ENDPOINT for a
 * local engine); with SPONSOR_SIGNER=local and DATA_DIR instead of --sponsor-key, against the sandbox.
 */
const USAGE =
  'usage: npm run sponsor:setup -- --chain <ETH|ARB|POL|INK> --table <TableName> --sponsor-key <SponsorKeyId> --enclave-url <EnclaveApiUrl> [--rpc-url <url>] [--chains-config <file>] [--pool-size <n>]';
const DEFAULT_CHAINS_CONFIG = 'infra/config/chains.mainnet.json';
const EVM_CHAINS: readonly EvmChainCode[] = ['ETH', 'ARB', 'POL', 'INK'];
const EXIT = { done: 0, error: 1, usage: 2, actionNeeded: 3 } as const;
const SPONSOR_FLOOR_TEXT = `${SPONSOR_FLOOR_SENDS} first-time sponsored sends' gas`;

const started = performance.now();
const out = (line: string) => process.stdout.write(`${line}\n`);

function usage(problem?: string): never {
  if (problem) process.stderr.write(`sponsor:setup: ${problem}\n`);
  (problem ? process.stderr : process.stdout).write(`${USAGE}\n`);
  process.exit(problem ? EXIT.usage : EXIT.done);
}

function fail(message: string): never {
  process.stderr.write(`sponsor:setup: ${message}\n`);
  process.exit(EXIT.error);
}

const OPTIONS = {
  chain: { type: 'string' },
  table: { type: 'string', default: process.env.TABLE_NAME },
  'sponsor-key': { type: 'string', default: process.env.SPONSOR_KMS_KEY_ID },
  'enclave-url': { type: 'string' },
  'rpc-url': { type: 'string' },
  'chains-config': { type: 'string' },
  'pool-size': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

function parseFlags() {
  try {
    return parseArgs({ options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (error) {
    return usage((error as Error).message.split('\n')[0]);
  }
}

const values = parseFlags();
if (values.help) usage();
const code = (values.chain?.toUpperCase() ?? usage('--chain is required')) as EvmChainCode;
if (!EVM_CHAINS.includes(code)) usage(`--chain must be one of ${EVM_CHAINS.join(', ')} (gas sponsorship is EVM only), not "${values.chain}"`);
const poolSize = parsePoolSize(values['pool-size']);
const tableName = values.table || usage("--table (or TABLE_NAME) is required: the stateful stack's TableName output");
const signer =
  scriptSponsorSigner(values['sponsor-key']) ?? usage("--sponsor-key (or SPONSOR_KMS_KEY_ID) is required: the stateful stack's SponsorKeyId output");
const enclaveUrl = values['enclave-url'] ?? usage("--enclave-url is required: the services stack's EnclaveApiUrl output");
if (!URL.canParse(enclaveUrl)) usage(`--enclave-url must be a URL, not "${enclaveUrl}"`);
if (values['rpc-url'] !== undefined && !URL.canParse(values['rpc-url'])) usage('--rpc-url must be a URL');
const configPath = values['chains-config'] ?? DEFAULT_CHAINS_CONFIG;
const configGiven = values['chains-config'] !== undefined;

try {
  process.exit(await setUp());
} catch (error) {
  if (error instanceof DomainError) fail(error.message);
  throw error;
}

async function setUp(): Promise<number> {
  const configText = await readFile(configPath, 'utf8').catch((error: NodeJS.ErrnoException) =>
    fail(`cannot read the chains config ${configPath}: ${error.code ?? error.message}`),
  );
  const parsed = v.safeParse(ChainsConfigSchema, parseJson(configText));
  if (!parsed.success) fail(`${configPath} is not a valid chains config: ${v.summarize(parsed.issues).split('\n')[0]}`);
  const configured = parsed.output[code];
  const rpcUrl = values['rpc-url'] ?? configured.rpc_url ?? usage(`--rpc-url is required: ${configPath} has no rpc_url for ${code}`);
  const chain = new EvmChain(code, { ...configured, rpc_url: rpcUrl } as EvmChainConfig);
  const native = configured.native;
  out(`sponsor:setup ${code} (chain id ${configured.chain_id}, chains config ${configPath})`);

  // 1. The platform application and its sponsor wallet.
  const table = scriptTable(tableName);
  const registered = await ensurePlatformApplication(table, signer);
  const pool = platformSponsorPool(enclaveUrl, signer, table, poolSize);
  const sponsor = pool.treasury;
  const sponsorAddress = await sponsor.address();
  const members = await Promise.all(Array.from({ length: poolSize }, (_, slot) => pool.member(slot).address()));
  const how = { registered: 'registered now', existing: 'already registered', rekeyed: 'moved to the sponsor key' }[registered];
  out(`[1/5] platform application ${how}; treasury (gas sponsor wallet) ${sponsorAddress}; ${poolSize} pool sponsors ${members.join(', ')}`);

  // 2. The RPC is the configured chain.
  const rpcChainId = await getChainId(chain.client).catch((error: unknown) => fail(`the ${code} RPC did not answer: ${describeChainError(error)}`));
  if (rpcChainId !== configured.chain_id)
    fail(`the RPC's chain id is ${rpcChainId}, but ${configPath} gives ${code} chain id ${configured.chain_id}: wrong --rpc-url?`);
  out(`[2/5] RPC chain id ${rpcChainId} matches ${code}`);

  // 3. The delegate: found, or deployed exactly once.
  const delegate = await findOrDeployDelegate(chain, configured.delegate as Address | undefined, sponsor, table, sponsorAddress, native);
  if (delegate === undefined) return EXIT.actionNeeded;

  // 4. Into the chains config file given (never the repository's default unless named).
  if (configured.delegate?.toLowerCase() === delegate.toLowerCase()) {
    out(`[4/5] ${configPath} already names it as ${code}'s delegate`);
  } else if (!configGiven) {
    out(
      `[4/5] not written: no --chains-config given (the repository's ${DEFAULT_CHAINS_CONFIG} is left alone); copy it, run again with --chains-config <your copy>`,
    );
  } else {
    await writeKeepingMode(configPath, setChainDelegate(configText, code, delegate));
    out(`[4/5] wrote "delegate": "${delegate}" for ${code} into ${configPath}`);
  }

  // 5. The pool, topped up from the treasury; what is left.
  const fees = await chain.fees();
  const target = sponsorBalanceTarget(fees.maxFeePerGas);
  const topUps = await topUpSponsors({ table, chain, pool, target });
  const sent = topUps.filter((result) => result.txHash);
  const short = topUps.filter((result) => result.short !== undefined);
  out(
    `[5/5] pool: ${sent.length} of ${poolSize} sponsors topped up from the treasury to ${formatCeil(target, 18)} ${native} each ` +
      `(${SPONSOR_TARGET_SENDS} first-time sponsored sends × ${FIRST_SPONSORED_SEND_GAS} gas × ${formatCeil(fees.maxFeePerGas, 9)} gwei)` +
      `${sent.length ? `: ${sent.map((result) => `#${result.slot} ${result.txHash}`).join(', ')}` : ''}`,
  );
  const balance = await chain.balance(sponsorAddress, native);
  if (short.length > 0) {
    const needed = short.reduce((sum, result) => sum + (result.short ?? 0n), 0n);
    out(
      `Fund the treasury ${sponsorAddress} with at least ${formatCeil(needed, 18)} ${native} on ${code} (it holds ${formatUnits(balance, 18)}; ` +
        `${short.length} sponsor${short.length === 1 ? '' : 's'} still below the target), then run this command again.`,
    );
    return EXIT.actionNeeded;
  }
  out('  left to do:');
  out(
    `  - the treasury holds ${formatUnits(balance, 18)} ${native} on ${code}: keep it funded and run this command again to top the pool up ` +
      `(a sponsor below ${SPONSOR_FLOOR_TEXT} is skipped and counted in the SponsorBelowFloor metric)`,
  );
  const deployConfig = configGiven ? configPath : '<your copy>';
  out(
    `  - apply the delegate: npx cdk deploy --all -c chainsConfig=${deployConfig}   (the enclave's ALLOWED_7702_DELEGATES and the functions' CHAINS_CONFIG come from it)`,
  );
  out(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return EXIT.done;
}

function parsePoolSize(raw: string | undefined): number {
  try {
    return loadSponsorPoolSize(raw === undefined ? process.env : { SPONSOR_POOL_SIZE: raw });
  } catch (error) {
    if (error instanceof ConfigError) return usage(`--pool-size (or SPONSOR_POOL_SIZE) must be a whole number, 1 to ${MAX_SPONSOR_POOL_SIZE}`);
    throw error;
  }
}

/** The delegate's address once its code is on chain; undefined when the sponsor must be funded first. */
async function findOrDeployDelegate(
  chain: EvmChain,
  configured: Address | undefined,
  sponsor: ReturnType<typeof platformGasSponsor>,
  table: ReturnType<typeof scriptTable>,
  sponsorAddress: Address,
  native: string,
): Promise<Address | undefined> {
  if (configured && (await hasDelegateCode(chain, configured))) {
    out(`[3/5] SponsoredExecutor already deployed at ${configured} (the chains config's delegate; its code is the artifact's)`);
    return configured;
  }
  if (configured) out(`[3/5] the configured delegate ${configured} does not hold this SponsoredExecutor's code; using its deterministic address`);
  const address = delegateAddress();
  if (await hasDelegateCode(chain, address)) {
    out(`[3/5] SponsoredExecutor already deployed at ${address} (its deterministic CREATE2 address; its code is the artifact's)`);
    return address;
  }
  if (!(await hasDeployer(chain))) {
    fail(
      `${chain.code} has no deterministic-deployment proxy at ${CREATE2_DEPLOYER} (https://github.com/Arachnid/deterministic-deployment-proxy): deploy it there first, then run this command again`,
    );
  }
  out(`[3/5] no SponsoredExecutor at its deterministic address ${address} yet: the sponsor deploys it (signed through the enclave) if it can pay`);
  try {
    const outcome = await deployDelegate({ table, chain, sponsor });
    if (!(await hasDelegateCode(chain, address))) fail(`transaction ${outcome.txHash} was mined but ${address} does not hold the SponsoredExecutor's code`);
    out(
      `[3/5] ${outcome.resumed ? 'finished the deployment an earlier run recorded' : 'deployed'}: ${address} in tx ${outcome.txHash} (gas used ${outcome.gasUsed}); its code is the artifact's`,
    );
    return address;
  } catch (error) {
    if (error instanceof SponsorUnderfundedError) {
      const { gas, maxFeePerGas, needed, balance } = error.cost;
      out(
        `Fund ${sponsorAddress} with at least ${formatCeil(needed - balance, 18)} ${native} on ${chain.code} (deployment ≈ ${gas} gas × ${formatCeil(maxFeePerGas, 9)} gwei), then run this command again.`,
      );
      return undefined;
    }
    if (error instanceof InclusionTimeoutError)
      fail(`${error.message.split(';')[0]}; run this command again to keep waiting for it (it is recorded and will not be signed twice)`);
    throw error;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return fail(`${configPath} is not JSON: ${(error as Error).message}`);
  }
}

/** Replaces the file in one step (a crash leaves the old or the new file), keeping its mode. */
async function writeKeepingMode(path: string, text: string): Promise<void> {
  const { mode } = await stat(path);
  const temporary = `${resolve(path)}.${process.pid}.tmp`;
  await writeFile(temporary, text, { mode: mode & 0o777 });
  await rename(temporary, path);
}

/** `units` in whole coins, rounded up to 4 significant digits (an amount to fund must not fall short). */
function formatCeil(units: bigint, decimals: number): string {
  const digits = units.toString().length;
  const step = digits > 4 ? 10n ** BigInt(digits - 4) : 1n;
  return formatUnits(((units + step - 1n) / step) * step, decimals);
}
