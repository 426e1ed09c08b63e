import { createHash, createPublicKey, randomBytes, verify as verifyEd25519 } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { zstdCompressSync } from 'node:zlib';
import {
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  lamports as toLamports,
  type Address,
  type LegacyCompiledTransactionMessage,
  type Transaction as KitTransaction,
  type V0CompiledTransactionMessage,
} from '@solana/kit';
import { createAssociatedTokenAccountIdempotentInstruction, createMintToCheckedInstruction, getAssociatedTokenAddressSync, MINT_SIZE, MintLayout } from '@solana/spl-token';
import { Keypair, PublicKey, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { Clock, FailedTransactionMetadata, LiteSVM, type TransactionMetadata } from 'litesvm';
import { FaucetRefusedError, tooLarge } from './faucet-refused.ts';

/**
 * A local Solana for the sandbox: a JSON-RPC 2.0 server over an in-process LiteSVM, answering the
 * methods @solana/web3.js v1 `Connection` uses for balances, token accounts and sending, with the
 * request and response shapes of an Agave validator (so the production code path runs unchanged).
 *
 * Not a validator: every accepted transaction is executed at once in a one-transaction "block", the
 * slot and block height move by one per transaction, and everything processed is immediately
 * `finalized`. There is no websocket endpoint (web3.js `confirmTransaction` needs one; poll
 * `getSignatureStatuses` instead). Blockhashes stay valid for 150 blocks, as on mainnet.
 *
 * Persistence, in `<dataDir>/chains/`:
 * - `SOL.litesvm`: the engine snapshot (`LiteSVM.toBytes`: accounts, sysvars, features, the
 *   engine's own transaction history), restored when the litesvm version is unchanged;
 * - `SOL.json`: the sandbox's state (mint authority, slot, recent blockhashes, the last 1000
 *   transactions for getTransaction/getSignatureStatuses) and a portable copy of every account the
 *   sandbox has seen (static and looked-up keys of processed transactions, faucet targets, the mint),
 *   used when the snapshot is missing or from another litesvm version.
 * Not preserved: transactions older than the last 1000 (their status and getTransaction answer
 * become null); after a portable-copy restore, also the engine's transaction history and any
 * account never named in a transaction the sandbox processed.
 *
 * Durability: every state change (a landed transaction, a faucet credit) is written and fsynced
 * before the RPC answers or the faucet returns, so whatever was acknowledged survives `kill -9`.
 * `SOL.json` is the commit point: it carries the digest of the snapshot written just before it, and
 * a snapshot that does not match (a crash between the two writes) is ignored for the portable copy.
 */
export interface SolanaSandbox {
  readonly rpcUrl: string;
  readonly chain: { family: 'sol'; rpc_url: string; native: 'SOL'; tokens: { USDC: { mint: string; decimals: number } } };
  /** Credits `address` with `amount` base units: lamports for SOL, 6-decimal units of USDC (into its associated token account). */
  faucet(address: string, token: 'SOL' | 'USDC', amount: bigint): Promise<void>;
  stop(): Promise<void>;
}

export async function startSolanaSandbox(options: { dataDir: string; host?: string }): Promise<SolanaSandbox> {
  const host = options.host ?? '127.0.0.1';
  const chain = SandboxChain.open(join(options.dataDir, 'chains'));
  const methods = rpcMethods(chain);
  const server = createServer((req, res) => serveHttp(req, res, methods));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    chain.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const rpcUrl = `http://${urlHost}:${port}`;
  let stopping: Promise<void> | undefined;
  return {
    rpcUrl,
    chain: { family: 'sol', rpc_url: rpcUrl, native: 'SOL', tokens: { USDC: { mint: USDC_MINT, decimals: USDC_DECIMALS } } },
    faucet: async (address, token, amount) => chain.faucet(address, token, amount),
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => chain.close())),
  };
}

// ---------------------------------------------------------------------------------------------
// Constants

/** The mainnet USDC mint, recreated here with a sandbox mint authority. */
const USDC_MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const USDC_DECIMALS = 6;

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';
const SYSVAR_OWNER = 'Sysvar1111111111111111111111111111111111111';
const SIGNATURE_PRECOMPILES = new Set(['Ed25519SigVerify111111111111111111111111111', 'KeccakSecp256k11111111111111111111111111111', 'Secp256r1SigVerify1111111111111111111111111']);
/** Programs whose instructions reserve 3,000 compute units by default (Agave's builtin cost table), all others 200,000. */
const BUILTIN_PROGRAMS = new Set([
  SYSTEM_PROGRAM,
  COMPUTE_BUDGET_PROGRAM,
  'Vote111111111111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'LoaderV411111111111111111111111111111111111',
  ...SIGNATURE_PRECOMPILES,
]);
/** Owners of accounts the engine provides itself: never copied into SOL.json. */
const ENGINE_OWNERS = new Set([SYSVAR_OWNER, 'NativeLoader1111111111111111111111111111111', 'BPFLoader1111111111111111111111111111111111', 'BPFLoader2111111111111111111111111111111111', 'BPFLoaderUpgradeab1e11111111111111111111111', 'LoaderV411111111111111111111111111111111111']);

const LAMPORTS_PER_SIGNATURE = 5_000n;
const MAX_COMPUTE_UNIT_LIMIT = 1_400_000;
/** Agave MAX_PROCESSING_AGE: a blockhash is usable for 150 blocks after the one it names. */
const MAX_PROCESSING_AGE = 150;
const PACKET_DATA_SIZE = 1232;
const MAX_BASE58_TX_SIZE = 1683;
const MAX_BASE64_TX_SIZE = 1644;
const MAX_REQUEST_BODY_SIZE = 50 * 1024;
const RECORD_LIMIT = 1000;
const U64_MAX = 18_446_744_073_709_551_615n;
const STATE_FORMAT = 1;

const nodeRequire = createRequire(import.meta.url);
const LITESVM_VERSION = (nodeRequire('litesvm/package.json') as { version: string }).version;
const ENGINE = `litesvm@${LITESVM_VERSION}`;

// ---------------------------------------------------------------------------------------------
// JSON-RPC plumbing

class JsonRpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/**
 * The state changed in memory but could not be made durable. Never a JSON-RPC error (a client reads
 * that as "nothing was taken"): the request fails at the HTTP level, as an unreachable node's would.
 */
class PersistenceError extends Error {}

const invalidParams = (detail: string) => new JsonRpcError(-32602, `Invalid params: ${detail}`);
const invalidParam = (detail: string) => new JsonRpcError(-32602, `Invalid param: ${detail}`);

type Params = readonly unknown[];
type RpcMethod = (params: Params) => unknown;

/** u64 values go out as exact JSON integers (lamports, rentEpoch), as a validator writes them. */
const rawJSON = (text: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);
const toJson = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? rawJSON(v.toString()) : v));

function serveHttp(req: IncomingMessage, res: ServerResponse, methods: Map<string, RpcMethod>): void {
  if (req.method === 'GET' && req.url === '/health') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST' }).end();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_REQUEST_BODY_SIZE) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > MAX_REQUEST_BODY_SIZE) {
      res.writeHead(413).end();
      return;
    }
    let reply: string | undefined;
    try {
      reply = answerBody(Buffer.concat(chunks).toString('utf8'), methods);
    } catch (error) {
      if (!(error instanceof PersistenceError)) throw error;
      res.writeHead(500, { 'content-type': 'text/plain' }).end('state not persisted');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(reply ?? '');
  });
}

/** One request or a batch; notifications (no id) get no answer, as in jsonrpc-core. */
function answerBody(body: string, methods: Map<string, RpcMethod>): string | undefined {
  let request: unknown;
  try {
    request = JSON.parse(body);
  } catch {
    return toJson(errorResponse(null, new JsonRpcError(-32700, 'Parse error')));
  }
  if (Array.isArray(request)) {
    if (request.length === 0) return toJson(errorResponse(null, new JsonRpcError(-32600, 'Invalid request')));
    const replies = request.map((one) => answerOne(one, methods)).filter((reply) => reply !== undefined);
    return replies.length ? toJson(replies) : undefined;
  }
  const reply = answerOne(request, methods);
  return reply === undefined ? undefined : toJson(reply);
}

