import { encodeFunctionData, erc20Abi } from 'viem';
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, defaultPolicy } from '../../shared/policies/default-policy.ts';
import { evaluatePolicy } from '../../shared/policies/evaluate.ts';
import { type PolicyChains, type SignFacts, signFacts } from '../../shared/policies/facts.ts';
import type { Policy, PolicyChannel, PolicyRule } from '../../shared/policies/policy.ts';

const USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48';
const chains: PolicyChains = { ETH: { family: 'evm', chain_id: 1, native: 'ETH', tokens: { USDC: { address: USDC, decimals: 6 } } } };
const ALICE = '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045';
const BOB = '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B';
const DELEGATE = '0x1111111111111111111111111111111111111111';

const usdcTransfer = (to: string, microUsd: bigint, channel: PolicyChannel = 'express') =>
  signFacts({
    operation: 'sign_transaction',
    channel,
    chains,
    body: {
      transaction: {
        chainId: 1,
        nonce: 0,
        to: USDC,
        data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as `0x${string}`, microUsd] }),
      },
    },
  });
const signData = (channel: PolicyChannel): SignFacts => signFacts({ operation: 'sign_data', channel, body: { raw_data_hash: `0x${'ab'.repeat(32)}` } });
const authorization = (channel: PolicyChannel, delegate: string) =>
  signFacts({ operation: 'sign_authorization', channel, chains, body: { chain_id: 1, contract_address: delegate, nonce: 0 } });
const policy = (rules: PolicyRule[], mode: Policy['mode'] = 'enforce'): Policy => ({ mode, rules });
const allowAll: PolicyRule = { id: 'all', action: 'allow', operations: ['sign_data', 'sign_message', 'sign_transaction', 'sign_authorization'] };

