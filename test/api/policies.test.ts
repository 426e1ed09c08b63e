import { encodeFunctionData, erc20Abi, getAddress, keccak256, recoverAddress, recoverTransactionAddress, stringToBytes } from 'viem';
import { describe, expect, it } from 'vitest';
import { chainBalance, chainInfo, faucet, newAccount } from './support/chains.ts';
import { accountHeaders, appOne, call, expectErrorShape, expressHeaders, mintToken, policyApp, sandbox, uniqueUser } from './support/client.ts';

/**
 * Signing policies (issue 22, first increment): PUT/GET {tee_url}/v2/api/policies and their
 * enforcement inside the enclave on every v2 signature. Policies are per app, so these tests set
 * them on their own app (policyApp), never on the apps other files share; the built-in default is
 * read on appOne, which no test gives a policy.
 */

const A = getAddress('0x00000000000000000000000000000000000000a1');
const B = getAddress('0x00000000000000000000000000000000000000b2');
const C = getAddress('0x00000000000000000000000000000000000000c3');
/** Any contract address: the token's own address does not matter to the recipient rule. */
const TOKEN = getAddress('0xaf88d065e77c8cc2239327c5edb3a432268e5831');

const secret = { 'x-service-secret-key': policyApp.secret_key };
const ALLOW_ALL = {
  mode: 'enforce',
  rules: [{ id: 'everything', action: 'allow', operations: ['sign_data', 'sign_message', 'sign_transaction', 'sign_authorization'] }],
};

function putPolicy(body: unknown, headers: Record<string, string> = secret) {
  return call('enclave', 'PUT', '/v2/api/policies', { headers, json: body });
}

function getPolicy(headers: Record<string, string> = secret) {
  return call('enclave', 'GET', '/v2/api/policies', { headers });
}

async function enclaveWallet(sub: string) {
  const created = await call('enclave', 'POST', '/v2/api/wallet', {
    headers: secret,
    json: { auth_jwt: await mintToken(policyApp, sub), network: 'ARB', wallet_group_id: 'default' },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body as { wallet_id: string; access_key: string; public_address: string };
}

/** One direct enclave signature (channel `enclave`: the op_jwt is signed by the app's identity provider). */
async function enclaveSign(
  sub: string,
  wallet: { wallet_id: string; access_key: string },
  operation: string,
  fields: object,
  claims?: Record<string, unknown>,
) {
  return call('enclave', 'POST', `/v2/api/wallet/${operation}`, {
    headers: secret,
    json: { op_jwt: await mintToken(policyApp, sub, { ttlSeconds: 120, claims }), access_key: wallet.access_key, wallet_id: wallet.wallet_id, ...fields },
  });
}

function erc20Transfer(to: string, options: { token?: string; chainId?: number; amount?: bigint } = {}) {
  return {
    transaction: {
      type: 'eip1559',
      chainId: options.chainId ?? 42161,
      nonce: 0,
      to: options.token ?? TOKEN,
      value: '0',
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as `0x${string}`, options.amount ?? 5_000_000n] }),
      gas: '60000',
      maxFeePerGas: '10',
      maxPriorityFeePerGas: '1',
    },
  };
}

function expectDenied(response: { status: number; body: unknown }, ruleId: string | null) {
  expect(response.status, JSON.stringify(response.body)).toBe(403);
  const error = expectErrorShape(response.body) as { code: string; message: string; rule_id?: unknown };
  expect(error.code).toBe('POLICY_DENIED');
  expect(error.rule_id).toBe(ruleId);
  if (ruleId !== null) expect(error.message).toContain(ruleId);
}

