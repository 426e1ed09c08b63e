import { address, getCompiledTransactionMessageCodec } from '@solana/kit';
import { findAssociatedTokenPda } from '@solana-program/token';
import { encodeFunctionData, erc20Abi, getAddress, parseAbi } from 'viem';
import { describe, expect, it } from 'vitest';
import { evaluatePolicy } from '../../shared/policies/evaluate.ts';
import { signFacts } from '../../shared/policies/facts.ts';
import type { PolicyChains } from '../../shared/policies/index.ts';
import { nativeUsd, priceNativeFacts } from '../../shared/policies/native-usd.ts';
import type { Policy } from '../../shared/policies/policy.ts';
import { resolveTokenOwners } from '../../shared/policies/token-owners.ts';

const USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48';
const SOL_USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const chains: PolicyChains = {
  ETH: { family: 'evm', chain_id: 1, native: 'ETH', tokens: { USDC: { address: USDC, decimals: 6 } } },
  ARB: { family: 'evm', chain_id: 42161, native: 'ETH', tokens: {} },
  SOL: { family: 'sol', native: 'SOL', tokens: { USDC: { mint: SOL_USDC, decimals: 6 } } },
};
const ALICE = '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045';
const BOB = '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B';
const permitAbi = parseAbi(['function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)']);

const tx = (fields: Record<string, unknown>) =>
  signFacts({ operation: 'sign_transaction', channel: 'express', body: { transaction: { chainId: 1, nonce: 0, ...fields } }, chains });

describe('signFacts: EVM transactions', () => {
  it('a native transfer: the recipient is `to`; the wei are `native` ETH, USD unknown until priced', () => {
    const facts = tx({ to: ALICE.toLowerCase(), value: '1000' });
    expect(facts).toMatchObject({ chain: 'ETH', recipients: [ALICE], opaque: false, native: { coin: 'ETH', amount: 1000n, otherUsd: 0n } });
    expect(facts.usd).toBeUndefined();
    // On an unconfigured chain the coin is unknown: no `native`, so never priced.
    expect(tx({ chainId: 999, to: ALICE, value: '1000' }).native).toBeUndefined();
  });

  it('value sent along with a USDC transfer: native ETH plus the token at face value as `otherUsd`', () => {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [BOB, 2_000_000n] });
    const facts = tx({ to: USDC, data, value: '5' });
    expect(facts).toMatchObject({ recipients: [getAddress(USDC), BOB], native: { coin: 'ETH', amount: 5n, otherUsd: 2_000_000n } });
    expect(facts.usd).toBeUndefined();
  });

  it('a call with no value and no data moves nothing (USD 0)', () => {
    expect(tx({ to: ALICE }).usd).toEqual({ value: 0n });
  });

  it('ERC-20 transfer of USDC: the recipient from calldata, face value in micro-USD', () => {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [BOB, 11_000_000n] });
    expect(tx({ to: USDC, data })).toMatchObject({ recipients: [BOB], opaque: false, usd: { value: 11_000_000n } });
  });

  it('ERC-20 transferFrom: the `to` argument', () => {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [ALICE, BOB, 5n] });
    expect(tx({ to: USDC, input: data })).toMatchObject({ recipients: [BOB], usd: { value: 5n } });
  });

  it('ERC-20 approve: the spender counts as a recipient', () => {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [BOB, 2n ** 256n - 1n] });
    expect(tx({ to: USDC, data })).toMatchObject({ recipients: [BOB], opaque: false, usd: { value: 2n ** 256n - 1n } });
  });

  it('permit: the spender counts as a recipient', () => {
    const data = encodeFunctionData({ abi: permitAbi, functionName: 'permit', args: [ALICE, BOB, 7n, 0n, 27, `0x${'11'.repeat(32)}`, `0x${'22'.repeat(32)}`] });
    expect(tx({ to: USDC, data })).toMatchObject({ recipients: [BOB], opaque: false, usd: { value: 7n } });
  });

  it('a token transfer of an unknown token: recipient known, USD unknown', () => {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [BOB, 5n] });
    const facts = tx({ to: ALICE, data });
    expect(facts).toMatchObject({ recipients: [BOB], opaque: false });
    expect(facts.usd).toBeUndefined();
  });

  it('unknown calldata is opaque; a contract creation too', () => {
    expect(tx({ to: USDC, data: '0xdeadbeef00' })).toMatchObject({ recipients: [], opaque: true });
    expect(tx({ to: USDC, data: '0xdeadbeef', value: '5' })).toMatchObject({ recipients: [getAddress(USDC)], opaque: true });
    expect(tx({ to: null, data: '0x6000' })).toMatchObject({ recipients: [], opaque: true });
  });

  it('maps chain ids to chain codes, else eip155:<id>', () => {
    expect(tx({ chainId: 42161, to: ALICE }).chain).toBe('ARB');
    expect(tx({ chainId: '0x2105', to: ALICE }).chain).toBe('eip155:8453');
    expect(signFacts({ operation: 'sign_transaction', channel: 'enclave', body: { transaction: { chainId: 1, nonce: 0, to: ALICE } } }).chain).toBe('eip155:1');
  });
});

