import { ed25519 } from '@noble/curves/ed25519.js';
import { Keypair, PublicKey, SystemProgram, TransactionMessage, VersionedTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { hexToBytes, keccak256, parseTransaction, recoverAddress, recoverTransactionAddress, stringToBytes, verifyMessage } from 'viem';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxChains } from './support/chains.ts';
import { appOne, appTwo, call, expectErrorShape, mintToken, uniqueUser } from './support/client.ts';

const secret = { 'x-service-secret-key': appOne.secret_key };

async function createWallet(sub: string, network: string, group = 'default', app = appOne) {
  return call('enclave', 'POST', '/v2/api/wallet', {
    headers: { 'x-service-secret-key': app.secret_key },
    json: { auth_jwt: await mintToken(app, sub), network, wallet_group_id: group },
  });
}

describe('POST /v2/api/wallet', () => {
  it('creates a wallet bound to the auth_jwt identity, without recovery_key', async () => {
    const response = await createWallet(uniqueUser('w'), 'ETH', 'group-a');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      success: true,
      wallet_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      access_key: expect.any(String),
      public_address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
      network: 'ETH',
      wallet_group_id: 'group-a',
    });
    expect(response.body).not.toHaveProperty('recovery_key');
  });

  it('returns the same wallet and access key on repeat; EVM networks share it; other groups do not', async () => {
    const sub = uniqueUser('repeat');
    const first = await createWallet(sub, 'ETH', 'g1');
    const again = await createWallet(sub, 'ETH', 'g1');
    const arb = await createWallet(sub, 'ARB-MAINNET', 'g1');
    const other = await createWallet(sub, 'ETH', 'g2');
    expect(again.body).toEqual(first.body);
    expect(arb.body.wallet_id).toBe(first.body.wallet_id);
    expect(arb.body.network).toBe('ARB-MAINNET');
    expect(other.body.public_address).not.toBe(first.body.public_address);
  });

  it('20 concurrent creates return one wallet', async () => {
    const sub = uniqueUser('wrace');
    const responses = await Promise.all(Array.from({ length: 20 }, () => createWallet(sub, 'SOL', 'race')));
    expect(new Set(responses.map((r) => `${r.status}:${r.body.wallet_id}:${r.body.access_key}`)).size).toBe(1);
    expect(responses[0]!.status).toBe(200);
  });

  it('accepts every chain code with an optional label and rejects others', async () => {
    const sub = uniqueUser('nets');
    for (const network of ['ETH', 'ARB-TESTNET', 'POL-LOCAL', 'INK', 'SOL-MAINNET']) {
      expect((await createWallet(sub, network)).status).toBe(200);
    }
    for (const network of ['BTC', 'eth', 'ETH-DEVNET', '']) {
      const response = await createWallet(sub, network);
      expect(response.status).toBe(400);
      expect(expectErrorShape(response.body).message).toContain('body.network');
    }
  });

  it('401 for an auth_jwt from another app, or a bad secret key', async () => {
    const sub = uniqueUser('wauth');
    const foreign = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: secret,
      json: { auth_jwt: await mintToken(appTwo, sub), network: 'ETH', wallet_group_id: 'g' },
    });
    expect(foreign.status).toBe(401);
    const badSecret = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': 'nope-nope-nope-nope' },
      json: { auth_jwt: await mintToken(appOne, sub), network: 'ETH', wallet_group_id: 'g' },
    });
    expect(badSecret.status).toBe(401);
  });
});

