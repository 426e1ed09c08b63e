import { deriveFromEthSigner } from '@paradex/sdk/dist/account.js';
import { buildConfig } from '@paradex/sdk/dist/config.js';
import { buildEthereumStarkKeyTypedData } from '@paradex/sdk/dist/ethereum-signer.js';
import { shortString, ec as starknetEc, hash as starknetHash, typedData as starknetTypedData } from 'starknet';
import type { TypedDataDefinition } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { feltToHex, starkPublicKey } from '../../shared/venues/stark.ts';
import {
  authHeaders,
  authTypedData,
  deriveParadexKeyPair,
  deriveParadexKeyPairWithWallet,
  formatParadexSignature,
  generateSubkey,
  onboardingHeaders,
  onboardingTypedData,
  type ParadexSystemConfig,
  paradexAccountAddress,
  parseParadexSignature,
  recoverStarkKeySigner,
  signParadexTypedData,
  starkKeyTypedData,
  subkeyRegistrationHash,
  subkeyRegistrationRequest,
  verifyOnboarding,
  verifyParadexTypedData,
  verifySubkeyRegistration,
} from '../../shared/venues/venue-c/signing.ts';

/**
 * venue_c against @paradex/sdk (STARK Key typed data, key derivation, account address) and
 * starknet.js (the Starknet typed-data hashes paradex-py signs, whose messages are rebuilt here
 * exactly as paradex_py/message/onboarding.py and auth.py write them).
 */

/** Paradex testnet's published /system/config (class hashes, chain ids). */
const SYSTEM_CONFIG = {
  starknet_gateway_url: 'https://potc-testnet-sepolia.starknet.io',
  starknet_fullnode_rpc_url: 'https://pathfinder.api.testnet.paradex.trade/rpc/v0.5',
  starknet_chain_id: 'PRIVATE_SN_POTC_SEPOLIA',
  block_explorer_url: 'https://voyager.testnet.paradex.trade/',
  paraclear_address: '0x286003f7c7bfc3f94e8f0af48b48302e7aee2fb13c23b141479ba00832ef2c6',
  paraclear_decimals: 8,
  paraclear_account_proxy_hash: '0x3530cc4759d78042f1b543bf797f5f3d647cde0388c33734cf91b7f7b9314a9',
  paraclear_account_hash: '0x41cb0280ebadaa75f996d8d92c6f265f6d040bb3ba442e5f86a554f1765244e',
  l1_chain_id: '11155111',
  bridged_tokens: [],
};
const CONFIG: ParadexSystemConfig = SYSTEM_CONFIG;

function testWallet() {
  const account = privateKeyToAccount(generatePrivateKey());
  return {
    address: account.address,
    signTypedData: (typedData: TypedDataDefinition) => account.signTypedData(typedData),
    signMessage: (message: string) => account.signMessage({ message }),
  };
}

/** paradex_py/message/onboarding.py `build_onboarding_message`, verbatim shape. */
function paradexPyOnboardingMessage(chainId: string) {
  return {
    message: { action: 'Onboarding' },
    domain: { name: 'Paradex', chainId: shortString.encodeShortString(chainId), version: '1' },
    primaryType: 'Constant',
    types: {
      StarkNetDomain: [
        { name: 'name', type: 'felt' },
        { name: 'chainId', type: 'felt' },
        { name: 'version', type: 'felt' },
      ],
      Constant: [{ name: 'action', type: 'felt' }],
    },
  };
}

