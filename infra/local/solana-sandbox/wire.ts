import { createPublicKey, verify as verifyEd25519 } from 'node:crypto';
import {
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Transaction as KitTransaction,
  type LegacyCompiledTransactionMessage,
  type V0CompiledTransactionMessage,
} from '@solana/kit';
import bs58 from 'bs58';
import { invalidParams } from './params.ts';
import { JsonRpcError } from './transport.ts';

/** Transactions as they arrive on the wire: decoded, sanitized as a validator does, signatures checked. */

const PACKET_DATA_SIZE = 1232;
const MAX_BASE58_TX_SIZE = 1683;
const MAX_BASE64_TX_SIZE = 1644;

type CompiledMessage = LegacyCompiledTransactionMessage | V0CompiledTransactionMessage;
export type CompiledInstruction = CompiledMessage['instructions'][number];

export interface WireTransaction {
  readonly bytes: Uint8Array;
  readonly kit: KitTransaction;
  readonly signatures: readonly Uint8Array[];
  /** The first signature, base-58: the transaction id. */
  readonly id: string;
  readonly message: ParsedMessage;
}

export interface ParsedMessage {
  readonly bytes: Uint8Array;
  readonly compiled: CompiledMessage;
  readonly version: 'legacy' | 0;
  readonly staticKeys: readonly string[];
  readonly lifetimeToken: string;
}

const transactionDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();
const sanitizeFailure = () => new JsonRpcError(-32602, 'invalid transaction: Transaction failed to sanitize accounts offsets correctly');

export function decodeWireParam(value: unknown, encoding: unknown): Uint8Array {
  if (typeof value !== 'string') throw invalidParams('invalid type: expected an encoded transaction string');
  const chosen = encoding ?? 'base58';
  const type = 'solana_transaction::versioned::VersionedTransaction';
  if (chosen === 'base58') {
    if (value.length > MAX_BASE58_TX_SIZE)
      throw invalidParams(`base58 encoded ${type} too large: ${value.length} bytes (max: encoded/raw ${MAX_BASE58_TX_SIZE}/${PACKET_DATA_SIZE})`);
    try {
      return bs58.decode(value);
    } catch (error) {
      throw new JsonRpcError(-32602, `invalid base58 encoding: ${String(error)}`);
    }
  }
  if (chosen === 'base64') {
    if (value.length > MAX_BASE64_TX_SIZE)
      throw invalidParams(`base64 encoded ${type} too large: ${value.length} bytes (max: encoded/raw ${MAX_BASE64_TX_SIZE}/${PACKET_DATA_SIZE})`);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) throw new JsonRpcError(-32602, 'invalid base64 encoding: InvalidByte');
    return new Uint8Array(Buffer.from(value, 'base64'));
  }
  throw new JsonRpcError(-32602, `unsupported encoding: ${String(chosen)}. Supported encodings: base58, base64`);
}

/** Decodes with @solana/kit and applies the sanitize rules a validator checks before anything else. */
export function parseWireTransaction(bytes: Uint8Array): WireTransaction {
  if (bytes.length > PACKET_DATA_SIZE)
    throw invalidParams(`decoded solana_transaction::versioned::VersionedTransaction too large: ${bytes.length} bytes (max: ${PACKET_DATA_SIZE} bytes)`);
  let kit: KitTransaction;
  const signatures: Uint8Array[] = [];
  try {
    kit = transactionDecoder.decode(bytes);
    const [count, offset] = readShortVec(bytes, 0);
    for (let i = 0; i < count; i++) signatures.push(bytes.slice(offset + i * 64, offset + (i + 1) * 64));
  } catch (error) {
    throw new JsonRpcError(
      -32602,
      `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const message = parseMessage(new Uint8Array(kit.messageBytes));
  if (signatures.length === 0 || signatures.length !== message.compiled.header.numSignerAccounts) throw sanitizeFailure();
  return { bytes, kit, signatures, id: bs58.encode(signatures[0]!), message };
}

export function parseMessage(bytes: Uint8Array): ParsedMessage {
  let decoded: ReturnType<typeof messageDecoder.decode>;
  try {
    decoded = messageDecoder.decode(bytes);
  } catch (error) {
    throw new JsonRpcError(
      -32602,
      `failed to deserialize solana_message::versioned::VersionedMessage: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (decoded.version !== 'legacy' && decoded.version !== 0) throw new JsonRpcError(-32602, 'invalid transaction: Transaction version is unsupported');
  const compiled = decoded as CompiledMessage & { lifetimeToken: string };
  const { header, staticAccounts, instructions } = compiled;
  const lookups = compiled.version === 0 ? (compiled.addressTableLookups ?? []) : [];
  const loadedCount = lookups.reduce((sum, lookup) => sum + lookup.writableIndexes.length + lookup.readonlyIndexes.length, 0);
  const keyCount = staticAccounts.length + loadedCount;
  const valid =
    header.numSignerAccounts > 0 &&
    header.numReadonlySignerAccounts < header.numSignerAccounts &&
    header.numSignerAccounts + header.numReadonlyNonSignerAccounts <= staticAccounts.length &&
    keyCount <= 256 &&
    new Set(staticAccounts).size === staticAccounts.length &&
    lookups.every((lookup) => lookup.writableIndexes.length + lookup.readonlyIndexes.length > 0) &&
    instructions.every(
      (ix) => ix.programAddressIndex > 0 && ix.programAddressIndex < staticAccounts.length && (ix.accountIndices ?? []).every((i) => i < keyCount),
    );
  if (!valid) throw sanitizeFailure();
  return { bytes, compiled, version: compiled.version, staticKeys: staticAccounts, lifetimeToken: compiled.lifetimeToken };
}

function readShortVec(bytes: Uint8Array, offset: number): [value: number, next: number] {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const byte = bytes[offset + i];
    if (byte === undefined) throw new Error('truncated length prefix');
    value |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return [value, offset + i + 1];
  }
  throw new Error('length prefix too long');
}

export function signaturesVerify(tx: WireTransaction): boolean {
  return tx.signatures.every((signature, i) => {
    const signer = tx.message.staticKeys[i]!;
    const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), bs58.decode(signer)]);
    try {
      return verifyEd25519(null, tx.message.bytes, createPublicKey({ key: spki, format: 'der', type: 'spki' }), signature);
    } catch {
      return false;
    }
  });
}

/** Whether static key `index` is writable by the message header (Agave's `is_writable_index`). */
export function isWritableStatic(compiled: CompiledMessage, index: number): boolean {
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = compiled.header;
  if (index < numSignerAccounts) return index < numSignerAccounts - numReadonlySignerAccounts;
  return index < compiled.staticAccounts.length - numReadonlyNonSignerAccounts;
}