describe('evaluatePolicy', () => {
  it('a matching deny wins over a matching allow, whatever the order', () => {
    const deny: PolicyRule = { id: 'no-bob', action: 'deny', operations: ['sign_transaction'], to: { deny: [BOB] } };
    for (const rules of [
      [allowAll, deny],
      [deny, allowAll],
    ]) {
      const decision = evaluatePolicy(policy(rules), usdcTransfer(BOB, 1n));
      expect(decision).toMatchObject({ decision: 'deny', rule_id: 'no-bob' });
      expect(decision.reason).toContain('rule no-bob denies sign_transaction');
    }
    expect(evaluatePolicy(policy([deny, allowAll]), usdcTransfer(ALICE, 1n))).toMatchObject({ decision: 'allow', rule_id: 'all' });
  });

  it('an allow is needed: none matching is a denial naming no rule', () => {
    const decision = evaluatePolicy(policy([{ id: 'msgs', action: 'allow', operations: ['sign_message'] }]), usdcTransfer(ALICE, 1n));
    expect(decision).toEqual({ decision: 'deny', rule_id: null, reason: 'no rule allows sign_transaction on the express channel (ETH)' });
    expect(evaluatePolicy(policy([]), signData('account'))).toMatchObject({ decision: 'deny', rule_id: null });
  });

  it('to.allow: listed recipients only; an opaque sign_data never matches it', () => {
    const listed = policy([{ id: 'listed', action: 'allow', operations: ['sign_transaction', 'sign_data'], to: { allow: [ALICE] } }]);
    expect(evaluatePolicy(listed, usdcTransfer(ALICE, 5_000_000n))).toMatchObject({ decision: 'allow', rule_id: 'listed' });
    expect(evaluatePolicy(listed, usdcTransfer(BOB, 5_000_000n))).toMatchObject({ decision: 'deny', rule_id: null });
    expect(evaluatePolicy(listed, signData('express'))).toMatchObject({ decision: 'deny', rule_id: null });
  });

  it('a deny rule with to.allow denies what goes outside the list, and what cannot be decoded', () => {
    const fence = policy([allowAll, { id: 'fence', action: 'deny', operations: ['sign_transaction', 'sign_data'], to: { allow: [ALICE] } }]);
    expect(evaluatePolicy(fence, usdcTransfer(ALICE, 1n))).toMatchObject({ decision: 'allow' });
    expect(evaluatePolicy(fence, usdcTransfer(BOB, 1n))).toMatchObject({ decision: 'deny', rule_id: 'fence' });
    expect(evaluatePolicy(fence, signData('enclave'))).toMatchObject({ decision: 'deny', rule_id: 'fence' });
  });

  it('an allow rule with to.deny allows what goes elsewhere, but not what cannot be decoded', () => {
    const notBob = policy([{ id: 'not-bob', action: 'allow', operations: ['sign_transaction', 'sign_data'], to: { deny: [BOB] } }]);
    expect(evaluatePolicy(notBob, usdcTransfer(ALICE, 1n))).toMatchObject({ decision: 'allow', rule_id: 'not-bob' });
    expect(evaluatePolicy(notBob, usdcTransfer(BOB, 1n))).toMatchObject({ decision: 'deny', rule_id: null });
    expect(evaluatePolicy(notBob, signData('enclave'))).toMatchObject({ decision: 'deny', rule_id: null });
  });

  it('a deny rule with several conditions fires only when all are violated', () => {
    const rules = policy([
      allowAll,
      { id: 'big-to-strangers', action: 'deny', operations: ['sign_transaction'], to: { allow: [ALICE] }, max_usd_per_tx: '10' },
    ]);
    expect(evaluatePolicy(rules, usdcTransfer(BOB, 5_000_000n))).toMatchObject({ decision: 'allow' });
    expect(evaluatePolicy(rules, usdcTransfer(ALICE, 50_000_000n))).toMatchObject({ decision: 'allow' });
    expect(evaluatePolicy(rules, usdcTransfer(BOB, 50_000_000n))).toMatchObject({ decision: 'deny', rule_id: 'big-to-strangers' });
  });

  it('Solana addresses match case-sensitively', () => {
    const facts: SignFacts = {
      operation: 'sign_transaction',
      channel: 'enclave',
      chain: 'SOL',
      recipients: ['CiDwVBFgWV9E5MvXWoLgnEgn2hK7rJikbvfWavzAQz3'],
      opaque: false,
    };
    const upper = policy([{ id: 'sol', action: 'allow', operations: ['sign_transaction'], to: { allow: ['CIDWVBFGWV9E5MVXWOLGNEGN2HK7RJIKBVFWAVZAQZ3'] } }]);
    const exact = policy([{ id: 'sol', action: 'allow', operations: ['sign_transaction'], to: { allow: ['CiDwVBFgWV9E5MvXWoLgnEgn2hK7rJikbvfWavzAQz3'] } }]);
    expect(evaluatePolicy(upper, facts).decision).toBe('deny');
    expect(evaluatePolicy(exact, facts).decision).toBe('allow');
  });

  it('channels and chains scope a rule', () => {
    const rules = policy([{ id: 'eth-express', action: 'allow', operations: ['sign_transaction'], channels: ['express'], chains: ['ETH'] }]);
    expect(evaluatePolicy(rules, usdcTransfer(ALICE, 1n))).toMatchObject({ decision: 'allow' });
    expect(evaluatePolicy(rules, usdcTransfer(ALICE, 1n, 'account'))).toMatchObject({ decision: 'deny' });
    const arb = signFacts({ operation: 'sign_transaction', channel: 'express', chains, body: { transaction: { chainId: 42161, nonce: 0, to: ALICE } } });
    expect(arb.chain).toBe('eip155:42161');
    expect(evaluatePolicy(rules, arb)).toMatchObject({ decision: 'deny' });
  });

  it('max_usd_per_tx: an allow holds up to the limit and only when the value is known', () => {
    const capped = policy([{ id: 'cap10', action: 'allow', operations: ['sign_transaction'], max_usd_per_tx: '10' }]);
    expect(evaluatePolicy(capped, usdcTransfer(ALICE, 10_000_000n))).toMatchObject({ decision: 'allow', rule_id: 'cap10' });
    expect(evaluatePolicy(capped, usdcTransfer(ALICE, 10_000_001n))).toMatchObject({ decision: 'deny', rule_id: null });
    const native = signFacts({
      operation: 'sign_transaction',
      channel: 'express',
      chains,
      body: { transaction: { chainId: 1, nonce: 0, to: ALICE, value: '1' } },
    });
    expect(evaluatePolicy(capped, native)).toMatchObject({ decision: 'deny' });
  });

  it('max_usd_per_tx: a deny fires over the limit (and on an unknown value)', () => {
    const capped = policy([allowAll, { id: 'over10', action: 'deny', operations: ['sign_transaction'], max_usd_per_tx: '10' }]);
    expect(evaluatePolicy(capped, usdcTransfer(ALICE, 5_000_000n))).toMatchObject({ decision: 'allow', rule_id: 'all' });
    const denial = evaluatePolicy(capped, usdcTransfer(ALICE, 11_000_000n));
    expect(denial).toMatchObject({ decision: 'deny', rule_id: 'over10' });
    expect(denial.reason).toBe('rule over10 denies sign_transaction on the express channel (ETH): 11 USD is over max_usd_per_tx 10');
  });

  it('shadow mode allows a would-be denial and says which rule would have denied', () => {
    const shadow = policy([{ id: 'no-bob', action: 'deny', operations: ['sign_transaction'], to: { deny: [BOB] } }, allowAll], 'shadow');
    expect(evaluatePolicy(shadow, usdcTransfer(BOB, 1n))).toMatchObject({ decision: 'allow', rule_id: 'no-bob', shadow: true });
    expect(evaluatePolicy(shadow, usdcTransfer(ALICE, 1n))).toEqual(expect.not.objectContaining({ shadow: true }));
    expect(evaluatePolicy(policy([], 'shadow'), signData('express'))).toMatchObject({ decision: 'allow', rule_id: null, shadow: true });
  });

  it('a reason never echoes the body', () => {
    const decision = evaluatePolicy(policy([]), signData('express'));
    expect(decision.reason).not.toContain('abab');
  });
});