describe('venue_c account derivation', () => {
  it('the STARK Key typed data is @paradex/sdk buildEthereumStarkKeyTypedData', () => {
    const sdk = buildEthereumStarkKeyTypedData('11155111');
    expect(starkKeyTypedData(11155111)).toEqual({ ...sdk, domain: { ...sdk.domain, chainId: Number(sdk.domain.chainId) } });
  });

  it('key pair and account address equal @paradex/sdk deriveFromEthSigner for the same wallet', async () => {
    const wallet = testWallet();
    const sdkConfig = buildConfig(SYSTEM_CONFIG as never);
    const sdk = await deriveFromEthSigner({
      config: sdkConfig,
      signer: {
        // The SDK passes the chain id as the config's string; viem wants a number.
        signTypedData: (typedData: { domain: { chainId: string } }) =>
          wallet.signTypedData({ ...typedData, domain: { ...typedData.domain, chainId: Number(typedData.domain.chainId) } } as never),
      } as never,
    });

    const keyPair = await deriveParadexKeyPairWithWallet(wallet, 11155111);
    expect(feltToHex(keyPair.privateKey)).toBe(`0x${BigInt(sdk.privateKey).toString(16)}`);
    expect(paradexAccountAddress(keyPair.publicKey, CONFIG)).toBe(BigInt(sdk.address));
    expect(keyPair.publicKey).toBe(starkPublicKey(keyPair.privateKey));
  });

  it('the STARK Key signature recovers to the wallet; another wallet derives another account', async () => {
    const wallet = testWallet();
    const signature = await wallet.signTypedData(starkKeyTypedData(1));
    expect(await recoverStarkKeySigner(1, signature)).toBe(wallet.address);
    const other = deriveParadexKeyPair(await testWallet().signTypedData(starkKeyTypedData(1)));
    expect(other.publicKey).not.toBe(deriveParadexKeyPair(signature).publicKey);
  });
});

describe('venue_c onboarding and auth signatures', () => {
  it("onboarding hash equals starknet.js over paradex-py's message; its signature verifies with starknet.js", async () => {
    const keyPair = deriveParadexKeyPair(await testWallet().signTypedData(starkKeyTypedData(1)));
    const account = paradexAccountAddress(keyPair.publicKey, CONFIG);
    const oracleHash = BigInt(starknetTypedData.getMessageHash(paradexPyOnboardingMessage(CONFIG.starknet_chain_id), account));
    const signature = signParadexTypedData(onboardingTypedData(CONFIG.starknet_chain_id), account, keyPair.privateKey);

    expect(
      starknetEc.starkCurve.verify(
        new starknetEc.starkCurve.Signature(signature.r, signature.s),
        feltToHex(oracleHash),
        starknetEc.starkCurve.getPublicKey(feltToHex(keyPair.privateKey)),
      ),
    ).toBe(true);
    expect(verifyParadexTypedData(onboardingTypedData(CONFIG.starknet_chain_id), account, keyPair.publicKey, signature)).toBe(true);
    expect(verifyParadexTypedData(onboardingTypedData('PRIVATE_SN_PARACLEAR_MAINNET'), account, keyPair.publicKey, signature)).toBe(false);
    expect(verifyParadexTypedData(onboardingTypedData(CONFIG.starknet_chain_id), account + 1n, keyPair.publicKey, signature)).toBe(false);
  });

  it('auth hash equals starknet.js over paradex-py build_auth_message', () => {
    const account = 0x3ab795501073e1fc9fb78321a57626e3569111c7eb766db9ccec1c54db227cn;
    const paradexPy = {
      message: { method: 'POST', path: '/v1/auth', body: '', timestamp: 1_780_000_000, expiration: 1_780_086_400 },
      domain: { name: 'Paradex', chainId: shortString.encodeShortString('PRIVATE_SN_PARACLEAR_MAINNET'), version: '1' },
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
    };
    const privateKey = generateSubkey().privateKey;
    const headers = authHeaders({ account, privateKey, starknetChainId: 'PRIVATE_SN_PARACLEAR_MAINNET', timestamp: 1_780_000_000, expiration: 1_780_086_400 });
    const signature = parseParadexSignature(headers['PARADEX-STARKNET-SIGNATURE'] ?? '');
    expect(signature).toBeDefined();
    const oracleHash = feltToHex(BigInt(starknetTypedData.getMessageHash(paradexPy, account)));
    expect(
      starknetEc.starkCurve.verify(
        new starknetEc.starkCurve.Signature(signature!.r, signature!.s),
        oracleHash,
        starknetEc.starkCurve.getPublicKey(feltToHex(privateKey)),
      ),
    ).toBe(true);
    expect(
      verifyParadexTypedData(authTypedData('PRIVATE_SN_PARACLEAR_MAINNET', 1_780_000_000, 1_780_086_400), account, starkPublicKey(privateKey), signature!),
    ).toBe(true);
    expect(headers['PARADEX-TIMESTAMP']).toBe('1780000000');
  });

  it('verifyOnboarding accepts the headers a client builds and refuses wrong accounts, keys and signatures', async () => {
    const wallet = testWallet();
    const keyPair = deriveParadexKeyPair(await wallet.signTypedData(starkKeyTypedData(11155111)));
    const account = paradexAccountAddress(keyPair.publicKey, CONFIG);
    const headers = onboardingHeaders({ ethereumAccount: wallet.address, account, keyPair, starknetChainId: CONFIG.starknet_chain_id });
    const publicKey = feltToHex(keyPair.publicKey);

    expect(verifyOnboarding({ headers, publicKey, config: CONFIG })).toEqual({
      ok: true,
      account,
      publicKey: keyPair.publicKey,
      ethereumAccount: wallet.address,
    });

    const stranger = generateSubkey();
    expect(verifyOnboarding({ headers, publicKey: feltToHex(stranger.publicKey), config: CONFIG })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/address of this public key/),
    });
    const strangerAccount = paradexAccountAddress(stranger.publicKey, CONFIG);
    const forged = { ...headers, 'PARADEX-STARKNET-ACCOUNT': feltToHex(strangerAccount) };
    expect(verifyOnboarding({ headers: forged, publicKey: feltToHex(stranger.publicKey), config: CONFIG })).toMatchObject({
      ok: false,
      reason: 'invalid onboarding signature',
    });
    expect(verifyOnboarding({ headers: { ...headers, 'PARADEX-STARKNET-SIGNATURE': '["1"]' }, publicKey, config: CONFIG })).toMatchObject({ ok: false });
    expect(verifyOnboarding({ headers: { ...headers, 'PARADEX-STARKNET-SIGNATURE': undefined }, publicKey, config: CONFIG })).toMatchObject({ ok: false });
  });

  it('signature headers are ["r","s"] in decimal and parse back; garbage does not parse', () => {
    expect(formatParadexSignature({ r: 10n, s: 255n })).toBe('["10","255"]');
    expect(parseParadexSignature('["10","0xff"]')).toEqual({ r: 10n, s: 255n });
    for (const bad of ['', 'x', '[1,2]', '["1"]', '["a","b"]', '{"r":"1"}']) expect(parseParadexSignature(bad), bad).toBeUndefined();
  });
});

