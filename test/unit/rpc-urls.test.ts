import { clearCaches } from '@aws-lambda-powertools/parameters';
import { GetSecretValueCommand, ResourceNotFoundException, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { Chains } from '../../shared/chains/chains.ts';
import { ChainUnavailableError } from '../../shared/chains/errors.ts';
import { parseRpcUrls, RPC_URLS_PLACEHOLDER_KEY, RpcUrlsError, secretBridgeApiKey, secretRpcUrls } from '../../shared/chains/rpc-urls.ts';
import { ConfigError, loadChainsConfig, loadRpcUrlsSecret } from '../../shared/config.ts';
import { bridgeClientOptions, loadBridgeProvider } from '../../shared/deps/transfers.ts';
import { setLogLevel } from '../../shared/logger.ts';

/**
 * RPC URLs from a Secrets Manager secret (RPC_URLS_SECRET), read with Powertools Parameters:
 * once per container, on first use; validated; never repeated in an error. Secrets Manager is
 * aws-sdk-client-mock on the client class Powertools constructs.
 */
process.env.AWS_REGION ??= 'us-east-1';
setLogLevel('silent'); // Chains logs the refused read; its content is checked in the API suite's log scan

const secrets = mockClient(SecretsManagerClient);
beforeEach(() => {
  secrets.reset();
  clearCaches(); // Powertools' cache is per process: each test starts cold
});

const URLS = {
  ETH: 'https://eth-mainnet.example.com/v2/key-eth-123',
  ARB: 'https://arb-mainnet.example.com/v2/key-arb-123',
  POL: 'https://polygon-mainnet.example.com/v2/key-pol-123',
  INK: 'https://ink-mainnet.example.com/v2/key-ink-123',
  SOL: 'https://solana-mainnet.example.com/?api-key=key-sol-123',
};
const SECRET_ID = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:perp-wallet/rpc-urls-AbCdEf';
const answer = (value: string) => ({ ARN: SECRET_ID, Name: 'perp-wallet/rpc-urls', SecretString: value });

const evm = (chain_id: number, native: 'ETH' | 'POL') => ({
  family: 'evm',
  chain_id,
  native,
  tokens: { USDC: { address: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', decimals: 6 } },
});
const WITHOUT_URLS = {
  ETH: evm(1, 'ETH'),
  ARB: evm(42161, 'ETH'),
  POL: evm(137, 'POL'),
  INK: evm(57073, 'ETH'),
  SOL: { family: 'sol', native: 'SOL', tokens: { USDC: { mint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6 } } },
};

describe("the bridge's API key (LIFI_API_KEY) from the same secret", () => {
  it('is read with the URLs, which still parse beside it; absent, or the secret unreadable, means no key', async () => {
    secrets.on(GetSecretValueCommand).resolves(answer(JSON.stringify({ ...URLS, LIFI_API_KEY: 'lifi-key-1' })));
    expect(await secretBridgeApiKey(SECRET_ID)()).toBe('lifi-key-1');
    expect(await secretRpcUrls(SECRET_ID)()).toEqual(URLS);
    expect(secrets).toReceiveCommandTimes(GetSecretValueCommand, 1);
    clearCaches();
    secrets.reset();
    secrets.on(GetSecretValueCommand).resolves(answer(JSON.stringify(URLS)));
    expect(await secretBridgeApiKey(SECRET_ID)()).toBeUndefined();
    clearCaches();
    secrets.reset();
    secrets.on(GetSecretValueCommand).rejects(new ResourceNotFoundException({ message: 'gone', $metadata: {} }));
    expect(await secretBridgeApiKey(SECRET_ID)()).toBeUndefined();
  });

  it('the bridge client is given it only where RPC_URLS_SECRET is set; BRIDGE_CONTRACTS replaces the allow-list', () => {
    expect(bridgeClientOptions('https://li.quest', {})).toEqual({ baseUrl: 'https://li.quest' });
    expect(typeof bridgeClientOptions('https://li.quest', { RPC_URLS_SECRET: SECRET_ID }).apiKey).toBe('function');
    expect(bridgeClientOptions('http://127.0.0.1:1', { BRIDGE_CONTRACTS: '{"ARB":["0x01"]}' }).contracts).toEqual({ ARB: ['0x01'] });
    expect(() => bridgeClientOptions('http://127.0.0.1:1', { BRIDGE_CONTRACTS: '{"XYZ":["0x01"]}' })).toThrow(ConfigError);
    // The provider id an estimate names: LI.FI unless a deployment (the sandbox) says otherwise.
    expect(loadBridgeProvider({})).toBe('lifi');
    expect(loadBridgeProvider({ BRIDGE_PROVIDER: 'sandbox_bridge' })).toBe('sandbox_bridge');
    expect(() => loadBridgeProvider({ BRIDGE_PROVIDER: 'Not An Id' })).toThrow(ConfigError);
  });
});

describe('secretRpcUrls', () => {
  it('reads the secret once, on first use', async () => {
    secrets.on(GetSecretValueCommand).resolves(answer(JSON.stringify(URLS)));
    const source = secretRpcUrls(SECRET_ID);
    expect(secrets).toReceiveCommandTimes(GetSecretValueCommand, 0); // a cold start needs no AWS call

    expect(await source()).toEqual(URLS);
    expect(await source()).toEqual(URLS);
    expect(secrets).toReceiveCommandExactlyOnceWith(GetSecretValueCommand, { SecretId: SECRET_ID });
  });

  it('a failed read is retried on the next call rather than cached', async () => {
    secrets
      .on(GetSecretValueCommand)
      .rejectsOnce(new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: {} }))
      .resolves(answer(JSON.stringify(URLS)));
    const source = secretRpcUrls(SECRET_ID);
    await expect(source()).rejects.toThrow("Secrets Manager can't find the specified secret.");
    expect(await source()).toEqual(URLS);
    expect(secrets).toReceiveCommandTimes(GetSecretValueCommand, 2);
  });

  it("refuses the placeholder the stack creates the secret with, and sees the operator's value on the next call", async () => {
    const placeholder = JSON.stringify({ [RPC_URLS_PLACEHOLDER_KEY]: 'Xq3-generated-placeholder' });
    secrets
      .on(GetSecretValueCommand)
      .resolvesOnce(answer(placeholder))
      .resolves(answer(JSON.stringify(URLS)));
    const source = secretRpcUrls(SECRET_ID);
    const error = await source().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RpcUrlsError);
    expect((error as Error).message).toBe(`secret ${SECRET_ID}: still holds the placeholder it was created with; put the RPC URLs in it (docs/deploy.md)`);
    expect((error as Error).message).not.toContain('Xq3');
    // Powertools cached the placeholder; the refused value is read past the cache.
    expect(await source()).toEqual(URLS);
    expect(await source()).toEqual(URLS);
    expect(secrets).toReceiveCommandTimes(GetSecretValueCommand, 2);
  });

  it('refuses a malformed value naming the key and the problem, never the value', async () => {
    secrets.on(GetSecretValueCommand).resolves(answer(JSON.stringify({ ...URLS, ARB: 'key-arb-secret not a url' })));
    const error = await secretRpcUrls(SECRET_ID)().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RpcUrlsError);
    expect((error as Error).message).toBe(`secret ${SECRET_ID}: ARB: must be a URL`);

    expect(() => parseRpcUrls('s', JSON.stringify({ ETH: URLS.ETH }))).toThrow('secret s: ARB: is missing; POL: is missing; INK: is missing; SOL: is missing');
    expect(() => parseRpcUrls('s', 'key-sol-123{')).toThrow('secret s: must be JSON');
    expect(() => parseRpcUrls('s', '"key-sol-123"')).toThrow('secret s: (root): must be a JSON object');
    expect(() => parseRpcUrls('s', JSON.stringify({ ...URLS, SOL: 42 }))).toThrow('secret s: SOL: must be a string');
    expect(() => parseRpcUrls('s', new TextEncoder().encode(JSON.stringify(URLS)))).toThrow('secret s: must be a SecretString, not binary');
    expect(() => parseRpcUrls('s', undefined)).toThrow('secret s: has no value');
    const messages = [
      JSON.stringify({ ...URLS, ARB: 'key-arb-secret' }),
      JSON.stringify({ ETH: URLS.ETH, SOL: 42 }),
      `${JSON.stringify(URLS)}key-sol-123`,
      JSON.stringify([URLS.ETH]),
    ].map((raw) => {
      try {
        parseRpcUrls('s', raw);
        return 'accepted';
      } catch (caught) {
        return (caught as Error).message;
      }
    });
    for (const message of messages) {
      expect(message).toMatch(/^secret s: /);
      for (const secret of ['key-', 'example.com', 'https:']) expect(message).not.toContain(secret);
    }
  });
});

