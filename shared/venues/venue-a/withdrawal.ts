import { poseidonHashMany } from '@scure/starknet';
import { encodeShortString, type StarkSignature, starknetKeccak, starkSign, starkVerify } from '../stark.ts';

/**
 * venue_a's Stark-signed withdrawal (Extended, Starknet era; research §2.1 [O] E1g): the SDK's
 * `create_withdrawal_object` signs `get_withdrawal_msg_hash` of x10xchange/rust-crypto-lib-base,
 * a SNIP-12 revision-1 (Poseidon) message hash:
 *
 *   poseidon("StarkNet Message", hash(StarknetDomain), user public key, hash(WithdrawArgs))
 *   WithdrawArgs(recipient: ContractAddress, position_id: PositionId{u32}, collateral_id:
 *                AssetId{felt}, amount: u64, expiration: Timestamp{u64 seconds}, salt: felt)
 *
 * Tested against the Rust library's own vectors (test/unit/venue-a-withdrawal-hash.test.ts).
 */
export interface StarknetDomain {
  readonly name: string;
  readonly version: string;
  readonly chainId: string;
  readonly revision: number;
}

/** The live venue's order/withdrawal domain (x10/perpetual/configuration.py, mainnet). */
export const EXTENDED_MAINNET_STARKNET_DOMAIN: StarknetDomain = { name: 'Perpetuals', version: 'v0', chainId: 'SN_MAIN', revision: 1 };
/** The collateral asset's on-chain id (configuration.py `collateral_asset_on_chain_id`). */
export const EXTENDED_COLLATERAL_ID = 0x1n;
/** Collateral amounts in settlements are in units of 10^-6 USD (`collateral_decimals = 6`). */
export const EXTENDED_COLLATERAL_DECIMALS = 6;

const MESSAGE_PREFIX = encodeShortString('StarkNet Message');
const DOMAIN_SELECTOR = starknetKeccak('"StarknetDomain"("name":"shortstring","version":"shortstring","chainId":"shortstring","revision":"shortstring")');
const WITHDRAW_ARGS_SELECTOR = starknetKeccak(
  '"WithdrawArgs"("recipient":"ContractAddress","position_id":"PositionId","collateral_id":"AssetId","amount":"u64","expiration":"Timestamp","salt":"felt")"PositionId"("value":"u32")"AssetId"("value":"felt")"Timestamp"("seconds":"u64")',
);
const U32_LIMIT = 2n ** 32n;
const U64_LIMIT = 2n ** 64n;

export interface WithdrawalArgs {
  /** The Starknet address the venue pays to (for bridged withdrawals: the account's bridgeStarknetAddress). */
  readonly recipient: bigint;
  /** The account's vault (`l2Vault`). */
  readonly positionId: bigint;
  readonly collateralId: bigint;
  /** Collateral units (10^-6). */
  readonly amount: bigint;
  readonly expirationSeconds: bigint;
  readonly salt: bigint;
}

export function starknetDomainHash(domain: StarknetDomain): bigint {
  return poseidon([
    DOMAIN_SELECTOR,
    encodeShortString(domain.name),
    encodeShortString(domain.version),
    encodeShortString(domain.chainId),
    BigInt(domain.revision),
  ]);
}

export function withdrawalArgsHash(args: WithdrawalArgs): bigint {
  if (args.positionId < 0n || args.positionId >= U32_LIMIT) throw new Error('position_id must be a u32');
  if (args.amount < 0n || args.amount >= U64_LIMIT) throw new Error('amount must be a u64');
  if (args.expirationSeconds < 0n || args.expirationSeconds >= U64_LIMIT) throw new Error('expiration must be a u64');
  return poseidon([WITHDRAW_ARGS_SELECTOR, args.recipient, args.positionId, args.collateralId, args.amount, args.expirationSeconds, args.salt]);
}

/** get_withdrawal_msg_hash: what the account's Stark key signs. */
export function withdrawalMessageHash(args: WithdrawalArgs, domain: StarknetDomain, userPublicKey: bigint): bigint {
  return poseidon([MESSAGE_PREFIX, starknetDomainHash(domain), userPublicKey, withdrawalArgsHash(args)]);
}

export function signWithdrawal(args: WithdrawalArgs, domain: StarknetDomain, keyPair: { privateKey: bigint; publicKey: bigint }): StarkSignature {
  return starkSign(withdrawalMessageHash(args, domain, keyPair.publicKey), keyPair.privateKey);
}

export function verifyWithdrawal(args: WithdrawalArgs, domain: StarknetDomain, starkKey: bigint, signature: StarkSignature): boolean {
  let hash: bigint;
  try {
    hash = withdrawalMessageHash(args, domain, starkKey);
  } catch {
    return false;
  }
  return starkVerify(signature, hash, starkKey);
}

function poseidon(elements: bigint[]): bigint {
  return BigInt(poseidonHashMany(elements));
}
