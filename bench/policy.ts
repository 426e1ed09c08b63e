import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { importJWK, type JWK, SignJWT } from 'jose';
import * as v from 'valibot';
import { encodeFunctionData, erc20Abi } from 'viem';
import { devAppPaths } from '../infra/local/applications.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import { evaluatePolicy } from '../shared/policies/evaluate.ts';
import { signFacts } from '../shared/policies/facts.ts';
import { PolicySchema } from '../shared/policies/policy.ts';

/**
 * `npm run bench:policy [-- --requests 500]`: what a signing policy adds to an enclave v2
 * sign_message (issue 22: at most 2 ms p50), in one run against the local runtime over HTTP
 * (embedded dynalite, local key provider): the dev app with no policy (the built-in default, no
 * item to parse), then with a 20-rule policy the request has to walk to its last rule. Requests
 * one at a time, a fresh op_jwt each (minted before timing). Also the in-process cost of parsing
 * the stored policy and evaluating it. Then a USDC transfer signed under an allow rule without
 * limits and under one with `max_usd_per_day` (each signature counted in the user's daily item).
 * Not a test: it prints numbers.
 */
const { values } = parseArgs({ options: { requests: { type: 'string', default: '500' } } });
const REQUESTS = Number(values.requests);

process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const dataDir = await mkdtemp(join(tmpdir(), 'bench-policy-'));
const runtime = await startLocalRuntime({ dataDir, ports: { account: 0, enclave: 0, express: 0 } });
const [app] = runtime.apps;
const issuerKey = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;
const signingKey = await importJWK(issuerKey, 'ES256');
const secret = { 'content-type': 'application/json', 'x-service-secret-key': app!.secret_key };

const token = (sub: string, ttl: number) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: issuerKey.kid! })
    .setIssuer(app!.oidc.issuer)
    .setAudience(app!.oidc.audience!)
    .setSubject(sub)
    .setJti(crypto.randomUUID())
    .setIssuedAt()
    .setExpirationTime(`${ttl}s`)
    .sign(signingKey);

async function post(path: string, body: unknown, method = 'POST') {
  const response = await fetch(`${runtime.urls.enclave}${path}`, { method, headers: secret, body: JSON.stringify(body) });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status} ${JSON.stringify(json)}`);
  return json;
}

const wallet = (await post('/v2/api/wallet', { auth_jwt: await token('bench-user', 600), network: 'ETH', wallet_group_id: 'bench' })) as {
  wallet_id: string;
  access_key: string;
};

/** 19 rules in scope of sign_message whose conditions keep them from matching, then the allow that decides: the longest walk. */
const rule = (i: number) =>
  i % 2 === 0
    ? { id: `deny-other-${i}`, action: 'deny', operations: ['sign_data', 'sign_message'], channels: ['express'] }
    : {
        id: `allow-tx-${i}`,
        action: 'allow',
        operations: ['sign_transaction'],
        chains: ['ARB', 'ETH'],
        to: { allow: [`0x${i.toString(16).padStart(40, '0')}`] },
      };
const POLICY = {
  mode: 'enforce',
  rules: [...Array.from({ length: 19 }, (_, i) => rule(i + 1)), { id: 'allow-messages', action: 'allow', operations: ['sign_message'] }],
};

/** A 1 USDC transfer on the sandbox ETH chain, as sign_transaction signs it: a USD value the daily counter adds up. */
const ethChain = runtime.chains.chains.find((entry) => entry.chain === 'ETH') as { chain_id: number; tokens: { token: string; address?: string }[] };
const usdcTransfer = {
  chainId: ethChain.chain_id,
  nonce: 0,
  to: ethChain.tokens.find((entry) => entry.token === 'USDC')!.address!,
  value: '0',
  gas: '60000',
  maxFeePerGas: '1000000000',
  maxPriorityFeePerGas: '1000000',
  type: 'eip1559',
  data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: ['0x00000000000000000000000000000000000000b0', 1_000_000n] }),
};

async function measure(name: string, operation: 'sign_message' | 'sign_transaction' = 'sign_message'): Promise<number> {
  const tokens = await Promise.all(Array.from({ length: REQUESTS + 20 }, () => token('bench-user', 290)));
  const latencies: number[] = [];
  const fields = operation === 'sign_message' ? { message: 'bench' } : { transaction: usdcTransfer };
  for (const [i, opJwt] of tokens.entries()) {
    const started = performance.now();
    await post(`/v2/api/wallet/${operation}`, { op_jwt: opJwt, access_key: wallet.access_key, wallet_id: wallet.wallet_id, ...fields });
    if (i >= 20) latencies.push(performance.now() - started); // the first 20: warm-up
  }
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  process.stdout.write(`${name.padEnd(44)} p50 ${pct(50).toFixed(2).padStart(7)} ms   p99 ${pct(99).toFixed(2).padStart(7)} ms\n`);
  return pct(50);
}

process.stdout.write(`enclave POST /v2/api/wallet/sign_message, ${REQUESTS} requests each, one at a time, Node ${process.version}\n`);
const without = await measure('no policy (built-in default)');
await post('/v2/api/policies', POLICY, 'PUT');
const withPolicy = await measure('20-rule policy (decided by the 20th)');
const delta = withPolicy - without;
process.stdout.write(`policy adds ${delta.toFixed(2)} ms p50 (target: at most 2 ms) ${delta <= 2 ? 'OK' : 'OVER'}\n`);

// A daily limit counts each allowed signature in a conditional write (shared/enclave/policy-usage.ts): one more table round trip.
await post('/v2/api/policies', { mode: 'enforce', rules: [{ id: 'usdc', action: 'allow', operations: ['sign_transaction'], chains: ['ETH'] }] }, 'PUT');
const plainTransfer = await measure('USDC transfer, allow rule without limits', 'sign_transaction');
await post(
  '/v2/api/policies',
  { mode: 'enforce', rules: [{ id: 'usdc-daily', action: 'allow', operations: ['sign_transaction'], chains: ['ETH'], max_usd_per_day: '1000000' }] },
  'PUT',
);
const dailyTransfer = await measure('USDC transfer, max_usd_per_day (counted)', 'sign_transaction');
process.stdout.write(`the daily counter adds ${(dailyTransfer - plainTransfer).toFixed(2)} ms p50 (${REQUESTS + 20} signatures counted for one user)\n`);

// In process: what the enclave does per request once the item is read (parse the stored policy, read the body, evaluate).
const ROUNDS = 20_000;
const body = { message: 'bench' };
for (let i = 0; i < 1000; i++) evaluatePolicy(v.parse(PolicySchema, POLICY), signFacts({ operation: 'sign_message', channel: 'enclave', body }));
const started = performance.now();
for (let i = 0; i < ROUNDS; i++) evaluatePolicy(v.parse(PolicySchema, POLICY), signFacts({ operation: 'sign_message', channel: 'enclave', body }));
process.stdout.write(`in process: parse + evaluate the 20-rule policy ${(((performance.now() - started) / ROUNDS) * 1000).toFixed(1)} µs/op\n`);

await runtime.stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(0);
