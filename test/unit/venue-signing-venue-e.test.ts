import { createL1Headers as sdkCreateL1Headers, createL2Headers as sdkCreateL2Headers } from '@polymarket/clob-client/dist/headers/index.js';
import { buildPolyHmacSignature } from '@polymarket/clob-client/dist/signing/hmac.js';
import { concat, createWalletClient, encodeFunctionData, getCreate2Address, http, keccak256, parseAbi, type TypedDataDefinition } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { polygon } from 'viem/chains';
import { describe, expect, it } from 'vitest';
import {
  clobAuthTypedData,
  createL1Headers,
  createL2Headers,
  generateClobApiCredentials,
  PROXY_WALLET_FACTORY,
  PROXY_WALLET_INIT_CODE_HASH,
  polyHmacSignature,
  proxyWalletAddress,
  safeWalletAddress,
  verifyL1Headers,
  verifyL2Headers,
} from '../../shared/venues/venue-e/signing.ts';

/**
 * venue_e against @polymarket/clob-client (createL1Headers, createL2Headers,
 * buildPolyHmacSignature) and the published wallet derivations: the Proxy wallet's init code is
 * rebuilt from Polymarket/proxy-factories FactoryLib.computeCreationCode, and the Safe is checked
 * against an address the official builder-relayer-client derived (quoted in a public issue report).
 */

const NOW_SECONDS = 1_795_000_000;
const NOW = new Date(NOW_SECONDS * 1000);

function testSigner() {
  const privateKey = generatePrivateKey();
  const account = privateKeyToAccount(privateKey);
  return {
    wallet: {
      address: account.address,
      signTypedData: (typedData: TypedDataDefinition) => account.signTypedData(typedData),
      signMessage: (message: string) => account.signMessage({ message }),
    },
    sdkSigner: createWalletClient({ account, chain: polygon, transport: http('http://127.0.0.1:1') }),
  };
}

describe('venue_e wallet derivation (CREATE2)', () => {
  it("the Proxy init-code hash is keccak of FactoryLib's clone creation code for the factory's implementation", () => {
    const implementation = '0x44e999d5c2F66Ef0861317f9A4805AC2e90aEB4f';
    const cloneConstructor = encodeFunctionData({ abi: parseAbi(['function cloneConstructor(bytes)']), functionName: 'cloneConstructor', args: ['0x'] });
    const creationCode = concat([
      '0x3d3d606380380380913d393d73',
      PROXY_WALLET_FACTORY,
      '0x5af4602a57600080fd5b602d8060366000396000f3363d3d373d3d3d363d73',
      implementation,
      '0x5af43d82803e903d91602b57fd5bf3',
      cloneConstructor,
    ]);
    expect(keccak256(creationCode)).toBe(PROXY_WALLET_INIT_CODE_HASH);
  });

  it('the Proxy wallet is CREATE2(factory, keccak256(encodePacked(eoa)), init code) whatever the address case', () => {
    const eoa = privateKeyToAccount(generatePrivateKey()).address;
    const expected = getCreate2Address({
      from: PROXY_WALLET_FACTORY,
      salt: keccak256(eoa.toLowerCase() as `0x${string}`),
      bytecodeHash: PROXY_WALLET_INIT_CODE_HASH,
    });
    expect(proxyWalletAddress(eoa)).toBe(expected);
    expect(proxyWalletAddress(eoa.toLowerCase() as `0x${string}`)).toBe(expected);
    expect(proxyWalletAddress(privateKeyToAccount(generatePrivateKey()).address)).not.toBe(expected);
  });

  it('the Safe matches what builder-relayer-client deriveSafe returned for a published EOA', () => {
    expect(safeWalletAddress('0xBBc264c10F54A61607A31B53358a5A87d4B045be')).toBe('0xEFae63145ffb73Ab047e578324bcA9BaABE5E1Ad');
  });
});