describe('PUT and GET /v2/api/policies', () => {
  it('an app that set none gets the built-in default as version 0', async () => {
    const response = await getPolicy({ 'x-service-secret-key': appOne.secret_key });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true, version: 0, mode: 'enforce', built_in: true });
    expect(response.body.rules.map((rule: { id: string }) => rule.id)).toContain('default.express-no-raw-hash');
  });

  it('401 without the app secret key (the API key is not one)', async () => {
    for (const headers of [{}, { 'x-service-secret-key': policyApp.api_key }] as Record<string, string>[]) {
      for (const response of [await getPolicy(headers), await putPolicy(ALLOW_ALL, headers)]) {
        expect(response.status).toBe(401);
        expect(expectErrorShape(response.body).code).toMatch(/^(MISSING|INVALID)_SECRET_KEY$/);
      }
    }
  });

  it('400 on a bad body, naming the field; nothing is stored', async () => {
    const before = (await getPolicy()).body.version;
    const cases: [unknown, string][] = [
      [{ rules: [] }, 'body.mode'],
      [{ mode: 'enforce', rules: [{ id: 'x', action: 'maybe', operations: ['sign_data'] }] }, 'body.rules.0.action'],
      [{ mode: 'enforce', rules: [{ id: 'x', action: 'allow', operations: ['sign_data'], to: { allow: ['not-an-address'] } }] }, 'body.rules.0.to.allow.0'],
      [{ mode: 'enforce', rules: [{ id: 'x', action: 'allow', operations: [] }] }, 'body.rules.0.operations'],
    ];
    for (const [body, field] of cases) {
      const response = await putPolicy(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(expectErrorShape(response.body).message).toContain(field);
    }
    expect((await getPolicy()).body.version).toBe(before);
  });

  it('each PUT is a new version; concurrent PUTs get distinct versions; GET returns the latest', async () => {
    const first = await putPolicy(ALLOW_ALL);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ success: true, mode: 'enforce', rules: ALLOW_ALL.rules });
    const v1 = first.body.version as number;
    expect(v1).toBeGreaterThanOrEqual(1);
    const second = await putPolicy({ ...ALLOW_ALL, mode: 'shadow' });
    expect(second.body.version).toBe(v1 + 1);
    const read = await getPolicy();
    expect(read.body).toEqual({ success: true, version: v1 + 1, mode: 'shadow', rules: ALLOW_ALL.rules, built_in: false });

    const concurrent = await Promise.all(Array.from({ length: 5 }, () => putPolicy(ALLOW_ALL)));
    expect(concurrent.map((response) => response.status)).toEqual(Array(5).fill(200));
    const versions = concurrent.map((response) => response.body.version as number).sort((x, y) => x - y);
    expect(versions).toEqual([v1 + 2, v1 + 3, v1 + 4, v1 + 5, v1 + 6]);
    expect((await getPolicy()).body).toMatchObject({ version: v1 + 6, mode: 'enforce', built_in: false });
  });
});

