import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, open, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { type Address, createPublicClient, createTestClient, createWalletClient, defineChain, type Hex, http, isAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { EvmChainCode, EvmChainConfig } from '../../shared/chains/chain-config.ts';
import { sponsoredExecutorArtifact } from '../../shared/chains/evm/contracts/sponsored-executor.artifact.ts';
import { LIFI_CONTRACTS } from '../../shared/transfers/lifi.ts';
import mainnetTokens from '../config/mainnet-tokens.json' with { type: 'json' };
import { anvilFetch } from './anvil-fetch.ts';
import { sandboxLifiDiamondArtifact } from './contracts/sandbox-lifi-diamond.artifact.ts';
import { sandboxPriceFeedArtifactAbi } from './contracts/sandbox-price-feed.artifact.ts';
import { sandboxTokenArtifact } from './contracts/sandbox-token.artifact.ts';
import { MAX_UNITS, tooLarge } from './faucet-refused.ts';
import { installPriceFeeds, type PriceFeedChain, type SandboxPriceFeeds } from './price-feeds.ts';

/**
 * The local EVM sandbox: one anvil per chain (ETH, ARB, POL, INK) with the real chain ids, the
 * SandboxToken faucet ERC-20 installed at the real USDC / USDC.e addresses of
 * infra/config/mainnet-tokens.json, the SponsoredExecutor EIP-7702 delegate at SANDBOX_DELEGATE,
 * and on ETH the Chainlink price feeds at their mainnet proxy addresses (price-feeds.ts).
 * Chain state persists under <dataDir>/chains/<CODE>.json; anvil's errors and the line saying which
 * port it listens on go to <CODE>.log.
 */
export interface EvmSandbox {
  /** Shape of shared/chains/chain-config.ts; rpc_url is this sandbox's anvil, delegate the SponsoredExecutor. */
  readonly chains: Record<EvmChainCode, EvmChainConfig>;
  /** A funded anvil account that sends sponsored transactions (and the faucet's mints). */
  readonly sponsor: { readonly address: Address; readonly privateKey: Hex };
  /** Credits `amount` base units of the chain's native coin or of one of its tokens; throws for a token the chain lacks. */
  faucet(chain: EvmChainCode, address: Address, token: string, amount: bigint): Promise<void>;
  /** The Chainlink feeds on the ETH chain (POST /sandbox/prices; the heartbeat runs on the sandbox's tick). */
  readonly priceFeeds: SandboxPriceFeeds;
  /** Stops every anvil, letting each dump its state first. */
  stop(): Promise<void>;
}

export interface EvmSandboxOptions {
  readonly dataDir: string;
  /** Interface anvil listens on; 127.0.0.1 by default. */
  readonly host?: string;
  /** The price feeds' clock, unix seconds (default: the wall clock; tests move it to see the heartbeat). */
  readonly priceClock?: () => number;
}

/** The faucet was asked for a chain or token the sandbox does not have (a client error, not a sandbox fault). */
export class UnknownFaucetTokenError extends Error {
  readonly code = 'UNKNOWN_TOKEN';

  constructor(message: string) {
    super(message);
    this.name = 'UnknownFaucetTokenError';
  }
}

/** Where the SponsoredExecutor runtime code is installed, the same on every sandbox chain. */
export const SANDBOX_DELEGATE: Address = '0x7702000000000000000000000000000000007702';

/** Anvil's first dev account (the public "test test … junk" mnemonic): sandbox only. */
const SPONSOR = {
  address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
} as const;
/** Below this the sponsor is topped back up to SPONSOR_FUNDING at start-up (a long-lived dataDir spends gas). */
const SPONSOR_MIN_BALANCE = 1_000n * 10n ** 18n;
const SPONSOR_FUNDING = 10_000n * 10n ** 18n;

const CHAIN_CODES: readonly EvmChainCode[] = ['ETH', 'ARB', 'POL', 'INK'];
const TOKEN_SYMBOLS = { USDC: 'USDC', 'USDC.E': 'USDC.e' } as const;
const TOKEN_NAME = 'USD Coin';
/** Seconds between anvil's periodic state dumps, so a crash loses little. */
const STATE_INTERVAL_SECONDS = 2;
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 30_000;

/**
 * anvil runs under this POSIX sh watchdog. Its stdin is a pipe from this process: end of file means
 * stop() or that this process died (even by SIGKILL), and either way anvil gets SIGTERM, so it dumps
 * its state and no anvil outlives the sandbox. The shell exits when anvil does.
 * anvil's stdout goes through a FIFO ($1) of which only its "Listening on host:port" line reaches the
 * log (anvil listens on port 0 and says there which port it bound; without `--silent`, which drops
 * that line too, it prints every RPC call, which the log does not need); its stderr goes to the log.
 */
const WATCHDOG = [
  'fifo=$1; shift',
  'rm -f "$fifo"; mkfifo -m 600 "$fifo" || exit 1',
  // One reader for the FIFO's whole life: the banner line by line up to that line, then cat drops the rest.
  `{ while IFS= read -r line; do case $line in 'Listening on '*) printf '%s\\n' "$line"; break ;; esac; done; exec cat >/dev/null; } <"$fifo" &`,
  '"$@" </dev/null >"$fifo" &',
  'anvil=$!',
  'exec 3<&0',
  '( cat <&3 >/dev/null; kill -TERM "$anvil" 2>/dev/null ) &',
  'exec 3<&- 0</dev/null',
  `trap 'kill -TERM "$anvil" 2>/dev/null' INT TERM HUP`,
  'wait "$anvil"; status=$?',
  'while kill -0 "$anvil" 2>/dev/null; do wait "$anvil"; status=$?; done',
  'rm -f "$fifo"',
  'exit "$status"',
].join('\n');

interface RunningChain {
  readonly code: EvmChainCode;
  readonly config: EvmChainConfig;
  readonly anvil: AnvilProcess;
  readonly clients: ReturnType<typeof chainClients>;
  /** Faucet operations on one chain run one at a time (read-modify-write balances, sponsor nonces). */
  readonly serialize: <T>(task: () => Promise<T>) => Promise<T>;
}

export async function startEvmSandbox(options: EvmSandboxOptions): Promise<EvmSandbox> {
  const host = options.host ?? '127.0.0.1';
  const chainsDir = join(resolve(options.dataDir), 'chains');
  await mkdir(chainsDir, { recursive: true });

  const started = await Promise.allSettled(
    CHAIN_CODES.map(async (code) => {
      const chainId = mainnetTokens[code].chain_id;
      return { code, chainId, anvil: await startAnvil({ code, chainId, host, chainsDir }) };
    }),
  );
  const anvils = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    await Promise.all(anvils.map(({ anvil }) => anvil.stop()));
    throw failed.reason;
  }

  const running: RunningChain[] = [];
  try {
    for (const { code, chainId, anvil } of anvils) {
      const config = chainConfig(code, anvil.rpcUrl);
      const clients = chainClients(code, chainId, anvil.rpcUrl);
      await installContracts(code, config, clients);
      running.push({ code, config, anvil, clients, serialize: serializer() });
    }
  } catch (error) {
    await Promise.all(anvils.map(({ anvil }) => anvil.stop()));
    throw error;
  }

  const byCode = Object.fromEntries(running.map((chain) => [chain.code, chain])) as Record<EvmChainCode, RunningChain>;
  let priceFeeds: SandboxPriceFeeds;
  try {
    priceFeeds = await installPriceFeeds(priceFeedChain(byCode.ETH), options.priceClock);
  } catch (error) {
    await Promise.all(anvils.map(({ anvil }) => anvil.stop()));
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    chains: Object.fromEntries(running.map((chain) => [chain.code, chain.config])) as Record<EvmChainCode, EvmChainConfig>,
    sponsor: SPONSOR,
    faucet: (code, address, token, amount) => {
      const chain = byCode[code];
      if (!chain) return Promise.reject(new UnknownFaucetTokenError(`faucet: unknown chain "${code}"; the sandbox runs ${CHAIN_CODES.join(', ')}`));
      return chain.serialize(() => faucet(chain, address, token, amount));
    },
    priceFeeds,
    stop: () => (stopping ??= Promise.all(running.map((chain) => chain.anvil.stop())).then(() => undefined)),
  };
}

