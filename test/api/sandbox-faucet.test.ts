import { Keypair } from '@solana/web3.js';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { chainBalance, sandboxChains } from './support/chains.ts';
import { call, expectErrorShape } from './support/client.ts';

/**
 * `POST /sandbox/faucet` refuses what it cannot credit with a 400 and the error shape, never a 500:
 * token names that are Object.prototype members, the zero address, and amounts beyond what the
 * chain's integer type holds (uint256 on EVM, u64 on Solana).
 */
const isSandbox = (await sandboxChains()) !== undefined;
const freshEvm = () => privateKeyToAddress(generatePrivateKey());
const freshSol = () => Keypair.generate().publicKey.toBase58();
const U256 = 2n ** 256n;
const U64 = 2n ** 64n;

async function faucet(json: Record<string, unknown>) {
  return call('account', 'POST', '/sandbox/faucet', { json });
}

function expect400(response: { status: number; body: unknown }, what: string, code?: string) {
  expect(response.status, `${what}: ${JSON.stringify(response.body)}`).toBe(400);
  const error = expectErrorShape(response.body);
  if (code) expect(error.code, what).toBe(code);
  return error;
}

describe.runIf(isSandbox)('POST /sandbox/faucet refuses what it cannot credit', () => {
  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])(
    'token "%s" is 400 UNSUPPORTED_TOKEN on an EVM chain and on SOL',
    async (token) => {
      expect400(await faucet({ address: freshEvm(), chain: 'ARB', token, amount: '1' }), `ARB ${token}`, 'UNSUPPORTED_TOKEN');
      expect400(await faucet({ address: freshSol(), chain: 'SOL', token, amount: '1' }), `SOL ${token}`, 'UNSUPPORTED_TOKEN');
    },
  );

  it('the zero address is 400 INVALID_ADDRESS, native and token, EVM and SOL', async () => {
    const zeroEvm = '0x0000000000000000000000000000000000000000';
    for (const token of ['ETH', 'USDC']) expect400(await faucet({ address: zeroEvm, chain: 'ETH', token, amount: '1' }), `ETH ${token}`, 'INVALID_ADDRESS');
    const zeroSol = '11111111111111111111111111111111';
    for (const token of ['SOL', 'USDC']) expect400(await faucet({ address: zeroSol, chain: 'SOL', token, amount: '1' }), `SOL ${token}`, 'INVALID_ADDRESS');
  });

  it('amounts of 2^256 base units and more on EVM are 400 AMOUNT_TOO_LARGE, native and token', async () => {
    for (const [token, decimals] of [
      ['ETH', 18],
      ['USDC', 6],
    ] as const) {
      for (const units of [U256, U256 * 10n ** 10n]) {
        const amount = `${units / 10n ** BigInt(decimals)}.${(units % 10n ** BigInt(decimals)).toString().padStart(decimals, '0')}`;
        expect400(await faucet({ address: freshEvm(), chain: 'INK', token, amount }), `INK ${token} ${amount}`, 'AMOUNT_TOO_LARGE');
      }
      expect400(await faucet({ address: freshEvm(), chain: 'INK', token, amount: '9'.repeat(80) }), `INK ${token} eighty 9s`, 'AMOUNT_TOO_LARGE');
    }
  });

  it('amounts of 2^64 base units and more on SOL are 400 AMOUNT_TOO_LARGE, SOL and USDC', async () => {
    for (const [token, decimals] of [
      ['SOL', 9],
      ['USDC', 6],
    ] as const) {
      const amount = `${U64 / 10n ** BigInt(decimals)}.${(U64 % 10n ** BigInt(decimals)).toString().padStart(decimals, '0')}`;
      expect400(await faucet({ address: freshSol(), chain: 'SOL', token, amount }), `SOL ${token} ${amount}`, 'AMOUNT_TOO_LARGE');
      expect400(await faucet({ address: freshSol(), chain: 'SOL', token, amount: '9'.repeat(80) }), `SOL ${token} eighty 9s`, 'AMOUNT_TOO_LARGE');
    }
  });

  it('a credit that would overflow the balance or supply is 400 AMOUNT_TOO_LARGE, and nothing is credited', async () => {
    const address = freshEvm();
    const half = (U256 / 2n + 1n) / 10n ** 18n + 1n; // whole ETH: two of these exceed uint256
    expect((await faucet({ address, chain: 'POL', token: 'POL', amount: half.toString() })).status).toBe(200);
    expect400(await faucet({ address, chain: 'POL', token: 'POL', amount: half.toString() }), 'second half', 'AMOUNT_TOO_LARGE');
    expect(await chainBalance('POL', address, 'POL')).toBe(half * 10n ** 18n);
  });

  it('SOL: a credit past u64 on one balance is 400 AMOUNT_TOO_LARGE; the faucet has no pool to run dry', async () => {
    const rich = freshSol();
    const half = '9223372036.854775808'; // 2^63 lamports (exact in the RPC's JSON number)
    expect((await faucet({ address: rich, chain: 'SOL', token: 'SOL', amount: half })).status).toBe(200);
    expect400(await faucet({ address: rich, chain: 'SOL', token: 'SOL', amount: half }), 'past u64', 'AMOUNT_TOO_LARGE');
    expect(await chainBalance('SOL', rich, 'SOL')).toBe(U64 / 2n);
    // LiteSVM's own airdrop draws on 1,000,000 SOL; after 18 billion SOL the faucet still works, USDC too.
    const next = freshSol();
    expect((await faucet({ address: next, chain: 'SOL', token: 'SOL', amount: '2000000' })).status).toBe(200);
    expect((await faucet({ address: next, chain: 'SOL', token: 'USDC', amount: '5' })).status).toBe(200);
    expect(await chainBalance('SOL', next, 'USDC')).toBe(5_000_000n);
  });

  it.each([
    ['the token program', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'],
    ['a sysvar', 'SysvarC1ock11111111111111111111111111111111'],
    ['the USDC mint', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'],
  ])('SOL: %s is not a wallet: 400 INVALID_ADDRESS', async (_what, address) => {
    for (const token of ['SOL', 'USDC']) expect400(await faucet({ address, chain: 'SOL', token, amount: '1' }), `${address} ${token}`, 'INVALID_ADDRESS');
  });

  it('an amount string longer than 100 characters is 400 before it becomes a number', async () => {
    expect400(await faucet({ address: freshEvm(), chain: 'ETH', token: 'ETH', amount: '1'.repeat(100_000) }), 'long amount', 'AMOUNT_TOO_LARGE');
  });

  it('still credits an ordinary amount on every kind of chain and token', async () => {
    const evm = freshEvm();
    const sol = freshSol();
    expect((await faucet({ address: evm, chain: 'ETH', token: 'USDC', amount: '2.5' })).status).toBe(200);
    expect((await faucet({ address: sol, chain: 'SOL', token: 'SOL', amount: '1.5' })).status).toBe(200);
    expect(await chainBalance('ETH', evm, 'USDC')).toBe(2_500_000n);
    expect(await chainBalance('SOL', sol, 'SOL')).toBe(1_500_000_000n);
  });
});
