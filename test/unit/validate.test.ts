import type * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { SignRequest } from '../../shared/accounts/schemas.ts';
import { SignAuthorizationRequest, SignTransactionRequest } from '../../shared/enclave/schemas.ts';
import { ValidationError } from '../../shared/errors.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { WithdrawRequest } from '../../shared/withdrawals/withdraw-rules.ts';

/** Issue 8: bad input is a 400 naming the field and the rule; never what the caller sent. */
function refusal(schema: v.GenericSchema, input: unknown): ValidationError {
  try {
    parseInput(schema, input, 'body');
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

const SECRET = 'SeCrEt-0p-jwt-or-access-key-value';
const auth = { op_jwt: 'eyJ.header.sig', access_key: 'k'.repeat(43), wallet_id: 'w1' };
const authorization = { ...auth, chain_id: 42161, contract_address: `0x${'1'.repeat(40)}`, nonce: 0 };
const transaction = { chainId: 42161, nonce: 7, to: `0x${'d'.repeat(40)}`, value: '1', gas: '21000', maxFeePerGas: '100', maxPriorityFeePerGas: '1' };

describe('parseInput never echoes the input', () => {
  it('a body that is a JSON string is refused without repeating it', () => {
    const body = JSON.stringify({ op_jwt: SECRET, access_key: SECRET });
    const error = refusal(SignAuthorizationRequest, body);
    expect(error.message).toBe('body: must be a JSON object');
    expect(error.code).toBe('INVALID_REQUEST');
  });

  it.each([
    ['op_jwt of the wrong type', { ...authorization, op_jwt: [SECRET] }, 'body.op_jwt'],
    ['access_key of the wrong type', { ...authorization, access_key: { value: SECRET } }, 'body.access_key'],
    ['access_key too long', { ...authorization, access_key: SECRET.repeat(20) }, 'body.access_key'],
    ['a number where a string belongs', { ...authorization, wallet_id: 12345678901234 }, 'body.wallet_id'],
    ['a bad picklist value', { to_address: 'x', amount: '1', token: SECRET }, 'body.token'],
    ['an unknown key in a strict object', { ...auth, transaction: { ...transaction, [SECRET]: SECRET } }, 'body.transaction'],
  ])('%s: names %s, not the value', (_, input, field) => {
    const schema = 'to_address' in input ? WithdrawRequest : 'transaction' in input ? SignTransactionRequest : SignAuthorizationRequest;
    const error = refusal(schema, input);
    expect(error.message).toContain(field);
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain('12345678901234');
    expect(error.message).not.toMatch(/received/i);
  });

  it('names an unknown field of a strict object only when it looks like a field name', () => {
    expect(refusal(SignTransactionRequest, { ...auth, transaction: { ...transaction, gasLimit: '1' } }).message).toBe(
      'body.transaction.gasLimit: is not allowed',
    );
    expect(refusal(SignTransactionRequest, { ...auth, transaction: { ...transaction, [`${SECRET}.x`]: 1 } }).message).toBe(
      'body.transaction.(unknown field): is not allowed',
    );
  });

  it('says which fields are missing', () => {
    expect(refusal(SignRequest, 'x').message).toBe('body: must be a JSON object');
    expect(refusal(WithdrawRequest, {}).message).toBe('body.to_address: is required; body.amount: is required');
  });
});

describe('integer fields are range-checked in their schemas', () => {
  it.each([Number(9007199254740993n), 9007199254740992, 1e308, 1.5, -1, Number.MAX_VALUE])('sign_authorization refuses chain_id and nonce %s', (value) => {
    for (const field of ['chain_id', 'nonce']) {
      const error = refusal(SignAuthorizationRequest, { ...authorization, [field]: value });
      expect(error.message).toMatch(new RegExp(`^body\\.${field}: must be an integer between \\d+ and 9007199254740991$`));
    }
  });

  it('sign_authorization accepts the largest safe integers', () => {
    const output = parseInput(SignAuthorizationRequest, { ...authorization, chain_id: Number.MAX_SAFE_INTEGER, nonce: Number.MAX_SAFE_INTEGER }, 'body');
    expect(output.nonce).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each([
    ['chainId', 1e308],
    ['nonce', Number(9007199254740993n)],
    ['value', (2n ** 256n).toString()],
    ['maxFeePerGas', '9'.repeat(78)],
    ['gasPrice', (2n ** 256n).toString()],
    ['gas', (2n ** 64n).toString()],
  ])('sign_transaction refuses %s = %s', (field, value) => {
    const error = refusal(SignTransactionRequest, { ...auth, transaction: { ...transaction, [field]: value } });
    expect(error.message).toMatch(new RegExp(`^body\\.transaction\\.${field}: must be`));
  });

  it('sign_transaction accepts uint256 values and uint64 gas at their maximum', () => {
    const max = { value: (2n ** 256n - 1n).toString(), maxFeePerGas: (2n ** 256n - 1n).toString(), gas: (2n ** 64n - 1n).toString() };
    expect(() => parseInput(SignTransactionRequest, { ...auth, transaction: { ...transaction, ...max } }, 'body')).not.toThrow();
  });

  it('authorizationList entries are range-checked too', () => {
    const entry = { address: `0x${'1'.repeat(40)}`, chainId: 1, nonce: 1e308, r: `0x${'a'.repeat(64)}`, s: `0x${'b'.repeat(64)}`, yParity: 0 };
    refusal(SignTransactionRequest, { ...auth, transaction: { ...transaction, type: 'eip7702', authorizationList: [entry] } });
  });
});