/** The ETH chain as the price feeds use it: their operator is the funded account, its sends serialized with the faucet's. */
function priceFeedChain(chain: RunningChain): PriceFeedChain {
  const { clients } = chain;
  return {
    operator: SPONSOR.address,
    setCode: (address, bytecode) => clients.test.setCode({ address, bytecode }),
    read: (address, functionName) => clients.public.readContract({ address, abi: sandboxPriceFeedArtifactAbi, functionName }) as Promise<never>,
    send: (to, data) => chain.serialize(() => sendAndConfirm(clients, () => clients.wallet.sendTransaction({ to, data }))),
  };
}

function chainConfig(code: EvmChainCode, rpcUrl: string): EvmChainConfig {
  const entry = mainnetTokens[code];
  const tokens: EvmChainConfig['tokens'] = {};
  for (const [symbol, token] of Object.entries(entry.tokens) as [keyof typeof TOKEN_SYMBOLS, { address: string; decimals: number }][]) {
    tokens[symbol] = { address: token.address, decimals: token.decimals };
  }
  return { family: 'evm', chain_id: entry.chain_id, rpc_url: rpcUrl, native: entry.native as EvmChainConfig['native'], tokens, delegate: SANDBOX_DELEGATE };
}

function chainClients(code: EvmChainCode, chainId: number, rpcUrl: string) {
  const native = mainnetTokens[code].native;
  const chain = defineChain({
    id: chainId,
    name: `sandbox ${code}`,
    nativeCurrency: { name: native, symbol: native, decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  // anvil mines on every transaction: poll receipts quickly rather than at viem's 4 s default.
  const transport = http(rpcUrl, { retryCount: 0, fetchFn: anvilFetch });
  return {
    public: createPublicClient({ chain, transport, pollingInterval: 50 }),
    wallet: createWalletClient({ chain, transport, account: privateKeyToAccount(SPONSOR.privateKey), pollingInterval: 50 }),
    test: createTestClient({ chain, transport, mode: 'anvil', pollingInterval: 50 }),
  };
}

/**
 * Installs the delegate's and the LI.FI diamond stand-in's current code on every start (code only:
 * the accounts' storage is theirs; the diamond at LI.FI's own address on this chain keeps none),
 * and each token only where the address has no code yet, so a restart keeps balances.
 */
async function installContracts(code: EvmChainCode, config: EvmChainConfig, clients: ReturnType<typeof chainClients>): Promise<void> {
  await clients.test.setCode({ address: SANDBOX_DELEGATE, bytecode: sponsoredExecutorArtifact.deployedBytecode });
  for (const diamond of LIFI_CONTRACTS[code])
    await clients.test.setCode({ address: diamond as Address, bytecode: sandboxLifiDiamondArtifact.deployedBytecode });
  for (const [symbol, token] of Object.entries(config.tokens) as [keyof typeof TOKEN_SYMBOLS, { address: Address; decimals: number }][]) {
    const code = await clients.public.getCode({ address: token.address });
    if (code !== undefined && code !== '0x') continue;
    await clients.test.setCode({ address: token.address, bytecode: sandboxTokenArtifact.deployedBytecode });
    await sendAndConfirm(clients, () =>
      clients.wallet.writeContract({
        address: token.address,
        abi: sandboxTokenArtifact.abi,
        functionName: 'initialize',
        args: [TOKEN_NAME, TOKEN_SYMBOLS[symbol], token.decimals],
      }),
    );
  }
  const balance = await clients.public.getBalance({ address: SPONSOR.address });
  if (balance < SPONSOR_MIN_BALANCE) await clients.test.setBalance({ address: SPONSOR.address, value: SPONSOR_FUNDING });
}

async function faucet(chain: RunningChain, address: Address, token: string, amount: bigint): Promise<void> {
  if (!isAddress(address)) throw new Error(`faucet: "${address}" is not an EVM address`);
  if (amount < 0n) throw new Error(`faucet: amount must not be negative, got ${amount}`);
  const { config, clients } = chain;
  if (token === config.native) {
    const balance = await clients.public.getBalance({ address });
    if (balance + amount > MAX_UNITS.evm) throw tooLarge('the balance', 'evm');
    await clients.test.setBalance({ address, value: balance + amount });
    return;
  }
  const entry = token === 'USDC' || token === 'USDC.E' ? config.tokens[token] : undefined;
  if (!entry) {
    throw new UnknownFaucetTokenError(`faucet: ${chain.code} has no token "${token}"; it has ${[config.native, ...Object.keys(config.tokens)].join(', ')}`);
  }
  const supply = await clients.public.readContract({ address: entry.address as Address, abi: sandboxTokenArtifact.abi, functionName: 'totalSupply' });
  if ((supply as bigint) + amount > MAX_UNITS.evm) throw tooLarge(`${token}'s total supply`, 'evm');
  await sendAndConfirm(clients, () =>
    clients.wallet.writeContract({ address: entry.address as Address, abi: sandboxTokenArtifact.abi, functionName: 'mint', args: [address, amount] }),
  );
}

async function sendAndConfirm(clients: ReturnType<typeof chainClients>, send: () => Promise<Hex>): Promise<void> {
  const hash = await send();
  const receipt = await clients.public.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  if (receipt.status !== 'success') throw new Error(`sandbox transaction ${hash} reverted`);
}

function serializer(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (task) => {
    const run = tail.then(task);
    tail = run.catch(() => undefined);
    return run;
  };
}

interface AnvilProcess {
  readonly rpcUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts anvil on port 0 and reads the port it bound from its own "Listening on host:port" line
 * (in its log, through the watchdog): no port is probed and then handed over, so no other process,
 * nor another part of this sandbox, can take it in between, and anvil cannot take a port another
 * listener holds.
 */
async function startAnvil(input: { code: EvmChainCode; chainId: number; host: string; chainsDir: string }): Promise<AnvilProcess> {
  const logPath = join(input.chainsDir, `${input.code}.log`);
  const args = [
    '--host',
    input.host,
    '--port',
    '0',
    '--chain-id',
    String(input.chainId),
    '--hardfork',
    'prague',
    '--state',
    join(input.chainsDir, `${input.code}.json`),
    '--state-interval',
    String(STATE_INTERVAL_SECONDS),
  ];
  const log = await open(logPath, 'a');
  const logStart = (await log.stat()).size;
  let child: ChildProcess;
  try {
    const fifo = join(input.chainsDir, `${input.code}.stdout`);
    child = spawn('/bin/sh', ['-c', WATCHDOG, 'anvil-watchdog', fifo, anvilBinary(), ...args], { stdio: ['pipe', log.fd, log.fd], detached: true });
  } finally {
    await log.close();
  }
  const exited = new Promise<void>((resolveExit) => {
    child.once('error', () => resolveExit());
    child.once('exit', () => {
      child.stdin?.destroy(); // lets the watchdog's reader end too
      resolveExit();
    });
  });

  const host = input.host.includes(':') ? `[${input.host}]` : input.host;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin?.end(); // the watchdog's cue: SIGTERM to anvil, which dumps its state and exits
    const timer = setTimeout(() => killGroup(child), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  const port = await Promise.race([listeningPort(logPath, logStart, deadline), exited.then(() => undefined)]);
  const rpcUrl = port === undefined ? undefined : `http://${host}:${port}`;
  const ready = rpcUrl !== undefined && (await Promise.race([waitForChainId(rpcUrl, input.chainId, deadline), exited.then(() => false)]));
  if (ready !== true) {
    await stop();
    const output = (await readFile(logPath).catch(() => Buffer.alloc(0))).subarray(logStart).toString('utf8').trim();
    const tail = output.split('\n').slice(-5).join('\n');
    const what = rpcUrl === undefined ? 'did not say which port it listens on' : `did not answer eth_chainId ${input.chainId} on ${rpcUrl}`;
    throw new Error(`anvil for ${input.code} ${what}${tail ? `:\n${tail}` : ''}\n(log: ${logPath})`);
  }
  return { rpcUrl, stop };
}

/** The port of anvil's "Listening on <host>:<port>" line, written to its log after `logStart`; undefined past the deadline. */
async function listeningPort(logPath: string, logStart: number, deadline: number): Promise<number | undefined> {
  while (Date.now() < deadline) {
    const output = (await readFile(logPath).catch(() => Buffer.alloc(0))).subarray(logStart).toString('utf8');
    const listening = /^Listening on .*:(\d+)\s*$/m.exec(output);
    if (listening) return Number(listening[1]);
    await new Promise((wake) => setTimeout(wake, 20));
  }
  return undefined;
}

/** Last resort when anvil ignores SIGTERM: the watchdog runs detached, so its pid is its process group. */
function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

async function waitForChainId(rpcUrl: string, chainId: number, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    try {
      const response = await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
        signal: AbortSignal.timeout(1_000),
      });
      const body = (await response.json()) as { result?: string };
      if (body.result !== undefined) return Number(body.result) === chainId;
    } catch {
      // not listening yet
    }
    await new Promise((wake) => setTimeout(wake, 50));
  }
  return false;
}

/** The platform binary of @foundry-rs/anvil, not its Node wrapper (one process per chain, not two). */
function anvilBinary(): string {
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  const name = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  try {
    return createRequire(import.meta.url).resolve(`@foundry-rs/anvil-${process.platform}-${arch}/bin/${name}`);
  } catch {
    throw new Error(`no anvil binary for ${process.platform}/${process.arch}: is @foundry-rs/anvil installed with its optional platform package?`);
  }
}