describe('signFacts: other operations', () => {
  it('sign_data is opaque with no recipients', () => {
    expect(signFacts({ operation: 'sign_data', channel: 'express', body: { raw_data_hash: `0x${'ab'.repeat(32)}` } })).toEqual({
      operation: 'sign_data',
      channel: 'express',
      recipients: [],
      opaque: true,
    });
  });

  it('sign_message has no recipients and moves nothing', () => {
    expect(signFacts({ operation: 'sign_message', channel: 'enclave', body: { message: 'hi', encoding: 'utf8' } })).toMatchObject({
      recipients: [],
      opaque: false,
      usd: { value: 0n },
    });
  });

  it('sign_authorization: the delegate is the recipient, on the named chain', () => {
    const facts = signFacts({
      operation: 'sign_authorization',
      channel: 'express',
      body: { chain_id: 1, contract_address: BOB.toLowerCase(), nonce: 0 },
      chains,
    });
    expect(facts).toMatchObject({ chain: 'ETH', recipients: [BOB], opaque: false });
    expect(facts.usd).toBeUndefined();
  });
});

describe('signFacts: Solana transactions', () => {
  const payer = 'E9Nykp3rSdza2moQutaJ3K3RSC8E5iFERX2SqLTsQfjJ';
  const destination = 'CiDwVBFgWV9E5MvXWoLgnEgn2hK7rJikbvfWavzAQz3';
  const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
  const SYSTEM = '11111111111111111111111111111111';
  const sol = (staticAccounts: string[], instructions: { programAddressIndex: number; accountIndices: number[]; data: Uint8Array }[]) => {
    const bytes = getCompiledTransactionMessageCodec().encode({
      version: 'legacy',
      header: { numSignerAccounts: 1, numReadonlySignerAccounts: 0, numReadonlyNonSignerAccounts: 0 },
      staticAccounts: staticAccounts as never,
      lifetimeToken: 'EETubP5AKHgjPAhzPAFcb8BAY1hMH639CWCFTqi3hq1k',
      instructions,
    } as never);
    return signFacts({ operation: 'sign_transaction', channel: 'express', body: { transaction: Buffer.from(bytes).toString('base64') }, chains });
  };
  const u64 = (n: bigint) => {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setBigUint64(0, n, true);
    return bytes;
  };

  it('a USDC TransferChecked: the destination token account, face value', () => {
    const data = new Uint8Array([12, ...u64(5_000_000n), 6]);
    const facts = sol(
      [payer, 'So11111111111111111111111111111111111111112', destination, SOL_USDC, TOKEN],
      [{ programAddressIndex: 4, accountIndices: [1, 3, 2, 0], data }],
    );
    expect(facts).toMatchObject({ chain: 'SOL', recipients: [destination], opaque: false, usd: { value: 5_000_000n } });
  });

  it('a System transfer: the recipient; the lamports are `native` SOL, USD unknown until priced', () => {
    const data = new Uint8Array([2, 0, 0, 0, ...u64(1000n)]);
    const facts = sol([payer, destination, SYSTEM], [{ programAddressIndex: 2, accountIndices: [0, 1], data }]);
    expect(facts).toMatchObject({ recipients: [destination], opaque: false, native: { coin: 'SOL', amount: 1000n, otherUsd: 0n } });
    expect(facts.usd).toBeUndefined();
  });

  it('a USDC TransferChecked to the associated token account of a listed owner matches that owner in to.allow and to.deny', async () => {
    const owner = 'BPFLoaderUpgradeab1e11111111111111111111111';
    const stranger = 'Vote111111111111111111111111111111111111111';
    const [ata] = await findAssociatedTokenPda({ owner: address(owner), mint: address(SOL_USDC), tokenProgram: address(TOKEN) });
    const transfer = (to: string) =>
      sol(
        [payer, 'So11111111111111111111111111111111111111112', to, SOL_USDC, TOKEN],
        [{ programAddressIndex: 4, accountIndices: [1, 3, 2, 0], data: new Uint8Array([12, ...u64(1_000_000n), 6]) }],
      );
    const toOwner = transfer(ata);
    expect(toOwner.tokenAccounts).toEqual([{ account: ata, mint: SOL_USDC, program: TOKEN }]);
    const allowOwner: Policy = {
      mode: 'enforce',
      rules: [{ id: 'payees', action: 'allow', operations: ['sign_transaction'], chains: ['SOL'], to: { allow: [ALICE, owner] } }],
    };
    const resolved = await resolveTokenOwners(toOwner, allowOwner);
    expect(resolved.owners).toEqual(new Map([[ata, owner]]));
    expect(evaluatePolicy(allowOwner, resolved)).toMatchObject({ decision: 'allow', rule_id: 'payees' });
    // Another owner's token account (here: a token account that is nobody's ATA) is not the listed owner.
    const elsewhere = await resolveTokenOwners(transfer(destination), allowOwner);
    expect(elsewhere.owners).toBeUndefined();
    expect(evaluatePolicy(allowOwner, elsewhere)).toMatchObject({ decision: 'deny', rule_id: null });
    // The same derivation catches a denied owner.
    const denyOwner: Policy = {
      mode: 'enforce',
      rules: [
        { id: 'blocked', action: 'deny', operations: ['sign_transaction'], to: { deny: [stranger, owner] } },
        { id: 'rest', action: 'allow', operations: ['sign_transaction'] },
      ],
    };
    expect(evaluatePolicy(denyOwner, await resolveTokenOwners(toOwner, denyOwner))).toMatchObject({ decision: 'deny', rule_id: 'blocked' });
    expect(evaluatePolicy(denyOwner, await resolveTokenOwners(transfer(destination), denyOwner))).toMatchObject({ decision: 'allow', rule_id: 'rest' });
  });

  it('an unknown program is opaque; bytes that are no message too', () => {
    expect(sol([payer, destination], [{ programAddressIndex: 1, accountIndices: [0], data: new Uint8Array([1]) }])).toMatchObject({ opaque: true });
    expect(signFacts({ operation: 'sign_transaction', channel: 'express', body: { transaction: 'AAAA' } })).toMatchObject({ chain: 'SOL', opaque: true });
  });
});

