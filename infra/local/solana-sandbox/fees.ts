import { COMPUTE_BUDGET_PROGRAM, SYSTEM_PROGRAM } from './constants.ts';
import type { ParsedMessage } from './wire.ts';

/** What a message costs: Agave's signature fee and priority fee. */

const SIGNATURE_PRECOMPILES = new Set([
  'Ed25519SigVerify111111111111111111111111111',
  'KeccakSecp256k11111111111111111111111111111',
  'Secp256r1SigVerify1111111111111111111111111',
]);
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

const LAMPORTS_PER_SIGNATURE = 5_000n;
const MAX_COMPUTE_UNIT_LIMIT = 1_400_000;

/** Agave's fee: 5,000 lamports per signature (precompile signatures included) plus the priority fee, ceil(price × limit / 10^6). */
export function transactionFee(message: ParsedMessage): bigint {
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
export function computeUnitPrice({ compiled, staticKeys }: ParsedMessage): bigint {
  for (const ix of compiled.instructions) {
    const data = ix.data;
    if (staticKeys[ix.programAddressIndex] === COMPUTE_BUDGET_PROGRAM && data && data[0] === 3 && data.length >= 9) return Buffer.from(data).readBigUInt64LE(1);
  }
  return 0n;
}
