import type { FailedTransactionMetadata } from 'litesvm';
import { JsonRpcError } from './transport.ts';

/** Transaction errors, in the JSON form (serde) and text (Display) a validator gives them. */

export type TxErrorJson = string | Record<string, unknown>;
export interface TxFailure {
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

export function simpleFailure(name: string): TxFailure {
  return { json: name, text: TX_ERROR_TEXT.get(name) ?? name };
}

function instructionFailure(name: string): { json: unknown; text: string } {
  return { json: name, text: IX_ERROR_TEXT.get(name) ?? name };
}

export function describeFailure(err: EngineTxError): TxFailure {
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
  if ('index' in err)
    return { json: { DuplicateInstruction: err.index }, text: `Transaction contains a duplicate instruction (${err.index}) that is not allowed` };
  if ('accountIndex' in err) {
    // InsufficientFundsForRent and ProgramExecutionTemporarilyRestricted declare the same field:
    // only the name litesvm gives their classes tells them apart.
    if (err.constructor.name === 'TransactionErrorProgramExecutionTemporarilyRestricted') {
      return {
        json: { ProgramExecutionTemporarilyRestricted: { account_index: err.accountIndex } },
        text: `Execution of the program referenced by account at index ${err.accountIndex} is temporarily restricted.`,
      };
    }
    return {
      json: { InsufficientFundsForRent: { account_index: err.accountIndex } },
      text: `Transaction results in an account (${err.accountIndex}) with insufficient funds for rent`,
    };
  }
  return simpleFailure(String(err));
}

/** The -32002 error a validator answers when sendTransaction's preflight fails. */
export function preflightError(failure: TxFailure, logs: readonly string[], unitsConsumed: number): JsonRpcError {
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
