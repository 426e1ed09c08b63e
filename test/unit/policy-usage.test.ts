import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { encodeFunctionData, erc20Abi } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Table } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { enforceSigningPolicy } from '../../shared/enclave/policy-gate.ts';
import { listPolicyDecisions } from '../../shared/enclave/policy-log.ts';
import { putPolicy } from '../../shared/enclave/policy-store.ts';
import { USAGE_WINDOW_MS, usdSpentToday } from '../../shared/enclave/policy-usage.ts';
import { PolicyDeniedError } from '../../shared/errors.ts';
import type { Policy, PolicyChains } from '../../shared/policies/index.ts';
import { DYNAMO_ENGINES, startEngineTable } from './support/dynamodb-engines.ts';

/**
 * max_usd_per_day (issue 22): one POLICYUSE#<app>#<sub> item, read-decide-put conditional on
 * `rev`. The rolling window, counting only real allows, and 20 concurrent signs against a limit
 * that allows 5 letting exactly 5 through, on both local engines.
 */
const USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48';
const A: `0x${string}` = '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B';
const B: `0x${string}` = '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045';
const chains: PolicyChains = { ETH: { family: 'evm', chain_id: 1, native: 'ETH', tokens: { USDC: { address: USDC, decimals: 6 } } } };
const usdc = (to: `0x${string}`, usd: number) => ({
  operation: 'sign_transaction' as const,
  body: {
    transaction: { chainId: 1, nonce: 0, to: USDC, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, BigInt(usd * 1_000_000)] }) },
  },
  chains,
});
const dailyPolicy = (mode: Policy['mode'], limit: string): Policy => ({
  mode,
  rules: [{ id: 'daily', action: 'allow', operations: ['sign_transaction'], to: { allow: [A] }, max_usd_per_day: limit }],
});

describe.each(DYNAMO_ENGINES)('max_usd_per_day counter on %s', { timeout: 90_000 }, (engine) => {
  let table: Table;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ table, stop } = await startEngineTable(engine, 'usage'));
  }, 90_000);
  afterAll(() => stop?.());

  const sign = (appId: string, sub: string, to: `0x${string}`, usd: number, now = new Date()) =>
    enforceSigningPolicy(table, appId, 'enclave', usdc(to, usd), { sub, jti: randomUUID(), now: () => now });
  const outcome = (promise: Promise<unknown>) =>
    promise.then(
      () => 'allow',
      (error) => (error instanceof PolicyDeniedError ? 'deny' : `error ${(error as Error).message}`),
    );

  it('20 concurrent 1-USD signs against a 5-USD daily limit: exactly 5 through, 5 USD counted', async () => {
    const appId = `app-${randomUUID()}`;
    await putPolicy(table, appId, dailyPolicy('enforce', '5'), new Date());
    const results = await Promise.all(Array.from({ length: 20 }, () => outcome(sign(appId, 'alice', A, 1))));
    expect(results.filter((r) => r === 'allow')).toHaveLength(5);
    expect(results.filter((r) => r === 'deny')).toHaveLength(15);
    expect(await usdSpentToday(table, appId, 'alice', new Date())).toBe(5_000_000n);
    // Per user: another sub of the same app has its own day.
    expect(await outcome(sign(appId, 'bob', A, 5))).toBe('allow');
    const decisions = await listPolicyDecisions(table, appId, 100);
    expect(decisions).toHaveLength(21);
    expect(decisions.filter((d) => d.decision === 'allow')).toHaveLength(6);
    expect(decisions[0]).toMatchObject({
      sub: 'bob',
      usd: '5',
      rule_id: 'daily',
      operation: 'sign_transaction',
      channel: 'enclave',
      chain: 'ETH',
      recipients: [A],
    });
  });

  it('a denial counts nothing; over the limit is denied; an unlisted recipient is denied', async () => {
    const appId = `app-${randomUUID()}`;
    await putPolicy(table, appId, dailyPolicy('enforce', '10'), new Date());
    expect(await outcome(sign(appId, 'u', A, 11))).toBe('deny');
    expect(await outcome(sign(appId, 'u', B, 1))).toBe('deny');
    expect(await usdSpentToday(table, appId, 'u', new Date())).toBe(0n);
    expect(await outcome(sign(appId, 'u', A, 6))).toBe('allow');
    expect(await outcome(sign(appId, 'u', A, 5))).toBe('deny');
    expect(await outcome(sign(appId, 'u', A, 4))).toBe('allow');
    expect(await usdSpentToday(table, appId, 'u', new Date())).toBe(10_000_000n);
  });

  it('the window rolls: entries older than 24 h no longer count', async () => {
    const appId = `app-${randomUUID()}`;
    await putPolicy(table, appId, dailyPolicy('enforce', '10'), new Date());
    const now = Date.now();
    await table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: {
          ...keys.policyUse(appId, 'u'),
          rev: 2,
          entries: [
            { t: now - USAGE_WINDOW_MS - 1000, usd: '9000000', jti: 'old' },
            { t: now - USAGE_WINDOW_MS + 60_000, usd: '3000000', jti: 'recent' },
          ],
        },
      }),
    );
    expect(await usdSpentToday(table, appId, 'u', new Date(now))).toBe(3_000_000n);
    expect(await outcome(sign(appId, 'u', A, 8, new Date(now)))).toBe('deny');
    expect(await outcome(sign(appId, 'u', A, 7, new Date(now)))).toBe('allow');
    // Two minutes later the 3 USD entry is out of the window too.
    expect(await usdSpentToday(table, appId, 'u', new Date(now + 120_000))).toBe(7_000_000n);
  });

  it('shadow mode: would-be denials are signed and counted nothing, and logged as shadow_deny', async () => {
    const appId = `app-${randomUUID()}`;
    await putPolicy(table, appId, dailyPolicy('shadow', '10'), new Date());
    expect(await outcome(sign(appId, 'u', A, 11))).toBe('allow');
    expect(await usdSpentToday(table, appId, 'u', new Date())).toBe(0n);
    expect(await outcome(sign(appId, 'u', A, 2))).toBe('allow');
    expect(await usdSpentToday(table, appId, 'u', new Date())).toBe(2_000_000n);
    const decisions = await listPolicyDecisions(table, appId, 20);
    expect(decisions.map((d) => [d.decision, d.usd])).toEqual([
      ['allow', '2'],
      ['shadow_deny', '11'],
    ]);
  });
});