describe('Chains with RPC URLs from the secret', () => {
  const config = () => loadChainsConfig({ CHAINS_CONFIG: JSON.stringify(WITHOUT_URLS), RPC_URLS_SECRET: SECRET_ID });

  it('builds each chain with the URL from the secret, read once for all chains', async () => {
    secrets.on(GetSecretValueCommand).resolves(answer(JSON.stringify(URLS)));
    const chains = new Chains(config(), secretRpcUrls(SECRET_ID));
    expect(chains.decimals('ARB', 'USDC')).toBe(6); // planning needs no RPC URL
    expect(secrets).toReceiveCommandTimes(GetSecretValueCommand, 0);
    expect((await chains.evm('ARB')).config.rpc_url).toBe(URLS.ARB);
    expect((await chains.evm('POL')).config.rpc_url).toBe(URLS.POL);
    expect((await chains.sol()).config.rpc_url).toBe(URLS.SOL);
    expect(await chains.evm('ARB')).toBe(await chains.evm('ARB'));
    expect(secrets).toReceiveCommandExactlyOnceWith(GetSecretValueCommand, { SecretId: SECRET_ID });
  });

  it('answers a chain call with 502 CHAIN_UNAVAILABLE while the secret is unset or unreadable, naming neither secret nor value, and retries', async () => {
    secrets
      .on(GetSecretValueCommand)
      .resolvesOnce(answer(JSON.stringify({ [RPC_URLS_PLACEHOLDER_KEY]: 'Xq3-generated-placeholder' })))
      .rejectsOnce(new Error('Rate exceeded'))
      .resolves(answer(JSON.stringify(URLS)));
    const chains = new Chains(config(), secretRpcUrls(SECRET_ID));
    for (const attempt of [() => chains.evm('ETH'), () => chains.sol()]) {
      const error = await attempt().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ChainUnavailableError);
      expect(error).toMatchObject({ status: 502, code: 'CHAIN_UNAVAILABLE' });
      expect((error as Error).message).toMatch(/^The (ETH|SOL) RPC failed: its RPC URL could not be read$/);
    }
    expect((await chains.evm('ETH')).config.rpc_url).toBe(URLS.ETH);
    expect(secrets).toReceiveCommandTimes(GetSecretValueCommand, 3);
  });

  it('inline rpc_url (the sandbox) needs no secret', async () => {
    const inline = Object.fromEntries(Object.entries(WITHOUT_URLS).map(([code, chain]) => [code, { ...chain, rpc_url: `http://127.0.0.1:8545/${code}` }]));
    const chains = new Chains(loadChainsConfig({ CHAINS_CONFIG: JSON.stringify(inline) }));
    expect((await chains.evm('INK')).config.rpc_url).toBe('http://127.0.0.1:8545/INK');
    expect(secrets).toReceiveCommandTimes(GetSecretValueCommand, 0);
  });
});

