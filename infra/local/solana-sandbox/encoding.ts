import { zstdCompressSync } from 'node:zlib';
import { MINT_SIZE } from '@solana/spl-token';
import bs58 from 'bs58';
import { TOKEN_2022_PROGRAM, U64_MAX } from './constants.ts';
import { type AccountEncoding, invalidParams } from './params.ts';
import { isTokenProgram, readMint, readTokenAccount, TOKEN_ACCOUNT_SIZE, uiTokenAmount } from './spl.ts';
import type { AccountState, TransactionRecord } from './types.ts';
import { type CompiledInstruction, isWritableStatic, parseWireTransaction } from './wire.ts';

/** Accounts, statuses and transactions in the JSON shapes a validator answers with. */

/** A mint's decimals, or null when the account is not a mint. */
type MintDecimals = (mint: string) => number | null;

/** jsonParsed answers token accounts and mints parsed, and anything else as base64, as a validator does. */
function parsedData(account: AccountState, mintDecimals: MintDecimals) {
  const program = account.owner === TOKEN_2022_PROGRAM ? 'spl-token-2022' : 'spl-token';
  const plainSize = account.data.length === TOKEN_ACCOUNT_SIZE || account.data.length === MINT_SIZE;
  if (isTokenProgram(account.owner) && plainSize) {
    const token = readTokenAccount(account);
    const decimals = token ? mintDecimals(token.mint) : null;
    if (token && decimals !== null) {
      const info: Record<string, unknown> = {
        isNative: token.isNative !== null,
        mint: token.mint,
        owner: token.owner,
        state: token.state === 2 ? 'frozen' : 'initialized',
        tokenAmount: uiTokenAmount(token.amount, decimals),
      };
      if (token.delegate) Object.assign(info, { delegate: token.delegate, delegatedAmount: uiTokenAmount(token.delegatedAmount, decimals) });
      if (token.isNative !== null) info.rentExemptReserve = uiTokenAmount(token.isNative, decimals);
      if (token.closeAuthority) info.closeAuthority = token.closeAuthority;
      return { program, parsed: { info, type: 'account' }, space: account.data.length };
    }
    const mint = readMint(account);
    if (mint) {
      const info = {
        decimals: mint.decimals,
        freezeAuthority: mint.freezeAuthority,
        isInitialized: mint.isInitialized,
        mintAuthority: mint.mintAuthority,
        supply: mint.supply.toString(),
      };
      return { program, parsed: { info, type: 'mint' }, space: account.data.length };
    }
  }
  return [Buffer.from(account.data).toString('base64'), 'base64'];
}

export function encodeAccount(account: AccountState, encoding: AccountEncoding, mintDecimals: MintDecimals, slice?: { offset: number; length: number }) {
  const sliced = slice ? account.data.subarray(slice.offset, slice.offset + slice.length) : account.data;
  let data: unknown;
  if (encoding === 'jsonParsed') data = parsedData(account, mintDecimals);
  else if (encoding === 'base64') data = [Buffer.from(sliced).toString('base64'), 'base64'];
  else if (encoding === 'base64+zstd') data = [zstdCompressSync(sliced).toString('base64'), 'base64+zstd'];
  else {
    if (sliced.length > 128) throw invalidParams('Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.');
    data = encoding === 'binary' ? bs58.encode(sliced) : [bs58.encode(sliced), 'base58'];
  }
  return { data, executable: account.executable, lamports: account.lamports, owner: account.owner, rentEpoch: U64_MAX, space: account.data.length };
}

export const signatureStatus = (record: TransactionRecord) => ({
  slot: record.slot,
  confirmations: null,
  err: record.err,
  status: record.err === null ? { Ok: null } : { Err: record.err },
  confirmationStatus: 'finalized',
});

export function transactionJson(record: TransactionRecord, encoding: string) {
  if (encoding === 'base64') return [record.wire, 'base64'];
  const bytes = new Uint8Array(Buffer.from(record.wire, 'base64'));
  if (encoding === 'base58') return [bs58.encode(bytes), 'base58'];
  if (encoding === 'binary') return bs58.encode(bytes);
  const tx = parseWireTransaction(bytes);
  const { compiled } = tx.message;
  const lookups = compiled.version === 0 ? (compiled.addressTableLookups ?? []) : undefined;
  const signatures = tx.signatures.map((signature) => bs58.encode(signature));
  const recentBlockhash = tx.message.lifetimeToken;
  const tableLookups = lookups?.map((lookup) => ({
    accountKey: lookup.lookupTableAddress,
    writableIndexes: lookup.writableIndexes,
    readonlyIndexes: lookup.readonlyIndexes,
  }));
  if (encoding === 'jsonParsed') {
    const { writable, readonly } = record.loadedAddresses;
    const allKeys = [...compiled.staticAccounts, ...writable, ...readonly];
    const accountKeys = [
      ...compiled.staticAccounts.map((pubkey, index) => ({
        pubkey,
        signer: index < compiled.header.numSignerAccounts,
        source: 'transaction',
        writable: isWritableStatic(compiled, index),
      })),
      ...writable.map((pubkey) => ({ pubkey, signer: false, source: 'lookupTable', writable: true })),
      ...readonly.map((pubkey) => ({ pubkey, signer: false, source: 'lookupTable', writable: false })),
    ];
    const instructions = compiled.instructions.map((ix: CompiledInstruction) => ({
      accounts: (ix.accountIndices ?? []).map((i) => allKeys[i]),
      data: bs58.encode(Uint8Array.from(ix.data ?? [])),
      programId: allKeys[ix.programAddressIndex],
      stackHeight: null,
    }));
    return { message: { accountKeys, instructions, recentBlockhash, ...(tableLookups ? { addressTableLookups: tableLookups } : {}) }, signatures };
  }
  const header = {
    numReadonlySignedAccounts: compiled.header.numReadonlySignerAccounts,
    numReadonlyUnsignedAccounts: compiled.header.numReadonlyNonSignerAccounts,
    numRequiredSignatures: compiled.header.numSignerAccounts,
  };
  const instructions = compiled.instructions.map((ix: CompiledInstruction) => ({
    accounts: ix.accountIndices ?? [],
    data: bs58.encode(Uint8Array.from(ix.data ?? [])),
    programIdIndex: ix.programAddressIndex,
    stackHeight: null,
  }));
  return {
    message: { accountKeys: compiled.staticAccounts, header, instructions, recentBlockhash, ...(tableLookups ? { addressTableLookups: tableLookups } : {}) },
    signatures,
  };
}

export function innerInstructionsJson(record: TransactionRecord, parsed: boolean) {
  if (!parsed) return record.innerInstructions;
  const tx = parseWireTransaction(new Uint8Array(Buffer.from(record.wire, 'base64')));
  const keys = [...tx.message.staticKeys, ...record.loadedAddresses.writable, ...record.loadedAddresses.readonly];
  return record.innerInstructions.map(({ index, instructions }) => ({
    index,
    instructions: instructions.map((ix) => ({
      accounts: ix.accounts.map((i) => keys[i]),
      data: ix.data,
      programId: keys[ix.programIdIndex],
      stackHeight: ix.stackHeight,
    })),
  }));
}
