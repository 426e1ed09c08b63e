import { ApproveAgentTypes, ApproveBuilderFeeTypes, Withdraw3Types } from '@nktkas/hyperliquid/api/exchange';
import { signUserSignedAction } from '@nktkas/hyperliquid/signing';
import { type Hex, hashTypedData, recoverTypedDataAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  APPROVE_AGENT_TYPES,
  APPROVE_BUILDER_FEE_TYPES,
  fromWireSignature,
  toWireSignature,
  type UserSignedAction,
  userSignedTypedData,
  WITHDRAW_TYPES,
} from '../../shared/venues/venue-b/actions.ts';

/**
 * Oracle: venue_b's typed data and signatures (shared/venues/venue-b/actions.ts, used by the driver
 * and the sandbox venue alike) equal the official SDK's (@nktkas/hyperliquid `signUserSignedAction`
 * with its own `…Types`) for the same key and action.
 */
const KEY: Hex = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const wallet = privateKeyToAccount(KEY);
const AGENT = '0x8ba1f109551bd432803012645ac136ddd64dba72';
const BUILDER = '0x1234567890abcdef1234567890abcdef12345678';

const cases: [string, UserSignedAction, Record<string, readonly { name: string; type: string }[]>, Record<string, unknown>][] = [
  [
    'approveAgent, named',
    { type: 'approveAgent', hyperliquidChain: 'Mainnet', signatureChainId: '0xa4b1', agentAddress: AGENT, agentName: 'bot-1', nonce: 1_763_800_000_000 },
    ApproveAgentTypes,
    { type: 'approveAgent', hyperliquidChain: 'Mainnet', signatureChainId: '0xa4b1', agentAddress: AGENT, agentName: 'bot-1', nonce: 1_763_800_000_000 },
  ],
  [
    'approveAgent, unnamed (signed with agentName "")',
    { type: 'approveAgent', hyperliquidChain: 'Mainnet', signatureChainId: '0x66eee', agentAddress: AGENT, nonce: 1_763_800_000_001 },
    ApproveAgentTypes,
    { type: 'approveAgent', hyperliquidChain: 'Mainnet', signatureChainId: '0x66eee', agentAddress: AGENT, agentName: '', nonce: 1_763_800_000_001 },
  ],
  [
    'approveBuilderFee',
    { type: 'approveBuilderFee', hyperliquidChain: 'Mainnet', signatureChainId: '0xa4b1', maxFeeRate: '0.05%', builder: BUILDER, nonce: 1_763_800_000_002 },
    ApproveBuilderFeeTypes,
    { type: 'approveBuilderFee', hyperliquidChain: 'Mainnet', signatureChainId: '0xa4b1', maxFeeRate: '0.05%', builder: BUILDER, nonce: 1_763_800_000_002 },
  ],
  [
    'withdraw3',
    {
      type: 'withdraw3',
      hyperliquidChain: 'Mainnet',
      signatureChainId: '0xa4b1',
      destination: wallet.address.toLowerCase(),
      amount: '12.3',
      time: 1_763_800_000_003,
    },
    Withdraw3Types,
    {
      type: 'withdraw3',
      hyperliquidChain: 'Mainnet',
      signatureChainId: '0xa4b1',
      destination: wallet.address.toLowerCase(),
      amount: '12.3',
      time: 1_763_800_000_003,
    },
  ],
];

describe('venue_b typed data equals @nktkas/hyperliquid', () => {
  it('the EIP-712 types are the SDK types, field for field', () => {
    expect(APPROVE_AGENT_TYPES).toEqual(ApproveAgentTypes);
    expect(APPROVE_BUILDER_FEE_TYPES).toEqual(ApproveBuilderFeeTypes);
    expect(WITHDRAW_TYPES).toEqual(Withdraw3Types);
  });

  it.each(cases)('%s: same signature as the SDK for the same key and action', async (_name, ours, types, sdkAction) => {
    const typedData = userSignedTypedData(ours);
    const mine = toWireSignature(await wallet.signTypedData(typedData));
    const sdk = await signUserSignedAction({ wallet, action: sdkAction as never, types: types as never });
    expect(mine).toEqual(sdk);
    // And the venue's verification recovers the signer from the wire form.
    expect(await recoverTypedDataAddress({ ...typedData, signature: fromWireSignature(sdk) })).toBe(wallet.address);
  });

  it('a different action, chain id or network gives a different digest (each field is signed)', () => {
    const [, base] = cases[3]!;
    const digest = hashTypedData(userSignedTypedData(base));
    const changes: Partial<Record<string, unknown>>[] = [
      { amount: '12.4' },
      { destination: AGENT },
      { time: 1_763_800_000_004 },
      { signatureChainId: '0x66eee' },
      { hyperliquidChain: 'Testnet' },
    ];
    for (const change of changes) {
      expect(hashTypedData(userSignedTypedData({ ...base, ...change } as UserSignedAction)), JSON.stringify(change)).not.toBe(digest);
    }
  });
});
