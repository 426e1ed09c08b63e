import { address, getCompiledTransactionMessageDecoder, getTransactionDecoder, isAddress } from '@solana/kit';
import { findAssociatedTokenPda } from '@solana-program/token';
import { BridgeQuoteRejectedError } from './bridge.ts';

/** SPL Token and Token-2022: their Transfer / TransferChecked are decoded, nothing else of theirs is signed. */
const TOKEN_PROGRAMS = new Set(['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb']);
/** The route's USDC is an SPL Token (not Token-2022) mint, on Solana mainnet and in the sandbox. */
const USDC_TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const ASSOCIATED_TOKEN_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
/** SPL Token: Transfer (3) `[source, destination, authority]`, amount u64; TransferChecked (12) `[source, mint, destination, authority]`, amount u64, decimals u8. */
const TOKEN_TRANSFER = 3;
const TOKEN_TRANSFER_CHECKED = 12;
/**
 * Compute Budget: RequestHeapFrame (1, u32 bytes), SetComputeUnitLimit (2, u32),
 * SetComputeUnitPrice (3, u64 micro-lamports per unit), SetLoadedAccountsDataSizeLimit (4, u32).
 * Only the price costs the wallet anything beyond the base fee.
 */
const REQUEST_HEAP_FRAME = 1;
const SET_COMPUTE_UNIT_LIMIT = 2;
const SET_COMPUTE_UNIT_PRICE = 3;
const SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT = 4;
/** Associated Token Account: Create (0, or empty data) and CreateIdempotent (1); RecoverNested (2) is refused. */
const ATA_CREATE_IDEMPOTENT = 1;
/** A transaction without SetComputeUnitLimit gets 200,000 units per instruction (Solana's default), capped at 1.4 M. */
const DEFAULT_UNITS_PER_INSTRUCTION = 200_000n;
const MAX_UNITS = 1_400_000n;
/**
 * The most priority fee a bridge transaction may make the wallet pay: 0.005 SOL (about 0.75 USD at
 * 150 USD/SOL). LI.FI sets the price by `svmPriorityFeeLevel`; a quote over this is refused rather
 * than let a quote drain the wallet's SOL.
 */
export const MAX_BRIDGE_PRIORITY_FEE_LAMPORTS = 5_000_000n;

/** What the route allows a Solana bridge transaction to do, from the quote request and this deployment's config. */
export interface SolanaBridgeExpectation {
  /** The user's wallet: the fee payer, and the only signer we sign for. */
  readonly sender: string;
  /** The route's token (the quote's `action.fromToken.address`; the step compares it with its chain config). */
  readonly mint: string;
  /** The most of `mint` that may leave the wallet: the quoted amount. */
  readonly amount: bigint;
  /** Programs the transaction may invoke (LI.FI's published ones, or BRIDGE_CONTRACTS.SOL). */
  readonly programs: readonly string[];
}

/**
 * The checks a Solana-source bridge transaction passes before our wallet signs it (issue 23;
 * LI.FI's Solana form is `transactionRequest: { data }`, a base64 serialized transaction, docs.li.fi
 * "Solana"): the user's wallet is the fee payer and every other signer the message needs has
 * already signed (we sign for nobody else); every program it invokes is on the allow-list; SPL
 * token instructions are only Transfer / TransferChecked by the wallet of the route's mint, adding
 * up to at most the quoted amount; an instruction of a token, system or associated-token program
 * this check cannot decode is refused, never signed on trust; the priority fee is bounded. What an
 * allow-listed bridge program moves inside its own instruction (a CPI) is not visible here: the
 * bridge step simulates the transaction before signing for that (steps/bridge.ts).
 */
