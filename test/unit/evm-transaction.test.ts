import {
  type Hex,
  hexToBytes,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  type TransactionSerializable,
  type TransactionSerializableEIP7702,
  type TransactionSerialized,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { SignTransactionRequest } from '../../shared/enclave/schemas.ts';
import { signTransaction } from '../../shared/enclave/sign-transaction-operation.ts';
import { ValidationError } from '../../shared/errors.ts';
import { parseInput } from '../../shared/http/validate.ts';

/**
 * Issue 12: sign_transaction takes what viem's TransactionSerializable holds, as JSON carries it
 * (quantities as decimal strings, 0x hex or safe JSON integers), plus a `from` that must be the
 * wallet, and every refusal names its field.
 */
const privateKey = generatePrivateKey();
const account = privateKeyToAccount(privateKey);
const wallet = { wallet_id: 'w1', public_address: account.address, family: 'evm' as const };
const auth = { op_jwt: 'eyJ.header.sig', access_key: 'k'.repeat(43), wallet_id: 'w1' };
const TO = '0x000000000000000000000000000000000000dEaD';
const base = { chainId: 42161, nonce: 7, to: TO, value: '1', gas: '21000', maxFeePerGas: '100', maxPriorityFeePerGas: '1' };

type EvmSigned = { signed_transaction: TransactionSerialized; tx_hash: Hex };

/** Validates as the endpoint does, then signs with the operation the endpoint runs. */
async function sign(transaction: unknown) {
  const body = parseInput(SignTransactionRequest, { ...auth, transaction }, 'body');
  const signed = (await signTransaction(wallet, hexToBytes(privateKey), body)) as EvmSigned;
  expect(await recoverTransactionAddress({ serializedTransaction: signed.signed_transaction })).toBe(account.address);
  return parseTransaction(signed.signed_transaction);
}

async function refusal(transaction: unknown): Promise<ValidationError> {
  const error = await (async () => sign(transaction))().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

/** JSON as a viem user writes it: bigints as decimal strings. */
const asJson = (transaction: object) => JSON.parse(JSON.stringify(transaction, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)));

describe('sign_transaction quantities', () => {
  it.each([
    [
      'decimal strings',
      { chainId: '42161', nonce: '7', gas: '21000', value: '1000000000000000000', maxFeePerGas: '100000000', maxPriorityFeePerGas: '1000000' },
    ],
    [
      '0x hex strings',
      { chainId: '0xa4b1', nonce: '0x7', gas: '0x5208', value: '0xde0b6b3a7640000', maxFeePerGas: '0x5f5e100', maxPriorityFeePerGas: '0xf4240' },
    ],
    ['JSON integers', { chainId: 42161, nonce: 7, gas: 21000, value: 1000000000000000000n.toString(), maxFeePerGas: 100000000, maxPriorityFeePerGas: 1000000 }],
  ])('are accepted as %s and signed exactly', async (_form, quantities) => {
    const parsed = await sign({ to: TO, ...quantities });
    expect(parsed).toMatchObject({
      type: 'eip1559',
      chainId: 42161,
      nonce: 7,
      gas: 21000n,
      value: 10n ** 18n,
      maxFeePerGas: 100000000n,
      maxPriorityFeePerGas: 1000000n,
    });
  });

  it('takes uint256 at its maximum as hex and decimal', async () => {
    const max = 2n ** 256n - 1n;
    expect((await sign({ ...base, value: `0x${'f'.repeat(64)}` })).value).toBe(max);
    expect((await sign({ ...base, maxFeePerGas: max.toString(), maxPriorityFeePerGas: '0x1' })).maxFeePerGas).toBe(max);
  });

  const RULE = 'must be a non-negative integer (decimal string, 0x hex or JSON integer)';
  it.each<[string, unknown, string]>([
    ['maxFeePerGas', 1.5, RULE],
    ['maxFeePerGas', -1, RULE],
    ['maxFeePerGas', '-1', RULE],
    ['maxFeePerGas', '1.0', RULE],
    ['maxFeePerGas', '1e3', RULE],
    ['maxFeePerGas', '01', RULE],
    ['maxFeePerGas', '0x', RULE],
    ['maxFeePerGas', true, RULE],
    ['maxFeePerGas', null, RULE],
    ['value', 2 ** 53, 'must be a safe integer (at most 2^53 - 1) when a JSON number: send larger values as a decimal or 0x string'],
    ['value', 1e308, 'must be a safe integer (at most 2^53 - 1) when a JSON number: send larger values as a decimal or 0x string'],
    ['value', (2n ** 256n).toString(), 'must be at most 2^256 - 1'],
    ['gas', `0x1${'0'.repeat(16)}`, 'must be at most 2^64 - 1'],
    ['nonce', '9007199254740992', 'must be at most 2^53 - 1'],
    ['nonce', 1.5, RULE],
    ['chainId', 0, 'must be an integer from 1 to 2^53 - 1 (decimal string, 0x hex or JSON integer)'],
    ['chainId', '0x0', 'must be an integer from 1 to 2^53 - 1 (decimal string, 0x hex or JSON integer)'],
  ])('refuses %s = %j, naming it', async (field, value, message) => {
    const error = await refusal({ ...base, [field]: value });
    expect(error.message).toBe(`body.transaction.${field}: ${message}`);
    expect(error.code).toBe('INVALID_REQUEST');
  });

  it('names a missing required field and an unknown one', async () => {
    const { chainId: _chainId, ...withoutChain } = base;
    expect((await refusal(withoutChain)).message).toBe('body.transaction.chainId: is required');
    expect((await refusal({ ...base, gasLimit: '21000' })).message).toBe('body.transaction.gasLimit: is not allowed');
    expect((await refusal({ ...base, r: `0x${'1'.repeat(64)}` })).message).toBe('body.transaction.r: is not allowed');
  });
});

describe('sign_transaction from', () => {
  it('is accepted when it is the wallet, in any case', async () => {
    await sign({ ...base, from: account.address });
    await sign({ ...base, from: account.address.toLowerCase() });
  });

  it('is refused, naming transaction.from, when it is another address', async () => {
    const error = await refusal({ ...base, from: `0x${'1'.repeat(40)}` });
    expect(error.message).toBe(`body.transaction.from: must be this wallet's address, ${account.address} (or be left out)`);
    expect(error.code).toBe('INVALID_TRANSACTION');
    expect((await refusal({ ...base, from: 'alice' })).message).toBe('body.transaction.from: must be a 0x-prefixed 20-byte address');
  });
});

describe('sign_transaction types', () => {
  it('signs every type viem serialises, with the JSON-RPC type numbers too', async () => {
    expect((await sign({ chainId: 1, nonce: 0, to: TO, gasPrice: '1000', gas: '21000' })).type).toBe('legacy');
    expect((await sign({ type: '0x0', chainId: 1, nonce: 0, to: null, gasPrice: '1000', gas: '100000', data: '0x6000' })).type).toBe('legacy');
    expect((await sign({ chainId: 1, nonce: 0, to: TO, gasPrice: '1000', accessList: [{ address: TO, storageKeys: [`0x${'0'.repeat(64)}`] }] })).type).toBe(
      'eip2930',
    );
    expect((await sign({ ...base, type: '0x2', input: '0xabcd' })).data).toBe('0xabcd');
    const blob = await sign({ ...base, maxFeePerBlobGas: '0x10', blobVersionedHashes: [`0x01${'2'.repeat(62)}`] });
    expect(blob).toMatchObject({ type: 'eip4844', maxFeePerBlobGas: 16n, blobVersionedHashes: [`0x01${'2'.repeat(62)}`] });
  });

  it('signs an eip7702 transaction with viem authorisations (address or contractAddress, yParity or v)', async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const delegate = `0x${'a'.repeat(40)}` as const;
    const authorization = await signer.signAuthorization({ contractAddress: delegate, chainId: 42161, nonce: 3 });
    const { yParity, ...withoutParity } = authorization;
    const parsed = await sign(
      asJson({
        ...base,
        authorizationList: [authorization, { ...withoutParity, address: undefined, contractAddress: delegate, v: 27n + BigInt(yParity!), nonce: '0x3' }],
      }),
    );
    expect(parsed).toMatchObject({ type: 'eip7702' });
    expect((parsed as TransactionSerializableEIP7702).authorizationList).toMatchObject([
      { address: delegate, chainId: 42161, nonce: 3, r: authorization.r, s: authorization.s, yParity },
      { address: delegate, chainId: 42161, nonce: 3, r: authorization.r, s: authorization.s, yParity },
    ]);
  });

  it('signs the same bytes viem serialises for the same object', async () => {
    const transaction: TransactionSerializable = {
      type: 'eip1559',
      chainId: 10,
      nonce: 1,
      to: TO,
      value: 5n,
      gas: 21000n,
      maxFeePerGas: 30n,
      maxPriorityFeePerGas: 2n,
    };
    const body = parseInput(SignTransactionRequest, { ...auth, transaction: asJson(transaction) }, 'body');
    const signed = (await signTransaction(wallet, hexToBytes(privateKey), body)) as EvmSigned;
    expect(signed.signed_transaction).toBe(await account.signTransaction(transaction));
    expect(signed.tx_hash).toBe(keccak256(signed.signed_transaction));
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['gasPrice on eip1559', { ...base, gasPrice: '1' }, 'body.transaction.gasPrice: is not used by an eip1559 transaction'],
    ['fees of eip1559 on legacy', { ...base, type: 'legacy' }, 'body.transaction.maxFeePerGas: is not used by a legacy transaction'],
    [
      'no type and no fee',
      { chainId: 1, nonce: 0, to: TO },
      'body.transaction.type: is required when no fee field implies it (gasPrice for legacy, maxFeePerGas and maxPriorityFeePerGas for eip1559)',
    ],
    ['a tip above the fee cap', { ...base, maxPriorityFeePerGas: '101' }, 'body.transaction.maxPriorityFeePerGas: must not be more than maxFeePerGas'],
    ['data and input that differ', { ...base, data: '0x01', input: '0x02' }, 'body.transaction.input: must equal data when both are given'],
    [
      'an unknown type',
      { ...base, type: 'eip1' },
      'body.transaction.type: must be legacy, eip2930, eip1559, eip4844 or eip7702 (or its JSON-RPC number 0x0-0x4)',
    ],
    [
      'a bad checksum',
      { ...base, to: TO.replace('dEaD', 'DEaD') },
      'body.transaction.to: has a wrong EIP-55 checksum (send it all lower case, or checksummed)',
    ],
    [
      'eip7702 without to',
      { ...base, to: undefined, type: 'eip7702', authorizationList: [{ address: TO, chainId: 1, nonce: 0, r: '0x1', s: '0x1', yParity: 0 }] },
      'body.transaction.to: is required for an eip7702 transaction (it cannot create a contract)',
    ],
    ['an empty authorizationList', { ...base, authorizationList: [] }, 'body.transaction.authorizationList: must list at least one authorization'],
    [
      'an authorisation without address',
      { ...base, authorizationList: [{ chainId: 1, nonce: 0, r: '0x1', s: '0x1', yParity: 0 }] },
      'body.transaction.authorizationList.0.address: is required',
    ],
    [
      'an authorisation with yParity 2',
      { ...base, authorizationList: [{ address: TO, chainId: 1, nonce: 0, r: '0x1', s: '0x1', yParity: 2 }] },
      'body.transaction.authorizationList.0.yParity: must be an integer from 0 to 1 (decimal string, 0x hex or JSON integer)',
    ],
    ['eip4844 without hashes', { ...base, type: 'eip4844' }, 'body.transaction.blobVersionedHashes: is required for an eip4844 transaction'],
    [
      'a blob hash of version 2',
      { ...base, blobVersionedHashes: [`0x02${'2'.repeat(62)}`] },
      'body.transaction.blobVersionedHashes.0: must be a version 1 (KZG) hash: 0x01 followed by 31 bytes',
    ],
  ])('refuses %s, naming the field', async (_case, transaction, message) => {
    expect((await refusal(transaction)).message).toBe(message);
  });

  it('still takes a base64 Solana message as a string (and refuses it for an EVM wallet)', async () => {
    const body = parseInput(SignTransactionRequest, { ...auth, transaction: 'AQID' }, 'body');
    expect(body.transaction).toBe('AQID');
    await expect(signTransaction(wallet, hexToBytes(privateKey), body)).rejects.toThrow('body.transaction: an EVM wallet signs a transaction object');
    expect(() => parseInput(SignTransactionRequest, { ...auth, transaction: 'not base64!' }, 'body')).toThrow('body.transaction: must be base64');
  });
});
