import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import dynalite from 'dynalite';
import { type Address, createPublicClient, type Hex, http, keccak256 } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformGasSponsor, platformSponsorPool } from '../../infra/scripts/platform-app.ts';
import { deleteApplication, getApplication } from '../../shared/apps/app-registry.ts';
import type { EvmChainCode, EvmChainConfig } from '../../shared/chains/chain-config.ts';
import { ChainUnavailableError } from '../../shared/chains/errors.ts';
import { sponsoredExecutorArtifact } from '../../shared/chains/evm/contracts/sponsored-executor.artifact.ts';
import { delegateAddress, deployDelegate } from '../../shared/chains/evm/delegate-deployment.ts';
import { EvmChain } from '../../shared/chains/evm-chain.ts';
import { LOCAL_SPONSOR_KEY_FILE, LocalOpJwtSigner } from '../../shared/crypto/local-op-jwt-signer.ts';
import { createDocumentClient, getItem, type Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { PLATFORM_APP_ID } from '../../shared/withdrawals/gas-sponsor.ts';
import { type RuntimeProcess, startRuntimeProcess, stopProcess } from './support/global-setup.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * `npm run sponsor:setup` end to end against a local runtime of its own (its sponsor's balance is
 * changed here, so not the shared one): the table is the runtime's DynamoDB (a dynalite started
 * here), the enclave its enclave URL, the chains its anvils, the sponsor key its local key file
 * (SPONSOR_SIGNER=local: not the op_jwt key's file). The chains config is a fresh copy of infra/config/chains.mainnet.json:
 * no delegate, so the script must deploy one (the sandbox's own delegate at 0x7702… is not in it).
 * Runs once (embedded engine).
 */
describe.runIf(process.env.TEST_DYNAMODB === 'dynalite')('npm run sponsor:setup', () => {
  let workDir = '';
  let engine: Server;
  let runtime: RuntimeProcess;
  let table: Table;
  let env: Record<string, string>;
  let rpc: Record<EvmChainCode, EvmChainConfig>;
  let chainsConfig = '';

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'sponsor-setup-'));
    engine = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    await new Promise<void>((done) => engine.listen(0, '127.0.0.1', () => done()));
    const endpoint = `http://127.0.0.1:${(engine.address() as { port: number }).port}`;
    const dataDir = join(workDir, 'runtime');
    runtime = await startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: '', DYNAMODB_ENDPOINT: endpoint }, ['--quiet']);
    const listing = (await (await fetch(`${runtime.urls.account}/sandbox/chains`)).json()) as {
      chains: { chain: string; chain_id?: number; rpc_url: string }[];
    };
    // Each anvil as a chain without a delegate (native coin only: what the deployment touches).
    const evm = listing.chains.filter((chain) => chain.chain !== 'SOL');
    rpc = Object.fromEntries(
      evm.map(({ chain, chain_id, rpc_url }) => [
        chain,
        { family: 'evm', chain_id: chain_id!, rpc_url, native: chain === 'POL' ? 'POL' : 'ETH', tokens: {} } satisfies EvmChainConfig,
      ]),
    ) as Record<EvmChainCode, EvmChainConfig>;
    env = {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'sandbox',
      AWS_SECRET_ACCESS_KEY: 'sandbox',
      DYNAMODB_ENDPOINT: endpoint,
      SPONSOR_SIGNER: 'local',
      DATA_DIR: dataDir,
    };
    Object.assign(process.env, { AWS_REGION: env.AWS_REGION, AWS_ACCESS_KEY_ID: env.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY });
    table = { doc: createDocumentClient(endpoint), name: 'perp-wallet' };
    chainsConfig = join(workDir, 'chains.json');
    await copyFile(join(ROOT, 'infra/config/chains.mainnet.json'), chainsConfig);
  }, 120_000);

  afterAll(async () => {
    if (runtime) await stopProcess(runtime.child);
    if (engine) await new Promise((done) => engine.close(done));
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  function setup(args: string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
    const started = performance.now();
    return new Promise((done) => {
      execFile(process.execPath, ['infra/scripts/sponsor-setup.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env } }, (error, stdout, stderr) =>
        done({ code: error ? Number(error.code) : 0, stdout, stderr, ms: Math.round(performance.now() - started) }),
      );
    });
  }

  const flags = (chain: string, rpcUrl: string) => [
    '--chain',
    chain,
    '--table',
    'perp-wallet',
    '--enclave-url',
    runtime.urls.enclave,
    '--rpc-url',
    rpcUrl,
    '--chains-config',
    chainsConfig,
  ];
  const anvil = (chain: EvmChainCode, method: string, params: unknown[]) =>
    fetch(rpc[chain].rpc_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    }).then((r) => r.json());
  const client = (chain: EvmChainCode) => createPublicClient({ transport: http(rpc[chain].rpc_url) });

  it('--help prints the usage line; bad flags print it with the problem and exit 2, no stack trace', async () => {
    const help = await setup(['--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(
      /^usage: npm run sponsor:setup -- --chain <ETH\|ARB\|POL\|INK> --table <TableName> --sponsor-key <SponsorKeyId> --enclave-url <EnclaveApiUrl> \[--rpc-url <url>\] \[--chains-config <file>\] \[--pool-size <n>\]\n$/,
    );
    for (const [args, problem] of [
      [['--bogus'], /Unknown option '--bogus'/],
      [['--table', 'perp-wallet'], /--chain is required/],
      [['--chain', 'SOL'], /--chain must be one of ETH, ARB, POL, INK/],
      [['--chain', 'ARB', '--table', 'perp-wallet', '--enclave-url', 'not a url'], /--enclave-url must be a URL/],
      [['--chain', 'ARB', '--table', 'perp-wallet', '--pool-size', '0'], /--pool-size \(or SPONSOR_POOL_SIZE\) must be a whole number, 1 to 64/],
    ] as const) {
      const bad = await setup([...args]);
      expect(bad.code, bad.stderr).toBe(2);
      expect(bad.stderr).toMatch(problem);
      expect(bad.stderr).toContain('usage: npm run sponsor:setup');
      expect(bad.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('refuses an RPC of another chain in one line', async () => {
    const wrong = await setup(flags('ETH', rpc.ARB.rpc_url));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(`sponsor:setup: the RPC's chain id is 42161, but ${chainsConfig} gives ETH chain id 1: wrong --rpc-url?\n`);
  });

  it('unfunded: registers the platform app, prints the exact fund line, exit 3; funded: deploys once, writes the config; again: a no-op', async () => {
    const original = await readFile(chainsConfig, 'utf8');
    // A fresh start: no platform application, a sponsor with nothing on ARB.
    const sponsor = platformGasSponsor(runtime.urls.enclave, new LocalOpJwtSigner(env.DATA_DIR!, LOCAL_SPONSOR_KEY_FILE), table);
    const sponsorAddress = await sponsor.address();
    const platform = await getApplication(table, PLATFORM_APP_ID);
    await deleteApplication(table, platform!);
    await anvil('ARB', 'anvil_setBalance', [sponsorAddress, '0x0']);

    const unfunded = await setup(flags('ARB', rpc.ARB.rpc_url));
    expect(unfunded.code, unfunded.stdout + unfunded.stderr).toBe(3);
    expect(unfunded.stdout).toContain(`[1/5] platform application registered now; treasury (gas sponsor wallet) ${sponsorAddress}; 8 pool sponsors 0x`);
    expect(unfunded.stdout).toMatch(
      new RegExp(`^Fund ${sponsorAddress} with at least 0\\.\\d+ ETH on ARB \\(deployment ≈ \\d+ gas × [\\d.]+ gwei\\), then run this command again\\.$`, 'm'),
    );
    expect(await getApplication(table, PLATFORM_APP_ID)).toBeDefined();
    expect(await readFile(chainsConfig, 'utf8')).toBe(original);
    const address = delegateAddress();
    expect(await client('ARB').getCode({ address })).toBeUndefined();

    const credited = await fetch(`${runtime.urls.account}/sandbox/faucet`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chain: 'ARB', address: sponsorAddress, token: 'ETH', amount: '0.01' }),
    });
    expect(credited.status).toBe(200);
    const nonceBefore = await client('ARB').getTransactionCount({ address: sponsorAddress });
    const funded = await setup(flags('ARB', rpc.ARB.rpc_url));
    expect(funded.code, funded.stdout + funded.stderr).toBe(0);
    const deployed = new RegExp(`\\[3/5\\] deployed: ${address} in tx (0x[0-9a-f]{64}) \\(gas used (\\d+)\\)`).exec(funded.stdout);
    expect(deployed, funded.stdout).not.toBeNull();
    expect(funded.stdout).toContain(`[1/5] platform application already registered; treasury (gas sponsor wallet) ${sponsorAddress}; 8 pool sponsors 0x`);
    expect(funded.stdout).toContain(`[4/5] wrote "delegate": "${address}" for ARB into ${chainsConfig}`);
    // The sandbox funded the pool at start: nothing to top up.
    expect(funded.stdout).toMatch(
      /\[5\/5\] pool: 0 of 8 sponsors topped up from the treasury to [\d.]+ ETH each \(100 first-time sponsored sends × 250000 gas × [\d.]+ gwei\)\n/,
    );
    expect(funded.stdout).toMatch(/- the treasury holds 0\.00\d+ ETH on ARB: keep it funded and run this command again to top the pool up/);
    expect(funded.stdout).toContain(`- apply the delegate: npx cdk deploy --all -c chainsConfig=${chainsConfig}`);
    // The code on chain is the artifact's runtime code; the transaction is the sponsor's, sent once.
    expect(await client('ARB').getCode({ address })).toBe(sponsoredExecutorArtifact.deployedBytecode);
    const receipt = await client('ARB').getTransactionReceipt({ hash: deployed![1] as Hex });
    expect(receipt).toMatchObject({ status: 'success', from: sponsorAddress.toLowerCase(), gasUsed: BigInt(deployed![2]!) });
    expect(await client('ARB').getTransactionCount({ address: sponsorAddress })).toBe(nonceBefore + 1);
    // Only the delegate was added to ARB's object, in the file's own indentation.
    const written = await readFile(chainsConfig, 'utf8');
    expect(written).toBe(
      original.replace(
        /("USDC\.E": \{\n\s+"address": "0xFF970A61A04b1cA14834A43f5dE4533eBDDB5CC8",\n\s+"decimals": 6\n\s+\}\n\s+\})/,
        `$1,\n    "delegate": "${address}"`,
      ),
    );
    expect(written).not.toBe(original);
    process.stdout.write(`sponsor:setup: deployment gas used ${deployed![2]}; runs took ${unfunded.ms} ms (unfunded), ${funded.ms} ms (deploying)\n`);

    const again = await setup(flags('ARB', rpc.ARB.rpc_url));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`[3/5] SponsoredExecutor already deployed at ${address} (the chains config's delegate; its code is the artifact's)`);
    expect(again.stdout).toContain(`[4/5] ${chainsConfig} already names it as ARB's delegate`);
    expect(await readFile(chainsConfig, 'utf8')).toBe(written);
    expect(await client('ARB').getTransactionCount({ address: sponsorAddress })).toBe(nonceBefore + 1);
    process.stdout.write(`sponsor:setup: the no-op run took ${again.ms} ms\n`);
  }, 60_000);

  it('tops the pool up from the treasury: exit 3 with the amount while the treasury cannot pay, then each empty sponsor once', async () => {
    const pool = platformSponsorPool(runtime.urls.enclave, new LocalOpJwtSigner(env.DATA_DIR!, LOCAL_SPONSOR_KEY_FILE), table, 8);
    const treasury = await pool.treasury.address();
    const [first, third] = await Promise.all([pool.member(0).address(), pool.member(2).address()]);
    // Two sponsors spent everything; the treasury holds nothing.
    for (const address of [first, third, treasury]) await anvil('ARB', 'anvil_setBalance', [address, '0x0']);
    const short = await setup(flags('ARB', rpc.ARB.rpc_url));
    expect(short.code, short.stdout + short.stderr).toBe(3);
    expect(short.stdout).toMatch(/\[5\/5\] pool: 0 of 8 sponsors topped up/);
    expect(short.stdout).toMatch(
      new RegExp(
        `^Fund the treasury ${treasury} with at least [\\d.]+ ETH on ARB \\(it holds 0; 2 sponsors still below the target\\), then run this command again\\.$`,
        'm',
      ),
    );
    const nonceBefore = await client('ARB').getTransactionCount({ address: treasury });

    await anvil('ARB', 'anvil_setBalance', [treasury, '0x8ac7230489e80000']); // 10 ETH
    const funded = await setup(flags('ARB', rpc.ARB.rpc_url));
    expect(funded.code, funded.stdout + funded.stderr).toBe(0);
    const line = /\[5\/5\] pool: 2 of 8 sponsors topped up from the treasury to ([\d.]+) ETH each .*: #0 (0x[0-9a-f]{64}), #2 (0x[0-9a-f]{64})/.exec(
      funded.stdout,
    );
    expect(line, funded.stdout).not.toBeNull();
    // Each got exactly the shortfall to the target, in one transfer from the treasury.
    for (const [address, hash] of [
      [first, line![2]],
      [third, line![3]],
    ] as const) {
      const transfer = await client('ARB').getTransaction({ hash: hash as Hex });
      expect(transfer.from).toBe(treasury.toLowerCase());
      expect(transfer.to).toBe(address.toLowerCase());
      expect(await client('ARB').getBalance({ address })).toBe(transfer.value);
      expect(await getItem(table, keys.sponsorTopUp('ARB', address))).toBeUndefined();
    }
    expect(await client('ARB').getTransactionCount({ address: treasury })).toBe(nonceBefore + 2);

    const again = await setup(flags('ARB', rpc.ARB.rpc_url));
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/\[5\/5\] pool: 0 of 8 sponsors topped up/);
    expect(await client('ARB').getTransactionCount({ address: treasury })).toBe(nonceBefore + 2);
  }, 60_000);

  it('a run that stopped after recording its signed transaction, before the broadcast, is finished by the next: one deployment', async () => {
    const sponsor = platformGasSponsor(runtime.urls.enclave, new LocalOpJwtSigner(env.DATA_DIR!, LOCAL_SPONSOR_KEY_FILE), table);
    const sponsorAddress = await sponsor.address();
    const address = delegateAddress();
    const nonceBefore = await client('INK').getTransactionCount({ address: sponsorAddress });
    /** The process "dies" at the broadcast: the journal holds the signed transaction, nothing was sent. */
    class CrashingChain extends EvmChain {
      override broadcast(): Promise<Hex> {
        return Promise.reject(new ChainUnavailableError('INK', 'process killed before the broadcast'));
      }
    }
    await expect(deployDelegate({ table, chain: new CrashingChain('INK', rpc.INK), sponsor })).rejects.toThrow(/process killed/);
    const recorded = await getItem(table, keys.delegateDeployment('INK', address));
    expect(recorded?.raw).toMatch(/^0x02/);
    expect(await client('INK').getTransactionCount({ address: sponsorAddress })).toBe(nonceBefore);

    const outcome = await deployDelegate({ table, chain: new EvmChain('INK', rpc.INK), sponsor });
    expect(outcome).toMatchObject({ address, resumed: true, txHash: keccak256(recorded!.raw as Hex) });
    expect(await client('INK').getCode({ address: address as Address })).toBe(sponsoredExecutorArtifact.deployedBytecode);
    expect(await client('INK').getTransactionCount({ address: sponsorAddress })).toBe(nonceBefore + 1);

    // And the command now finds it (no config entry yet: the deterministic address).
    const found = await setup(flags('INK', rpc.INK.rpc_url));
    expect(found.code).toBe(0);
    expect(found.stdout).toContain(`[3/5] SponsoredExecutor already deployed at ${address} (its deterministic CREATE2 address; its code is the artifact's)`);
    expect(await client('INK').getTransactionCount({ address: sponsorAddress })).toBe(nonceBefore + 1);

    // Without --chains-config the repository's default is read, never written.
    const repoDefault = join(ROOT, 'infra/config/chains.mainnet.json');
    const before = await readFile(repoDefault, 'utf8');
    const defaulted = await setup(['--chain', 'INK', '--table', 'perp-wallet', '--enclave-url', runtime.urls.enclave, '--rpc-url', rpc.INK.rpc_url]);
    expect(defaulted.code).toBe(0);
    expect(defaulted.stdout).toContain('[4/5] not written: no --chains-config given');
    expect(defaulted.stdout).toContain('npx cdk deploy --all -c chainsConfig=<your copy>');
    expect(await readFile(repoDefault, 'utf8')).toBe(before);

    // A configured delegate is used when its code is the artifact's (the sandbox's own, installed at 0x7702…),
    // and passed over (then replaced in the file) when it is not.
    const other = join(workDir, 'other-chains.json');
    const config = JSON.parse(before);
    config.INK.delegate = '0x7702000000000000000000000000000000007702';
    await writeFile(other, JSON.stringify(config, null, 2));
    const sandboxOwn = await setup([...flags('INK', rpc.INK.rpc_url).slice(0, -1), other]);
    expect(sandboxOwn.stdout).toContain("[3/5] SponsoredExecutor already deployed at 0x7702000000000000000000000000000000007702 (the chains config's delegate");
    config.INK.delegate = config.INK.tokens.USDC.address;
    await writeFile(other, JSON.stringify(config, null, 2));
    const wrong = await setup([...flags('INK', rpc.INK.rpc_url).slice(0, -1), other]);
    expect(wrong.code).toBe(0);
    expect(wrong.stdout).toContain(
      `[3/5] the configured delegate ${config.INK.tokens.USDC.address} does not hold this SponsoredExecutor's code; using its deterministic address`,
    );
    expect(JSON.parse(await readFile(other, 'utf8')).INK.delegate).toBe(address);
  }, 60_000);

  it('a recorded transaction whose nonce the sponsor spent on something else is dropped and the deployment signed anew', async () => {
    const sponsor = platformGasSponsor(runtime.urls.enclave, new LocalOpJwtSigner(env.DATA_DIR!, LOCAL_SPONSOR_KEY_FILE), table);
    const sponsorAddress = await sponsor.address();
    const address = delegateAddress();
    class CrashingChain extends EvmChain {
      override broadcast(): Promise<Hex> {
        return Promise.reject(new ChainUnavailableError('POL', 'process killed before the broadcast'));
      }
    }
    await expect(deployDelegate({ table, chain: new CrashingChain('POL', rpc.POL), sponsor })).rejects.toThrow(/process killed/);
    const recorded = await getItem(table, keys.delegateDeployment('POL', address));
    // Meanwhile a sponsored send took that nonce (its lease had expired with the crashed run).
    const chain = new EvmChain('POL', rpc.POL);
    const nonce = await client('POL').getTransactionCount({ address: sponsorAddress });
    const fees = await chain.fees();
    const other = await sponsor.signTransaction({ type: 'eip1559', chainId: 137, nonce, to: sponsorAddress, value: 0n, data: '0x', gas: 21_000n, ...fees });
    await chain.waitForReceipt(await chain.broadcast(other), 10_000);

    const outcome = await deployDelegate({ table, chain, sponsor });
    expect(outcome.resumed).toBe(false);
    expect(outcome.txHash).not.toBe(keccak256(recorded!.raw as Hex));
    expect(await client('POL').getCode({ address })).toBe(sponsoredExecutorArtifact.deployedBytecode);
    expect(await client('POL').getTransactionCount({ address: sponsorAddress })).toBe(nonce + 2);
    expect((await getItem(table, keys.delegateDeployment('POL', address)))?.tx_hash).toBe(outcome.txHash);
  }, 60_000);
});
