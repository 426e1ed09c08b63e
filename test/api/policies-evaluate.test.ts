import { encodeFunctionData, erc20Abi, getAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { chainInfo } from './support/chains.ts';
import { appOne, call, expectErrorShape, mintToken, policyEvaluateApp, sandbox, uniqueUser } from './support/client.ts';

/**
 * POST {tee_url}/v2/api/policies/evaluate (issue 22): the decision the enclave would make, signing
 * nothing and counting nothing. Policies are set on this file's own app (policyEvaluateApp); the
 * built-in default is read on appOne, which no test gives a policy.
 */

const A = getAddress('0x00000000000000000000000000000000000000a1');
const B = getAddress('0x00000000000000000000000000000000000000b2');
const TOKEN = getAddress('0xaf88d065e77c8cc2239327c5edb3a432268e5831');
const SOL_RECIPIENT = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';

const secret = { 'x-service-secret-key': policyEvaluateApp.secret_key };
const POLICY = {
  mode: 'enforce',
  rules: [
    { id: 'no-raw', action: 'deny', operations: ['sign_data'] },
    { id: 'messages', action: 'allow', operations: ['sign_message'] },
    { id: 'treasury', action: 'allow', operations: ['sign_transaction'], chains: ['ARB'], to: { allow: [A] }, max_usd_per_tx: '10' },
    { id: 'sol-small', action: 'allow', operations: ['sign_transaction'], chains: ['SOL'], max_usd_per_tx: '10' },
  ],
};

function evaluate(body: unknown, headers: Record<string, string> = secret) {
  return call('enclave', 'POST', '/v2/api/policies/evaluate', { headers, json: body });
}

async function putPolicy(body: unknown) {
  const response = await call('enclave', 'PUT', '/v2/api/policies', { headers: secret, json: body });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body as { version: number };
}

const withdraw = (fields: object) => ({
  sub: uniqueUser('evaluate'),
  operation: 'withdraw',
  chain: 'ARB',
  token: 'USDC',
  to_address: A,
  amount: '5',
  ...fields,
});

function expectDecision(response: { status: number; body: any }, decision: 'allow' | 'deny', ruleId: string | null) {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expect(response.body).toMatchObject({ success: true, decision, rule_id: ruleId, remaining_usd_today: null });
  expect(typeof response.body.reason).toBe('string');
  if (ruleId !== null) expect(response.body.reason).toContain(ruleId);
}

describe('POST /v2/api/policies/evaluate', () => {
  it('401 without the app secret key (the API key is not one)', async () => {
    for (const headers of [{}, { 'x-service-secret-key': policyEvaluateApp.api_key }] as Record<string, string>[]) {
      const response = await evaluate(withdraw({}), headers);
      expect(response.status).toBe(401);
      expect(expectErrorShape(response.body).code).toMatch(/^(MISSING|INVALID)_SECRET_KEY$/);
    }
  });

  it('400 on a bad body, naming the field', async () => {
    const sub = uniqueUser('evaluate');
    const cases: [unknown, string][] = [
      [{ operation: 'sign_message', message: 'hi' }, 'body.sub'],
      [{ sub, operation: 'sign_everything' }, 'body.operation'],
      [{ sub, operation: 'sign_data', raw_data_hash: '0x12' }, 'body.raw_data_hash'],
      [{ sub, operation: 'sign_message', message: 'hi', channel: 'front-end' }, 'body.channel'],
      [withdraw({ amount: 'five' }), 'body.amount'],
      [withdraw({ to_address: 'nope' }), 'body.to_address'],
      [withdraw({ chain: 'ETH', token: 'USDC.E' }), 'body.token'],
    ];
    for (const [body, field] of cases) {
      const response = await evaluate(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(expectErrorShape(response.body).message).toContain(field);
    }
  });

  it('the built-in default (appOne): express sign_data is refused, the enclave channel and withdrawals are allowed', async () => {
    const headers = { 'x-service-secret-key': appOne.secret_key };
    const sub = uniqueUser('evaluate-default');
    const hash = `0x${'ab'.repeat(32)}`;
    expectDecision(await evaluate({ sub, operation: 'sign_data', raw_data_hash: hash, channel: 'express' }, headers), 'deny', 'default.express-no-raw-hash');
    expectDecision(await evaluate({ sub, operation: 'sign_data', raw_data_hash: hash }, headers), 'allow', 'default.account-enclave');
    expectDecision(await evaluate({ ...withdraw({}), sub }, headers), 'allow', 'default.account-enclave');
  });

  it('decides a withdrawal as the transfer /withdraw would sign: recipient allow-list and max_usd_per_tx on ARB USDC; other chains and native coins as the rules say', async () => {
    await putPolicy(POLICY);
    expectDecision(await evaluate(withdraw({})), 'allow', 'treasury');
    const over = await evaluate(withdraw({ amount: '11' }));
    expectDecision(over, 'deny', null);
    expect(over.body.reason).toContain('no rule allows sign_transaction on the account channel (ARB)');
    expectDecision(await evaluate(withdraw({ to_address: B })), 'deny', null);
    expectDecision(await evaluate(withdraw({ chain: 'ETH' })), 'deny', null);
    // Native coins at the sandbox's Chainlink prices (ETH 3,000 USD, SOL 150 USD; another file may
    // halve ETH for a moment, so the amounts stay far from the limit): 3 USD and 30 USD of ETH.
    expectDecision(await evaluate(withdraw({ token: 'ETH', amount: '0.001' })), 'allow', 'treasury');
    expectDecision(await evaluate(withdraw({ token: 'ETH', amount: '0.01' })), 'deny', null);
    expectDecision(await evaluate(withdraw({ chain: 'SOL', token: 'SOL', to_address: SOL_RECIPIENT, amount: '0.01' })), 'allow', 'sol-small');
    expectDecision(await evaluate(withdraw({ chain: 'SOL', to_address: SOL_RECIPIENT })), 'allow', 'sol-small');
    expectDecision(await evaluate(withdraw({ chain: 'SOL', to_address: SOL_RECIPIENT, amount: '11' })), 'deny', null);
    expectDecision(await evaluate(withdraw({ chain: 'SOL', token: 'SOL', to_address: SOL_RECIPIENT, amount: '1' })), 'deny', null);
  });

  it('decides sign_* bodies (without op_jwt, access_key, wallet_id); the channel defaults to enclave and can be named', async () => {
    await putPolicy(POLICY);
    const sub = uniqueUser('evaluate');
    const transfer = (to: string, amount: bigint) => ({
      type: 'eip1559',
      chainId: 42161,
      nonce: 0,
      to: TOKEN,
      value: '0',
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as `0x${string}`, amount] }),
      gas: '60000',
      maxFeePerGas: '10',
      maxPriorityFeePerGas: '1',
    });
    // TOKEN need not be the configured USDC on a deployed stack: a non-USD token is unpriced, so only the recipient is asserted here.
    const toB = await evaluate({ sub, operation: 'sign_transaction', transaction: transfer(B, 1n) });
    expectDecision(toB, 'deny', null);
    expect(toB.body.reason).toContain('on the enclave channel (ARB)');
    const denied = await evaluate({ sub, operation: 'sign_data', raw_data_hash: `0x${'cd'.repeat(32)}`, channel: 'express' });
    expectDecision(denied, 'deny', 'no-raw');
    expect(denied.body.reason).toContain('express channel');
    expectDecision(await evaluate({ sub, operation: 'sign_message', message: 'hello' }), 'allow', 'messages');
    expectDecision(await evaluate({ sub, operation: 'sign_authorization', chain_id: 42161, contract_address: A, nonce: 0 }), 'deny', null);
  });

  it("max_usd_per_day is decided on the user's rolling-24 h total, and remaining_usd_today is what is left; evaluating counts nothing", async () => {
    await putPolicy({
      mode: 'enforce',
      rules: [{ id: 'daily', action: 'allow', operations: ['sign_transaction'], chains: ['ARB'], max_usd_per_day: '10' }, POLICY.rules[1]],
    });
    const sub = uniqueUser('evaluate-daily');
    for (let i = 0; i < 2; i++) {
      const five = await evaluate(withdraw({ sub }));
      expectDecision({ ...five, body: { ...five.body, remaining_usd_today: null } }, 'allow', 'daily');
      expect(five.body.remaining_usd_today).toBe('10');
    }
    const eleven = await evaluate(withdraw({ sub, amount: '11' }));
    expect(eleven.body).toMatchObject({ decision: 'deny', rule_id: null, remaining_usd_today: '10' });
    // No daily limit in scope (sign_message): null.
    expectDecision(await evaluate({ sub, operation: 'sign_message', message: 'hello' }), 'allow', 'messages');
  });

  // A real signature counts; evaluate then reads what is left. The sandbox's USDC contract (GET /sandbox/chains); a deployed stack's differs.
  it.runIf(sandbox.appsFile !== undefined)('after a signed 5 USDC transfer, remaining_usd_today is 5 and another 6 is denied', async () => {
    await putPolicy({
      mode: 'enforce',
      rules: [{ id: 'daily', action: 'allow', operations: ['sign_transaction'], chains: ['ARB'], max_usd_per_day: '10' }],
    });
    const sub = uniqueUser('evaluate-counted');
    const created = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: secret,
      json: { auth_jwt: await mintToken(policyEvaluateApp, sub), network: 'ARB', wallet_group_id: 'default' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const usdc = (await chainInfo('ARB')).tokens.find((entry) => entry.token === 'USDC')!.address!;
    const transaction = {
      type: 'eip1559',
      chainId: 42161,
      nonce: 0,
      to: usdc,
      value: '0',
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [A, 5_000_000n] }),
      gas: '60000',
      maxFeePerGas: '10',
      maxPriorityFeePerGas: '1',
    };
    const signed = await call('enclave', 'POST', '/v2/api/wallet/sign_transaction', {
      headers: secret,
      json: {
        op_jwt: await mintToken(policyEvaluateApp, sub, { ttlSeconds: 120 }),
        access_key: created.body.access_key,
        wallet_id: created.body.wallet_id,
        transaction,
      },
    });
    expect(signed.status, JSON.stringify(signed.body)).toBe(200);
    const five = await evaluate(withdraw({ sub }));
    expect(five.body).toMatchObject({ decision: 'allow', rule_id: 'daily', remaining_usd_today: '5' });
    const six = await evaluate(withdraw({ sub, amount: '6' }));
    expect(six.body).toMatchObject({ decision: 'deny', rule_id: null, remaining_usd_today: '5' });
    expect(six.body.reason).toContain('no rule allows');
  });

  it('in shadow mode a would-be denial is allow with shadow: true and the rule that would deny; evaluating stores nothing', async () => {
    const { version } = await putPolicy({ ...POLICY, mode: 'shadow' });
    const sub = uniqueUser('evaluate');
    const response = await evaluate({ sub, operation: 'sign_data', raw_data_hash: `0x${'ef'.repeat(32)}` });
    expectDecision(response, 'allow', 'no-raw');
    expect(response.body.shadow).toBe(true);
    expect(response.body.reason).toMatch(/^shadow mode: rule no-raw denies/);
    const allowed = await evaluate({ sub, operation: 'sign_message', message: 'hello' });
    expectDecision(allowed, 'allow', 'messages');
    expect(allowed.body.shadow).toBeUndefined();
    const current = await call('enclave', 'GET', '/v2/api/policies', { headers: secret });
    expect(current.body).toMatchObject({ version, mode: 'shadow' });
  });
});