describe('priceNativeFacts: native coins through the price source', () => {
  const prices = { usdPrice: async (coin: string) => ({ ETH: 3_000_000_000n, POL: 250_000n, SOL: 150_000_000n })[coin as 'ETH']! };

  it('the coin amount at the price, rounded up to the micro-USD, plus the rest', async () => {
    // 0.002 ETH at 3,000 USD = 6 USD; 1 wei more rounds up one micro-USD.
    expect((await priceNativeFacts(tx({ to: ALICE, value: '2000000000000000' }), prices)).usd).toEqual({ value: 6_000_000n });
    expect((await priceNativeFacts(tx({ to: ALICE, value: '2000000000000001' }), prices)).usd).toEqual({ value: 6_000_001n });
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [BOB, 2_000_000n] });
    expect((await priceNativeFacts(tx({ to: USDC, data, value: '1000000000000000' }), prices)).usd).toEqual({ value: 5_000_000n });
    expect(nativeUsd('SOL', 1_500_000_000n, 150_000_000n)).toBe(225_000_000n);
    expect(nativeUsd('POL', 4n * 10n ** 18n, 250_000n)).toBe(1_000_000n);
  });

  it('no source, an unknown rest, or a failing source: USD stays unknown and the reason says the price is missing, not why', async () => {
    const facts = tx({ to: ALICE, value: '1000' });
    expect(await priceNativeFacts(facts, undefined)).toMatchObject({ priceError: 'no price source for ETH' });
    const failing = { usdPrice: () => Promise.reject(new Error('https://rpc.example/secret-key: stale')) };
    const failed = await priceNativeFacts(facts, failing);
    expect(failed.usd).toBeUndefined();
    expect(failed.priceError).toBe('the ETH price is unavailable');
    // A token the policy cannot price beside the coin: unknown whatever the price.
    const unknownToken = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [BOB, 5n] });
    expect((await priceNativeFacts(tx({ to: BOB, data: unknownToken, value: '1' }), prices)).usd).toBeUndefined();
    // Facts that move no native coin are returned as they are.
    const usdc = tx({ to: USDC, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [BOB, 7n] }) });
    expect(await priceNativeFacts(usdc, failing)).toBe(usdc);
  });
});