describe('enforcement inside the enclave', () => {
  const RECIPIENTS = {
    mode: 'enforce',
    rules: [
      { id: 'no-c', action: 'deny', operations: ['sign_transaction'], to: { deny: [C] } },
      { id: 'pay-a-only', action: 'allow', operations: ['sign_transaction'], to: { allow: [A] } },
    ],
  };

  it('to.allow [A]: an ERC-20 transfer to B is 403 POLICY_DENIED, to A is signed; a deny rule names itself', async () => {
    const sub = uniqueUser('policy-recipients');
    const wallet = await enclaveWallet(sub);
    try {
      expect((await putPolicy(RECIPIENTS)).status).toBe(200);
      expectDenied(await enclaveSign(sub, wallet, 'sign_transaction', erc20Transfer(B)), null);
      expectDenied(await enclaveSign(sub, wallet, 'sign_transaction', erc20Transfer(C)), 'no-c');
      // Nothing else is allowed either: no rule names sign_message.
      expectDenied(await enclaveSign(sub, wallet, 'sign_message', { message: 'hi', encoding: 'utf8' }), null);
      const toA = await enclaveSign(sub, wallet, 'sign_transaction', erc20Transfer(A));
      expect(toA.status, JSON.stringify(toA.body)).toBe(200);
      expect(await recoverTransactionAddress({ serializedTransaction: toA.body.signed_transaction })).toBe(wallet.public_address);
    } finally {
      await putPolicy(ALLOW_ALL);
    }
  });

  it('a native coin counts at the Chainlink price (sandbox ETH/USD feed): 0.001 ETH within max_usd_per_tx 10, 0.01 ETH over it', async () => {
    const sub = uniqueUser('policy-native');
    const wallet = await enclaveWallet(sub);
    // Amounts far from the limit: test/api/sandbox-prices.test.ts halves the ETH price for a moment while files run side by side.
    const send = (wei: bigint) => ({
      transaction: { type: 'eip1559', chainId: 42161, nonce: 0, to: A, value: wei.toString(), gas: '21000', maxFeePerGas: '10', maxPriorityFeePerGas: '1' },
    });
    try {
      const small = { mode: 'enforce', rules: [{ id: 'small-sends', action: 'allow', operations: ['sign_transaction'], max_usd_per_tx: '10' }] };
      expect((await putPolicy(small)).status).toBe(200);
      const signed = await enclaveSign(sub, wallet, 'sign_transaction', send(10n ** 15n));
      expect(signed.status, JSON.stringify(signed.body)).toBe(200);
      expectDenied(await enclaveSign(sub, wallet, 'sign_transaction', send(10n ** 16n)), null);
      const decisions = await call('enclave', 'GET', '/v2/api/policies/decisions?limit=2', { headers: secret });
      const [denied, allowed] = decisions.body.decisions as { decision: string; usd: string | null }[];
      expect([denied?.decision, allowed?.decision]).toEqual(['deny', 'allow']);
      // Priced: the USD value is known (about 30 and 3 USD at the sandbox's 3,000 USD ETH).
      expect(Number(denied?.usd)).toBeGreaterThan(10);
      expect(Number(allowed?.usd)).toBeLessThanOrEqual(10);
    } finally {
      await putPolicy(ALLOW_ALL);
    }
  });

  it.runIf(sandbox.appsFile !== undefined)(
    'POST /withdraw under max_usd_per_day 10 with to.allow [A]: 11 USDC and an unlisted recipient are 403 POLICY_DENIED (nothing sent), a listed 5 USDC is sent',
    async () => {
      const user = await newAccount(policyApp, uniqueUser('policy-withdraw'));
      await faucet('ARB', user.evm, 'ETH', '1');
      await faucet('ARB', user.evm, 'USDC', '50');
      const withdraw = (to: string, amount: string) =>
        call('account', 'POST', '/withdraw', { headers: user.headers, json: { to_address: to, amount, chain: 'ARB', token: 'USDC' } });
      try {
        expect(
          (
            await putPolicy({
              mode: 'enforce',
              rules: [{ id: 'payees', action: 'allow', operations: ['sign_transaction'], to: { allow: [A] }, max_usd_per_day: '10' }],
            })
          ).status,
        ).toBe(200);
        expectDenied(await withdraw(A, '11'), null);
        expectDenied(await withdraw(B, '1'), null);
        expect(await chainBalance('ARB', user.evm, 'USDC')).toBe(50_000_000n);
        const sent = await withdraw(A, '5');
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
        expect(await chainBalance('ARB', A, 'USDC')).toBeGreaterThanOrEqual(5_000_000n);
        expect(await chainBalance('ARB', user.evm, 'USDC')).toBe(45_000_000n);
      } finally {
        await putPolicy(ALLOW_ALL);
      }
    },
  );

  it('shadow mode signs what it would deny', async () => {
    const sub = uniqueUser('policy-shadow');
    const wallet = await enclaveWallet(sub);
    try {
      expect((await putPolicy({ ...RECIPIENTS, mode: 'shadow' })).status).toBe(200);
      const toB = await enclaveSign(sub, wallet, 'sign_transaction', erc20Transfer(B));
      expect(toB.status, JSON.stringify(toB.body)).toBe(200);
      expect(await recoverTransactionAddress({ serializedTransaction: toB.body.signed_transaction })).toBe(wallet.public_address);
    } finally {
      await putPolicy(ALLOW_ALL);
    }
  });

  // The sandbox's USDC contracts (GET /sandbox/chains); a deployed stack's differ.
  it.runIf(sandbox.appsFile !== undefined)('chains and max_usd_per_tx: the enclave reads chain codes and USDC amounts from the chains config', async () => {
    const sub = uniqueUser('policy-usd');
    const wallet = await enclaveWallet(sub);
    const arb = await chainInfo('ARB');
    const usdc = arb.tokens.find((token) => token.token === 'USDC')?.address;
    expect(usdc).toBeDefined();
    const usdcTransfer = (amount: bigint, chainId = arb.chain_id) => erc20Transfer(A, { token: usdc, chainId, amount });
    try {
      expect(
        (
          await putPolicy({
            mode: 'enforce',
            rules: [{ id: 'arb-usdc-small', action: 'allow', operations: ['sign_transaction'], chains: ['ARB'], max_usd_per_tx: '10' }],
          })
        ).status,
      ).toBe(200);
      expect((await enclaveSign(sub, wallet, 'sign_transaction', usdcTransfer(5_000_000n))).status).toBe(200);
      expectDenied(await enclaveSign(sub, wallet, 'sign_transaction', usdcTransfer(11_000_000n)), null);
      // Another chain is out of the rule's scope.
      expectDenied(await enclaveSign(sub, wallet, 'sign_transaction', usdcTransfer(5_000_000n, 1)), null);
    } finally {
      await putPolicy(ALLOW_ALL);
    }
  });

  // Issue 22, second increment: max_usd_per_day per user (op_jwt app + sub, rolling 24 h) and the decisions log.
  it.runIf(sandbox.appsFile !== undefined)(
    'max_usd_per_day 10 with to.allow [A]: 11 USDC denied, 5 allowed, B denied; of 20 concurrent 5-USDC signs of a fresh user exactly 2 pass; the decisions list shows them newest first',
    async () => {
      const sub = uniqueUser('policy-daily');
      const racer = uniqueUser('policy-daily-race');
      const [wallet, racerWallet] = [await enclaveWallet(sub), await enclaveWallet(racer)];
      const arb = await chainInfo('ARB');
      const usdc = arb.tokens.find((token) => token.token === 'USDC')?.address;
      const pay = (to: string, usd: bigint) => erc20Transfer(to, { token: usdc, chainId: arb.chain_id, amount: usd * 1_000_000n });
      try {
        const put = await putPolicy({
          mode: 'enforce',
          rules: [{ id: 'daily-a', action: 'allow', operations: ['sign_transaction'], to: { allow: [A] }, max_usd_per_day: '10' }],
        });
        expect(put.status, JSON.stringify(put.body)).toBe(200);
        expect(put.body.rules[0].max_usd_per_day).toBe('10');
        expectDenied(await enclaveSign(sub, wallet, 'sign_transaction', pay(A, 11n)), null);
        const five = await enclaveSign(sub, wallet, 'sign_transaction', pay(A, 5n));
        expect(five.status, JSON.stringify(five.body)).toBe(200);
        expectDenied(await enclaveSign(sub, wallet, 'sign_transaction', pay(B, 1n)), null);

        const race = await Promise.all(Array.from({ length: 20 }, () => enclaveSign(racer, racerWallet, 'sign_transaction', pay(A, 5n))));
        const statuses = race.map((response) => response.status);
        expect(
          statuses.filter((status) => status === 200),
          JSON.stringify(statuses),
        ).toHaveLength(2);
        expect(statuses.filter((status) => status === 403)).toHaveLength(18);

        const listed = await call('enclave', 'GET', '/v2/api/policies/decisions?limit=100', { headers: secret });
        expect(listed.status, JSON.stringify(listed.body)).toBe(200);
        const decisions = listed.body.decisions as { sub: string; at: string; decision: string; usd: string | null; recipients: string[] }[];
        const times = decisions.map((decision) => decision.at);
        expect(times).toEqual([...times].sort().reverse());
        const mine = decisions.filter((decision) => decision.sub === sub);
        expect(mine.map((decision) => [decision.decision, decision.usd, decision.recipients])).toEqual([
          ['deny', '1', [B]],
          ['allow', '5', [A]],
          ['deny', '11', [A]],
        ]);
        expect(mine[1]).toMatchObject({ rule_id: 'daily-a', operation: 'sign_transaction', channel: 'enclave', chain: 'ARB' });
        const raced = decisions.filter((decision) => decision.sub === racer);
        expect(raced.filter((decision) => decision.decision === 'allow')).toHaveLength(2);
        // Nothing secret in the log.
        expect(JSON.stringify(listed.body)).not.toMatch(/op_jwt|access_key|eyJ/);
      } finally {
        await putPolicy(ALLOW_ALL);
      }
    },
  );

  it('GET /v2/api/policies/decisions: 401 without the secret key, 400 on a bad limit, default 20', async () => {
    expect((await call('enclave', 'GET', '/v2/api/policies/decisions', { headers: { 'x-service-secret-key': policyApp.api_key } })).status).toBe(401);
    for (const limit of ['0', '101', 'x']) {
      const response = await call('enclave', 'GET', `/v2/api/policies/decisions?limit=${limit}`, { headers: secret });
      expect(response.status, limit).toBe(400);
      expect(expectErrorShape(response.body).message).toContain('limit');
    }
    const response = await call('enclave', 'GET', '/v2/api/policies/decisions', { headers: secret });
    expect(response.status).toBe(200);
    expect(response.body.decisions.length).toBeLessThanOrEqual(20);
  });

  it('channels: the account service is `account`, a direct call `enclave`, and claiming `account` in an op_jwt changes nothing', async () => {
    const sub = uniqueUser('policy-channels');
    const hash = keccak256(stringToBytes('policy channels'));
    const account = await call('account', 'POST', '/account', { headers: await accountHeaders(policyApp, sub) });
    expect(account.status).toBe(200);
    const wallet = await enclaveWallet(sub); // the account's EVM wallet (default group)
    const accountSign = async () => call('account', 'POST', '/wallet/sign', { headers: await accountHeaders(policyApp, sub), json: { raw_data_hash: hash } });
    try {
      expect(
        (
          await putPolicy({
            mode: 'enforce',
            rules: [
              { ...ALLOW_ALL.rules[0], id: 'all' },
              { id: 'no-raw-hash-here', action: 'deny', operations: ['sign_data'], channels: ['enclave'] },
            ],
          })
        ).status,
      ).toBe(200);
      expectDenied(await enclaveSign(sub, wallet, 'sign_data', { raw_data_hash: hash }), 'no-raw-hash-here');
      expectDenied(await enclaveSign(sub, wallet, 'sign_data', { raw_data_hash: hash }, { channel: 'account' }), 'no-raw-hash-here');
      const viaAccount = await accountSign();
      expect(viaAccount.status, JSON.stringify(viaAccount.body)).toBe(200);
      expect(await recoverAddress({ hash, signature: viaAccount.body.signature })).toBe(wallet.public_address);

      expect(
        (
          await putPolicy({
            mode: 'enforce',
            rules: [
              { ...ALLOW_ALL.rules[0], id: 'all' },
              { id: 'not-for-account', action: 'deny', operations: ['sign_data'], channels: ['account'] },
            ],
          })
        ).status,
      ).toBe(200);
      // Relayed by the account service as the enclave answered it.
      expectDenied(await accountSign(), 'not-for-account');
      expect((await enclaveSign(sub, wallet, 'sign_data', { raw_data_hash: hash })).status).toBe(200);
    } finally {
      await putPolicy(ALLOW_ALL);
    }
  });
});

describe('the built-in default (an app with no policy: appOne)', () => {
  it('refuses express sign/data with 403 POLICY_DENIED; express messages and the account service still sign', async () => {
    const sub = uniqueUser('policy-default');
    const headers = await expressHeaders(appOne, sub, 'ARB');
    const hash = keccak256(stringToBytes('raw hash through express'));
    expectDenied(await call('express', 'POST', '/v2/wallet/sign/data', { headers, json: { raw_data_hash: hash } }), 'default.express-no-raw-hash');
    const message = await call('express', 'POST', '/v2/wallet/sign/message', { headers, json: { message: 'hi' } });
    expect(message.status, JSON.stringify(message.body)).toBe(200);

    expect((await call('account', 'POST', '/account', { headers: await accountHeaders(appOne, sub) })).status).toBe(200);
    const signed = await call('account', 'POST', '/wallet/sign', { headers: await accountHeaders(appOne, sub), json: { raw_data_hash: hash } });
    expect(signed.status, JSON.stringify(signed.body)).toBe(200);
    expect(await recoverAddress({ hash, signature: signed.body.signature })).toBe(message.body.public_address);
  });
});