describe('loadChainsConfig and RPC_URLS_SECRET', () => {
  it('fails the cold start when a chain has no rpc_url and no RPC_URLS_SECRET is set, naming both', () => {
    const env = { CHAINS_CONFIG: JSON.stringify(WITHOUT_URLS) };
    expect(() => loadChainsConfig(env)).toThrow(ConfigError);
    expect(() => loadChainsConfig(env)).toThrow('RPC_URLS_SECRET: required, since CHAINS_CONFIG has no rpc_url for ETH, ARB, POL, INK, SOL');
    const partial = { ...WITHOUT_URLS, ETH: { ...WITHOUT_URLS.ETH, rpc_url: 'http://127.0.0.1:8545' } };
    expect(() => loadChainsConfig({ CHAINS_CONFIG: JSON.stringify(partial) })).toThrow(/no rpc_url for ARB, POL, INK, SOL$/);
  });

  it('accepts a secret name or ARN and refuses anything else', () => {
    expect(loadRpcUrlsSecret({ RPC_URLS_SECRET: 'perp-wallet/rpc-urls' })).toBe('perp-wallet/rpc-urls');
    expect(loadRpcUrlsSecret({ RPC_URLS_SECRET: SECRET_ID })).toBe(SECRET_ID);
    expect(loadRpcUrlsSecret({})).toBeUndefined();
    expect(() => loadRpcUrlsSecret({ RPC_URLS_SECRET: 'https://x y' })).toThrow(/RPC_URLS_SECRET/);
  });
});
