import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Chains } from '../../shared/chains/chains.ts';
import { parseRpcUrls, RpcUrlsError, ssmRpcUrls } from '../../shared/chains/rpc-urls.ts';
import { ConfigError, loadChainsConfig, loadRpcUrlsParameter } from '../../shared/config.ts';

/**
 * RPC URLs from an SSM SecureString (RPC_URLS_PARAMETER): read decrypted, once per container,
 * on first use; validated; never repeated in an error. SSM is a local stand-in speaking its JSON
 * 1.1 protocol (AWS_ENDPOINT_URL_SSM); the request signing itself is tested in ssm-parameter.test.ts.
 */
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'test';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test';

/** GetParameter calls the stand-in received, and what it answers next (in order, then the last forever). */
type SsmAnswer = { status: 200; value: string } | { status: 400; type: string };
const ssm = {
  calls: [] as { Name: string; WithDecryption: boolean }[],
  answers: [] as SsmAnswer[],
  on(...answers: SsmAnswer[]) {
    ssm.answers = answers;
  },
};
let server: Server;
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      if (req.headers['x-amz-target'] !== 'AmazonSSM.GetParameter' || !String(req.headers.authorization).startsWith('AWS4-HMAC-SHA256 ')) {
        res.writeHead(400).end(JSON.stringify({ __type: 'InvalidAction' }));
        return;
      }
      const input = JSON.parse(body) as { Name: string; WithDecryption: boolean };
      ssm.calls.push(input);
      const answer = ssm.answers.length > 1 ? ssm.answers.shift()! : ssm.answers[0]!;
      if (answer.status === 200) res.writeHead(200).end(JSON.stringify({ Parameter: { Name: input.Name, Type: 'SecureString', Value: answer.value } }));
      else res.writeHead(400).end(JSON.stringify({ __type: answer.type }));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  process.env.AWS_ENDPOINT_URL_SSM = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));
beforeEach(() => {
  ssm.calls = [];
  ssm.answers = [];
});

const URLS = {
  ETH: 'https://eth-mainnet.example.com/v2/key-eth-123',
  ARB: 'https://arb-mainnet.example.com/v2/key-arb-123',
  POL: 'https://polygon-mainnet.example.com/v2/key-pol-123',
  INK: 'https://ink-mainnet.example.com/v2/key-ink-123',
  SOL: 'https://solana-mainnet.example.com/?api-key=key-sol-123',
};