describe('the built-in default policy', () => {
  const policyWithDelegate = defaultPolicy([DELEGATE]);

  it.each(['account', 'enclave'] as const)('allows every operation on the %s channel', (channel) => {
    for (const facts of [signData(channel), usdcTransfer(BOB, 1n, channel), authorization(channel, BOB)]) {
      expect(evaluatePolicy(policyWithDelegate, facts)).toMatchObject({ decision: 'allow', rule_id: 'default.account-enclave' });
      expect(evaluatePolicy(DEFAULT_POLICY, facts)).toMatchObject({ decision: 'allow' });
    }
    expect(evaluatePolicy(DEFAULT_POLICY, signFacts({ operation: 'sign_message', channel, body: { message: 'hi' } }))).toMatchObject({ decision: 'allow' });
  });

  it('on express: refuses sign_data, allows messages and transactions', () => {
    expect(evaluatePolicy(DEFAULT_POLICY, signData('express'))).toMatchObject({ decision: 'deny', rule_id: 'default.express-no-raw-hash' });
    expect(evaluatePolicy(DEFAULT_POLICY, usdcTransfer(BOB, 1n))).toMatchObject({ decision: 'allow', rule_id: 'default.express-sign' });
    expect(evaluatePolicy(DEFAULT_POLICY, signFacts({ operation: 'sign_message', channel: 'express', body: { message: 'hi' } }))).toMatchObject({
      decision: 'allow',
    });
  });

  it("on express: authorisations only to the platform's delegates", () => {
    expect(evaluatePolicy(policyWithDelegate, authorization('express', DELEGATE))).toMatchObject({ decision: 'allow', rule_id: 'default.express-delegates' });
    expect(evaluatePolicy(policyWithDelegate, authorization('express', BOB))).toMatchObject({ decision: 'deny', rule_id: null });
    expect(evaluatePolicy(DEFAULT_POLICY, authorization('express', DELEGATE))).toMatchObject({ decision: 'deny', rule_id: null });
  });
});
