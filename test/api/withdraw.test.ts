import { Keypair } from '@solana/web3.js';
import { type Address, getAddress, parseUnits } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { beforeAll, describe, expect, it } from 'vitest';
import { readExecutorNonce } from '../../shared/chains/evm/sponsored-executor.ts';
import { chainBalance, chainInfo, evmClient, faucet, newAccount, sandboxChains } from './support/chains.ts';
import { appOne, call, expectErrorShape, uniqueUser } from './support/client.ts';

/**
 * `POST /withdraw` and `GET /demo/wallet/balance` against the sandbox chains, reading balances
 * straight from the chains (spec: Endpoints, Withdraw; Limits). Skipped against a deployed stack.
 */
const isSandbox = (await sandboxChains()) !== undefined;
const freshEvm = () => privateKeyToAddress(generatePrivateKey());
const freshSol = () => Keypair.generate().publicKey.toBase58();

async function post(headers: Record<string, string>, json: unknown, extra: Record<string, string> = {}) {
  return call('account', 'POST', '/withdraw', { headers: { ...headers, ...extra }, json });
}

const PAIRS: [string, string, string][] = [
  ['ETH', 'ETH', '0.01'],
  ['ETH', 'USDC', '12.5'],
  ['ARB', 'ETH', '0.002'],
  ['ARB', 'USDC', '1.000001'],
  ['ARB', 'USDC.E', '3'],
  ['POL', 'POL', '2.5'],
  ['POL', 'USDC', '0.5'],
  ['POL', 'USDC.E', '7.25'],
  ['INK', 'ETH', '0.0003'],
  ['INK', 'USDC', '100'],
  ['SOL', 'SOL', '0.25'],
  ['SOL', 'USDC', '4.2'],
];