function answerOne(request: unknown, methods: Map<string, RpcMethod>): object | undefined {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return errorResponse(null, new JsonRpcError(-32600, 'Invalid request'));
  const { jsonrpc, method, params, id } = request as Record<string, unknown>;
  const hasId = 'id' in request;
  const replyId = typeof id === 'string' || typeof id === 'number' ? id : null;
  if (jsonrpc !== '2.0' || typeof method !== 'string' || (params !== undefined && !Array.isArray(params))) {
    return errorResponse(replyId, new JsonRpcError(-32600, 'Invalid request'));
  }
  const handler = methods.get(method);
  let reply: object;
  if (!handler) {
    reply = errorResponse(replyId, new JsonRpcError(-32601, 'Method not found'));
  } else {
    try {
      reply = { jsonrpc: '2.0', result: handler((params as Params | undefined) ?? []), id: replyId };
    } catch (error) {
      if (error instanceof PersistenceError) throw error;
      reply = errorResponse(replyId, error instanceof JsonRpcError ? error : new JsonRpcError(-32603, 'Internal error', error instanceof Error ? error.message : String(error)));
    }
  }
  return hasId ? reply : undefined;
}

function errorResponse(id: string | number | null, error: JsonRpcError) {
  return { jsonrpc: '2.0', error: error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data }, id };
}

// ---------------------------------------------------------------------------------------------
// Parameters

function configAt(params: Params, index: number): Record<string, unknown> {
  const value = params[index];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidParams(`invalid type: expected a configuration object at position ${index}`);
  return value as Record<string, unknown>;
}

function pubkeyParam(value: unknown): Address {
  if (typeof value !== 'string') throw invalidParams('invalid type: expected a base-58 encoded public key string');
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw invalidParam('Invalid');
  }
  if (bytes.length !== 32) throw invalidParam('WrongSize');
  return bs58.encode(bytes) as Address;
}

function signatureParam(value: unknown): string {
  if (typeof value !== 'string') throw invalidParams('invalid type: expected a base-58 encoded signature string');
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw invalidParam('Invalid');
  }
  if (bytes.length !== 64) throw invalidParam('WrongSize');
  return value;
}