describe('venue_e CLOB L1 authentication (ClobAuth EIP-712)', () => {
  it('headers are byte-identical to clob-client createL1Headers for the same key, timestamp and nonce', async () => {
    const { wallet, sdkSigner } = testSigner();
    for (const nonce of [0, 5]) {
      const ours = await createL1Headers(wallet, { timestamp: NOW_SECONDS, nonce: BigInt(nonce) });
      const sdk = await sdkCreateL1Headers(sdkSigner, 137, nonce, NOW_SECONDS);
      expect(ours).toEqual(sdk);
    }
  });

  it('the venue accepts them and refuses another address, timestamp, nonce, chain, a stale one and garbage', async () => {
    const { wallet } = testSigner();
    const headers = { ...(await createL1Headers(wallet, { timestamp: NOW_SECONDS, nonce: 2n })) };
    const options = { now: NOW, maxSkewSeconds: 300 };
    expect(await verifyL1Headers(headers, options)).toEqual({ ok: true, address: wallet.address, nonce: 2n });

    const other = privateKeyToAccount(generatePrivateKey()).address;
    expect(await verifyL1Headers({ ...headers, POLY_ADDRESS: other }, options)).toMatchObject({ ok: false });
    expect(await verifyL1Headers({ ...headers, POLY_TIMESTAMP: String(NOW_SECONDS + 1) }, options)).toMatchObject({ ok: false });
    expect(await verifyL1Headers({ ...headers, POLY_NONCE: '3' }, options)).toMatchObject({ ok: false });
    expect(await verifyL1Headers(headers, { ...options, chainId: 80002 })).toMatchObject({ ok: false });
    expect(await verifyL1Headers(headers, { now: new Date(NOW.getTime() + 3_600_000), maxSkewSeconds: 300 })).toMatchObject({ ok: false });
    expect(await verifyL1Headers({ ...headers, POLY_SIGNATURE: '0xzz' }, options)).toMatchObject({ ok: false });
    expect(await verifyL1Headers({ ...headers, POLY_SIGNATURE: '0x1234' }, options)).toMatchObject({ ok: false });
    expect(await verifyL1Headers({}, options)).toMatchObject({ ok: false });
  });

  it('the typed data carries the fixed attestation message and the timestamp as a string', () => {
    expect(clobAuthTypedData({ address: '0x1111111111111111111111111111111111111111', timestamp: 12, nonce: 0n }).message).toEqual({
      address: '0x1111111111111111111111111111111111111111',
      timestamp: '12',
      nonce: 0n,
      message: 'This message attests that I control the given wallet',
    });
  });
});

describe('venue_e CLOB L2 authentication (HMAC)', () => {
  it('signatures equal clob-client buildPolyHmacSignature, with and without a body', async () => {
    const { secret } = generateClobApiCredentials();
    expect(polyHmacSignature(secret, NOW_SECONDS, 'GET', '/balance-allowance')).toBe(
      await buildPolyHmacSignature(secret, NOW_SECONDS, 'GET', '/balance-allowance'),
    );
    const body = JSON.stringify({ order: { salt: 1, maker: '0xabc' }, owner: 'key' });
    expect(polyHmacSignature(secret, NOW_SECONDS, 'POST', '/order', body)).toBe(await buildPolyHmacSignature(secret, NOW_SECONDS, 'POST', '/order', body));
    // A standard-base64 secret decodes the same way as its URL-safe form.
    const standard = secret.replace(/-/g, '+').replace(/_/g, '/');
    expect(polyHmacSignature(standard, NOW_SECONDS, 'GET', '/x')).toBe(polyHmacSignature(secret, NOW_SECONDS, 'GET', '/x'));
  });

  it('L2 headers equal clob-client createL2Headers; the venue accepts them and refuses any change', async () => {
    const { wallet, sdkSigner } = testSigner();
    const credentials = generateClobApiCredentials();
    expect(credentials.secret).toMatch(/^[A-Za-z0-9_-]{43}=$/);
    const request = { timestamp: NOW_SECONDS, method: 'POST', requestPath: '/order', body: '{"a":1}' };
    const headers = createL2Headers(wallet.address, credentials, request);
    expect(headers).toEqual(
      await sdkCreateL2Headers(sdkSigner, { key: credentials.apiKey, secret: credentials.secret, passphrase: credentials.passphrase }, request, NOW_SECONDS),
    );

    const check = { method: 'POST', requestPath: '/order', body: '{"a":1}', now: NOW, maxSkewSeconds: 300 };
    expect(verifyL2Headers(headers, credentials, check)).toBe(true);
    expect(verifyL2Headers(headers, credentials, { ...check, body: '{"a":2}' })).toBe(false);
    expect(verifyL2Headers(headers, credentials, { ...check, requestPath: '/orders' })).toBe(false);
    expect(verifyL2Headers({ ...headers, POLY_PASSPHRASE: 'x' }, credentials, check)).toBe(false);
    expect(verifyL2Headers(headers, generateClobApiCredentials(), check)).toBe(false);
    expect(verifyL2Headers(headers, credentials, { ...check, now: new Date(NOW.getTime() + 3_600_000) })).toBe(false);
  });
});