describe.runIf(isSandbox)('POST /withdraw', () => {
  it.each(PAIRS)('sends %s %s to an external address, to the base unit', async (chain, token, amount) => {
    const user = await newAccount(appOne, uniqueUser(`w-${chain}-${token}`));
    const from = chain === 'SOL' ? user.sol : user.evm;
    const to = chain === 'SOL' ? freshSol() : freshEvm();
    const native = (await chainInfo(chain)).tokens.find((t) => t.native)!;
    const decimals = (await chainInfo(chain)).tokens.find((t) => t.token === token)!.decimals;
    await faucet(chain, from, native.token, '10');
    if (!native.native || token !== native.token) await faucet(chain, from, token, '200');
    const before = await chainBalance(chain, from, token);

    const response = await post(user.headers, { to_address: to, amount, token, chain });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toEqual({
      success: true,
      tx_hash: chain === 'SOL' ? expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/) : expect.stringMatching(/^0x[0-9a-f]{64}$/),
      from_address: from,
      to_address: to,
      amount,
      token,
      chain,
      message: expect.stringContaining(`${amount} ${token} on ${chain}`),
    });
    expect(response.body.message).not.toContain('sponsored');
    expect(await chainBalance(chain, to, token)).toBe(parseUnits(amount, decimals));
    const after = await chainBalance(chain, from, token);
    if (token === native.token)
      expect(after).toBeLessThan(before - parseUnits(amount, decimals)); // amount plus the fee
    else expect(after).toBe(before - parseUnits(amount, decimals));
    if (chain !== 'SOL') {
      const receipt = await (await evmClient(chain)).getTransactionReceipt({ hash: response.body.tx_hash });
      expect(receipt.status).toBe('success');
    }
  });

  it('normalises EVM recipients to EIP-55 and validates Solana recipients as base58 32-byte keys', async () => {
    const user = await newAccount(appOne, uniqueUser('w-normalise'));
    await faucet('ARB', user.evm, 'ETH', '1');
    await faucet('ARB', user.evm, 'USDC', '10');
    const to = freshEvm();
    const response = await post(user.headers, { to_address: to.toLowerCase(), amount: '1', chain: 'ARB' });
    expect(response.status).toBe(200);
    expect(response.body.to_address).toBe(getAddress(to));
    expect(response.body.token).toBe('USDC'); // defaults: token USDC, chain ARB

    const defaults = await post(user.headers, { to_address: to, amount: '1' });
    expect(defaults.status).toBe(200);
    expect(defaults.body.chain).toBe('ARB');
    for (const [chain, address] of [
      ['ARB', '0x1234'],
      ['ARB', 'not-an-address'],
      ['SOL', '0OIl'],
      ['SOL', 'abc'],
      ['SOL', to],
    ] as const) {
      const bad = await post(user.headers, { to_address: address, amount: '1', chain, token: 'USDC' });
      expect(bad.status, `${chain} ${address}`).toBe(400);
      expect(expectErrorShape(bad.body).code).toBe('INVALID_ADDRESS');
    }
  });

  it('EIP-55 (issue 21): a wrong mixed-case checksum is 400 INVALID_ADDRESS_CHECKSUM, the zero address 400 INVALID_ADDRESS; all upper case is accepted and normalised', async () => {
    const user = await newAccount(appOne, uniqueUser('w-checksum'));
    await faucet('ARB', user.evm, 'ETH', '1');
    await faucet('ARB', user.evm, 'USDC', '10');
    const before = await chainBalance('ARB', user.evm, 'USDC');
    const to = getAddress(freshEvm());
    // One letter's case flipped: the same 20 bytes, a wrong checksum (viem's getAddress would "correct" it).
    const at = [...to].findIndex((char, index) => index > 1 && /[a-fA-F]/.test(char));
    const flipped = `${to.slice(0, at)}${to[at] === to[at]!.toUpperCase() ? to[at]!.toLowerCase() : to[at]!.toUpperCase()}${to.slice(at + 1)}`;
    const wrong = await post(user.headers, { to_address: flipped, amount: '1', chain: 'ARB' });
    expect(wrong.status, JSON.stringify(wrong.body)).toBe(400);
    expect(expectErrorShape(wrong.body)).toMatchObject({ code: 'INVALID_ADDRESS_CHECKSUM', message: expect.stringContaining('body.to_address') });
    for (const zero of ['0x0000000000000000000000000000000000000000', '0X0000000000000000000000000000000000000000'.replace('0X', '0x')]) {
      const refused = await post(user.headers, { to_address: zero, amount: '1', chain: 'ARB' });
      expect(refused.status).toBe(400);
      expect(expectErrorShape(refused.body).code).toBe('INVALID_ADDRESS');
    }
    expect(await chainBalance('ARB', user.evm, 'USDC')).toBe(before); // nothing sent
    expect(await chainBalance('ARB', to, 'USDC')).toBe(0n);
    const upper = await post(user.headers, { to_address: `0x${to.slice(2).toUpperCase()}`, amount: '1', chain: 'ARB' });
    expect(upper.status, JSON.stringify(upper.body)).toBe(200);
    expect(upper.body.to_address).toBe(to);
    expect(await chainBalance('ARB', to, 'USDC')).toBe(parseUnits('1', 6));
  });

  it('refuses bad amounts, unsupported pairs and unknown chains with 400, changing nothing', async () => {
    const user = await newAccount(appOne, uniqueUser('w-400'));
    await faucet('ARB', user.evm, 'ETH', '1');
    await faucet('ARB', user.evm, 'USDC', '10');
    const to = freshEvm();
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: '0' }, 'body.amount'],
      [{ amount: '-1' }, 'body.amount'],
      [{ amount: '1.0000001' }, 'body.amount'],
      [{ amount: '1e3' }, 'body.amount'],
      [{ amount: '.5' }, 'body.amount'],
      [{ amount: 5 }, 'body.amount'],
      [{ amount: '1', token: 'POL' }, 'body.token'],
      [{ amount: '1', chain: 'POL', token: 'ETH' }, 'body.token'],
      [{ amount: '1', chain: 'SOL', token: 'USDC.E' }, 'body.token'],
      [{ amount: '1', chain: 'BTC' }, 'body.chain'],
      [{ amount: '1', gas_sponsored: 'yes' }, 'body.gas_sponsored'],
    ];
    for (const [fields, field] of cases) {
      const response = await post(user.headers, { to_address: to, ...fields });
      expect(response.status, JSON.stringify(fields)).toBe(400);
      expect(expectErrorShape(response.body).message).toContain(field);
    }
    expect(await chainBalance('ARB', to, 'USDC')).toBe(0n);
    expect(await (await evmClient('ARB')).getTransactionCount({ address: user.evm })).toBe(0);
  });

  it('amounts beyond what the token can hold (uint256 on EVM, u64 on Solana): 400 naming body.amount, nothing signed', async () => {
    const user = await newAccount(appOne, uniqueUser('w-huge'));
    await faucet('ARB', user.evm, 'ETH', '1');
    await faucet('ARB', user.evm, 'USDC', '10');
    await faucet('SOL', user.sol, 'SOL', '1');
    const evmTo = freshEvm();
    const solTo = freshSol();
    const cases: [Record<string, unknown>, string][] = [
      [{ to_address: evmTo, chain: 'ARB', token: 'USDC', amount: (2n ** 256n).toString() }, '2^256 USDC'],
      [{ to_address: evmTo, chain: 'ARB', token: 'ETH', amount: '9'.repeat(80) }, 'eighty 9s ETH'],
      [
        { to_address: evmTo, chain: 'ARB', token: 'ETH', amount: '115792089237316195423570985008687907853269984665640564039457.584007913129639936' },
        '2^256 wei',
      ],
      [{ to_address: solTo, chain: 'SOL', token: 'SOL', amount: '18446744073.709551616' }, '2^64 lamports'],
      [{ to_address: solTo, chain: 'SOL', token: 'USDC', amount: (2n ** 64n).toString() }, 'SPL beyond u64'],
    ];
    for (const [body, label] of cases) {
      for (const key of [undefined, `huge-${label.replace(/\W/g, '')}-${Date.now()}`]) {
        const response = await post(user.headers, body, key ? { 'idempotency-key': key } : {});
        expect(response.status, label).toBe(400);
        const error = expectErrorShape(response.body);
        expect(error.code, label).toBe('AMOUNT_TOO_LARGE');
        expect(error.message, label).toMatch(/^body\.amount: is more than the token can hold/);
      }
    }
    expect(await (await evmClient('ARB')).getTransactionCount({ address: user.evm })).toBe(0);
    expect(await chainBalance('ARB', evmTo, 'USDC')).toBe(0n);
    expect(await chainBalance('SOL', solTo, 'SOL')).toBe(0n);
  });

  it('422 INSUFFICIENT_FUNDS names what is missing and broadcasts nothing', async () => {
    const user = await newAccount(appOne, uniqueUser('w-422'));
    const to = freshEvm();
    const noToken = await post(user.headers, { to_address: to, amount: '5', chain: 'ARB' });
    expect(noToken.status).toBe(422);
    expect(expectErrorShape(noToken.body)).toEqual({ code: 'INSUFFICIENT_FUNDS', message: expect.stringContaining('USDC on ARB') });

    await faucet('ARB', user.evm, 'USDC', '10');
    const noGas = await post(user.headers, { to_address: to, amount: '5', chain: 'ARB' });
    expect(noGas.status).toBe(422);
    expect(expectErrorShape(noGas.body).message).toContain('ETH on ARB');
    expect(await (await evmClient('ARB')).getTransactionCount({ address: user.evm })).toBe(0);
    expect(await chainBalance('ARB', to, 'USDC')).toBe(0n);

    const solUser = await newAccount(appOne, uniqueUser('w-422-sol'));
    await faucet('SOL', solUser.sol, 'USDC', '10');
    const noSol = await post(solUser.headers, { to_address: freshSol(), amount: '5', chain: 'SOL' });
    expect(noSol.status).toBe(422);
    expect(expectErrorShape(noSol.body).message).toMatch(/SOL for the fee and the recipient token account/);
  });

  it('an Idempotency-Key retry returns the first result without a second transaction', async () => {
    const user = await newAccount(appOne, uniqueUser('w-idem'));
    await faucet('POL', user.evm, 'POL', '10');
    await faucet('POL', user.evm, 'USDC', '10');
    const to = freshEvm();
    const key = { 'idempotency-key': `withdraw-${crypto.randomUUID()}` };
    const body = { to_address: to, amount: '2', chain: 'POL', token: 'USDC' };
    const [first, concurrent] = await Promise.all([post(user.headers, body, key), post(user.headers, body, key)]);
    const statuses = [first.status, concurrent.status].sort();
    expect([
      [200, 200],
      [200, 409],
    ]).toContainEqual(statuses);
    const again = await post(user.headers, body, key);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const winner = first.status === 200 ? first : concurrent;
    expect(again.body).toEqual(winner.body);
    expect(await chainBalance('POL', to, 'USDC')).toBe(2_000_000n);

    const reused = await post(user.headers, { ...body, amount: '3' }, key);
    expect(reused.status).toBe(422);
    expect(expectErrorShape(reused.body).code).toBe('IDEMPOTENCY_KEY_REUSED');
    const badKey = await post(user.headers, body, { 'idempotency-key': 'x' });
    expect(badKey.status).toBe(400);
  });

  it('a retry while the first attempt runs is 409 WITHDRAWAL_IN_PROGRESS with Retry-After: the seconds left of its claim (at most 45)', async () => {
    const user = await newAccount(appOne, uniqueUser('w-idem-retry-after'));
    await faucet('ARB', user.evm, 'ETH', '1');
    const body = { to_address: freshEvm(), amount: '0.0001', chain: 'ARB', token: 'ETH' };
    const conflicts = [];
    // Same key, at once: one attempt claims it, the others arrive while it runs (or replay its 200).
    for (let round = 0; round < 5 && conflicts.length === 0; round++) {
      const key = { 'idempotency-key': `withdraw-${crypto.randomUUID()}` };
      const answers = await Promise.all(Array.from({ length: 6 }, () => post(user.headers, body, key)));
      expect(answers.map((answer) => (answer.status === 200 || answer.status === 409 ? 'ok' : JSON.stringify(answer.body)))).toEqual(answers.map(() => 'ok'));
      conflicts.push(...answers.filter((answer) => answer.status === 409));
    }
    expect(conflicts.length).toBeGreaterThan(0);
    for (const conflict of conflicts) {
      expect(expectErrorShape(conflict.body).code).toBe('WITHDRAWAL_IN_PROGRESS');
      const retryAfter = conflict.headers.get('retry-after');
      expect(retryAfter).toMatch(/^[0-9]+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeLessThanOrEqual(45);
    }
  });

  it('a failed attempt does not burn its Idempotency-Key: after funding, the same key succeeds', async () => {
    const user = await newAccount(appOne, uniqueUser('w-idem-retry'));
    const key = { 'idempotency-key': `withdraw-${crypto.randomUUID()}` };
    const body = { to_address: freshEvm(), amount: '1', chain: 'INK' };
    expect((await post(user.headers, body, key)).status).toBe(422);
    await faucet('INK', user.evm, 'ETH', '1');
    await faucet('INK', user.evm, 'USDC', '1');
    expect((await post(user.headers, body, key)).status).toBe(200);
  });

  it('20 parallel withdrawals from one wallet: no nonce collision, and the balances add up', async () => {
    const user = await newAccount(appOne, uniqueUser('w-race'));
    await faucet('ARB', user.evm, 'ETH', '1');
    await faucet('ARB', user.evm, 'USDC', '15');
    const to = freshEvm();
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(user.headers, { to_address: to, amount: '1', chain: 'ARB' })));
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(15);
    for (const r of refused) expect(expectErrorShape(r.body).code).toBe('INSUFFICIENT_FUNDS');
    expect(new Set(ok.map((r) => r.body.tx_hash)).size).toBe(15);
    expect(await chainBalance('ARB', to, 'USDC')).toBe(15_000_000n);
    expect(await chainBalance('ARB', user.evm, 'USDC')).toBe(0n);
    expect(await (await evmClient('ARB')).getTransactionCount({ address: user.evm })).toBe(15);
  });

  it('20 concurrent identical SOL withdrawals (distinct Idempotency-Keys): 20 distinct transactions, all land', async () => {
    const user = await newAccount(appOne, uniqueUser('w-sol-race'));
    await faucet('SOL', user.sol, 'SOL', '1');
    const to = freshSol();
    const body = { to_address: to, amount: '0.01', chain: 'SOL', token: 'SOL' };
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(user.headers, body, { 'idempotency-key': `withdraw-${crypto.randomUUID()}` })));
    expect(
      responses.map((r) => r.status),
      JSON.stringify(responses.find((r) => r.status !== 200)?.body),
    ).toEqual(Array(20).fill(200));
    expect(new Set(responses.map((r) => r.body.tx_hash)).size).toBe(20);
    expect(await chainBalance('SOL', to, 'SOL')).toBe(20n * 10_000_000n);
    expect(await chainBalance('SOL', user.sol, 'SOL')).toBeLessThan(1_000_000_000n - 20n * 10_000_000n); // the amounts plus 20 fees
  });

  it("gas_sponsored on EVM: the user's native balance does not change; EIP-7702 delegation to our executor", async () => {
    const user = await newAccount(appOne, uniqueUser('w-sponsored'));
    await faucet('ETH', user.evm, 'USDC', '50');
    const to = freshEvm();
    const first = await post(user.headers, { to_address: to, amount: '10', chain: 'ETH', gas_sponsored: true });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.message).toContain('gas was sponsored');
    const second = await post(user.headers, { to_address: to, amount: '5', chain: 'ETH', gas_sponsored: true });
    expect(second.status).toBe(200);
    expect(await chainBalance('ETH', user.evm, 'ETH')).toBe(0n);
    expect(await chainBalance('ETH', to, 'USDC')).toBe(15_000_000n);
    const client = await evmClient('ETH');
    const code = await client.getCode({ address: user.evm });
    expect(code?.toLowerCase()).toBe(`0xef0100${(await chainInfo('ETH')).delegate!.slice(2)}`.toLowerCase());
    const tx = await client.getTransaction({ hash: first.body.tx_hash });
    expect(tx.type).toBe('eip7702');
    expect(getAddress(tx.to!)).toBe(user.evm);

    // The same send unsponsored costs the user gas; with no gas it is refused.
    const unsponsored = await post(user.headers, { to_address: to, amount: '1', chain: 'ETH' });
    expect(unsponsored.status).toBe(422);
    await faucet('ETH', user.evm, 'ETH', '1');
    const paid = await post(user.headers, { to_address: to, amount: '1', chain: 'ETH' });
    expect(paid.status).toBe(200);
    expect(await chainBalance('ETH', user.evm, 'ETH')).toBeLessThan(10n ** 18n);
  });

  it('8 parallel sponsored withdrawals from one wallet: each executes once, in executor-nonce order, the user pays no gas', async () => {
    const user = await newAccount(appOne, uniqueUser('w-sponsored-race'));
    await faucet('INK', user.evm, 'USDC', '8');
    const to = freshEvm();
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => post(user.headers, { to_address: to, amount: '1', chain: 'INK', gas_sponsored: true })),
    );
    for (const response of responses) expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(new Set(responses.map((r) => r.body.tx_hash)).size).toBe(8);
    expect(await chainBalance('INK', to, 'USDC')).toBe(8_000_000n);
    expect(await chainBalance('INK', user.evm, 'USDC')).toBe(0n);
    expect(await chainBalance('INK', user.evm, 'ETH')).toBe(0n);
    expect(await readExecutorNonce(await evmClient('INK'), user.evm)).toBe(8n);
  });

  it('sponsorship budget (issue 21 §6): under the minimum is 422 SPONSORED_AMOUNT_TOO_SMALL; the 21st sponsored withdrawal of a day is 422 SPONSORSHIP_BUDGET_EXCEEDED with Retry-After, nothing sent', async () => {
    const user = await newAccount(appOne, uniqueUser('w-sponsor-budget'));
    await faucet('ARB', user.evm, 'USDC', '30');
    const to = freshEvm();
    const dust = await post(user.headers, { to_address: to, amount: '0.999999', chain: 'ARB', gas_sponsored: true });
    expect(dust.status, JSON.stringify(dust.body)).toBe(422);
    expect(expectErrorShape(dust.body)).toMatchObject({ code: 'SPONSORED_AMOUNT_TOO_SMALL', message: expect.stringContaining('at least 1 USDC') });
    // The default budget: 20 sponsored transactions per user per UTC day (the dust refusal counted none).
    for (let batch = 0; batch < 4; batch++) {
      const sent = await Promise.all(Array.from({ length: 5 }, () => post(user.headers, { to_address: to, amount: '1', chain: 'ARB', gas_sponsored: true })));
      for (const response of sent) expect(response.status, JSON.stringify(response.body)).toBe(200);
    }
    const over = await post(user.headers, { to_address: to, amount: '1', chain: 'ARB', gas_sponsored: true });
    expect(over.status, JSON.stringify(over.body)).toBe(422);
    expect(expectErrorShape(over.body)).toMatchObject({
      code: 'SPONSORSHIP_BUDGET_EXCEEDED',
      message: expect.stringContaining('20 sponsored transactions a day'),
    });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(86_400);
    expect(await chainBalance('ARB', to, 'USDC')).toBe(20_000_000n);
    // Unsponsored, the same user still withdraws (with gas of their own).
    await faucet('ARB', user.evm, 'ETH', '1');
    expect((await post(user.headers, { to_address: to, amount: '1', chain: 'ARB' })).status).toBe(200);
  });

  it('a sponsored native send moves exactly the amount from the user', async () => {
    const user = await newAccount(appOne, uniqueUser('w-sponsored-native'));
    await faucet('POL', user.evm, 'POL', '3');
    const to = freshEvm();
    const response = await post(user.headers, { to_address: to, amount: '1.25', chain: 'POL', token: 'POL', gas_sponsored: true });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(await chainBalance('POL', user.evm, 'POL')).toBe(parseUnits('1.75', 18));
    expect(await chainBalance('POL', to, 'POL')).toBe(parseUnits('1.25', 18));
  });

  it('Solana USDC: creates the recipient token account when missing, reuses it when present; gas_sponsored is ignored', async () => {
    const user = await newAccount(appOne, uniqueUser('w-sol'));
    await faucet('SOL', user.sol, 'SOL', '1');
    await faucet('SOL', user.sol, 'USDC', '20');
    const to = freshSol();
    const first = await post(user.headers, { to_address: to, amount: '3', chain: 'SOL', gas_sponsored: true });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.message).not.toContain('sponsored');
    const solAfterFirst = await chainBalance('SOL', user.sol, 'SOL');
    const second = await post(user.headers, { to_address: to, amount: '2', chain: 'SOL' });
    expect(second.status).toBe(200);
    expect(await chainBalance('SOL', to, 'USDC')).toBe(5_000_000n);
    expect(await chainBalance('SOL', user.sol, 'USDC')).toBe(15_000_000n);
    // The second send paid only the fee: no new token account rent.
    expect(solAfterFirst - (await chainBalance('SOL', user.sol, 'SOL'))).toBeLessThan(100_000n);
  });
});

