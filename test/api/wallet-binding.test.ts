import { createHash } from 'node:crypto';
import { keccak256, stringToBytes } from 'viem';
import { describe, expect, it } from 'vitest';
import { appOne, appTwo, call, expectErrorShape, mintToken, uniqueUser } from './support/client.ts';
import { editItem, REMOVE_ATTRIBUTE, tableReadable } from './support/table.ts';

/**
 * Issue 21 §3 over HTTP: a wallet item edited in the table (DynamoDB Local, which the tests can
 * write to) no longer signs. The reported attack: rewrite `sub` and the access-key hash, then sign
 * with another user's op_jwt and a chosen key. Every edit answers 500 WALLET_INTEGRITY_FAILED (or
 * an earlier 4xx), without a signature and without naming anything internal.
 */
const hash = keccak256(stringToBytes('binding payload'));
const CHOSEN_KEY = 'mallory-chosen-access-key-0123456789';
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

async function createWallet(sub: string, app = appOne) {
  const response = await call('enclave', 'POST', '/v2/api/wallet', {
    headers: { 'x-service-secret-key': app.secret_key },
    json: { auth_jwt: await mintToken(app, sub), network: 'ETH', wallet_group_id: 'binding' },
  });
  expect(response.status).toBe(200);
  return response.body as { wallet_id: string; access_key: string; public_address: string };
}

async function signData(wallet: { wallet_id: string }, sub: string, accessKey: string, app = appOne) {
  return call('enclave', 'POST', '/v2/api/wallet/sign_data', {
    headers: { 'x-service-secret-key': app.secret_key },
    json: { op_jwt: await mintToken(app, sub, { ttlSeconds: 120 }), access_key: accessKey, wallet_id: wallet.wallet_id, raw_data_hash: hash },
  });
}

const walletKey = (walletId: string) => ({ pk: `WALLET#${walletId}`, sk: 'WALLET' });

describe.runIf(tableReadable)('a wallet item edited in the table does not sign (issue 21 §3)', () => {
  const mallory = uniqueUser('mallory');
  const TAMPERINGS: Array<[string, (alice: string) => Record<string, unknown>]> = [
    ['sub and access_key_hash (the reported attack)', () => ({ sub: mallory, access_key_hash: sha256(CHOSEN_KEY) })],
    ['sub', () => ({ sub: mallory })],
    ['access_key_hash', () => ({ access_key_hash: sha256(CHOSEN_KEY) })],
    // Moved to the other app with its issuer, so that its op_jwt names the item's identity.
    ['app_id and iss', () => ({ app_id: appTwo.app_id, iss: appTwo.issuer })],
    ['wallet_group_id', () => ({ wallet_group_id: 'other' })],
    ['family', () => ({ family: 'sol' })],
    ['public_address', () => ({ public_address: '0x00000000000000000000000000000000DeaDBeef' })],
    ['version', () => ({ version: 1 })],
    ['seal_version (removed)', () => ({ seal_version: REMOVE_ATTRIBUTE })],
  ];

  for (const [name, edits] of TAMPERINGS) {
    it(`edited ${name}: 500 WALLET_INTEGRITY_FAILED, no signature`, async () => {
      const alice = uniqueUser('alice');
      const wallet = await createWallet(alice);
      expect((await signData(wallet, alice, wallet.access_key)).status).toBe(200);
      const edit = edits(alice);
      await editItem(walletKey(wallet.wallet_id), edit);
      // The attacker's best credentials for this edit: the op_jwt the item now names, the key whose hash it holds, its app.
      const sub = typeof edit.sub === 'string' ? edit.sub : alice;
      const accessKey = 'access_key_hash' in edit ? CHOSEN_KEY : wallet.access_key;
      const app = edit.app_id === appTwo.app_id ? appTwo : appOne;
      const response = await signData(wallet, sub, accessKey, app);
      expect(response.status).toBe(500);
      const error = expectErrorShape(response.body);
      expect(error.code).toBe('WALLET_INTEGRITY_FAILED');
      expect(response.body).not.toHaveProperty('signature');
      const text = JSON.stringify(response.body);
      for (const leak of [wallet.access_key, CHOSEN_KEY, alice, mallory, 'sub', 'access_key_hash', 'Decrypt', 'Ciphertext', 'stack']) {
        expect(text).not.toContain(leak);
      }
      // Nor does the owner sign with it any more: the item is not what was sealed.
      if (!('app_id' in edit) && !('sub' in edit) && !('access_key_hash' in edit)) {
        expect((await signData(wallet, alice, wallet.access_key)).status).toBe(500);
      }
    });
  }

  it('edited iss: 403 WALLET_IDENTITY_MISMATCH (no op_jwt of the app can name another issuer), no signature', async () => {
    const alice = uniqueUser('alice');
    const wallet = await createWallet(alice);
    await editItem(walletKey(wallet.wallet_id), { iss: 'https://other-idp.example' });
    const response = await signData(wallet, alice, wallet.access_key);
    expect(response.status).toBe(403);
    expect(expectErrorShape(response.body).code).toBe('WALLET_IDENTITY_MISMATCH');
    expect(response.body).not.toHaveProperty('signature');
  });

  it('get-or-create does not hand out the access key of an edited item', async () => {
    const alice = uniqueUser('alice');
    const wallet = await createWallet(alice);
    await editItem(walletKey(wallet.wallet_id), { access_key_hash: sha256(CHOSEN_KEY) });
    const again = await call('enclave', 'POST', '/v2/api/wallet', {
      headers: { 'x-service-secret-key': appOne.secret_key },
      json: { auth_jwt: await mintToken(appOne, alice), network: 'ETH', wallet_group_id: 'binding' },
    });
    expect(again.status).toBe(500);
    expect(expectErrorShape(again.body).code).toBe('WALLET_INTEGRITY_FAILED');
    expect(JSON.stringify(again.body)).not.toContain(wallet.access_key);
  });
});
