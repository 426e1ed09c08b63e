import { describe, expect, it } from 'vitest';
import { starkPublicKey } from '../../shared/venues/stark.ts';
import { saltFromKey } from '../../shared/venues/venue-a/driver.ts';
import {
  EXTENDED_MAINNET_STARKNET_DOMAIN,
  signWithdrawal,
  starknetDomainHash,
  verifyWithdrawal,
  withdrawalMessageHash,
} from '../../shared/venues/venue-a/withdrawal.ts';

/**
 * venue_a's Stark-signed withdrawal hash against the vectors of Extended's own Rust library
 * (x10xchange/rust-crypto-lib-base: starknet_messages.rs `test_starknet_domain_hashing`, lib.rs
 * `test_get_withdrawal_hash`), which the Python SDK's `get_withdrawal_msg_hash` calls.
 */
const SEPOLIA = { name: 'Perpetuals', version: 'v0', chainId: 'SN_SEPOLIA', revision: 1 };
const VECTOR = {
  recipient: 206642948138484946401984817000601902748248360221625950604253680558965863254n,
  positionId: 2n,
  collateralId: 1386727789535574059419576650469753513512158569780862144831829362722992755422n,
  amount: 1000n,
  expirationSeconds: 0n,
  salt: 0n,
};
const VECTOR_KEY = 0x5d05989e9302dcebc74e241001e3e3ac3f4402ccf2f8e6f74b034b07ad6a904n;

describe('venue_a withdrawal message hash (Extended rust-crypto-lib-base vectors)', () => {
  it('hashes the StarknetDomain as the library does', () => {
    expect(starknetDomainHash(SEPOLIA)).toBe(2788850828067604540663615870177667078542240404906059806659101905868929188327n);
  });

  it('hashes WithdrawArgs to the library’s get_withdrawal_hash vector; any field changed gives another hash', () => {
    const hash = withdrawalMessageHash(VECTOR, SEPOLIA, VECTOR_KEY);
    expect(hash).toBe(2182119571682827544073774098906745929330860211691330979324731407862023927178n);
    for (const field of Object.keys(VECTOR) as (keyof typeof VECTOR)[]) {
      expect(withdrawalMessageHash({ ...VECTOR, [field]: VECTOR[field] + 1n }, SEPOLIA, VECTOR_KEY)).not.toBe(hash);
    }
    expect(withdrawalMessageHash(VECTOR, EXTENDED_MAINNET_STARKNET_DOMAIN, VECTOR_KEY)).not.toBe(hash);
  });

  it('a signature verifies for its key and args only; position ids and amounts outside u32/u64 are refused', () => {
    const privateKey = 0x1234567890abcdefn;
    const keyPair = { privateKey, publicKey: starkPublicKey(privateKey) };
    const signature = signWithdrawal(VECTOR, SEPOLIA, keyPair);
    expect(verifyWithdrawal(VECTOR, SEPOLIA, keyPair.publicKey, signature)).toBe(true);
    expect(verifyWithdrawal({ ...VECTOR, amount: 1001n }, SEPOLIA, keyPair.publicKey, signature)).toBe(false);
    expect(verifyWithdrawal(VECTOR, SEPOLIA, starkPublicKey(privateKey + 1n), signature)).toBe(false);
    expect(verifyWithdrawal({ ...VECTOR, positionId: 2n ** 32n }, SEPOLIA, keyPair.publicKey, signature)).toBe(false);
    expect(() => withdrawalMessageHash({ ...VECTOR, amount: 2n ** 64n }, SEPOLIA, VECTOR_KEY)).toThrow(/u64/);
  });

  it('the settlement salt is a JSON-safe integer fixed by the idempotency key', () => {
    expect(saltFromKey('a')).toBe(saltFromKey('a'));
    expect(saltFromKey('a')).not.toBe(saltFromKey('b'));
    expect(saltFromKey('a') < 2n ** 53n).toBe(true);
  });
});