describe.runIf(isSandbox)('GET /demo/wallet/balance', () => {
  let user: Awaited<ReturnType<typeof newAccount>>;
  beforeAll(async () => {
    user = await newAccount(appOne, uniqueUser('demo'));
    await faucet('POL', user.evm, 'USDC.E', '1.5');
    await faucet('SOL', user.sol, 'SOL', '0.75');
  });

  it('reads every token of the chain from the chain, as decimal strings', async () => {
    const pol = await call('account', 'GET', '/demo/wallet/balance?chain=POL', { headers: user.headers });
    expect(pol.status).toBe(200);
    expect(pol.body).toEqual({
      chain: 'POL',
      address: user.evm,
      assets: { POL: '0', USDC: '0', 'USDC.E': '1.5' },
      public_address: { ETH: user.evm, SOL: user.sol },
    });
    const sol = await call('account', 'GET', '/demo/wallet/balance?chain=SOL', { headers: user.headers });
    expect(sol.body).toMatchObject({ chain: 'SOL', address: user.sol, assets: { SOL: '0.75', USDC: '0' } });
    const ink = await call('account', 'GET', '/demo/wallet/balance?chain=INK', { headers: user.headers });
    expect(Object.keys(ink.body.assets).sort()).toEqual(['ETH', 'USDC']);
  });

  it('400 for a missing or unknown chain', async () => {
    for (const query of ['', '?chain=', '?chain=BTC', '?chain=eth']) {
      const response = await call('account', 'GET', `/demo/wallet/balance${query}`, { headers: user.headers });
      expect(response.status, query).toBe(400);
      expect(expectErrorShape(response.body).message).toContain('query.chain');
    }
  });
});