const evm = (chain_id: number, native: 'ETH' | 'POL') => ({ family: 'evm', chain_id, native, tokens: { USDC: { address: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', decimals: 6 } } });
const WITHOUT_URLS = {
  ETH: evm(1, 'ETH'),
  ARB: evm(42161, 'ETH'),
  POL: evm(137, 'POL'),
  INK: evm(57073, 'ETH'),
  SOL: { family: 'sol', native: 'SOL', tokens: { USDC: { mint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6 } } },
};

let parameterCount = 0;
const uniqueName = () => `/perp-wallet/test/rpc-urls-${++parameterCount}`;

describe('ssmRpcUrls', () => {
  it('reads the SecureString decrypted, once, on first use', async () => {
    const name = uniqueName();
    ssm.on({ status: 200, value: JSON.stringify(URLS) });
    const source = ssmRpcUrls(name);
    expect(ssm.calls).toHaveLength(0); // a cold start needs no AWS call

    const [a, b] = await Promise.all([source(), source()]);
    expect(a).toEqual(URLS);
    expect(b).toEqual(URLS);
    expect(await source()).toEqual(URLS);
    expect(ssm.calls).toEqual([{ Name: name, WithDecryption: true }]);
  });

  it('a failed read is retried on the next call rather than cached', async () => {
    const name = uniqueName();
    ssm.on({ status: 400, type: 'ThrottlingException' }, { status: 200, value: JSON.stringify(URLS) });
    const source = ssmRpcUrls(name);
    await expect(source()).rejects.toThrow(`SSM parameter ${name}: ThrottlingException`);
    expect(await source()).toEqual(URLS);
    expect(ssm.calls).toHaveLength(2);
  });

  it('a malformed value is refused naming the key and the problem, never the value', async () => {
    const name = uniqueName();
    ssm.on({ status: 200, value: JSON.stringify({ ...URLS, ARB: 'key-arb-secret not a url' }) });
    const error = await ssmRpcUrls(name)().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RpcUrlsError);
    expect((error as Error).message).toBe(`SSM parameter ${name}: ARB: must be a URL`);
    expect(() => parseRpcUrls('p', JSON.stringify({ ETH: URLS.ETH }))).toThrow('SSM parameter p: ARB: is missing; POL: is missing; INK: is missing; SOL: is missing');
    expect(() => parseRpcUrls('p', 'key-sol-123{')).toThrow('SSM parameter p: must be JSON');
    expect(() => parseRpcUrls('p', '"key-sol-123"')).toThrow('SSM parameter p: (root): must be a JSON object');
    expect(() => parseRpcUrls('p', JSON.stringify({ ...URLS, SOL: 42 }))).toThrow('SSM parameter p: SOL: must be a string');
    for (const secret of ['key-arb-secret', 'key-eth-123', 'key-sol-123']) {
      expect(() => parseRpcUrls('p', JSON.stringify({ ...URLS, ARB: 'key-arb-secret' }))).not.toThrow(secret);
    }
  });
});

describe('Chains with RPC URLs from SSM', () => {
  it('builds each chain with the URL from the parameter, read once for all chains', async () => {
    const name = uniqueName();
    ssm.on({ status: 200, value: JSON.stringify(URLS) });
    const config = loadChainsConfig({ CHAINS_CONFIG: JSON.stringify(WITHOUT_URLS), RPC_URLS_PARAMETER: name });
    const chains = new Chains(config, ssmRpcUrls(name));
    expect(chains.decimals('ARB', 'USDC')).toBe(6); // planning needs no RPC URL
    expect(ssm.calls).toHaveLength(0);
    expect((await chains.evm('ARB')).config.rpc_url).toBe(URLS.ARB);
    expect((await chains.evm('POL')).config.rpc_url).toBe(URLS.POL);
    expect((await chains.sol()).config.rpc_url).toBe(URLS.SOL);
    expect(await chains.evm('ARB')).toBe(await chains.evm('ARB'));
    expect(ssm.calls).toHaveLength(1);
  });

  it('inline rpc_url (the sandbox) needs no parameter', async () => {
    const inline = Object.fromEntries(Object.entries(WITHOUT_URLS).map(([code, chain]) => [code, { ...chain, rpc_url: `http://127.0.0.1:8545/${code}` }]));
    const config = loadChainsConfig({ CHAINS_CONFIG: JSON.stringify(inline) });
    expect((await new Chains(config).evm('INK')).config.rpc_url).toBe('http://127.0.0.1:8545/INK');
    expect(ssm.calls).toHaveLength(0);
  });
});

describe('loadChainsConfig and RPC_URLS_PARAMETER', () => {
  it('fails the cold start when a chain has no rpc_url and no RPC_URLS_PARAMETER is set, naming both', () => {
    const env = { CHAINS_CONFIG: JSON.stringify(WITHOUT_URLS) };
    expect(() => loadChainsConfig(env)).toThrow(ConfigError);
    expect(() => loadChainsConfig(env)).toThrow('RPC_URLS_PARAMETER: required, since CHAINS_CONFIG has no rpc_url for ETH, ARB, POL, INK, SOL');
    const partial = { ...WITHOUT_URLS, ETH: { ...WITHOUT_URLS.ETH, rpc_url: 'http://127.0.0.1:8545' } };
    expect(() => loadChainsConfig({ CHAINS_CONFIG: JSON.stringify(partial) })).toThrow(/no rpc_url for ARB, POL, INK, SOL$/);
  });

  it('accepts an SSM parameter name and refuses anything else', () => {
    expect(loadRpcUrlsParameter({ RPC_URLS_PARAMETER: '/perp-wallet/prod/rpc-urls' })).toBe('/perp-wallet/prod/rpc-urls');
    expect(loadRpcUrlsParameter({})).toBeUndefined();
    expect(() => loadRpcUrlsParameter({ RPC_URLS_PARAMETER: 'https://x y' })).toThrow(/RPC_URLS_PARAMETER/);
  });
});
