import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { AccountState, TransactionRecord } from './types.ts';

/**
 * The chain on disk, in `<dataDir>/chains/`: `SOL.litesvm`, the engine snapshot, and `SOL.json`, the
 * sandbox's state with a portable copy of the accounts (index.ts says what each holds). Each file is
 * replaced atomically and fsynced; `SOL.json` is the commit point: it carries the digest of the
 * snapshot written just before it.
 */

const STATE_FORMAT = 1;

const nodeRequire = createRequire(import.meta.url);
export const LITESVM_VERSION = (nodeRequire('litesvm/package.json') as { version: string }).version;
/** The engine that wrote a snapshot: only the same litesvm version restores it. */
const ENGINE = `litesvm@${LITESVM_VERSION}`;

const SYSVAR_OWNER = 'Sysvar1111111111111111111111111111111111111';
/** Owners of accounts the engine provides itself: never copied into SOL.json. */
const ENGINE_OWNERS = new Set([
  SYSVAR_OWNER,
  'NativeLoader1111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'LoaderV411111111111111111111111111111111111',
]);

export interface PersistedAccount {
  readonly lamports: string;
  readonly owner: string;
  readonly executable: boolean;
  readonly data: string;
}

export interface PersistedState {
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

/** What the chain saves: SOL.json's content but for the fields this module fills in. */
type ChainState = Omit<PersistedState, 'format' | 'engine' | 'snapshotDigest'>;

/**
 * Reads SOL.json (undefined when there is none) and the engine snapshot, when it may be restored:
 * written by this litesvm version, and the one SOL.json acknowledged.
 */
export function readChainFiles(dir: string): { state: PersistedState | undefined; snapshot: Uint8Array | undefined } {
  mkdirSync(dir, { recursive: true });
  const statePath = join(dir, 'SOL.json');
  const state = existsSync(statePath) ? (JSON.parse(readFileSync(statePath, 'utf8')) as PersistedState) : undefined;
  if (state && state.format !== STATE_FORMAT) throw new Error(`${statePath}: unknown state format ${String(state.format)}`);
  const snapshotPath = join(dir, 'SOL.litesvm');
  if (state?.engine !== ENGINE || !existsSync(snapshotPath)) return { state, snapshot: undefined };
  const bytes = readFileSync(snapshotPath);
  // A snapshot newer than SOL.json (killed between the two writes) is not what was acknowledged.
  const acknowledged = state.snapshotDigest === undefined || sha256(bytes) === state.snapshotDigest;
  return { state, snapshot: acknowledged ? bytes : undefined };
}

/** Writes the snapshot, then SOL.json with the snapshot's digest, each durably. */
export function writeChainFiles(dir: string, snapshot: Uint8Array, state: ChainState): void {
  const persisted: PersistedState = { format: STATE_FORMAT, engine: ENGINE, ...state, snapshotDigest: sha256(snapshot) };
  writeDurably(dir, 'SOL.litesvm', snapshot);
  writeDurably(dir, 'SOL.json', JSON.stringify(persisted));
}

/** The copy of an account SOL.json keeps; null when there is nothing to keep (no account, a program, an engine-provided account). */
export function portableCopy(account: AccountState | null): PersistedAccount | null {
  const keep = account && !account.executable && !ENGINE_OWNERS.has(account.owner);
  return keep
    ? { lamports: account.lamports.toString(), owner: account.owner, executable: account.executable, data: Buffer.from(account.data).toString('base64') }
    : null;
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
