import { MINT_SIZE } from '@solana/spl-token';
import bs58 from 'bs58';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from './constants.ts';
import type { AccountState, UiTokenAmount } from './types.ts';

/** SPL Token (and Token-2022) accounts and mints, read from their account data. */

interface TokenAccountState {
  readonly mint: string;
  readonly owner: string;
  readonly amount: bigint;
  readonly delegate: string | null;
  readonly state: number;
  readonly isNative: bigint | null;
  readonly delegatedAmount: bigint;
  readonly closeAuthority: string | null;
}

interface MintState {
  readonly mintAuthority: string | null;
  readonly supply: bigint;
  readonly decimals: number;
  readonly isInitialized: boolean;
  readonly freezeAuthority: string | null;
}

export const TOKEN_ACCOUNT_SIZE = 165;
export const isTokenProgram = (owner: string) => owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;

/** SPL Token account layout; Token-2022 accounts with extensions carry account type 2 at byte 165. */
export function readTokenAccount(account: AccountState): TokenAccountState | null {
  const { data, owner } = account;
  if (!isTokenProgram(owner)) return null;
  const plain = data.length === TOKEN_ACCOUNT_SIZE;
  const extended = owner === TOKEN_2022_PROGRAM && data.length > TOKEN_ACCOUNT_SIZE && data[TOKEN_ACCOUNT_SIZE] === 2;
  if (!plain && !extended) return null;
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const state = buffer[108]!;
  if (state === 0) return null;
  const key = (offset: number) => bs58.encode(buffer.subarray(offset, offset + 32));
  return {
    mint: key(0),
    owner: key(32),
    amount: buffer.readBigUInt64LE(64),
    delegate: buffer.readUInt32LE(72) === 1 ? key(76) : null,
    state,
    isNative: buffer.readUInt32LE(109) === 1 ? buffer.readBigUInt64LE(113) : null,
    delegatedAmount: buffer.readBigUInt64LE(121),
    closeAuthority: buffer.readUInt32LE(129) === 1 ? key(133) : null,
  };
}

/** SPL Token mint layout (82 bytes); Token-2022 mints with extensions carry account type 1 at byte 165. */
export function readMint(account: AccountState): MintState | null {
  const { data, owner } = account;
  if (!isTokenProgram(owner)) return null;
  const plain = data.length === MINT_SIZE;
  const extended = owner === TOKEN_2022_PROGRAM && data.length > TOKEN_ACCOUNT_SIZE && data[TOKEN_ACCOUNT_SIZE] === 1;
  if (!plain && !extended) return null;
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buffer[45] !== 1) return null;
  return {
    mintAuthority: buffer.readUInt32LE(0) === 1 ? bs58.encode(buffer.subarray(4, 36)) : null,
    supply: buffer.readBigUInt64LE(36),
    decimals: buffer[44]!,
    isInitialized: true,
    freezeAuthority: buffer.readUInt32LE(46) === 1 ? bs58.encode(buffer.subarray(50, 82)) : null,
  };
}

/** Agave's UiTokenAmount: the decimal string has its trailing zeros trimmed. */
export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  let text = amount.toString();
  if (decimals > 0) {
    const padded = text.padStart(decimals + 1, '0');
    const fraction = padded.slice(-decimals).replace(/0+$/, '');
    text = fraction ? `${padded.slice(0, -decimals)}.${fraction}` : padded.slice(0, -decimals);
  }
  return { amount: amount.toString(), decimals, uiAmount: Number(text), uiAmountString: text };
}