describe.runIf(isSandbox)('sandbox endpoints', () => {
  it('GET /sandbox/chains lists the chains with ids, RPC URLs and token addresses at the real mainnet addresses', async () => {
    const chains = await sandboxChains();
    expect(chains!.map((c) => c.chain)).toEqual(['ETH', 'ARB', 'POL', 'INK', 'SOL']);
    expect(chains!.map((c) => c.chain_id)).toEqual([1, 42161, 137, 57073, undefined]);
    const arbUsdc = chains!.find((c) => c.chain === 'ARB')!.tokens.find((t) => t.token === 'USDC');
    expect(arbUsdc).toMatchObject({ address: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', decimals: 6 });
    expect(chains!.find((c) => c.chain === 'SOL')!.tokens.find((t) => t.token === 'USDC')).toMatchObject({
      mint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      decimals: 6,
    });
  });

  it('POST /sandbox/faucet validates like every other input', async () => {
    const address = freshEvm() as Address;
    for (const json of [
      { address, chain: 'ARB', token: 'USDC', amount: '1.0000001' },
      { address, chain: 'ARB', token: 'POL', amount: '1' },
      { address: 'nope', chain: 'ARB', token: 'USDC', amount: '1' },
      { address, chain: 'DOGE', token: 'USDC', amount: '1' },
      { address, chain: 'ARB', token: 'USDC', amount: 1 },
    ]) {
      const response = await call('account', 'POST', '/sandbox/faucet', { json });
      expect(response.status, JSON.stringify(json)).toBe(400);
      expectErrorShape(response.body);
    }
    const ok = await call('account', 'POST', '/sandbox/faucet', { json: { address, chain: 'ARB', token: 'USDC', amount: '1.5' } });
    expect(ok.body).toMatchObject({ success: true, sandbox: true, amount: '1.5' });
    expect(await chainBalance('ARB', address, 'USDC')).toBe(1_500_000n);
  });
});
