import { type Hex, parseEther, parseGwei, parseTransaction, recoverTransactionAddress, serializeTransaction, type TransactionSerializable, toHex } from 'viem';
import { beforeAll, describe, expect, it } from 'vitest';
import { appOne, call, expectErrorShape, expressHeaders, mintToken, uniqueUser } from './support/client.ts';

/**
 * Issue 12: sign_transaction takes a viem TransactionSerializable as JSON carries it (quantities as
 * decimal strings, 0x hex or safe JSON integers), with a `from` that must be the wallet, on the
 * enclave and through the express service; a refusal names the field.
 */
const secret = { 'x-service-secret-key': appOne.secret_key };

/** How a viem user puts a transaction on the wire: bigints as 0x hex (viem's toHex), numbers as they are. */
const viemJson = (transaction: object) => JSON.parse(JSON.stringify(transaction, (_key, value) => (typeof value === 'bigint' ? toHex(value) : value)));

describe('sign_transaction with a viem-style transaction', () => {
  const sub = uniqueUser('viem-tx');
  let wallet: { wallet_id: string; access_key: string; public_address: Hex };

  beforeAll(async () => {
    const created = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: secret,
      json: { auth_jwt: await mintToken(appOne, sub), network: 'ARB', wallet_group_id: 'viem' },
    });
    expect(created.status).toBe(200);
    wallet = created.body;
  });

  async function sign(transaction: unknown, rawBody?: (head: string) => string) {
    const fields = { op_jwt: await mintToken(appOne, sub, { ttlSeconds: 120 }), access_key: wallet.access_key, wallet_id: wallet.wallet_id };
    return call('enclave', 'POST', '/v2/api/wallet/sign_transaction', {
      headers: { ...secret, 'content-type': 'application/json' },
      ...(rawBody ? { rawBody: rawBody(JSON.stringify(fields).slice(0, -1)) } : { json: { ...fields, transaction } }),
    });
  }

  const viemTransaction = (): TransactionSerializable & { from: Hex } => ({
    from: wallet.public_address,
    type: 'eip1559',
    chainId: 42161,
    nonce: 5,
    to: '0x000000000000000000000000000000000000dEaD',
    value: parseEther('0.01'),
    gas: 21000n,
    maxFeePerGas: parseGwei('2'),
    maxPriorityFeePerGas: parseGwei('1'),
    data: '0x',
  });

  it("signs it as viem would: the signed bytes are viem's serialisation, recovering to the wallet", async () => {
    const { from: _from, ...transaction } = viemTransaction();
    const response = await sign(viemJson(viemTransaction()));
    expect(response.status).toBe(200);
    const signed = response.body.signed_transaction as Hex;
    expect(await recoverTransactionAddress({ serializedTransaction: signed as `0x02${string}` })).toBe(wallet.public_address);
    const { r, s, yParity } = parseTransaction(signed);
    expect(signed).toBe(serializeTransaction(transaction, { r: r!, s: s!, yParity: yParity! }));
  });

  it('takes decimal strings and JSON integers for the same transaction, and a lower-case from', async () => {
    const decimal = JSON.parse(
      JSON.stringify({ ...viemTransaction(), from: wallet.public_address.toLowerCase() }, (_key, value) =>
        typeof value === 'bigint' ? value.toString() : value,
      ),
    );
    const integers = { ...decimal, gas: 21000, chainId: 42161, nonce: 5, maxPriorityFeePerGas: 1000000000 };
    const signed = await Promise.all([sign(viemJson(viemTransaction())), sign(decimal), sign(integers)]);
    expect(signed.map((response) => response.status)).toEqual([200, 200, 200]);
    expect(new Set(signed.map((response) => response.body.tx_hash)).size).toBe(1);
  });

  it('refuses a from that is not the wallet, naming transaction.from', async () => {
    const response = await sign(viemJson({ ...viemTransaction(), from: '0x1111111111111111111111111111111111111111' }));
    expect(response.status).toBe(400);
    const error = expectErrorShape(response.body);
    expect(error.code).toBe('INVALID_TRANSACTION');
    expect(error.message).toBe(`body.transaction.from: must be this wallet's address, ${wallet.public_address} (or be left out)`);
  });

  it('names the field of a fractional or unsafe JSON number', async () => {
    const fractional = await sign(viemJson({ ...viemTransaction(), maxFeePerGas: 1.5 }));
    expect(fractional.status).toBe(400);
    expect(expectErrorShape(fractional.body).message).toBe(
      'body.transaction.maxFeePerGas: must be a non-negative integer (decimal string, 0x hex or JSON integer)',
    );
    // JSON.parse rounds 9007199254740993 to 2^53: refused, never signed as another amount.
    const unsafe = await sign(
      undefined,
      (head) =>
        `${head},"transaction":{"chainId":42161,"nonce":0,"to":"0x000000000000000000000000000000000000dEaD","value":9007199254740993,"gas":21000,"maxFeePerGas":2,"maxPriorityFeePerGas":1}}`,
    );
    expect(unsafe.status).toBe(400);
    expect(expectErrorShape(unsafe.body).message).toBe(
      'body.transaction.value: must be a safe integer (at most 2^53 - 1) when a JSON number: send larger values as a decimal or 0x string',
    );
  });

  it('is the same through the express service', async () => {
    const headers = await expressHeaders(appOne, uniqueUser('viem-express'), 'ARB');
    const express = await call('express', 'POST', '/v2/wallet', { headers });
    expect(express.status).toBe(200);
    const address = express.body.public_address as Hex;
    const transaction = viemJson({ ...viemTransaction(), from: address });
    const signed = await call('express', 'POST', '/v2/wallet/sign/transaction', { headers, json: { transaction } });
    expect(signed.status).toBe(200);
    expect(await recoverTransactionAddress({ serializedTransaction: signed.body.signed_transaction })).toBe(address);
    const mismatch = await call('express', 'POST', '/v2/wallet/sign/transaction', {
      headers,
      json: { transaction: { ...transaction, from: wallet.public_address } },
    });
    expect(mismatch.status).toBe(400);
    expect(expectErrorShape(mismatch.body).message).toBe(`body.transaction.from: must be this wallet's address, ${address} (or be left out)`);
    const bad = await call('express', 'POST', '/v2/wallet/sign/transaction', { headers, json: { transaction: { ...transaction, gas: '21000.5' } } });
    expect(bad.status).toBe(400);
    expect(expectErrorShape(bad.body).message).toBe('body.transaction.gas: must be a non-negative integer (decimal string, 0x hex or JSON integer)');
  });
});
