import {
  getNadoEIP712Values,
  getSignedTransactionRequest,
  subaccountNameToBytes12 as sdkNameToBytes12,
  subaccountFromHex,
  subaccountToHex,
} from '@nadohq/shared';
import { type Address, bytesToHex, createWalletClient, defineChain, type Hex, hashTypedData, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  linkedSignerBytes32,
  linkSignerExecuteBody,
  linkSignerTypedData,
  NADO_INK_MAINNET,
  type NadoDomainConfig,
  PRIMARY_SUBACCOUNT_NAME,
  parseSubaccountSender,
  recoverNadoSigner,
  subaccountNameToBytes12,
  subaccountSender,
  withdrawCollateralExecuteBody,
  withdrawCollateralTypedData,
} from '../../shared/venues/venue-d/signing.ts';

/**
 * venue_d against @nadohq/shared: the subaccount bytes32, and the signatures the SDK's own
 * getSignedTransactionRequest produces for LinkSigner and WithdrawCollateral with the same key.
 */

const CONFIG: NadoDomainConfig = { chainId: NADO_INK_MAINNET.chainId, endpoint: NADO_INK_MAINNET.endpoint };

function sdkWalletClient(privateKey: Hex) {
  const chain = defineChain({
    id: CONFIG.chainId,
    name: 'ink',
    nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: ['http://127.0.0.1:1'] } },
  });
  return createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport: http() });
}

describe('venue_d subaccount sender (owner ‖ 12-byte name)', () => {
  it('equals @nadohq/shared subaccountToHex for the primary and other names, and parses back as subaccountFromHex', () => {
    const owner = privateKeyToAccount(generatePrivateKey()).address;
    for (const name of [PRIMARY_SUBACCOUNT_NAME, 'trading', '', 'twelve_bytes']) {
      const sender = subaccountSender(owner, name);
      expect(sender, name).toBe(subaccountToHex({ subaccountOwner: owner, subaccountName: name }));
      expect(subaccountNameToBytes12(name)).toBe(bytesToHex(sdkNameToBytes12(name)));
      const sdk = subaccountFromHex(sender);
      expect(parseSubaccountSender(sender)).toEqual({ owner, name: sdk.subaccountName });
    }
    expect(subaccountSender(owner)).toBe(subaccountToHex({ subaccountOwner: owner, subaccountName: 'default' }));
  });

  it('refuses a name longer than 12 bytes and a sender that is not 32 bytes', () => {
    expect(() => subaccountNameToBytes12('thirteen_byte')).toThrow(/12 bytes/);
    expect(() => parseSubaccountSender('0x1234')).toThrow(/32 bytes/);
  });

  it('the linked signer is the address followed by 12 zero bytes', () => {
    const signer: Address = '0x00000000000000000000000000000000000000a1';
    expect(linkedSignerBytes32(signer)).toBe(`0x${'00'.repeat(19)}a1${'00'.repeat(12)}`);
    expect(linkedSignerBytes32(signer)).toBe(subaccountToHex({ subaccountOwner: signer, subaccountName: '' }));
  });
});

describe('venue_d EIP-712 (domain Nado / 0.0.1 / 57073 / Endpoint)', () => {
  it("LinkSigner: the owner's signature is byte-identical to the SDK's; the venue recovers the owner", async () => {
    const privateKey = generatePrivateKey();
    const owner = privateKeyToAccount(privateKey);
    const linked = privateKeyToAccount(generatePrivateKey()).address;
    const tx = { sender: subaccountSender(owner.address), signer: linkedSignerBytes32(linked), nonce: 7n };

    const ours = await owner.signTypedData(linkSignerTypedData(CONFIG, tx));
    const sdk = await getSignedTransactionRequest({
      requestType: 'link_signer',
      requestParams: { subaccountOwner: owner.address, subaccountName: PRIMARY_SUBACCOUNT_NAME, signer: tx.signer, nonce: '7' },
      chainId: CONFIG.chainId,
      verifyingContract: CONFIG.endpoint,
      walletClient: sdkWalletClient(privateKey),
    });
    expect(ours).toBe(sdk);
    expect(await recoverNadoSigner(linkSignerTypedData(CONFIG, tx), ours)).toBe(owner.address);
    expect(await recoverNadoSigner(linkSignerTypedData(CONFIG, { ...tx, nonce: 8n }), ours)).not.toBe(owner.address);
    expect(await recoverNadoSigner(linkSignerTypedData({ ...CONFIG, endpoint: '0x0000000000000000000000000000000000000001' }, tx), ours)).not.toBe(
      owner.address,
    );
    expect(await recoverNadoSigner(linkSignerTypedData(CONFIG, tx), '0x1234')).toBeUndefined();
  });

  it("WithdrawCollateral: byte-identical to the SDK's; a different amount or signer does not recover the owner", async () => {
    const privateKey = generatePrivateKey();
    const owner = privateKeyToAccount(privateKey);
    const tx = { sender: subaccountSender(owner.address), productId: 0, amount: 5_000_000n, nonce: 3n };
    const typedData = withdrawCollateralTypedData(CONFIG, tx);

    const ours = await owner.signTypedData(typedData);
    const sdk = await getSignedTransactionRequest({
      requestType: 'withdraw_collateral',
      requestParams: { subaccountOwner: owner.address, subaccountName: PRIMARY_SUBACCOUNT_NAME, productId: 0, amount: 5_000_000n, nonce: '3' },
      chainId: CONFIG.chainId,
      verifyingContract: CONFIG.endpoint,
      walletClient: sdkWalletClient(privateKey),
    });
    expect(ours).toBe(sdk);
    expect(hashTypedData(typedData)).not.toBe(hashTypedData(withdrawCollateralTypedData(CONFIG, { ...tx, amount: 5_000_001n })));
    expect(await recoverNadoSigner(withdrawCollateralTypedData(CONFIG, { ...tx, amount: 5_000_001n }), ours)).not.toBe(owner.address);
    const stranger = privateKeyToAccount(generatePrivateKey());
    expect(await recoverNadoSigner(typedData, await stranger.signTypedData(typedData))).toBe(stranger.address);
  });
});

describe('venue_d execute bodies', () => {
  it("carry the tx as the SDK's getNadoEIP712Values (integers as strings) under the request type", () => {
    const owner = privateKeyToAccount(generatePrivateKey()).address;
    const signer = linkedSignerBytes32(privateKeyToAccount(generatePrivateKey()).address);
    const link = linkSignerExecuteBody({ sender: subaccountSender(owner), signer, nonce: 9n }, '0xabcd');
    expect(link).toEqual({
      link_signer: { tx: getNadoEIP712Values('link_signer', { subaccountOwner: owner, subaccountName: 'default', signer, nonce: '9' }), signature: '0xabcd' },
    });
    const withdraw = withdrawCollateralExecuteBody({ sender: subaccountSender(owner), productId: 0, amount: 5_000_000n, nonce: 10n }, '0xabcd');
    expect(withdraw).toEqual({
      withdraw_collateral: {
        signature: '0xabcd',
        tx: getNadoEIP712Values('withdraw_collateral', { subaccountOwner: owner, subaccountName: 'default', productId: 0, amount: 5_000_000n, nonce: '10' }),
        spot_leverage: null,
      },
    });
  });
});
