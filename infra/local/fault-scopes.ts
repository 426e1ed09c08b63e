/**
 * Faults of the sandbox venues and the sandbox bridge (`POST /sandbox/faults`), held per scope: an
 * address (a user's EVM or Solana wallet, as the venue or bridge sees it: depositor, withdrawer,
 * recipient) or `ANY_ADDRESS` (the unscoped fault: whoever comes next). Several scopes at once,
 * so tests running side by side against one sandbox each fault only their own user's operations.
 * An operation takes the fault of the first of its parties that has one, else the unscoped one.
 */
export const ANY_ADDRESS = '*';

export interface ScopedFault<M extends string> {
  readonly mode: M;
  readonly remaining: number;
}

/** The faults of one operation, by scope (`scopeOf`). */
export type FaultTable<M extends string> = Record<string, ScopedFault<M>>;

/** A fault an operation consumed: what it does, and whose it was (a stall is released by that scope's `clear`). */
export interface TakenFault<M extends string> {
  readonly mode: M;
  readonly scope: string;
}

/** The key of an address: EVM hex compares case-insensitively, base58 (Solana) exactly; none is ANY_ADDRESS. */
export function scopeOf(address: string | undefined): string {
  if (address === undefined) return ANY_ADDRESS;
  return /^0x[0-9a-fA-F]{40}$/.test(address) ? address.toLowerCase() : address;
}

/** Consumes one operation of the fault that applies to `parties` (mutates `table`, inside a transaction). */
export function takeFault<M extends string>(table: FaultTable<M>, parties: readonly string[]): TakenFault<M> | undefined {
  const scope = [...parties.map(scopeOf), ANY_ADDRESS].find((key) => Object.hasOwn(table, key) && table[key]!.remaining > 0);
  if (scope === undefined) return undefined;
  const fault = table[scope]!;
  if (fault.remaining === 1) delete table[scope];
  else table[scope] = { mode: fault.mode, remaining: fault.remaining - 1 };
  return { mode: fault.mode, scope };
}

/**
 * A fault table as stored, or as an earlier sandbox stored it (one `{ mode, remaining }` for
 * everyone): the latter becomes the ANY_ADDRESS entry.
 */
export function faultTableOf<M extends string>(stored: FaultTable<M> | ScopedFault<M> | undefined): FaultTable<M> {
  if (stored === undefined) return {};
  if (typeof (stored as ScopedFault<M>).mode === 'string' && typeof (stored as ScopedFault<M>).remaining === 'number')
    return { [ANY_ADDRESS]: stored as ScopedFault<M> };
  return stored as FaultTable<M>;
}