function integerParam(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidParams(`invalid type: expected ${what} (a non-negative integer)`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Transactions on the wire

type CompiledMessage = LegacyCompiledTransactionMessage | V0CompiledTransactionMessage;
type CompiledInstruction = CompiledMessage['instructions'][number];

interface WireTransaction {
  readonly bytes: Uint8Array;
  readonly kit: KitTransaction;
  readonly signatures: readonly Uint8Array[];
  /** The first signature, base-58: the transaction id. */
  readonly id: string;
  readonly message: ParsedMessage;
}

interface ParsedMessage {
  readonly bytes: Uint8Array;
  readonly compiled: CompiledMessage;
  readonly version: 'legacy' | 0;
  readonly staticKeys: readonly string[];
  readonly lifetimeToken: string;
}

const transactionDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();
const sanitizeFailure = () => new JsonRpcError(-32602, 'invalid transaction: Transaction failed to sanitize accounts offsets correctly');

function decodeWireParam(value: unknown, encoding: unknown): Uint8Array {
  if (typeof value !== 'string') throw invalidParams('invalid type: expected an encoded transaction string');
  const chosen = encoding ?? 'base58';
  const type = 'solana_transaction::versioned::VersionedTransaction';
  if (chosen === 'base58') {
    if (value.length > MAX_BASE58_TX_SIZE) throw invalidParams(`base58 encoded ${type} too large: ${value.length} bytes (max: encoded/raw ${MAX_BASE58_TX_SIZE}/${PACKET_DATA_SIZE})`);
    try {
      return bs58.decode(value);
    } catch (error) {
      throw new JsonRpcError(-32602, `invalid base58 encoding: ${String(error)}`);
    }
  }
  if (chosen === 'base64') {
    if (value.length > MAX_BASE64_TX_SIZE) throw invalidParams(`base64 encoded ${type} too large: ${value.length} bytes (max: encoded/raw ${MAX_BASE64_TX_SIZE}/${PACKET_DATA_SIZE})`);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) throw new JsonRpcError(-32602, 'invalid base64 encoding: InvalidByte');
    return new Uint8Array(Buffer.from(value, 'base64'));
  }
  throw new JsonRpcError(-32602, `unsupported encoding: ${String(chosen)}. Supported encodings: base58, base64`);
}

/** Decodes with @solana/kit and applies the sanitize rules a validator checks before anything else. */
function parseWireTransaction(bytes: Uint8Array): WireTransaction {
  if (bytes.length > PACKET_DATA_SIZE) throw invalidParams(`decoded solana_transaction::versioned::VersionedTransaction too large: ${bytes.length} bytes (max: ${PACKET_DATA_SIZE} bytes)`);
  let kit: KitTransaction;
  const signatures: Uint8Array[] = [];
  try {
    kit = transactionDecoder.decode(bytes);
    const [count, offset] = readShortVec(bytes, 0);
    for (let i = 0; i < count; i++) signatures.push(bytes.slice(offset + i * 64, offset + (i + 1) * 64));
  } catch (error) {
    throw new JsonRpcError(-32602, `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${error instanceof Error ? error.message : String(error)}`);
  }
  const message = parseMessage(new Uint8Array(kit.messageBytes));
  if (signatures.length === 0 || signatures.length !== message.compiled.header.numSignerAccounts) throw sanitizeFailure();
  return { bytes, kit, signatures, id: bs58.encode(signatures[0]!), message };
}

function parseMessage(bytes: Uint8Array): ParsedMessage {
  let decoded: ReturnType<typeof messageDecoder.decode>;
  try {
    decoded = messageDecoder.decode(bytes);
  } catch (error) {
    throw new JsonRpcError(-32602, `failed to deserialize solana_message::versioned::VersionedMessage: ${error instanceof Error ? error.message : String(error)}`);
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
    instructions.every((ix) => ix.programAddressIndex > 0 && ix.programAddressIndex < staticAccounts.length && (ix.accountIndices ?? []).every((i) => i < keyCount));
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

function signaturesVerify(tx: WireTransaction): boolean {
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

/** Agave's fee: 5,000 lamports per signature (precompile signatures included) plus the priority fee, ceil(price × limit / 10^6). */
function transactionFee(message: ParsedMessage): bigint {
  const { compiled, staticKeys } = message;
  let signatures = BigInt(compiled.header.numSignerAccounts);
  let unitLimit: number | undefined;
  let defaultUnits = 0;
  for (const ix of compiled.instructions) {
    const program = staticKeys[ix.programAddressIndex]!;
    const data = ix.data ?? new Uint8Array();
    if (SIGNATURE_PRECOMPILES.has(program)) signatures += BigInt(data[0] ?? 0);
    if (program === COMPUTE_BUDGET_PROGRAM && data[0] === 2 && data.length >= 5) unitLimit = Buffer.from(data).readUInt32LE(1);
    defaultUnits += BUILTIN_PROGRAMS.has(program) ? 3_000 : 200_000;
  }
  const units = BigInt(Math.min(unitLimit ?? defaultUnits, MAX_COMPUTE_UNIT_LIMIT));
  return signatures * LAMPORTS_PER_SIGNATURE + (computeUnitPrice(message) * units + 999_999n) / 1_000_000n;
}

/** Micro-lamports per compute unit set by a ComputeBudget SetComputeUnitPrice instruction, else 0. */
function computeUnitPrice({ compiled, staticKeys }: ParsedMessage): bigint {
  for (const ix of compiled.instructions) {
    const data = ix.data;
    if (staticKeys[ix.programAddressIndex] === COMPUTE_BUDGET_PROGRAM && data && data[0] === 3 && data.length >= 9) return Buffer.from(data).readBigUInt64LE(1);
  }
  return 0n;
}

/** Whether static key `index` is writable by the message header (Agave's `is_writable_index`). */
function isWritableStatic(compiled: CompiledMessage, index: number): boolean {
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = compiled.header;
  if (index < numSignerAccounts) return index < numSignerAccounts - numReadonlySignerAccounts;
  return index < compiled.staticAccounts.length - numReadonlyNonSignerAccounts;
}

// ---------------------------------------------------------------------------------------------
// Transaction errors, in the JSON form (serde) and text (Display) a validator gives them

type TxErrorJson = string | Record<string, unknown>;
interface TxFailure {
  readonly json: TxErrorJson;
  readonly text: string;
}

/**
 * What litesvm's `FailedTransactionMetadata.err()` returns: a number for a variant without fields,
 * an object for the others. Its entry point exports neither the classes of those objects nor the
 * TransactionErrorFieldless / InstructionErrorFieldless enums that name the numbers (only
 * `litesvm/dist/internal.js` has them, and there the enums are native classes without members at
 * run time: names read from them come out empty), so the variants are told apart by their declared
 * fields and the numbers are named by the tables below.
 */
type EngineTxError = ReturnType<FailedTransactionMetadata['err']>;
type EngineIxError = ReturnType<Extract<EngineTxError, { err(): unknown }>['err']>;
type ErrorTable = Readonly<Record<number, readonly [name: string, text: string]>>;

/**
 * TransactionErrorFieldless by number (Agave's TransactionError order, the variants with fields
 * left out): the variant's name, which is its JSON form, and Agave's Display text. Keyed by the
 * type err() declares, so a litesvm whose enum gains or loses a variant fails the typecheck.
 */
const TX_ERRORS: Record<Extract<EngineTxError, number>, readonly [name: string, text: string]> = {
  0: ['AccountInUse', 'Account in use'],
  1: ['AccountLoadedTwice', 'Account loaded twice'],
  2: ['AccountNotFound', 'Attempt to debit an account but found no record of a prior credit.'],
  3: ['ProgramAccountNotFound', 'Attempt to load a program that does not exist'],
  4: ['InsufficientFundsForFee', 'Insufficient funds for fee'],
  5: ['InvalidAccountForFee', 'This account may not be used to pay transaction fees'],
  6: ['AlreadyProcessed', 'This transaction has already been processed'],
  7: ['BlockhashNotFound', 'Blockhash not found'],
  8: ['CallChainTooDeep', 'Loader call chain is too deep'],
  9: ['MissingSignatureForFee', 'Transaction requires a fee but has no signature present'],
  10: ['InvalidAccountIndex', 'Transaction contains an invalid account reference'],
  11: ['SignatureFailure', 'Transaction did not pass signature verification'],
  12: ['InvalidProgramForExecution', 'This program may not be used for executing instructions'],
  13: ['SanitizeFailure', 'Transaction failed to sanitize accounts offsets correctly'],
  14: ['ClusterMaintenance', 'Transactions are currently disabled due to cluster maintenance'],
  15: ['AccountBorrowOutstanding', 'Transaction processing left an account with an outstanding borrowed reference'],
  16: ['WouldExceedMaxBlockCostLimit', 'Transaction would exceed max Block Cost Limit'],
  17: ['UnsupportedVersion', 'Transaction version is unsupported'],
  18: ['InvalidWritableAccount', 'Transaction loads a writable account that cannot be written'],
  19: ['WouldExceedMaxAccountCostLimit', 'Transaction would exceed max account limit within the block'],
  20: ['WouldExceedAccountDataBlockLimit', 'Transaction would exceed account data limit within the block'],
  21: ['TooManyAccountLocks', 'Transaction locked too many accounts'],
  22: ['AddressLookupTableNotFound', "Transaction loads an address table account that doesn't exist"],
  23: ['InvalidAddressLookupTableOwner', 'Transaction loads an address table account with an invalid owner'],
  24: ['InvalidAddressLookupTableData', 'Transaction loads an address table account with invalid data'],
  25: ['InvalidAddressLookupTableIndex', 'Transaction address table lookup uses an invalid index'],
  26: ['InvalidRentPayingAccount', 'Transaction leaves an account with a lower balance than rent-exempt minimum'],
  27: ['WouldExceedMaxVoteCostLimit', 'Transaction would exceed max Vote Cost Limit'],
  28: ['WouldExceedAccountDataTotalLimit', 'Transaction would exceed total account data limit'],
  29: ['MaxLoadedAccountsDataSizeExceeded', 'Transaction exceeded max loaded accounts data size cap'],
  30: ['ResanitizationNeeded', 'ResanitizationNeeded'],
  31: ['InvalidLoadedAccountsDataSizeLimit', 'LoadedAccountsDataSizeLimit set for transaction must be greater than 0.'],
  32: ['UnbalancedTransaction', 'Sum of account balances before and after transaction do not match'],
  33: ['ProgramCacheHitMaxLimit', 'Program cache hit max limit'],
  34: ['CommitCancelled', 'CommitCancelled'],
};

/** InstructionErrorFieldless by number, as TX_ERRORS. */
const IX_ERRORS: Record<Extract<EngineIxError, number>, readonly [name: string, text: string]> = {
  0: ['GenericError', 'generic instruction error'],
  1: ['InvalidArgument', 'invalid program argument'],
  2: ['InvalidInstructionData', 'invalid instruction data'],
  3: ['InvalidAccountData', 'invalid account data for instruction'],
  4: ['AccountDataTooSmall', 'account data too small for instruction'],
  5: ['InsufficientFunds', 'insufficient funds for instruction'],
  6: ['IncorrectProgramId', 'incorrect program id for instruction'],
  7: ['MissingRequiredSignature', 'missing required signature for instruction'],
  8: ['AccountAlreadyInitialized', 'instruction requires an uninitialized account'],
  9: ['UninitializedAccount', 'instruction requires an initialized account'],
  10: ['UnbalancedInstruction', 'sum of account balances before and after instruction do not match'],
  11: ['ModifiedProgramId', 'instruction illegally modified the program id of an account'],
  12: ['ExternalAccountLamportSpend', 'instruction spent from the balance of an account it does not own'],
  13: ['ExternalAccountDataModified', 'instruction modified data of an account it does not own'],
  14: ['ReadonlyLamportChange', 'instruction changed the balance of a read-only account'],
  15: ['ReadonlyDataModified', 'instruction modified data of a read-only account'],
  16: ['DuplicateAccountIndex', 'instruction contains duplicate accounts'],
  17: ['ExecutableModified', 'instruction changed executable bit of an account'],
  18: ['RentEpochModified', 'instruction modified rent epoch of an account'],
  19: ['NotEnoughAccountKeys', 'insufficient account keys for instruction'],
  20: ['AccountDataSizeChanged', "program other than the account's owner changed the size of the account data"],
  21: ['AccountNotExecutable', 'instruction expected an executable account'],
  22: ['AccountBorrowFailed', 'instruction tries to borrow reference for an account which is already borrowed'],
  23: ['AccountBorrowOutstanding', 'instruction left account with an outstanding borrowed reference'],
  24: ['DuplicateAccountOutOfSync', 'instruction modifications of multiply-passed account differ'],
  25: ['InvalidError', 'program returned invalid error code'],
  26: ['ExecutableDataModified', 'instruction changed executable accounts data'],
  27: ['ExecutableLamportChange', 'instruction changed the balance of an executable account'],
  28: ['ExecutableAccountNotRentExempt', 'executable accounts must be rent exempt'],
  29: ['UnsupportedProgramId', 'Unsupported program id'],
  30: ['CallDepth', 'Cross-program invocation call depth too deep'],
  31: ['MissingAccount', 'An account required by the instruction is missing'],
  32: ['ReentrancyNotAllowed', 'Cross-program invocation reentrancy not allowed for this instruction'],
  33: ['MaxSeedLengthExceeded', 'Length of the seed is too long for address generation'],
  34: ['InvalidSeeds', 'Provided seeds do not result in a valid address'],
  35: ['InvalidRealloc', 'Failed to reallocate account data'],
  36: ['ComputationalBudgetExceeded', 'Computational budget exceeded'],
  37: ['PrivilegeEscalation', 'Cross-program invocation with unauthorized signer or writable account'],
  38: ['ProgramEnvironmentSetupFailure', 'Failed to create program execution environment'],
  39: ['ProgramFailedToComplete', 'Program failed to complete'],
  40: ['ProgramFailedToCompile', 'Program failed to compile'],
  41: ['Immutable', 'Account is immutable'],
  42: ['IncorrectAuthority', 'Incorrect authority provided'],
  43: ['AccountNotRentExempt', 'An account does not have enough lamports to be rent-exempt'],
  44: ['InvalidAccountOwner', 'Invalid account owner'],
  45: ['ArithmeticOverflow', 'Program arithmetic overflowed'],
  46: ['UnsupportedSysvar', 'Unsupported sysvar'],
  47: ['IllegalOwner', 'Provided owner is not allowed'],
  48: ['MaxAccountsDataAllocationsExceeded', 'Accounts data allocations exceeded the maximum allowed per transaction'],
  49: ['MaxAccountsExceeded', 'Max accounts exceeded'],
  50: ['MaxInstructionTraceLengthExceeded', 'Max instruction trace length exceeded'],
  51: ['BuiltinProgramsMustConsumeComputeUnits', 'Builtin programs must consume compute units'],
  52: ['BorshIoError', 'Failed to serialize or deserialize account data'],
};

const TX_ERROR_TEXT = new Map(Object.values(TX_ERRORS));
const IX_ERROR_TEXT = new Map(Object.values(IX_ERRORS));

const nameOf = (table: ErrorTable, value: number) => table[value]?.[0] ?? `UnknownError${value}`;

function simpleFailure(name: string): TxFailure {
  return { json: name, text: TX_ERROR_TEXT.get(name) ?? name };
}

function instructionFailure(name: string): { json: unknown; text: string } {
  return { json: name, text: IX_ERROR_TEXT.get(name) ?? name };
}

function describeFailure(err: EngineTxError): TxFailure {
  if (typeof err === 'number') return simpleFailure(nameOf(TX_ERRORS, err));
  if ('err' in err) {
    // InstructionError: the failing instruction's index, and its error (fieldless, Custom or BorshIoError).
    const inner = err.err();
    const { json, text } =
      typeof inner === 'number'
        ? instructionFailure(nameOf(IX_ERRORS, inner))
        : 'code' in inner
          ? { json: { Custom: inner.code }, text: `custom program error: 0x${inner.code.toString(16)}` }
          : instructionFailure('BorshIoError');
    return { json: { InstructionError: [err.index, json] }, text: `Error processing Instruction ${err.index}: ${text}` };
  }
  if ('index' in err) return { json: { DuplicateInstruction: err.index }, text: `Transaction contains a duplicate instruction (${err.index}) that is not allowed` };
  if ('accountIndex' in err) {
    // InsufficientFundsForRent and ProgramExecutionTemporarilyRestricted declare the same field:
    // only the name litesvm gives their classes tells them apart.
    if (err.constructor.name === 'TransactionErrorProgramExecutionTemporarilyRestricted') {
      return {
        json: { ProgramExecutionTemporarilyRestricted: { account_index: err.accountIndex } },
        text: `Execution of the program referenced by account at index ${err.accountIndex} is temporarily restricted.`,
      };
    }
    return { json: { InsufficientFundsForRent: { account_index: err.accountIndex } }, text: `Transaction results in an account (${err.accountIndex}) with insufficient funds for rent` };
  }
  return simpleFailure(String(err));
}

// ---------------------------------------------------------------------------------------------
// Accounts

interface AccountState {
  readonly lamports: bigint;
  readonly owner: string;
  readonly data: Uint8Array;
  readonly executable: boolean;
}

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

const TOKEN_ACCOUNT_SIZE = 165;
const isTokenProgram = (owner: string) => owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;

/** SPL Token account layout; Token-2022 accounts with extensions carry account type 2 at byte 165. */
function readTokenAccount(account: AccountState): TokenAccountState | null {
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
function readMint(account: AccountState): MintState | null {
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
function uiTokenAmount(amount: bigint, decimals: number) {
  let text = amount.toString();
  if (decimals > 0) {
    const padded = text.padStart(decimals + 1, '0');
    const fraction = padded.slice(-decimals).replace(/0+$/, '');
    text = fraction ? `${padded.slice(0, -decimals)}.${fraction}` : padded.slice(0, -decimals);
  }
  return { amount: amount.toString(), decimals, uiAmount: Number(text), uiAmountString: text };
}

// ---------------------------------------------------------------------------------------------
// The chain: engine, clock, blockhashes, processed transactions, persistence

interface TokenBalance {
  readonly accountIndex: number;
  readonly mint: string;
  readonly owner: string;
  readonly programId: string;
  readonly uiTokenAmount: ReturnType<typeof uiTokenAmount>;
}

interface CompiledInnerInstructions {
  readonly index: number;
  readonly instructions: readonly { programIdIndex: number; accounts: number[]; data: string; stackHeight: number }[];
}

/** What getTransaction and getSignatureStatuses answer from; u64 values as decimal strings. */
interface TransactionRecord {
  readonly signature: string;
  readonly slot: number;
  readonly blockTime: number;
  readonly version: 'legacy' | 0;
  readonly wire: string;
  readonly err: TxErrorJson | null;
  readonly fee: string;
  readonly preBalances: readonly string[];
  readonly postBalances: readonly string[];
  readonly preTokenBalances: readonly TokenBalance[];
  readonly postTokenBalances: readonly TokenBalance[];
  readonly logs: readonly string[];
  readonly innerInstructions: readonly CompiledInnerInstructions[];
  readonly computeUnitsConsumed: number;
  readonly loadedAddresses: { readonly writable: readonly string[]; readonly readonly: readonly string[] };
  readonly returnData: { programId: string; data: [string, 'base64'] } | null;
  readonly computeUnitPrice: string;
  readonly writableKeys: readonly string[];
}

interface PersistedAccount {
  readonly lamports: string;
  readonly owner: string;
  readonly executable: boolean;
  readonly data: string;
}

interface PersistedState {
  readonly format: number;
  readonly engine: string;
  readonly genesisHash: string;
  readonly mintAuthority: string;
  readonly slot: number;
  readonly blockHeight: number;
  readonly transactionCount: number;
  readonly blockhashes: readonly (readonly [string, number])[];
  readonly transactions: readonly TransactionRecord[];
  readonly accounts: Readonly<Record<string, PersistedAccount>>;
  /** sha256 (hex) of the SOL.litesvm written with this state; absent in files from before it was recorded. */
  readonly snapshotDigest?: string;
}

interface Execution {
  readonly landed: boolean;
  readonly failure: TxFailure | null;
  readonly logs: readonly string[];
  readonly unitsConsumed: number;
}

class SandboxChain {
  readonly svm: LiteSVM;
  readonly genesisHash: string;
  readonly authority: Keypair;
  slot: number;
  blockHeight: number;
  transactionCount: number;
  /** Recent blockhashes and the block height each was the latest at. */
  readonly blockhashes: Map<string, number>;
  readonly records: Map<string, TransactionRecord>;
  /** Every account the sandbox has seen, with its last portable copy (null: nothing to keep, e.g. closed). */
  private readonly portable: Map<string, PersistedAccount | null>;
  /** Accounts changed since the last save: only these are read back for the portable copy. */
  private readonly dirty: Set<string>;
  private readonly dir: string;

  private constructor(dir: string, svm: LiteSVM, state: PersistedState | undefined) {
    this.dir = dir;
    // The engine accepts only its latest blockhash, so the sandbox checks blockhash age (and,
    // to answer -32003 as a validator does, signatures) itself and turns both engine checks off.
    this.svm = svm.withSigverify(false).withBlockhashCheck(false);
    this.genesisHash = state?.genesisHash ?? bs58.encode(randomBytes(32));
    this.authority = state ? Keypair.fromSecretKey(bs58.decode(state.mintAuthority)) : Keypair.generate();
    this.slot = state?.slot ?? Number(svm.getClock().slot);
    this.blockHeight = state?.blockHeight ?? this.slot;
    this.transactionCount = state?.transactionCount ?? 0;
    this.blockhashes = new Map(state?.blockhashes ?? []);
    this.records = new Map((state?.transactions ?? []).map((record) => [record.signature, record]));
    this.portable = new Map(Object.entries(state?.accounts ?? {}));
    this.dirty = new Set([...this.portable.keys(), USDC_MINT]);
  }

  /** Restores from the engine snapshot when it is from this litesvm version, else from the portable copy, else starts fresh. */
  static open(dir: string): SandboxChain {
    mkdirSync(dir, { recursive: true });
    const statePath = join(dir, 'SOL.json');
    const state = existsSync(statePath) ? (JSON.parse(readFileSync(statePath, 'utf8')) as PersistedState) : undefined;
    if (state && state.format !== STATE_FORMAT) throw new Error(`${statePath}: unknown state format ${String(state.format)}`);
    const snapshotPath = join(dir, 'SOL.litesvm');
    let svm: LiteSVM | undefined;
    if (state?.engine === ENGINE && existsSync(snapshotPath)) {
      const bytes = readFileSync(snapshotPath);
      // A snapshot newer than SOL.json (killed between the two writes) is not what was acknowledged.
      if (state.snapshotDigest === undefined || sha256(bytes) === state.snapshotDigest) {
        try {
          svm = LiteSVM.fromBytes(bytes);
        } catch {
          svm = undefined; // an unreadable snapshot: fall back to the portable copy in SOL.json
        }
      }
    }
    const restoredFromSnapshot = svm !== undefined;
    svm ??= new LiteSVM();
    if (state && !restoredFromSnapshot) {
      for (const [key, account] of Object.entries(state.accounts)) {
        const data = new Uint8Array(Buffer.from(account.data, 'base64'));
        svm.setAccount({ address: key as Address, lamports: toLamports(BigInt(account.lamports)), programAddress: account.owner as Address, executable: account.executable, data, space: BigInt(data.length) });
      }
    }
    const chain = new SandboxChain(dir, svm, state);
    if (!restoredFromSnapshot) {
      // A fresh engine starts at its own genesis blockhash: move past it so nothing signed before a
      // portable restore can be replayed, and put the clock where the state left it.
      chain.blockhashes.clear();
      chain.advance();
    }
    chain.ensureMint();
    chain.blockhashes.set(chain.svm.latestBlockhash(), chain.blockhashes.get(chain.svm.latestBlockhash()) ?? chain.blockHeight);
    chain.saveNow();
    return chain;
  }

  // --- clock and blockhashes

  latestBlockhash(): { blockhash: string; lastValidBlockHeight: number } {
    const blockhash = this.svm.latestBlockhash();
    return { blockhash, lastValidBlockHeight: (this.blockhashes.get(blockhash) ?? this.blockHeight) + MAX_PROCESSING_AGE };
  }

  isBlockhashValid(blockhash: string): boolean {
    const height = this.blockhashes.get(blockhash);
    return height !== undefined && this.blockHeight <= height + MAX_PROCESSING_AGE;
  }

  /** A durable-nonce transaction (first instruction System AdvanceNonceAccount) is valid while the nonce account holds its lifetime token. */
  isLifetimeValid(message: ParsedMessage): boolean {
    if (this.isBlockhashValid(message.lifetimeToken)) return true;
    const first = message.compiled.instructions[0];
    if (!first || message.staticKeys[first.programAddressIndex] !== SYSTEM_PROGRAM) return false;
    const data = first.data;
    const nonceIndex = first.accountIndices?.[0];
    if (!data || data.length < 4 || Buffer.from(data).readUInt32LE(0) !== 4 || nonceIndex === undefined) return false;
    const nonceKey = message.staticKeys[nonceIndex];
    const nonce = nonceKey === undefined ? null : this.account(nonceKey);
    if (!nonce || nonce.owner !== SYSTEM_PROGRAM || nonce.data.length !== 80) return false;
    const buffer = Buffer.from(nonce.data);
    return buffer.readUInt32LE(4) === 1 && bs58.encode(buffer.subarray(40, 72)) === message.lifetimeToken;
  }

  /** One block per transaction: the slot, block height, clock and blockhash move on. */
  advance(): void {
    this.slot += 1;
    this.blockHeight += 1;
    const { epoch } = this.epochOf(this.slot);
    const previous = this.svm.getClock();
    const now = BigInt(Math.floor(Date.now() / 1000));
    const epochStart = previous.epoch === BigInt(epoch) ? previous.epochStartTimestamp : now;
    this.svm.setClock(new Clock(BigInt(this.slot), epochStart, BigInt(epoch), BigInt(epoch + 1), now));
    this.svm.expireBlockhash();
    this.blockhashes.set(this.svm.latestBlockhash(), this.blockHeight);
    for (const [blockhash, height] of this.blockhashes) {
      if (height >= this.blockHeight - 2 * MAX_PROCESSING_AGE) break;
      this.blockhashes.delete(blockhash);
    }
  }

  /** Agave's EpochSchedule::get_epoch_and_slot_index, warmup epochs included. */
  epochOf(slot: number): { epoch: number; slotIndex: number; slotsInEpoch: number } {
    const schedule = this.svm.getEpochSchedule();
    const slotsPerEpoch = Number(schedule.slotsPerEpoch);
    const firstNormalSlot = Number(schedule.firstNormalSlot);
    const firstNormalEpoch = Number(schedule.firstNormalEpoch);
    const minimum = 32;
    if (schedule.warmup && slot < firstNormalSlot) {
      const epoch = Math.log2(nextPowerOfTwo(slot + minimum + 1)) - Math.log2(minimum) - 1;
      const slotsInEpoch = 2 ** (epoch + Math.log2(minimum));
      return { epoch, slotIndex: slot - (slotsInEpoch - minimum), slotsInEpoch };
    }
    const normalSlot = schedule.warmup ? slot - firstNormalSlot : slot;
    const normalEpoch = schedule.warmup ? firstNormalEpoch : 0;
    return { epoch: normalEpoch + Math.floor(normalSlot / slotsPerEpoch), slotIndex: normalSlot % slotsPerEpoch, slotsInEpoch: slotsPerEpoch };
  }

  // --- accounts

  account(key: string): AccountState | null {
    const found = this.svm.getAccount(key as Address);
    if (!found.exists || (found.lamports === 0n && found.data.length === 0)) return null;
    return { lamports: found.lamports, owner: found.programAddress, data: new Uint8Array(found.data), executable: found.executable };
  }

  /** Static keys then the writable and read-only keys loaded from address lookup tables, or null if a table cannot be read. */
  accountKeys(message: ParsedMessage): { keys: string[]; loaded: { writable: string[]; readonly: string[] } } | null {
    const loaded = { writable: [] as string[], readonly: [] as string[] };
    if (message.compiled.version === 0) {
      for (const lookup of message.compiled.addressTableLookups ?? []) {
        const table = this.account(lookup.lookupTableAddress);
        if (!table || table.owner !== ADDRESS_LOOKUP_TABLE_PROGRAM || table.data.length < 56) return null;
        const entries = (table.data.length - 56) / 32;
        const at = (index: number) => (index < entries ? bs58.encode(table.data.subarray(56 + index * 32, 88 + index * 32)) : null);
        for (const [indexes, into] of [
          [lookup.writableIndexes, loaded.writable],
          [lookup.readonlyIndexes, loaded.readonly],
        ] as const) {
          for (const index of indexes) {
            const key = at(index);
            if (key === null) return null;
            into.push(key);
          }
        }
      }
    }
    return { keys: [...message.staticKeys, ...loaded.writable, ...loaded.readonly], loaded };
  }

  tokenBalances(keys: readonly string[]): TokenBalance[] {
    const balances: TokenBalance[] = [];
    keys.forEach((key, accountIndex) => {
      const account = this.account(key);
      const token = account && readTokenAccount(account);
      const mintAccount = token && this.account(token.mint);
      const mint = mintAccount && readMint(mintAccount);
      if (account && token && mint) balances.push({ accountIndex, mint: token.mint, owner: token.owner, programId: account.owner, uiTokenAmount: uiTokenAmount(token.amount, mint.decimals) });
    });
    return balances;
  }

  // --- transactions

  /**
   * sendTransaction. With preflight (the default) a transaction that would fail changes nothing and
   * is answered like a validator's failed preflight; with skipPreflight it is executed as a leader
   * would, landing (fee charged, error recorded) or being dropped (returned id, never a status).
   */
  submit(tx: WireTransaction, skipPreflight: boolean): string {
    if (!skipPreflight) {
      if (!signaturesVerify(tx)) throw new JsonRpcError(-32003, 'Transaction signature verification failure');
      const failure = this.preflight(tx);
      if (failure) throw preflightError(failure.failure, failure.logs, failure.unitsConsumed);
    } else if (!signaturesVerify(tx) || !this.isLifetimeValid(tx.message) || this.records.has(tx.id)) {
      return tx.id;
    }
    const execution = this.execute(tx);
    if (!execution.landed && !skipPreflight) throw preflightError(execution.failure ?? simpleFailure('AccountNotFound'), execution.logs, execution.unitsConsumed);
    return tx.id;
  }

  /** The checks and simulation a validator's preflight runs; null when the transaction would succeed. */
  preflight(tx: WireTransaction): { failure: TxFailure; logs: readonly string[]; unitsConsumed: number } | null {
    if (!this.isLifetimeValid(tx.message)) return { failure: simpleFailure('BlockhashNotFound'), logs: [], unitsConsumed: 0 };
    if (this.records.has(tx.id)) return { failure: simpleFailure('AlreadyProcessed'), logs: [], unitsConsumed: 0 };
    const simulated = this.svm.simulateTransaction(tx.kit);
    if (simulated instanceof FailedTransactionMetadata) {
      const meta = simulated.meta();
      return { failure: describeFailure(simulated.err()), logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) };
    }
    return null;
  }

  /** Runs the transaction in the engine; it lands when it succeeded or its fee was charged. */
  execute(tx: WireTransaction): Execution {
    const resolved = this.accountKeys(tx.message);
    const keys = resolved?.keys ?? [...tx.message.staticKeys];
    const preBalances = keys.map((key) => this.account(key)?.lamports ?? 0n);
    const preTokenBalances = this.tokenBalances(keys);
    const result = this.svm.sendTransaction(tx.kit);
    const postBalances = keys.map((key) => this.account(key)?.lamports ?? 0n);
    const failed = result instanceof FailedTransactionMetadata;
    const meta: TransactionMetadata = failed ? result.meta() : result;
    const failure = failed ? describeFailure(result.err()) : null;
    const logs = meta.logs();
    const unitsConsumed = Number(meta.computeUnitsConsumed());
    const landed = !failed || postBalances[0] !== preBalances[0];
    if (!landed) return { landed, failure, logs, unitsConsumed };

    this.advance();
    const returnData = meta.returnData();
    const returnBytes = returnData.data();
    const { compiled } = tx.message;
    this.remember({
      signature: tx.id,
      slot: this.slot,
      blockTime: Math.floor(Date.now() / 1000),
      version: tx.message.version,
      wire: Buffer.from(tx.bytes).toString('base64'),
      err: failure?.json ?? null,
      fee: transactionFee(tx.message).toString(),
      preBalances: preBalances.map(String),
      postBalances: postBalances.map(String),
      preTokenBalances,
      postTokenBalances: this.tokenBalances(keys),
      logs,
      innerInstructions: meta
        .innerInstructions()
        .map((inner, index) => ({
          index,
          instructions: inner.map((ix) => {
            const compiledInner = ix.instruction();
            return { programIdIndex: compiledInner.programIdIndex(), accounts: [...compiledInner.accounts()], data: bs58.encode(compiledInner.data()), stackHeight: ix.stackHeight() };
          }),
        }))
        .filter((entry) => entry.instructions.length > 0),
      computeUnitsConsumed: unitsConsumed,
      loadedAddresses: resolved?.loaded ?? { writable: [], readonly: [] },
      returnData: returnBytes.length ? { programId: bs58.encode(returnData.programId()), data: [Buffer.from(returnBytes).toString('base64'), 'base64'] } : null,
      computeUnitPrice: computeUnitPrice(tx.message).toString(),
      writableKeys: [...compiled.staticAccounts.filter((_key, index) => isWritableStatic(compiled, index)), ...(resolved?.loaded.writable ?? [])],
    });
    for (const key of keys) this.dirty.add(key);
    this.saveNow();
    return { landed, failure, logs, unitsConsumed };
  }

  private remember(record: TransactionRecord): void {
    this.records.set(record.signature, record);
    this.transactionCount += 1;
    for (const signature of this.records.keys()) {
      if (this.records.size <= RECORD_LIMIT) break;
      this.records.delete(signature);
    }
  }

  // --- faucet and the USDC mint

  faucet(owner: string, token: 'SOL' | 'USDC', amount: bigint): void {
    let ownerKey: PublicKey;
    try {
      ownerKey = new PublicKey(owner);
    } catch {
      throw new Error(`faucet: "${owner}" is not a base-58 Solana address`);
    }
    if (typeof amount !== 'bigint' || amount <= 0n || amount > U64_MAX) throw new Error('faucet: amount must be a positive u64 bigint of base units');
    // Only a wallet (a system account, or none yet) is credited: not a program, sysvar or token account.
    const existing = this.account(ownerKey.toBase58());
    if (ownerKey.equals(PublicKey.default) || (existing && (existing.executable || existing.owner !== SYSTEM_PROGRAM))) {
      throw new FaucetRefusedError('INVALID_ADDRESS', 'body.address: must be a wallet (a system account), not the zero key, a program or a program-owned account');
    }
    if (token === 'SOL') {
      if ((existing?.lamports ?? 0n) + amount > U64_MAX) throw tooLarge('the balance', 'sol');
      this.airdrop(ownerKey.toBase58(), amount);
    } else if (token === 'USDC') {
      this.ensureMint();
      if (MintLayout.decode(this.account(USDC_MINT)!.data).supply + amount > U64_MAX) throw tooLarge("USDC's total supply", 'sol');
      this.mintUsdc(ownerKey, amount);
    } else throw new Error(`faucet: unknown token ${String(token)}`);
  }

  /** Credits lamports directly, as anvil's setBalance does: LiteSVM's own airdrop draws on a 1,000,000 SOL pool that runs dry. */
  private airdrop(key: string, amount: bigint): void {
    const found = this.svm.getAccount(key as Address);
    if (found.exists) this.svm.setAccount({ ...found, lamports: toLamports(found.lamports + amount) });
    else this.svm.setAccount({ address: key as Address, lamports: toLamports(amount), programAddress: SYSTEM_PROGRAM as Address, executable: false, data: new Uint8Array(), space: 0n });
    this.dirty.add(key);
    this.advance();
    this.saveNow();
  }

  /** MintTo into the owner's associated token account (created first, idempotently), signed by the sandbox mint authority. */
  private mintUsdc(owner: PublicKey, amount: bigint): void {
    const authority = this.authority.publicKey;
    if ((this.account(authority.toBase58())?.lamports ?? 0n) < 100_000_000n) this.airdrop(authority.toBase58(), 1_000_000_000n);
    const mint = new PublicKey(USDC_MINT);
    const ata = getAssociatedTokenAddressSync(mint, owner, true);
    const tx = new Transaction({ feePayer: authority, recentBlockhash: this.svm.latestBlockhash() }).add(
      createAssociatedTokenAccountIdempotentInstruction(authority, ata, owner, mint),
      createMintToCheckedInstruction(mint, ata, authority, amount, USDC_DECIMALS),
    );
    tx.sign(this.authority);
    try {
      this.submit(parseWireTransaction(new Uint8Array(tx.serialize())), false);
    } catch (error) {
      throw new Error(`faucet: minting ${amount} USDC units to ${owner.toBase58()} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private ensureMint(): void {
    if (this.account(USDC_MINT)) return;
    const data = Buffer.alloc(MINT_SIZE);
    MintLayout.encode(
      { mintAuthorityOption: 1, mintAuthority: this.authority.publicKey, supply: 0n, decimals: USDC_DECIMALS, isInitialized: true, freezeAuthorityOption: 0, freezeAuthority: PublicKey.default },
      data,
    );
    const rent = this.svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE));
    this.svm.setAccount({ address: USDC_MINT as Address, lamports: toLamports(rent), programAddress: TOKEN_PROGRAM as Address, executable: false, data: new Uint8Array(data), space: BigInt(MINT_SIZE) });
    this.dirty.add(USDC_MINT);
  }

  // --- persistence

  /** Writes and fsyncs the whole state: called after every change, before it is acknowledged. */
  saveNow(): void {
    try {
      this.write();
    } catch (error) {
      throw new PersistenceError(`Solana sandbox: the state could not be saved to ${this.dir}`, { cause: error });
    }
  }

  private write(): void {
    for (const key of this.dirty) {
      const account = this.account(key);
      const keep = account && !account.executable && !ENGINE_OWNERS.has(account.owner);
      this.portable.set(key, keep ? { lamports: account.lamports.toString(), owner: account.owner, executable: account.executable, data: Buffer.from(account.data).toString('base64') } : null);
    }
    this.dirty.clear();
    const accounts: Record<string, PersistedAccount> = {};
    for (const [key, copy] of this.portable) if (copy) accounts[key] = copy;
    const snapshot = this.svm.toBytes();
    const state: PersistedState = {
      format: STATE_FORMAT,
      engine: ENGINE,
      genesisHash: this.genesisHash,
      mintAuthority: bs58.encode(this.authority.secretKey),
      slot: this.slot,
      blockHeight: this.blockHeight,
      transactionCount: this.transactionCount,
      blockhashes: [...this.blockhashes],
      transactions: [...this.records.values()],
      accounts,
      snapshotDigest: sha256(snapshot),
    };
    writeDurably(this.dir, 'SOL.litesvm', snapshot);
    writeDurably(this.dir, 'SOL.json', JSON.stringify(state));
  }

  /** Every change is already on disk; writes once more so a stop always leaves a current snapshot. */
  close(): void {
    this.saveNow();
  }
}

function preflightError(failure: TxFailure, logs: readonly string[], unitsConsumed: number): JsonRpcError {
  return new JsonRpcError(-32002, `Transaction simulation failed: ${failure.text}`, {
    accounts: null,
    err: failure.json,
    innerInstructions: null,
    logs,
    replacementBlockhash: null,
    returnData: null,
    unitsConsumed,
  });
}

/** Replaces `dir/name` atomically and durably: temporary file written and fsynced, renamed, directory fsynced. */
function writeDurably(dir: string, name: string, content: string | Uint8Array): void {
  const path = join(dir, name);
  const temporary = `${path}.${process.pid}.tmp`;
  const file = openSync(temporary, 'w');
  try {
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    for (let written = 0; written < bytes.length; ) written += writeSync(file, bytes, written);
    fsyncSync(file);
  } finally {
    closeSync(file);
  }
  renameSync(temporary, path);
  const directory = openSync(dir, 'r');
  try {
    fsyncSync(directory);
  } finally {
    closeSync(directory);
  }
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function nextPowerOfTwo(value: number): number {
  return 2 ** Math.ceil(Math.log2(value));
}

// ---------------------------------------------------------------------------------------------
// RPC methods

type AccountEncoding = 'binary' | 'base58' | 'base64' | 'base64+zstd' | 'jsonParsed';

function accountEncoding(value: unknown, fallback: AccountEncoding): AccountEncoding {
  if (value === undefined || value === null) return fallback;
  if (value === 'binary' || value === 'base58' || value === 'base64' || value === 'base64+zstd' || value === 'jsonParsed') return value;
  throw invalidParams(`unknown variant \`${String(value)}\`, expected one of \`binary\`, \`base58\`, \`base64\`, \`jsonParsed\`, \`base64+zstd\``);
}

function dataSlice(config: Record<string, unknown>): { offset: number; length: number } | undefined {
  const slice = config.dataSlice;
  if (slice === undefined || slice === null) return undefined;
  const { offset, length } = slice as Record<string, unknown>;
  return { offset: integerParam(offset, 'dataSlice.offset'), length: integerParam(length, 'dataSlice.length') };
}

function rpcMethods(chain: SandboxChain): Map<string, RpcMethod> {
  const context = (config: Record<string, unknown> = {}) => {
    const minContextSlot = config.minContextSlot;
    if (typeof minContextSlot === 'number' && minContextSlot > chain.slot) {
      throw new JsonRpcError(-32016, 'Minimum context slot has not been reached', { contextSlot: chain.slot });
    }
    return { slot: chain.slot };
  };
  const withContext = (config: Record<string, unknown>, value: unknown) => ({ context: context(config), value });

  const mintDecimals = (mint: string) => {
    const account = chain.account(mint);
    return account ? (readMint(account)?.decimals ?? null) : null;
  };

  /** jsonParsed answers token accounts and mints parsed, and anything else as base64, as a validator does. */
  const parsedData = (account: AccountState) => {
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
        const info = { decimals: mint.decimals, freezeAuthority: mint.freezeAuthority, isInitialized: mint.isInitialized, mintAuthority: mint.mintAuthority, supply: mint.supply.toString() };
        return { program, parsed: { info, type: 'mint' }, space: account.data.length };
      }
    }
    return [Buffer.from(account.data).toString('base64'), 'base64'];
  };

  const encodeAccount = (account: AccountState, encoding: AccountEncoding, slice?: { offset: number; length: number }) => {
    const sliced = slice ? account.data.subarray(slice.offset, slice.offset + slice.length) : account.data;
    let data: unknown;
    if (encoding === 'jsonParsed') data = parsedData(account);
    else if (encoding === 'base64') data = [Buffer.from(sliced).toString('base64'), 'base64'];
    else if (encoding === 'base64+zstd') data = [zstdCompressSync(sliced).toString('base64'), 'base64+zstd'];
    else {
      if (sliced.length > 128) throw invalidParams('Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.');
      data = encoding === 'binary' ? bs58.encode(sliced) : [bs58.encode(sliced), 'base58'];
    }
    return { data, executable: account.executable, lamports: account.lamports, owner: account.owner, rentEpoch: U64_MAX, space: account.data.length };
  };

  const accountFor = (key: Address, config: Record<string, unknown>) => {
    const account = chain.account(key);
    return account ? encodeAccount(account, accountEncoding(config.encoding, 'binary'), dataSlice(config)) : null;
  };

  const signatureStatus = (record: TransactionRecord) => ({
    slot: record.slot,
    confirmations: null,
    err: record.err,
    status: record.err === null ? { Ok: null } : { Err: record.err },
    confirmationStatus: 'finalized',
  });

  const transactionJson = (record: TransactionRecord, encoding: string) => {
    if (encoding === 'base64') return [record.wire, 'base64'];
    const bytes = new Uint8Array(Buffer.from(record.wire, 'base64'));
    if (encoding === 'base58') return [bs58.encode(bytes), 'base58'];
    if (encoding === 'binary') return bs58.encode(bytes);
    const tx = parseWireTransaction(bytes);
    const { compiled } = tx.message;
    const lookups = compiled.version === 0 ? (compiled.addressTableLookups ?? []) : undefined;
    const signatures = tx.signatures.map((signature) => bs58.encode(signature));
    const recentBlockhash = tx.message.lifetimeToken;
    const tableLookups = lookups?.map((lookup) => ({ accountKey: lookup.lookupTableAddress, writableIndexes: lookup.writableIndexes, readonlyIndexes: lookup.readonlyIndexes }));
    if (encoding === 'jsonParsed') {
      const { writable, readonly } = record.loadedAddresses;
      const allKeys = [...compiled.staticAccounts, ...writable, ...readonly];
      const accountKeys = [
        ...compiled.staticAccounts.map((pubkey, index) => ({ pubkey, signer: index < compiled.header.numSignerAccounts, source: 'transaction', writable: isWritableStatic(compiled, index) })),
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
    const header = { numReadonlySignedAccounts: compiled.header.numReadonlySignerAccounts, numReadonlyUnsignedAccounts: compiled.header.numReadonlyNonSignerAccounts, numRequiredSignatures: compiled.header.numSignerAccounts };
    const instructions = compiled.instructions.map((ix: CompiledInstruction) => ({ accounts: ix.accountIndices ?? [], data: bs58.encode(Uint8Array.from(ix.data ?? [])), programIdIndex: ix.programAddressIndex, stackHeight: null }));
    return { message: { accountKeys: compiled.staticAccounts, header, instructions, recentBlockhash, ...(tableLookups ? { addressTableLookups: tableLookups } : {}) }, signatures };
  };

  const innerInstructionsJson = (record: TransactionRecord, parsed: boolean) => {
    if (!parsed) return record.innerInstructions;
    const tx = parseWireTransaction(new Uint8Array(Buffer.from(record.wire, 'base64')));
    const keys = [...tx.message.staticKeys, ...record.loadedAddresses.writable, ...record.loadedAddresses.readonly];
    return record.innerInstructions.map(({ index, instructions }) => ({
      index,
      instructions: instructions.map((ix) => ({ accounts: ix.accounts.map((i) => keys[i]), data: ix.data, programId: keys[ix.programIdIndex], stackHeight: ix.stackHeight })),
    }));
  };

  const methods: Record<string, RpcMethod> = {
    getHealth: () => 'ok',
    getVersion: () => ({ 'solana-core': `litesvm-${LITESVM_VERSION}` }),
    getGenesisHash: () => chain.genesisHash,
    getSlot: (params) => context(configAt(params, 0)).slot,
    getBlockHeight: (params) => {
      context(configAt(params, 0));
      return chain.blockHeight;
    },
    getTransactionCount: (params) => {
      context(configAt(params, 0));
      return chain.transactionCount;
    },
    getEpochInfo: (params) => {
      context(configAt(params, 0));
      const { epoch, slotIndex, slotsInEpoch } = chain.epochOf(chain.slot);
      return { absoluteSlot: chain.slot, blockHeight: chain.blockHeight, epoch, slotIndex, slotsInEpoch, transactionCount: chain.transactionCount };
    },
    getEpochSchedule: () => {
      const schedule = chain.svm.getEpochSchedule();
      return {
        firstNormalEpoch: Number(schedule.firstNormalEpoch),
        firstNormalSlot: Number(schedule.firstNormalSlot),
        leaderScheduleSlotOffset: Number(schedule.leaderScheduleSlotOffset),
        slotsPerEpoch: Number(schedule.slotsPerEpoch),
        warmup: schedule.warmup,
      };
    },
    getLatestBlockhash: (params) => withContext(configAt(params, 0), chain.latestBlockhash()),
    isBlockhashValid: (params) => {
      const blockhash = pubkeyParam(params[0]);
      return withContext(configAt(params, 1), chain.isBlockhashValid(blockhash));
    },
    getBalance: (params) => {
      const key = pubkeyParam(params[0]);
      return withContext(configAt(params, 1), chain.account(key)?.lamports ?? 0n);
    },
    getAccountInfo: (params) => {
      const key = pubkeyParam(params[0]);
      const config = configAt(params, 1);
      return withContext(config, accountFor(key, config));
    },
    getMultipleAccounts: (params) => {
      if (!Array.isArray(params[0])) throw invalidParams('invalid type: expected an array of base-58 encoded public keys');
      if (params[0].length > 100) throw invalidParams('Too many inputs provided; max 100');
      const keys = params[0].map(pubkeyParam);
      const config = configAt(params, 1);
      return withContext(config, keys.map((key) => accountFor(key, config)));
    },
    getMinimumBalanceForRentExemption: (params) => {
      const length = integerParam(params[0] ?? 0, 'data length');
      if (length > 10 * 1024 * 1024) throw invalidParams(`data length ${length} exceeds the maximum account size`);
      context(configAt(params, 1));
      return chain.svm.minimumBalanceForRentExemption(BigInt(length));
    },
    getTokenAccountBalance: (params) => {
      const key = pubkeyParam(params[0]);
      const config = configAt(params, 1);
      const account = chain.account(key);
      if (!account) throw invalidParam('could not find account');
      const token = readTokenAccount(account);
      if (!token) throw invalidParam('not a Token account');
      const decimals = mintDecimals(token.mint);
      if (decimals === null) throw invalidParam('could not find mint');
      return withContext(config, uiTokenAmount(token.amount, decimals));
    },
    getTokenAccountsByOwner: (params) => {
      const owner = pubkeyParam(params[0]);
      const filter = params[1];
      if (typeof filter !== 'object' || filter === null) throw invalidParams('invalid type: expected a filter object with "mint" or "programId"');
      const { mint, programId } = filter as Record<string, unknown>;
      let program: string;
      let mintKey: string | undefined;
      if (mint !== undefined) {
        mintKey = pubkeyParam(mint);
        const mintAccount = chain.account(mintKey);
        if (!mintAccount || !isTokenProgram(mintAccount.owner)) throw invalidParam('could not find mint');
        program = mintAccount.owner;
      } else if (programId !== undefined) {
        program = pubkeyParam(programId);
        if (!isTokenProgram(program)) throw invalidParam('unrecognized Token program id');
      } else {
        throw invalidParams('filter must have "mint" or "programId"');
      }
      const config = configAt(params, 2);
      const encoding = accountEncoding(config.encoding, 'binary');
      const slice = dataSlice(config);
      const value = chain.svm
        .getProgramAccounts(program as Address)
        .map((found) => ({ pubkey: found.address as string, account: { lamports: found.lamports as bigint, owner: found.programAddress as string, data: new Uint8Array(found.data), executable: found.executable } }))
        .filter(({ account }) => {
          const token = readTokenAccount(account);
          return token !== null && token.owner === owner && (mintKey === undefined || token.mint === mintKey);
        })
        .map(({ pubkey, account }) => ({ account: encodeAccount(account, encoding, slice), pubkey }));
      return withContext(config, value);
    },
    getFeeForMessage: (params) => {
      if (typeof params[0] !== 'string') throw invalidParams('invalid type: expected a base-64 encoded message string');
      const message = parseMessage(new Uint8Array(Buffer.from(params[0], 'base64')));
      return withContext(configAt(params, 1), chain.isLifetimeValid(message) ? transactionFee(message) : null);
    },
    getRecentPrioritizationFees: (params) => {
      const keys = Array.isArray(params[0]) ? params[0].map(pubkeyParam) : [];
      if (keys.length > 128) throw invalidParams('Too many inputs provided; max 128');
      return [...chain.records.values()]
        .filter((record) => record.slot > chain.slot - MAX_PROCESSING_AGE && (keys.length === 0 || keys.some((key) => record.writableKeys.includes(key))))
        .map((record) => ({ prioritizationFee: BigInt(record.computeUnitPrice), slot: record.slot }));
    },
    getSignatureStatuses: (params) => {
      if (!Array.isArray(params[0])) throw invalidParams('invalid type: expected an array of base-58 encoded signatures');
      if (params[0].length > 256) throw invalidParams('Too many inputs provided; max 256');
      const signatures = params[0].map(signatureParam);
      const value = signatures.map((signature) => {
        const record = chain.records.get(signature);
        return record ? signatureStatus(record) : null;
      });
      return { context: context(), value };
    },
    getTransaction: (params) => {
      const signature = signatureParam(params[0]);
      const config = typeof params[1] === 'string' ? { encoding: params[1] } : configAt(params, 1);
      const encoding = config.encoding ?? 'json';
      if (encoding !== 'json' && encoding !== 'jsonParsed' && encoding !== 'base64' && encoding !== 'base58' && encoding !== 'binary') {
        throw invalidParams(`unknown variant \`${String(encoding)}\`, expected one of \`binary\`, \`base64\`, \`base58\`, \`json\`, \`jsonParsed\``);
      }
      if (config.commitment === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
      const record = chain.records.get(signature);
      if (!record) return null;
      const maxVersion = config.maxSupportedTransactionVersion;
      if (record.version === 0 && (typeof maxVersion !== 'number' || maxVersion < 0)) {
        throw new JsonRpcError(
          -32015,
          'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
        );
      }
      const parsed = encoding === 'jsonParsed';
      const meta = {
        computeUnitsConsumed: record.computeUnitsConsumed,
        err: record.err,
        fee: BigInt(record.fee),
        innerInstructions: innerInstructionsJson(record, parsed),
        ...(parsed ? {} : { loadedAddresses: record.loadedAddresses }),
        logMessages: record.logs,
        postBalances: record.postBalances.map(BigInt),
        postTokenBalances: record.postTokenBalances,
        preBalances: record.preBalances.map(BigInt),
        preTokenBalances: record.preTokenBalances,
        ...(record.returnData ? { returnData: record.returnData } : {}),
        rewards: [],
        status: record.err === null ? { Ok: null } : { Err: record.err },
      };
      return {
        blockTime: record.blockTime,
        meta,
        slot: record.slot,
        transaction: transactionJson(record, encoding as string),
        ...(typeof maxVersion === 'number' ? { version: record.version } : {}),
      };
    },
    sendTransaction: (params) => {
      const config = configAt(params, 1);
      const tx = parseWireTransaction(decodeWireParam(params[0], config.encoding));
      context(config);
      return chain.submit(tx, config.skipPreflight === true);
    },
    simulateTransaction: (params) => {
      const config = configAt(params, 1);
      const tx = parseWireTransaction(decodeWireParam(params[0], config.encoding));
      const replace = config.replaceRecentBlockhash === true;
      if (replace && config.sigVerify === true) throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
      if (config.sigVerify === true && !signaturesVerify(tx)) throw new JsonRpcError(-32003, 'Transaction signature verification failure');
      const requested = config.accounts as { addresses?: unknown; encoding?: unknown } | undefined;
      const addresses = Array.isArray(requested?.addresses) ? requested.addresses.map(pubkeyParam) : undefined;
      const encoding = accountEncoding(requested?.encoding, 'base64');
      const base = {
        accounts: null as unknown,
        err: null as TxErrorJson | null,
        innerInstructions: null as unknown,
        logs: [] as readonly string[],
        replacementBlockhash: replace ? chain.latestBlockhash() : null,
        returnData: null as unknown,
        unitsConsumed: 0,
      };
      if (!replace && !chain.isLifetimeValid(tx.message)) return withContext(config, { ...base, err: 'BlockhashNotFound' });
      const simulated = chain.svm.simulateTransaction(tx.kit);
      if (simulated instanceof FailedTransactionMetadata) {
        const meta = simulated.meta();
        return withContext(config, { ...base, err: describeFailure(simulated.err()).json, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) });
      }
      const meta = simulated.meta();
      const post = new Map(simulated.postAccounts().map((found) => [found.address as string, found]));
      const stateAfter = (key: string): AccountState | null => {
        const found = post.get(key);
        if (!found) return chain.account(key);
        return found.lamports === 0n && found.data.length === 0 ? null : { lamports: found.lamports, owner: found.programAddress, data: new Uint8Array(found.data), executable: found.executable };
      };
      const keys = chain.accountKeys(tx.message)?.keys ?? [...tx.message.staticKeys];
      const returnData = meta.returnData();
      return withContext(config, {
        ...base,
        accounts: addresses?.map((key) => {
          const account = stateAfter(key);
          return account ? encodeAccount(account, encoding) : null;
        }) ?? null,
        innerInstructions:
          config.innerInstructions === true
            ? meta
                .innerInstructions()
                .map((inner, index) => ({
                  index,
                  instructions: inner.map((ix) => {
                    const compiled = ix.instruction();
                    return { accounts: [...compiled.accounts()].map((i) => keys[i]), data: bs58.encode(compiled.data()), programId: keys[compiled.programIdIndex()], stackHeight: ix.stackHeight() };
                  }),
                }))
                .filter((entry) => entry.instructions.length > 0)
            : null,
        logs: meta.logs(),
        returnData: returnData.data().length ? { data: [Buffer.from(returnData.data()).toString('base64'), 'base64'], programId: bs58.encode(returnData.programId()) } : null,
        unitsConsumed: Number(meta.computeUnitsConsumed()),
      });
    },
  };
  return new Map(Object.entries(methods));
}