describe('v2 signing', () => {
  const sub = uniqueUser('v2sign');
  let evm: { wallet_id: string; access_key: string; public_address: `0x${string}` };
  let sol: { wallet_id: string; access_key: string; public_address: string };

  beforeAll(async () => {
    evm = (await createWallet(sub, 'ETH', 'signing')).body;
    sol = (await createWallet(sub, 'SOL', 'signing')).body;
  });

  async function sign(path: string, wallet: { wallet_id: string; access_key: string }, extra: object, opJwt?: string) {
    return call('enclave', 'POST', `/v2/api/wallet/${path}`, {
      headers: secret,
      json: { op_jwt: opJwt ?? (await mintToken(appOne, sub, { ttlSeconds: 120 })), access_key: wallet.access_key, wallet_id: wallet.wallet_id, ...extra },
    });
  }

  it('sign_data: EVM 65-byte r‖s‖v over the hash as given', async () => {
    const hash = keccak256(stringToBytes('payload'));
    const response = await sign('sign_data', evm, { raw_data_hash: hash });
    expect(response.status).toBe(200);
    expect(response.body.signature).toMatch(/^0x[0-9a-f]{130}$/);
    expect(await recoverAddress({ hash, signature: response.body.signature })).toBe(evm.public_address);
  });

  it('sign_data: SOL ed25519 over the 32 bytes', async () => {
    const hash = keccak256(stringToBytes('payload'));
    const response = await sign('sign_data', sol, { raw_data_hash: hash });
    expect(response.status).toBe(200);
    expect(ed25519.verify(hexToBytes(response.body.signature), hexToBytes(hash), bs58.decode(sol.public_address))).toBe(true);
  });

  it('sign_message: EIP-191 for EVM, raw bytes for SOL', async () => {
    const evmResponse = await sign('sign_message', evm, { message: 'Sign in to venue' });
    expect(evmResponse.status).toBe(200);
    expect(await verifyMessage({ address: evm.public_address, message: 'Sign in to venue', signature: evmResponse.body.signature })).toBe(true);
    const solResponse = await sign('sign_message', sol, { message: '0xdeadbeef', encoding: 'hex' });
    expect(solResponse.status).toBe(200);
    expect(ed25519.verify(hexToBytes(solResponse.body.signature), hexToBytes('0xdeadbeef'), bs58.decode(sol.public_address))).toBe(true);
  });

  it('sign_message on SOL refuses bytes that are a transaction (legacy or v0 message, or a wire transaction): their signature would sign it', async () => {
    const payer = new PublicKey(sol.public_address);
    const drain = { fromPubkey: payer, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000_000 };
    const build = () =>
      new TransactionMessage({ payerKey: payer, recentBlockhash: Keypair.generate().publicKey.toBase58(), instructions: [SystemProgram.transfer(drain)] });
    const legacy = build().compileToLegacyMessage().serialize();
    const v0 = build().compileToV0Message().serialize();
    const wire = new VersionedTransaction(build().compileToV0Message()).serialize();
    // A message with a byte appended: a lenient decoder still reads the transaction in front.
    const padded = Buffer.concat([Buffer.from(legacy), Buffer.from([0])]);
    for (const bytes of [legacy, v0, wire, padded]) {
      const refused = await sign('sign_message', sol, { message: `0x${Buffer.from(bytes).toString('hex')}`, encoding: 'hex' });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(expectErrorShape(refused.body)).toMatchObject({ code: 'MESSAGE_IS_TRANSACTION', message: expect.stringContaining('sign_transaction') });
    }
    // Text, and the same transaction through sign_transaction (where the policy applies), still sign.
    expect((await sign('sign_message', sol, { message: 'Sign in to venue' })).status).toBe(200);
    expect((await sign('sign_transaction', sol, { transaction: Buffer.from(v0).toString('base64') })).status).toBe(200);
  });

  it('sign_transaction: EVM transaction in, signed serialised transaction out', async () => {
    const transaction = {
      type: 'eip1559',
      chainId: 42161,
      nonce: 7,
      to: '0x000000000000000000000000000000000000dEaD',
      value: '1000000000000000',
      gas: '21000',
      maxFeePerGas: '100000000',
      maxPriorityFeePerGas: '1000000',
    };
    const response = await sign('sign_transaction', evm, { transaction });
    expect(response.status).toBe(200);
    const parsed = parseTransaction(response.body.signed_transaction);
    expect(parsed.chainId).toBe(42161);
    expect(parsed.value).toBe(1000000000000000n);
    expect(await recoverTransactionAddress({ serializedTransaction: response.body.signed_transaction })).toBe(evm.public_address);
    expect(response.body.tx_hash).toBe(keccak256(response.body.signed_transaction));
  });

  it('sign_transaction: SOL message in, base58 signature out; refuses messages it does not sign', async () => {
    const payer = new PublicKey(sol.public_address);
    const message = new TransactionMessage({
      payerKey: payer,
      recentBlockhash: Keypair.generate().publicKey.toBase58(),
      instructions: [SystemProgram.transfer({ fromPubkey: payer, toPubkey: Keypair.generate().publicKey, lamports: 5000 })],
    }).compileToV0Message();
    const bytes = message.serialize();
    const response = await sign('sign_transaction', sol, { transaction: Buffer.from(bytes).toString('base64') });
    expect(response.status).toBe(200);
    expect(ed25519.verify(bs58.decode(response.body.signature), bytes, payer.toBytes())).toBe(true);

    const stranger = Keypair.generate().publicKey;
    const foreign = new TransactionMessage({
      payerKey: stranger,
      recentBlockhash: Keypair.generate().publicKey.toBase58(),
      instructions: [SystemProgram.transfer({ fromPubkey: stranger, toPubkey: payer, lamports: 1 })],
    }).compileToV0Message();
    const refused = await sign('sign_transaction', sol, { transaction: Buffer.from(foreign.serialize()).toString('base64') });
    expect(refused.status).toBe(400);
    expect(expectErrorShape(refused.body).code).toBe('INVALID_TRANSACTION');
  });

  it('refuses an op_jwt living longer than 300 seconds, an expired one, and one from outside the app', async () => {
    const hash = keccak256(stringToBytes('x'));
    const now = Math.floor(Date.now() / 1000);
    const cases = [
      await mintToken(appOne, sub, { ttlSeconds: 301 }),
      await mintToken(appOne, sub, { iat: now - 600, ttlSeconds: 120 }),
      await mintToken(appTwo, sub, { ttlSeconds: 60 }),
    ];
    const messages: string[] = [];
    for (const opJwt of cases) {
      const response = await sign('sign_data', evm, { raw_data_hash: hash }, opJwt);
      expect(response.status).toBe(401);
      expect(expectErrorShape(response.body).code).toBe('INVALID_OP_JWT');
      messages.push(expectErrorShape(response.body).message);
    }
    // An app of your own (APPS_FILE, or a deployment): what a valid one is, no sandbox command.
    expect(messages[0]).toBe('op_jwt lifetime exceeds 300 seconds (exp - iat is 301): mint one that expires at most 300 seconds after its iat');
    const exactlyFive = await sign('sign_data', evm, { raw_data_hash: hash }, await mintToken(appOne, sub, { ttlSeconds: 300 }));
    expect(exactlyFive.status).toBe(200);
  });

  it('403 when the op_jwt names another user, or the access key is wrong; 404 for an unknown wallet', async () => {
    const hash = keccak256(stringToBytes('x'));
    const otherUser = await sign('sign_data', evm, { raw_data_hash: hash }, await mintToken(appOne, uniqueUser('intruder'), { ttlSeconds: 60 }));
    expect(otherUser.status).toBe(403);
    expect(expectErrorShape(otherUser.body).code).toBe('WALLET_IDENTITY_MISMATCH');
    const wrongKey = await sign('sign_data', { ...evm, access_key: 'x'.repeat(43) }, { raw_data_hash: hash });
    expect(wrongKey.status).toBe(403);
    expect(expectErrorShape(wrongKey.body).code).toBe('INVALID_ACCESS_KEY');
    const unknown = await sign('sign_data', { ...evm, wallet_id: '00000000-0000-8000-8000-000000000000' }, { raw_data_hash: hash });
    expect(unknown.status).toBe(404);
  });

  it('400 for encryption_context on a v2 wallet', async () => {
    const response = await sign('sign_data', evm, { raw_data_hash: keccak256(stringToBytes('x')), encryption_context: 'legacy-secret' });
    expect(response.status).toBe(400);
    expect(expectErrorShape(response.body).code).toBe('ENCRYPTION_CONTEXT_NOT_ACCEPTED');
  });

  it('sign_authorization: chain_id or nonce beyond a safe integer (9007199254740993, 1e308) is a 400 naming the field', async () => {
    // An allowed delegate, so only the number can be wrong (a deployed stack: any address; the range check comes first).
    const delegate = (await sandboxChains())?.find((chain) => chain.delegate)?.delegate ?? '0x000000000000000000000000000000000000dEaD';
    const opJwt = await mintToken(appOne, sub, { ttlSeconds: 120 });
    const head = `{"op_jwt":${JSON.stringify(opJwt)},"access_key":${JSON.stringify(evm.access_key)},"wallet_id":${JSON.stringify(evm.wallet_id)},"contract_address":"${delegate}"`;
    for (const field of ['chain_id', 'nonce']) {
      for (const value of ['9007199254740993', '1e308', '-1', '1.5']) {
        const numbers = { chain_id: '42161', nonce: '0', [field]: value };
        const response = await call('enclave', 'POST', '/v2/api/wallet/sign_authorization', {
          headers: { ...secret, 'content-type': 'application/json' },
          rawBody: `${head},"chain_id":${numbers.chain_id},"nonce":${numbers.nonce}}`,
        });
        expect(response.status, `${field}=${value}`).toBe(400);
        const error = expectErrorShape(response.body);
        expect(error.code).toBe('INVALID_REQUEST');
        expect(error.message).toBe(`body.${field}: must be an integer between ${field === 'nonce' ? 0 : 1} and 9007199254740991`);
      }
    }
  });

  it('sign_transaction: quantities beyond uint256 (gas beyond uint64) are a 400', async () => {
    const base = {
      type: 'eip1559',
      chainId: 42161,
      nonce: 7,
      to: '0x000000000000000000000000000000000000dEaD',
      value: '1',
      gas: '21000',
      maxFeePerGas: '100',
      maxPriorityFeePerGas: '1',
    };
    for (const [field, value] of [
      ['value', (2n ** 256n).toString()],
      ['maxFeePerGas', '9'.repeat(78)],
      ['gas', (2n ** 64n).toString()],
      ['chainId', 1e308],
    ] as const) {
      const response = await sign('sign_transaction', evm, { transaction: { ...base, [field]: value } });
      expect(response.status, field).toBe(400);
      expect(expectErrorShape(response.body).message).toContain('body.transaction');
    }
  });

  it('a validation message never repeats the body: not a JSON-string body, not an op_jwt or access_key', async () => {
    const opJwt = await mintToken(appOne, sub, { ttlSeconds: 120 });
    const fields = { op_jwt: opJwt, access_key: evm.access_key, wallet_id: evm.wallet_id, raw_data_hash: keccak256(stringToBytes('x')) };
    const bodies = [
      JSON.stringify(JSON.stringify(fields)), // a JSON string holding the whole request
      JSON.stringify({ ...fields, op_jwt: [opJwt] }),
      JSON.stringify({ ...fields, access_key: { key: evm.access_key } }),
      JSON.stringify({ ...fields, access_key: evm.access_key.repeat(8) }),
      JSON.stringify({ ...fields, raw_data_hash: opJwt }),
      JSON.stringify({ ...fields, wallet_id: evm.access_key + evm.access_key }),
    ];
    for (const rawBody of bodies) {
      const response = await call('enclave', 'POST', '/v2/api/wallet/sign_data', { headers: { ...secret, 'content-type': 'application/json' }, rawBody });
      expect(response.status, rawBody.slice(0, 40)).toBe(400);
      const { message } = expectErrorShape(response.body);
      expect(message).toMatch(/^body/);
      expect(message).not.toContain(opJwt);
      expect(message).not.toContain(evm.access_key);
      expect(message).not.toContain(opJwt.slice(0, 20));
    }
  });

  it('never returns key material in a signing response', async () => {
    const response = await sign('sign_data', evm, { raw_data_hash: keccak256(stringToBytes('x')) });
    expect(JSON.stringify(response.body)).not.toContain(evm.access_key);
    expect(Object.keys(response.body).sort()).toEqual(['public_address', 'signature', 'success', 'wallet_id']);
  });
});
