import { keyDerivation, ec as starkwareEc, verify as starkwareVerify } from '@starkware-industries/starkware-crypto-utils';
import BN from 'bn.js';
import { shortString, hash as starknetHash, typedData as starknetTypedData } from 'starknet';
import { bytesToHex, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import {
  computeContractAddress,
  encodeShortString,
  FELT_LIMIT,
  grindKey,
  hashOnElements,
  pedersen,
  randomStarkPrivateKey,
  STARK_CURVE_ORDER,
  starkKeyPairFromEthSignature,
  starknetKeccak,
  starknetTypedDataHash,
  starkPublicKey,
  starkSign,
  starkVerify,
} from '../../shared/venues/stark.ts';

/**
 * The Stark building blocks against independent implementations: StarkWare's own JS library
 * (starkware-crypto-utils, elliptic/BN, the one @paradex/sdk derives keys with), starknet.js
 * (typed data, contract addresses, hashes) and the test vectors of Extended's Rust crypto
 * library (x10xchange/rust-crypto-lib-base and stark-crypto-wrapper-js tests).
 */

/** Extended's published vector: this signature grinds to this key, which signs 0x12345 with this r (RFC 6979). */
const EXTENDED_VECTOR = {
  signature: '0x9ef64d5936681edf44b4a7ad713f3bc24065d4039562af03fccf6a08d6996eab367df11439169b417b6a6d8ce81d409edb022597ce193916757c7d5d9cbf97301c' as Hex,
  privateKey: 3554363360756768076148116215296798451844584215587910826843139626172125285444n,
  signedHash: 0x12345n,
  r: 0x6490498b85b4eedb02416848deb856ecbcdd053d245ceb90281c30b66209ce5n,
};

function randomSignature(firstByte?: number): Hex {
  const bytes = crypto.getRandomValues(new Uint8Array(65));
  if (firstByte !== undefined) bytes[0] = firstByte;
  bytes[64] = 27;
  return bytesToHex(bytes);
}

describe('grinding a Stark key out of an Ethereum signature', () => {
  it("reproduces Extended's published key for its test signature (r as an integer)", () => {
    expect(starkKeyPairFromEthSignature(EXTENDED_VECTOR.signature, 'minimal').privateKey).toBe(EXTENDED_VECTOR.privateKey);
  });

  it('fixed: equals starkware-crypto-utils getPrivateKeyFromEthSignature (the @paradex/sdk path) on 40 random signatures', () => {
    for (let i = 0; i < 40; i++) {
      const signature = randomSignature(i < 5 ? 0 : undefined);
      const expected = BigInt(`0x${keyDerivation.getPrivateKeyFromEthSignature(signature)}`);
      expect(starkKeyPairFromEthSignature(signature, 'fixed').privateKey, signature).toBe(expected);
    }
  });

  it("minimal: drops r's leading zero bytes, where it differs from fixed (starkware grindKey over the minimal hex)", () => {
    const signature = randomSignature(0);
    const rMinimal = BigInt(signature.slice(0, 66)).toString(16);
    const evenHex = rMinimal.length % 2 === 0 ? rMinimal : `0${rMinimal}`;
    const expected = BigInt(`0x${keyDerivation.grindKey(evenHex, starkwareEc.n as BN)}`);
    const minimal = starkKeyPairFromEthSignature(signature, 'minimal').privateKey;
    expect(minimal).toBe(expected);
    expect(minimal).not.toBe(starkKeyPairFromEthSignature(signature, 'fixed').privateKey);
    // Without a leading zero byte the two agree.
    const plain = randomSignature(0x80);
    expect(starkKeyPairFromEthSignature(plain, 'minimal').privateKey).toBe(starkKeyPairFromEthSignature(plain, 'fixed').privateKey);
  });

  it('refuses a signature that is not 65 bytes, and grindKey stays below the curve order', () => {
    expect(() => starkKeyPairFromEthSignature('0x1234', 'fixed')).toThrow(/65 bytes/);
    expect(grindKey(new Uint8Array([1, 2, 3]))).toBeLessThan(STARK_CURVE_ORDER);
  });
});

describe('Stark keys and signatures', () => {
  it('public keys equal starkware-crypto-utils privateToStarkKey', () => {
    for (let i = 0; i < 10; i++) {
      const privateKey = randomStarkPrivateKey();
      expect(privateKey).toBeLessThan(FELT_LIMIT);
      expect(starkPublicKey(privateKey)).toBe(BigInt(`0x${keyDerivation.privateToStarkKey(privateKey.toString(16))}`));
    }
  });

  it("signs deterministically as Extended's Rust library (same r for its vector)", () => {
    const signature = starkSign(EXTENDED_VECTOR.signedHash, EXTENDED_VECTOR.privateKey);
    expect(signature.r).toBe(EXTENDED_VECTOR.r);
    expect(starkSign(EXTENDED_VECTOR.signedHash, EXTENDED_VECTOR.privateKey)).toEqual(signature);
  });

  it("produces signatures StarkWare's verifier accepts; verifies theirs; refuses wrong key, message or tampering", () => {
    const privateKey = randomStarkPrivateKey();
    const publicKey = starkPublicKey(privateKey);
    const message = pedersen(123n, 456n);
    const signature = starkSign(message, privateKey);
    const keyPair = starkwareEc.keyFromPrivate(privateKey.toString(16), 'hex');
    const starkwareSignature = { r: new BN(signature.r.toString(16), 16), s: new BN(signature.s.toString(16), 16) };
    expect(starkwareVerify(keyPair, message.toString(16), starkwareSignature as never)).toBe(true);

    expect(starkVerify(signature, message, publicKey)).toBe(true);
    expect(starkVerify(signature, message + 1n, publicKey)).toBe(false);
    expect(starkVerify(signature, message, starkPublicKey(randomStarkPrivateKey()))).toBe(false);
    expect(starkVerify({ r: signature.r, s: signature.s + 1n }, message, publicKey)).toBe(false);
    expect(starkVerify({ r: 0n, s: signature.s }, message, publicKey)).toBe(false);
    expect(starkVerify(signature, FELT_LIMIT, publicKey)).toBe(false);
    expect(starkVerify(signature, message, 0n)).toBe(false);
  });
});

describe('hashes, short strings and contract addresses', () => {
  it('pedersen, hash-on-elements, starknet_keccak and short strings equal starknet.js', () => {
    const a = 0x3d937c035c878245caf64531a5756109c53068da139362728feb561405371cbn;
    const b = 0x208a0a10250e382e1e4bbe2880906c2791bf6275695e02fbbc6aeff9cd8b31an;
    expect(pedersen(a, b)).toBe(BigInt(starknetHash.computePedersenHash(a, b)));
    expect(hashOnElements([a, b, 7n])).toBe(BigInt(starknetHash.computeHashOnElements([a, b, 7n])));
    expect(hashOnElements([])).toBe(BigInt(starknetHash.computeHashOnElements([])));
    expect(starknetKeccak('initialize')).toBe(BigInt(starknetHash.getSelectorFromName('initialize')));
    expect(encodeShortString('PRIVATE_SN_PARACLEAR_MAINNET')).toBe(BigInt(shortString.encodeShortString('PRIVATE_SN_PARACLEAR_MAINNET')));
    expect(() => encodeShortString('x'.repeat(32))).toThrow(/short string/);
  });

  it('compute_address equals starknet.js calculateContractAddressFromHash (with and without a deployer)', () => {
    const classHash = 0x3530cc4759d78042f1b543bf797f5f3d647cde0388c33734cf91b7f7b9314a9n;
    const salt = starkPublicKey(randomStarkPrivateKey());
    const calldata = [0x41cb0280ebadaa75f996d8d92c6f265f6d040bb3ba442e5f86a554f1765244en, starknetKeccak('initialize'), 2n, salt, 0n];
    expect(computeContractAddress({ classHash, salt, constructorCalldata: calldata })).toBe(
      BigInt(starknetHash.calculateContractAddressFromHash(salt, classHash, calldata, 0)),
    );
    expect(computeContractAddress({ classHash, salt, constructorCalldata: calldata, deployer: 0x1234n })).toBe(
      BigInt(starknetHash.calculateContractAddressFromHash(salt, classHash, calldata, 0x1234)),
    );
  });

  it('SNIP-12 revision-0 message hashes equal starknet.js typedData.getMessageHash', () => {
    const typedData = {
      domain: { name: 'Paradex', chainId: '0x505249564154455f534e5f504f54435f5345504f4c4941', version: '1' },
      primaryType: 'Request',
      types: {
        StarkNetDomain: [
          { name: 'name', type: 'felt' },
          { name: 'chainId', type: 'felt' },
          { name: 'version', type: 'felt' },
        ],
        Request: [
          { name: 'method', type: 'felt' },
          { name: 'path', type: 'felt' },
          { name: 'body', type: 'felt' },
          { name: 'timestamp', type: 'felt' },
          { name: 'expiration', type: 'felt' },
        ],
      },
      message: { method: 'POST', path: '/v1/auth', body: '', timestamp: 1_780_000_000, expiration: 1_780_086_400 },
    };
    const account = 0x3ab795501073e1fc9fb78321a57626e3569111c7eb766db9ccec1c54db227cn;
    expect(starknetTypedDataHash(typedData, account)).toBe(BigInt(starknetTypedData.getMessageHash(typedData, account)));
    expect(starknetTypedDataHash({ ...typedData, message: { ...typedData.message, timestamp: 1 } }, account)).not.toBe(
      BigInt(starknetTypedData.getMessageHash(typedData, account)),
    );
  });
});