export async function checkSolanaBridgeTransaction(data: string, expect: SolanaBridgeExpectation): Promise<void> {
  const refuse = (code: string, message: string): never => {
    throw new BridgeQuoteRejectedError(code, `The bridge quote was refused before signing: ${message}`);
  };
  let transaction: ReturnType<ReturnType<typeof getTransactionDecoder>['decode']>;
  let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>;
  try {
    transaction = getTransactionDecoder().decode(Buffer.from(data, 'base64'));
    message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  } catch {
    return refuse('BRIDGE_QUOTE_NO_TRANSACTION', 'its transactionRequest.data is not a Solana transaction');
  }
  if ((message.version !== 'legacy' && message.version !== 0) || !('instructions' in message))
    return refuse('BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION', `its Solana transaction has message version ${String(message.version)}`);
  const { instructions } = message;
  const accounts = message.staticAccounts.map(String);
  const signers = accounts.slice(0, message.header.numSignerAccounts);
  if (signers[0] !== expect.sender) refuse('BRIDGE_QUOTE_WRONG_SIGNER', `its fee payer is ${signers[0] ?? 'nobody'}, not the wallet ${expect.sender}`);
  for (const signer of signers.slice(1)) {
    const signature = transaction.signatures[signer as keyof typeof transaction.signatures];
    if (!signature || signature.every((byte) => byte === 0))
      refuse('BRIDGE_QUOTE_WRONG_SIGNER', `it needs a signature of ${signer} besides the wallet's, which this service does not give`);
  }
  if (!isAddress(expect.mint)) refuse('BRIDGE_QUOTE_WRONG_TOKEN', `it spends ${expect.mint}, not a Solana mint`);
  const allowed = new Set(expect.programs);
  const source = (await findAssociatedTokenPda({ owner: address(expect.sender), mint: address(expect.mint), tokenProgram: address(USDC_TOKEN_PROGRAM) }))[0];
  let outflow = 0n;
  let unitLimit: bigint | undefined;
  let unitPrice = 0n;
  for (const instruction of instructions) {
    const program = accounts[instruction.programAddressIndex] ?? '';
    if (!allowed.has(program)) refuse('BRIDGE_QUOTE_UNKNOWN_PROGRAM', `it invokes the program ${program}, which is not an allowed bridge program on SOL`);
    const bytes = Buffer.from(instruction.data ?? new Uint8Array());
    const indices = instruction.accountIndices ?? [];
    // An account only a lookup table names cannot be read without the chain: such an instruction of a program we decode is refused.
    const at = (i: number) => {
      const index = indices[i];
      return index === undefined ? undefined : accounts[index];
    };
    const undecodable = (what: string): never => refuse('BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION', `its ${what} cannot be checked`);
    if (TOKEN_PROGRAMS.has(program)) {
      const kind = bytes[0];
      const checked = kind === TOKEN_TRANSFER_CHECKED && bytes.length === 10;
      if (!checked && !(kind === TOKEN_TRANSFER && bytes.length === 9)) return undecodable(`token instruction ${kind ?? 'without data'}`);
      const [from, mint, authority] = checked ? [at(0), at(1), at(3)] : [at(0), undefined, at(2)];
      if (from === undefined || authority === undefined || (checked && mint === undefined)) return undecodable('token transfer (lookup-table accounts)');
      if (authority !== expect.sender) refuse('BRIDGE_QUOTE_UNSUPPORTED_TRANSACTION', `its token transfer is signed by ${authority}, not the wallet`);
      // A plain Transfer names no mint: it is the route's token only from the wallet's own token account of that mint.
      if ((checked && mint !== expect.mint) || from !== source)
        refuse('BRIDGE_QUOTE_WRONG_TOKEN', `it transfers ${mint ?? `from ${from}`}, not ${expect.mint} from the wallet's token account`);
      if (program !== USDC_TOKEN_PROGRAM) refuse('BRIDGE_QUOTE_WRONG_TOKEN', `it transfers through ${program}, not the route token's program`);
      outflow += bytes.readBigUInt64LE(1);
      continue;
    }
    if (program === COMPUTE_BUDGET_PROGRAM) {
      if (bytes[0] === SET_COMPUTE_UNIT_LIMIT && bytes.length === 5) unitLimit = BigInt(bytes.readUInt32LE(1));
      else if (bytes[0] === SET_COMPUTE_UNIT_PRICE && bytes.length === 9) unitPrice = bytes.readBigUInt64LE(1);
      else if ((bytes[0] === REQUEST_HEAP_FRAME || bytes[0] === SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT) && bytes.length === 5) continue;
      else return undecodable(`compute budget instruction ${bytes[0] ?? 'without data'}`);
      continue;
    }
    if (program === ASSOCIATED_TOKEN_PROGRAM) {
      // Create / CreateIdempotent `[payer, ata, owner, mint, system, token]`: costs the payer rent, moves no token.
      if (bytes.length > 1 || (bytes.length === 1 && bytes[0] !== 0 && bytes[0] !== ATA_CREATE_IDEMPOTENT)) return undecodable('associated token instruction');
      continue;
    }
    if (program === SYSTEM_PROGRAM) return undecodable('system instruction (it could move the wallet’s SOL)');
  }
  if (outflow > expect.amount)
    refuse('BRIDGE_QUOTE_WRONG_AMOUNT', `its token transfers move ${outflow} of ${expect.mint} out of the wallet, more than the ${expect.amount} quoted`);
  const defaultUnits = DEFAULT_UNITS_PER_INSTRUCTION * BigInt(instructions.length);
  const units = unitLimit ?? (defaultUnits < MAX_UNITS ? defaultUnits : MAX_UNITS);
  const priorityFeeLamports = (units * unitPrice + 999_999n) / 1_000_000n;
  if (priorityFeeLamports > MAX_BRIDGE_PRIORITY_FEE_LAMPORTS)
    refuse('BRIDGE_QUOTE_FEE_TOO_HIGH', `its priority fee of up to ${priorityFeeLamports} lamports is over ${MAX_BRIDGE_PRIORITY_FEE_LAMPORTS}`);
}
