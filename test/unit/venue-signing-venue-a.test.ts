import { hash as starknetHash } from 'starknet';
import { type Address, concat, encodeAbiParameters, hashTypedData, keccak256, pad, stringToHex, type TypedDataDefinition, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { feltToHex, starkPublicKey, starkVerify } from '../../shared/venues/stark.ts';
import {
  accountCreationTypedData,
  accountRegistrationTypedData,
  apiRequestMessage,
  buildOnboardingPayload,
  deriveExtendedKeyPair,
  deriveExtendedKeyPairWithWallet,
  EXTENDED_MAINNET_SIGNING,
  type ExtendedSigningConfig,
  formatExtendedTime,
  l2KeyProofHash,
  parseExtendedTime,
  recoverApiRequestSigner,
  signApiRequest,
  verifyOnboardingPayload,
} from '../../shared/venues/venue-a/signing.ts';

/**
 * venue_a against the official Python SDK (x10/signing/onboarding.py; no JS SDK exists): the
 * EIP-712 digests are rebuilt here from first principles out of the SDK's type lists, the key
 * grinding follows Extended's Rust vector (venue-signing-stark.test.ts), and the L2 proof hash
 * is checked with starknet.js's Pedersen.
 */

const SANDBOX: ExtendedSigningConfig = { signingDomain: 'sandbox.extended.local', onboardingHost: 'http://127.0.0.1:4101' };
const NOW = new Date('2026-11-22T11:30:15.678Z');

function testWallet() {
  const account = privateKeyToAccount(generatePrivateKey());
  return {
    address: account.address,
    signTypedData: (typedData: TypedDataDefinition) => account.signTypedData(typedData),
    signMessage: (message: string) => account.signMessage({ message }),
  };
}

/** EIP-712 by hand: the domain is EIP712Domain(string name); strings hash, int8/bool/address encode as words. */
function domainSeparator(name: string) {
  return keccak256(
    encodeAbiParameters([{ type: 'bytes32' }, { type: 'bytes32' }], [keccak256(stringToHex('EIP712Domain(string name)')), keccak256(stringToHex(name))]),
  );
}

function digest(name: string, structHash: `0x${string}`) {
  return keccak256(concat(['0x1901', domainSeparator(name), structHash]));
}

describe('venue_a typed data (x10/signing/onboarding.py)', () => {
  it("AccountCreation hashes as EIP-712 of the SDK's type list under domain {name}", () => {
    const wallet: Address = '0x1111111111111111111111111111111111111111';
    const structHash = keccak256(
      encodeAbiParameters(
        [{ type: 'bytes32' }, { type: 'int8' }, { type: 'address' }, { type: 'bool' }],
        [keccak256(stringToHex('AccountCreation(int8 accountIndex,address wallet,bool tosAccepted)')), 3, wallet, true],
      ),
    );
    expect(hashTypedData(accountCreationTypedData('extended.exchange', wallet, 3))).toBe(digest('extended.exchange', structHash));
  });

  it("AccountRegistration hashes as EIP-712 of the SDK's type list (time, action, host as strings)", () => {
    const wallet: Address = '0x2222222222222222222222222222222222222222';
    const registration = {
      accountIndex: 0,
      wallet,
      tosAccepted: true,
      time: '2026-11-22T11:30:15Z',
      action: 'REGISTER',
      host: 'https://api.starknet.extended.exchange',
    };
    const structHash = keccak256(
      encodeAbiParameters(
        [{ type: 'bytes32' }, { type: 'int8' }, { type: 'address' }, { type: 'bool' }, { type: 'bytes32' }, { type: 'bytes32' }, { type: 'bytes32' }],
        [
          keccak256(stringToHex('AccountRegistration(int8 accountIndex,address wallet,bool tosAccepted,string time,string action,string host)')),
          0,
          wallet,
          true,
          keccak256(stringToHex(registration.time)),
          keccak256(stringToHex(registration.action)),
          keccak256(stringToHex(registration.host)),
        ],
      ),
    );
    expect(hashTypedData(accountRegistrationTypedData('extended.exchange', registration))).toBe(digest('extended.exchange', structHash));
  });

  it('refuses an account index that is not an int8 account number', () => {
    expect(() => accountCreationTypedData('x', '0x1111111111111111111111111111111111111111', 128)).toThrow(/int8/);
    expect(() => accountCreationTypedData('x', '0x1111111111111111111111111111111111111111', -1)).toThrow(/int8/);
  });

  it('formats time as %Y-%m-%dT%H:%M:%SZ and parses only that', () => {
    expect(formatExtendedTime(NOW)).toBe('2026-11-22T11:30:15Z');
    expect(parseExtendedTime('2026-11-22T11:30:15Z')?.toISOString()).toBe('2026-11-22T11:30:15.000Z');
    for (const bad of ['2026-11-22T11:30:15.000Z', '2026-11-22 11:30:15Z', '2026-13-22T11:30:15Z', '']) expect(parseExtendedTime(bad), bad).toBeUndefined();
  });
});

describe('venue_a key derivation and onboarding', () => {
  it('the Stark key is deterministic per wallet and account index and differs between domains', async () => {
    const wallet = testWallet();
    const first = await deriveExtendedKeyPairWithWallet(wallet, EXTENDED_MAINNET_SIGNING, 0);
    expect(await deriveExtendedKeyPairWithWallet(wallet, EXTENDED_MAINNET_SIGNING, 0)).toEqual(first);
    expect((await deriveExtendedKeyPairWithWallet(wallet, EXTENDED_MAINNET_SIGNING, 1)).publicKey).not.toBe(first.publicKey);
    expect((await deriveExtendedKeyPairWithWallet(wallet, SANDBOX, 0)).publicKey).not.toBe(first.publicKey);
    expect(first.publicKey).toBe(starkPublicKey(first.privateKey));
  });

  it('the L2 proof signs pedersen(int(wallet), stark key) (starknet.js Pedersen)', async () => {
    const wallet = testWallet();
    const keyPair = await deriveExtendedKeyPairWithWallet(wallet, SANDBOX);
    expect(l2KeyProofHash(wallet.address, keyPair.publicKey)).toBe(BigInt(starknetHash.computePedersenHash(BigInt(wallet.address), keyPair.publicKey)));
    const payload = await buildOnboardingPayload(wallet, SANDBOX, keyPair, { now: NOW });
    expect(
      starkVerify({ r: BigInt(payload.l2Signature.r), s: BigInt(payload.l2Signature.s) }, l2KeyProofHash(wallet.address, keyPair.publicKey), keyPair.publicKey),
    ).toBe(true);
    expect(payload).toMatchObject({
      l2Key: feltToHex(keyPair.publicKey),
      accountCreation: {
        accountIndex: 0,
        wallet: wallet.address,
        tosAccepted: true,
        time: '2026-11-22T11:30:15Z',
        action: 'REGISTER',
        host: SANDBOX.onboardingHost,
      },
      referralCode: null,
    });
  });

  it('the venue accepts the payload a client builds, and refuses each tampering', async () => {
    const wallet = testWallet();
    const keyPair = deriveExtendedKeyPair(await wallet.signTypedData(accountCreationTypedData(SANDBOX.signingDomain, wallet.address, 0)));
    const payload = await buildOnboardingPayload(wallet, SANDBOX, keyPair, { now: NOW });
    const options = { now: new Date(NOW.getTime() + 60_000), maxSkewSeconds: 300 };
    expect(await verifyOnboardingPayload(JSON.parse(JSON.stringify(payload)), SANDBOX, options)).toEqual({
      ok: true,
      wallet: wallet.address,
      starkPublicKey: keyPair.publicKey,
    });
    // The Python SDK sends the L1 signature without 0x (HexBytes.hex()).
    expect(await verifyOnboardingPayload({ ...payload, l1Signature: payload.l1Signature.slice(2) }, SANDBOX, options)).toMatchObject({ ok: true });

    const other = testWallet();
    const otherKeys = await deriveExtendedKeyPairWithWallet(other, SANDBOX);
    const cases: [string, unknown, ExtendedSigningConfig?, { now: Date; maxSkewSeconds: number }?][] = [
      ['another wallet claimed', { ...payload, accountCreation: { ...payload.accountCreation, wallet: other.address } }],
      ['another Stark key', { ...payload, l2Key: feltToHex(otherKeys.publicKey) }],
      ['tampered l2 signature', { ...payload, l2Signature: { ...payload.l2Signature, s: feltToHex(BigInt(payload.l2Signature.s) + 1n) } }],
      ['another host', { ...payload, accountCreation: { ...payload.accountCreation, host: 'https://evil.example' } }],
      ['sub-account action', { ...payload, accountCreation: { ...payload.accountCreation, action: 'CREATE_SUB_ACCOUNT' } }],
      ['terms refused', { ...payload, accountCreation: { ...payload.accountCreation, tosAccepted: false } }],
      ['signed for the live domain', payload, { ...SANDBOX, signingDomain: 'extended.exchange' }],
      ['stale', payload, SANDBOX, { now: new Date(NOW.getTime() + 3_600_000), maxSkewSeconds: 300 }],
      ['not an object', 'nope'],
      ['missing signature', { ...payload, l1Signature: undefined }],
      ['signature not hex', { ...payload, l1Signature: 'zz' }],
    ];
    for (const [label, body, config, opts] of cases) {
      expect(await verifyOnboardingPayload(body, config ?? SANDBOX, opts ?? options), label).toMatchObject({ ok: false });
    }
  });
});

describe('venue_a API-request signatures (EIP-191 "{path}@{time}")', () => {
  it('recovers the wallet for the signed path and time, with or without 0x; not for another path, time or a stale one', async () => {
    const wallet = testWallet();
    const path = '/api/v1/user/account/api-key';
    const headers = await signApiRequest(wallet, path, NOW);
    expect(headers.L1_MESSAGE_TIME).toBe('2026-11-22T11:30:15Z');
    expect(apiRequestMessage(path, headers.L1_MESSAGE_TIME)).toBe('/api/v1/user/account/api-key@2026-11-22T11:30:15Z');
    const base = { requestPath: path, signature: headers.L1_SIGNATURE, time: headers.L1_MESSAGE_TIME, now: NOW, maxSkewSeconds: 300 };

    expect(await recoverApiRequestSigner(base)).toBe(wallet.address);
    expect(await recoverApiRequestSigner({ ...base, signature: headers.L1_SIGNATURE.slice(2) })).toBe(wallet.address);
    expect(await recoverApiRequestSigner({ ...base, requestPath: '/api/v1/user/accounts' })).not.toBe(wallet.address);
    expect(await recoverApiRequestSigner({ ...base, time: '2026-11-22T11:30:16Z' })).not.toBe(wallet.address);
    expect(await recoverApiRequestSigner({ ...base, now: new Date(NOW.getTime() + 600_000) })).toBeUndefined();
    expect(await recoverApiRequestSigner({ ...base, signature: '0x1234' })).toBeUndefined();
    expect(await recoverApiRequestSigner({ ...base, signature: toHex(pad('0x01', { size: 65 })) })).toBeUndefined();
  });
});