describe('venue_c trading subkeys', () => {
  it('a subkey is random, below 2^251, with its Stark key', () => {
    const first = generateSubkey();
    const second = generateSubkey();
    expect(first.privateKey).not.toBe(second.privateKey);
    expect(first.privateKey < 2n ** 251n).toBe(true);
    expect(first.publicKey).toBe(starkPublicKey(first.privateKey));
  });

  it("the registration hash is hash_on_elements(account, subkey, timestamp, expiry) as starknet.js; the main key's signature verifies", () => {
    const main = generateSubkey();
    const subkey = generateSubkey();
    const account = paradexAccountAddress(main.publicKey, CONFIG);
    expect(subkeyRegistrationHash(account, subkey.publicKey, 1_780_000_000, 1_780_000_300)).toBe(
      BigInt(starknetHash.computeHashOnElements([account, subkey.publicKey, 1_780_000_000, 1_780_000_300])),
    );
    const request = subkeyRegistrationRequest({
      name: 'trading',
      account,
      mainPrivateKey: main.privateKey,
      subkeyPublicKey: subkey.publicKey,
      timestamp: 1_780_000_000,
      expiry: 1_780_000_300,
    });
    expect(request).toMatchObject({
      name: 'trading',
      public_key: feltToHex(subkey.publicKey),
      state: 'active',
      signature_timestamp: 1_780_000_000,
      signature_expiry: 1_780_000_300,
    });
    const signature = { r: BigInt(request.signature[0]), s: BigInt(request.signature[1]) };
    const check = { account, mainPublicKey: main.publicKey, subkeyPublicKey: subkey.publicKey, timestamp: 1_780_000_000, expiry: 1_780_000_300, signature };
    expect(verifySubkeyRegistration(check)).toBe(true);
    expect(verifySubkeyRegistration({ ...check, expiry: 1_780_000_301 })).toBe(false);
    expect(verifySubkeyRegistration({ ...check, mainPublicKey: subkey.publicKey })).toBe(false);
  });
});
